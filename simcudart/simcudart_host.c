/* Pinned host memory: the driver's cuMemHostAlloc / cuMemHostRegister family, as the real
 * runtime uses it. simcuda's host memory is real, and under unified addressing its device
 * pointer is its host address. */
#include "simcudart_internal.h"

cudaError_t cudaHostAlloc(void **pointer, size_t size, unsigned int flags)
{
    if (!pointer)
        return simcudart__result(cudaErrorInvalidValue);
    SIMCUDART_ENTER();
    /* cudaHostAllocPortable/Mapped/WriteCombined and CU_MEMHOSTALLOC_* share their bits. */
    return simcudart__driver_result(cuMemHostAlloc(pointer, size, flags));
}

cudaError_t cudaMallocHost(void **pointer, size_t size)
{
    if (!pointer)
        return simcudart__result(cudaErrorInvalidValue);
    SIMCUDART_ENTER();
    return simcudart__driver_result(cuMemAllocHost(pointer, size));
}

cudaError_t cudaFreeHost(void *pointer)
{
    SIMCUDART_ENTER();
    if (!pointer)
        return cudaSuccess;
    return simcudart__driver_result(cuMemFreeHost(pointer));
}

cudaError_t cudaHostRegister(void *pointer, size_t size, unsigned int flags)
{
    SIMCUDART_ENTER();
    return simcudart__driver_result(cuMemHostRegister(pointer, size, flags));
}

cudaError_t cudaHostUnregister(void *pointer)
{
    SIMCUDART_ENTER();
    return simcudart__driver_result(cuMemHostUnregister(pointer));
}

cudaError_t cudaHostGetDevicePointer(void **device_pointer, void *host_pointer, unsigned int flags)
{
    CUdeviceptr address = 0;
    if (!device_pointer)
        return simcudart__result(cudaErrorInvalidValue);
    SIMCUDART_ENTER();
    CUresult result = cuMemHostGetDevicePointer(&address, host_pointer, flags);
    *device_pointer = result == CUDA_SUCCESS ? (void *)(uintptr_t)address : NULL;
    return simcudart__driver_result(result);
}

cudaError_t cudaHostGetFlags(unsigned int *flags, void *host_pointer)
{
    SIMCUDART_ENTER();
    return simcudart__driver_result(cuMemHostGetFlags(flags, host_pointer));
}

/* From what simcuda answers: a device allocation (cuMemGetAddressRange knows it), pinned host
 * memory (cuMemHostGetFlags knows it), else unregistered host memory. Managed memory reads as
 * device memory, since the driver API simcuda offers cannot tell them apart. */
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *pointer)
{
    CUdeviceptr base;
    size_t size;
    unsigned int flags;
    if (!attributes)
        return simcudart__result(cudaErrorInvalidValue);
    SIMCUDART_ENTER();
    attributes->device = simcudart__current_device();
    attributes->devicePointer = NULL;
    attributes->hostPointer = NULL;
    if (cuMemGetAddressRange(&base, &size, (CUdeviceptr)(uintptr_t)pointer) == CUDA_SUCCESS) {
        attributes->type = cudaMemoryTypeDevice;
        attributes->devicePointer = (void *)pointer;
    } else if (cuMemHostGetFlags(&flags, (void *)pointer) == CUDA_SUCCESS) {
        attributes->type = cudaMemoryTypeHost;
        attributes->devicePointer = (void *)pointer;
        attributes->hostPointer = (void *)pointer;
    } else {
        attributes->type = cudaMemoryTypeUnregistered;
        attributes->hostPointer = (void *)pointer;
    }
    return cudaSuccess;
}
