/* Device memory: classic, pitched and 3D allocations, managed memory, stream-ordered
 * allocations and pools, advice, IPC. Copies and sets are in simcudart_copy.c, host memory in
 * simcudart_host.c. */
#include "simcudart_internal.h"

#include <string.h>

enum device_malloc_kind { PLAIN, ASYNC, FROM_POOL };

/* cudaMalloc, cudaMallocAsync and cudaMallocFromPoolAsync: the runtime gives NULL for size 0,
 * which the driver refuses; a stream of 0 means the plain call. */
static cudaError_t device_malloc(void **pointer, size_t size, enum device_malloc_kind kind,
                                 cudaStream_t stream, cudaMemPool_t pool)
{
    CUdeviceptr address = 0;
    if (!pointer)
        return simcudart__result(cudaErrorInvalidValue);
    SIMCUDART_ENTER();
    if (size == 0) {
        *pointer = NULL;
        return cudaSuccess;
    }
    CUresult result = kind == FROM_POOL
                          ? cuMemAllocFromPoolAsync(&address, size, (CUmemoryPool)pool, stream)
                      : kind == ASYNC ? cuMemAllocAsync(&address, size, (CUstream)stream)
                                      : cuMemAlloc(&address, size);
    *pointer = result == CUDA_SUCCESS ? (void *)(uintptr_t)address : NULL;
    return simcudart__driver_result(result);
}

cudaError_t cudaMalloc(void **pointer, size_t size)
{
    return device_malloc(pointer, size, PLAIN, NULL, NULL);
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
    return device_malloc(pointer, size, ASYNC, stream, NULL);
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

/* Rows of width bytes at the driver's pitch (its element size 4, as any allocation takes). */
cudaError_t cudaMallocPitch(void **pointer, size_t *pitch, size_t width, size_t height)
{
    CUdeviceptr address = 0;
    if (!pointer || !pitch)
        return simcudart__result(cudaErrorInvalidValue);
    SIMCUDART_ENTER();
    if (width == 0 || height == 0) {
        *pointer = NULL;
        *pitch = width;
        return cudaSuccess;
    }
    CUresult result = cuMemAllocPitch(&address, pitch, width, height, 4);
    *pointer = result == CUDA_SUCCESS ? (void *)(uintptr_t)address : NULL;
    return simcudart__driver_result(result);
}

/* A pitched allocation of height x depth rows. */
cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitched, struct cudaExtent extent)
{
    size_t pitch = 0;
    void *pointer = NULL;
    if (!pitched || (extent.depth && extent.height > SIZE_MAX / extent.depth))
        return simcudart__result(cudaErrorInvalidValue);
    cudaError_t error = cudaMallocPitch(&pointer, &pitch, extent.width,
                                        extent.height * extent.depth);
    if (error == cudaSuccess)
        *pitched = (struct cudaPitchedPtr){
            .ptr = pointer, .pitch = pitch, .xsize = extent.width, .ysize = extent.height};
    return error;
}

/* cudaMemPoolProps and CUmemPoolProps share their layout. */
cudaError_t cudaMemPoolCreate(cudaMemPool_t *pool, const struct cudaMemPoolProps *props)
{
    SIMCUDART_ENTER();
    return simcudart__driver_result(
        cuMemPoolCreate((CUmemoryPool *)pool, (const CUmemPoolProps *)props));
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool)
{
    SIMCUDART_ENTER();
    return simcudart__driver_result(cuMemPoolDestroy((CUmemoryPool)pool));
}

cudaError_t cudaMallocFromPoolAsync(void **pointer, size_t size, cudaMemPool_t pool,
                                    cudaStream_t stream)
{
    return device_malloc(pointer, size, FROM_POOL, stream, pool);
}

static cudaError_t device_handle(int device, CUdevice *handle)
{
    if (device < 0 || device >= simcudart__device_count())
        return cudaErrorInvalidDevice;
    return simcudart__from_driver(cuDeviceGet(handle, device));
}

cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t pool)
{
    CUdevice handle;
    cudaError_t error = device_handle(device, &handle);
    if (error != cudaSuccess)
        return simcudart__result(error);
    return simcudart__driver_result(cuDeviceSetMemPool(handle, (CUmemoryPool)pool));
}

cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *pool, int device)
{
    CUdevice handle;
    cudaError_t error = device_handle(device, &handle);
    if (error != cudaSuccess)
        return simcudart__result(error);
    return simcudart__driver_result(cuDeviceGetMemPool((CUmemoryPool *)pool, handle));
}

/* One device: it always has read-write access to its pools. */
cudaError_t cudaMemPoolGetAccess(enum cudaMemAccessFlags *flags, cudaMemPool_t pool,
                                 struct cudaMemLocation *location)
{
    if (!flags || !pool || !location)
        return simcudart__result(cudaErrorInvalidValue);
    *flags = cudaMemAccessFlagsProtReadWrite;
    return cudaSuccess;
}

/* Prefetches and attachments change nothing simcuda keeps books on. */
cudaError_t cudaMemPrefetchAsync(const void *pointer, size_t count, struct cudaMemLocation location,
                                 unsigned int flags, cudaStream_t stream)
{
    return pointer ? cudaSuccess : simcudart__result(cudaErrorInvalidValue);
}

cudaError_t cudaStreamAttachMemAsync(cudaStream_t stream, void *pointer, size_t length,
                                     unsigned int flags)
{
    return pointer ? cudaSuccess : simcudart__result(cudaErrorInvalidValue);
}
