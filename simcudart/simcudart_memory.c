/* Device memory: classic allocations, stream-ordered allocations and pools, copies (which move
 * nothing on simcuda, as simcuda's own copies), IPC. */
#include "simcudart_internal.h"

#include <string.h>

/* cudaMalloc and cudaMallocAsync: the runtime gives NULL for size 0, which the driver
 * refuses; a stream of 0 means the plain call. */
static cudaError_t device_malloc(void **pointer, size_t size, int async, cudaStream_t stream)
{
    CUdeviceptr address = 0;
    if (!pointer)
        return simcudart__result(cudaErrorInvalidValue);
    SIMCUDART_ENTER();
    if (size == 0) {
        *pointer = NULL;
        return cudaSuccess;
    }
    CUresult result = async ? cuMemAllocAsync(&address, size, (CUstream)stream)
                            : cuMemAlloc(&address, size);
    *pointer = result == CUDA_SUCCESS ? (void *)(uintptr_t)address : NULL;
    return simcudart__driver_result(result);
}

cudaError_t cudaMalloc(void **pointer, size_t size)
{
    return device_malloc(pointer, size, 0, NULL);
}

cudaError_t cudaMallocManaged(void **pointer, size_t size, unsigned int flags)
{
    CUdeviceptr address = 0;
    if (!pointer || size == 0)
        return simcudart__result(cudaErrorInvalidValue);
    SIMCUDART_ENTER();
    CUresult result = cuMemAllocManaged(&address, size, flags);
    *pointer = result == CUDA_SUCCESS ? (void *)(uintptr_t)address : NULL;
    return simcudart__driver_result(result);
}

cudaError_t cudaFree(void *pointer)
{
    SIMCUDART_ENTER();
    if (!pointer)
        return cudaSuccess;
    return simcudart__driver_result(cuMemFree((CUdeviceptr)(uintptr_t)pointer));
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    SIMCUDART_ENTER();
    return simcudart__driver_result(cuMemGetInfo(free_bytes, total_bytes));
}

cudaError_t cudaMallocAsync(void **pointer, size_t size, cudaStream_t stream)
{
    return device_malloc(pointer, size, 1, stream);
}

cudaError_t cudaFreeAsync(void *pointer, cudaStream_t stream)
{
    SIMCUDART_ENTER();
    if (!pointer)
        return cudaSuccess;
    return simcudart__driver_result(cuMemFreeAsync((CUdeviceptr)(uintptr_t)pointer, stream));
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int device)
{
    CUdevice handle;
    if (!pool)
        return simcudart__result(cudaErrorInvalidValue);
    if (device < 0 || device >= simcudart__device_count())
        return simcudart__result(cudaErrorInvalidDevice);
    CUresult result = cuDeviceGet(&handle, device);
    if (result == CUDA_SUCCESS)
        result = cuDeviceGetDefaultMemPool((CUmemoryPool *)pool, handle);
    return simcudart__driver_result(result);
}

/* cudaMemPoolAttr and CUmemPool_attribute share their numbers. */
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value)
{
    return simcudart__driver_result(
        cuMemPoolSetAttribute((CUmemoryPool)pool, (CUmemPool_attribute)attr, value));
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value)
{
    return simcudart__driver_result(
        cuMemPoolGetAttribute((CUmemoryPool)pool, (CUmemPool_attribute)attr, value));
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep)
{
    return simcudart__driver_result(cuMemPoolTrimTo((CUmemoryPool)pool, keep));
}

/* One device: access is always granted. */
cudaError_t cudaMemPoolSetAccess(cudaMemPool_t pool, const struct cudaMemAccessDesc *descs,
                                 size_t count)
{
    return pool && (descs || count == 0) ? cudaSuccess : simcudart__result(cudaErrorInvalidValue);
}

/* Copies move nothing on simcuda; host-to-device and device-to-host ranges are checked by the
 * driver, the other directions are accepted as they are. */
static cudaError_t copy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    if (count == 0)
        return cudaSuccess;
    switch (kind) {
    case cudaMemcpyHostToDevice:
        return simcudart__driver_result(cuMemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, count));
    case cudaMemcpyDeviceToHost:
        return simcudart__driver_result(cuMemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)src, count));
    case cudaMemcpyHostToHost: memmove(dst, src, count); return cudaSuccess;
    case cudaMemcpyDeviceToDevice:
    case cudaMemcpyDefault: return cudaSuccess;
    default: return simcudart__result(cudaErrorInvalidMemcpyDirection);
    }
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    SIMCUDART_ENTER();
    return copy(dst, src, count, kind);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream)
{
    SIMCUDART_ENTER();
    return copy(dst, src, count, kind);
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_device, const void *src, int src_device,
                                size_t count, cudaStream_t stream)
{
    int devices = simcudart__device_count();
    if (dst_device < 0 || dst_device >= devices || src_device < 0 || src_device >= devices)
        return simcudart__result(cudaErrorInvalidDevice);
    return cudaSuccess;
}

cudaError_t cudaMemset(void *pointer, int value, size_t count)
{
    SIMCUDART_ENTER();
    if (count == 0)
        return cudaSuccess;
    return simcudart__driver_result(
        cuMemsetD8((CUdeviceptr)(uintptr_t)pointer, (unsigned char)value, count));
}

cudaError_t cudaMemsetAsync(void *pointer, int value, size_t count, cudaStream_t stream)
{
    return cudaMemset(pointer, value, count);
}

/* Advice changes nothing simcuda keeps books on. */
cudaError_t cudaMemAdvise(const void *pointer, size_t count, enum cudaMemoryAdvise advice,
                          struct cudaMemLocation location)
{
    return pointer ? cudaSuccess : simcudart__result(cudaErrorInvalidValue);
}

/* cudaIpcMemHandle_t and CUipcMemHandle are the same 64 bytes. */
cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *pointer)
{
    CUipcMemHandle driver_handle;
    if (!handle)
        return simcudart__result(cudaErrorInvalidValue);
    SIMCUDART_ENTER();
    CUresult result = cuIpcGetMemHandle(&driver_handle, (CUdeviceptr)(uintptr_t)pointer);
    if (result == CUDA_SUCCESS)
        memcpy(handle, &driver_handle, sizeof(*handle));
    return simcudart__driver_result(result);
}

cudaError_t cudaIpcOpenMemHandle(void **pointer, cudaIpcMemHandle_t handle, unsigned int flags)
{
    CUipcMemHandle driver_handle;
    CUdeviceptr address = 0;
    if (!pointer)
        return simcudart__result(cudaErrorInvalidValue);
    SIMCUDART_ENTER();
    memcpy(&driver_handle, &handle, sizeof(driver_handle));
    CUresult result = cuIpcOpenMemHandle(&address, driver_handle, flags);
    *pointer = result == CUDA_SUCCESS ? (void *)(uintptr_t)address : NULL;
    return simcudart__driver_result(result);
}

cudaError_t cudaIpcCloseMemHandle(void *pointer)
{
    SIMCUDART_ENTER();
    return simcudart__driver_result(cuIpcCloseMemHandle((CUdeviceptr)(uintptr_t)pointer));
}
