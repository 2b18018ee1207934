/* Copies and sets, each the driver call the real runtime makes for it (typed copies for a
 * known direction, the unified-addressing cuMemcpy for cudaMemcpyDefault), so simcuda decides
 * what moves: bytes between host memory and managed memory really move, device memory holds
 * none. 2D and 3D copies and sets go row by row. Arrays are not simulated. */
#include "simcudart_internal.h"

#include <string.h>

#define D(pointer) ((CUdeviceptr)(uintptr_t)(pointer))

/* One contiguous copy; stream NULL with async 0 is the synchronous call. */
static CUresult copy_1d(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                        int async, cudaStream_t stream)
{
    if (count == 0)
        return CUDA_SUCCESS;
    switch (kind) {
    case cudaMemcpyHostToDevice:
        return async ? cuMemcpyHtoDAsync(D(dst), src, count, stream)
                     : cuMemcpyHtoD(D(dst), src, count);
    case cudaMemcpyDeviceToHost:
        return async ? cuMemcpyDtoHAsync(dst, D(src), count, stream)
                     : cuMemcpyDtoH(dst, D(src), count);
    case cudaMemcpyDeviceToDevice:
        return async ? cuMemcpyDtoDAsync(D(dst), D(src), count, stream)
                     : cuMemcpyDtoD(D(dst), D(src), count);
    case cudaMemcpyDefault:
        return async ? cuMemcpyAsync(D(dst), D(src), count, stream)
                     : cuMemcpy(D(dst), D(src), count);
    case cudaMemcpyHostToHost: memmove(dst, src, count); return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

static cudaError_t copy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                        int async, cudaStream_t stream)
{
    if ((unsigned)kind > cudaMemcpyDefault)
        return simcudart__result(cudaErrorInvalidMemcpyDirection);
    SIMCUDART_ENTER();
    return simcudart__driver_result(copy_1d(dst, src, count, kind, async, stream));
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    return copy(dst, src, count, kind, 0, NULL);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream)
{
    return copy(dst, src, count, kind, 1, stream);
}

/* One device: a peer copy is a copy between two of its (unified) addresses. */
cudaError_t cudaMemcpyPeer(void *dst, int dst_device, const void *src, int src_device, size_t count)
{
    int devices = simcudart__device_count();
    if (dst_device < 0 || dst_device >= devices || src_device < 0 || src_device >= devices)
        return simcudart__result(cudaErrorInvalidDevice);
    return copy(dst, src, count, cudaMemcpyDefault, 0, NULL);
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_device, const void *src, int src_device,
                                size_t count, cudaStream_t stream)
{
    int devices = simcudart__device_count();
    if (dst_device < 0 || dst_device >= devices || src_device < 0 || src_device >= devices)
        return simcudart__result(cudaErrorInvalidDevice);
    return copy(dst, src, count, cudaMemcpyDefault, 1, stream);
}

/* height rows of width bytes, each at its own pitch. */
static cudaError_t copy_2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                           size_t height, enum cudaMemcpyKind kind, int async, cudaStream_t stream)
{
    if ((unsigned)kind > cudaMemcpyDefault)
        return simcudart__result(cudaErrorInvalidMemcpyDirection);
    if (height > 1 && (width > dpitch || width > spitch))
        return simcudart__result(cudaErrorInvalidPitchValue);
    SIMCUDART_ENTER();
    CUresult result = CUDA_SUCCESS;
    for (size_t row = 0; result == CUDA_SUCCESS && row < height; row++)
        result = copy_1d((char *)dst + row * dpitch, (const char *)src + row * spitch, width, kind,
                         async, stream);
    return simcudart__driver_result(result);
}

cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t height, enum cudaMemcpyKind kind)
{
    return copy_2d(dst, dpitch, src, spitch, width, height, kind, 0, NULL);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                              size_t width, size_t height, enum cudaMemcpyKind kind,
                              cudaStream_t stream)
{
    return copy_2d(dst, dpitch, src, spitch, width, height, kind, 1, stream);
}

/* Pitched memory only: the rows of every slice, at their positions. */
static cudaError_t copy_3d(const struct cudaMemcpy3DParms *p, int async, cudaStream_t stream)
{
    if (!p)
        return simcudart__result(cudaErrorInvalidValue);
    if (p->srcArray || p->dstArray)
        return simcudart__result(cudaErrorNotSupported); /* arrays are not simulated */
    if ((unsigned)p->kind > cudaMemcpyDefault)
        return simcudart__result(cudaErrorInvalidMemcpyDirection);
    SIMCUDART_ENTER();
    const struct cudaPitchedPtr *s = &p->srcPtr, *d = &p->dstPtr;
    CUresult result = CUDA_SUCCESS;
    for (size_t z = 0; result == CUDA_SUCCESS && z < p->extent.depth; z++) {
        for (size_t y = 0; result == CUDA_SUCCESS && y < p->extent.height; y++) {
            size_t src_row = ((p->srcPos.z + z) * s->ysize + p->srcPos.y + y) * s->pitch;
            size_t dst_row = ((p->dstPos.z + z) * d->ysize + p->dstPos.y + y) * d->pitch;
            result = copy_1d((char *)d->ptr + dst_row + p->dstPos.x,
                             (const char *)s->ptr + src_row + p->srcPos.x, p->extent.width, p->kind,
                             async, stream);
        }
    }
    return simcudart__driver_result(result);
}

cudaError_t cudaMemcpy3D(const struct cudaMemcpy3DParms *p)
{
    return copy_3d(p, 0, NULL);
}

cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms *p, cudaStream_t stream)
{
    return copy_3d(p, 1, stream);
}

static CUresult set_1d(void *pointer, int value, size_t count, int async, cudaStream_t stream)
{
    if (count == 0)
        return CUDA_SUCCESS;
    return async ? cuMemsetD8Async(D(pointer), (unsigned char)value, count, stream)
                 : cuMemsetD8(D(pointer), (unsigned char)value, count);
}

cudaError_t cudaMemset(void *pointer, int value, size_t count)
{
    SIMCUDART_ENTER();
    return simcudart__driver_result(set_1d(pointer, value, count, 0, NULL));
}

cudaError_t cudaMemsetAsync(void *pointer, int value, size_t count, cudaStream_t stream)
{
    SIMCUDART_ENTER();
    return simcudart__driver_result(set_1d(pointer, value, count, 1, stream));
}

static cudaError_t set_2d(void *pointer, size_t pitch, int value, size_t width, size_t height,
                          int async, cudaStream_t stream)
{
    if (height > 1 && width > pitch)
        return simcudart__result(cudaErrorInvalidPitchValue);
    SIMCUDART_ENTER();
    CUresult result = CUDA_SUCCESS;
    for (size_t row = 0; result == CUDA_SUCCESS && row < height; row++)
        result = set_1d((char *)pointer + row * pitch, value, width, async, stream);
    return simcudart__driver_result(result);
}

cudaError_t cudaMemset2D(void *pointer, size_t pitch, int value, size_t width, size_t height)
{
    return set_2d(pointer, pitch, value, width, height, 0, NULL);
}

cudaError_t cudaMemset2DAsync(void *pointer, size_t pitch, int value, size_t width, size_t height,
                              cudaStream_t stream)
{
    return set_2d(pointer, pitch, value, width, height, 1, stream);
}

static cudaError_t set_3d(struct cudaPitchedPtr p, int value, struct cudaExtent extent, int async,
                          cudaStream_t stream)
{
    SIMCUDART_ENTER();
    CUresult result = CUDA_SUCCESS;
    for (size_t z = 0; result == CUDA_SUCCESS && z < extent.depth; z++) {
        for (size_t y = 0; result == CUDA_SUCCESS && y < extent.height; y++)
            result = set_1d((char *)p.ptr + (z * p.ysize + y) * p.pitch, value, extent.width, async,
                            stream);
    }
    return simcudart__driver_result(result);
}

cudaError_t cudaMemset3D(struct cudaPitchedPtr p, int value, struct cudaExtent extent)
{
    return set_3d(p, value, extent, 0, NULL);
}

cudaError_t cudaMemset3DAsync(struct cudaPitchedPtr p, int value, struct cudaExtent extent,
                              cudaStream_t stream)
{
    return set_3d(p, value, extent, 1, stream);
}
