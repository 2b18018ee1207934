/* rec_memory.c — what the wrappers record of plain device memory, IPC handles, pinned host
 * memory and CUDA arrays, and of the legacy ABI's forms of them (record.h). */
#include "record.h"

void cmt__rec_cuMemAlloc_v2(struct cmt_event *e, int ok, CUdeviceptr *dptr, size_t bytesize)
{
    CMT__SET(e, SIZE, bytesize);
    CMT__OUT(e, ok, PTR, dptr);
}

void cmt__rec_cuMemAllocPitch_v2(struct cmt_event *e, int ok, CUdeviceptr *dptr, size_t *pPitch,
                                 size_t width, size_t height, unsigned int elem)
{
    CMT__SET(e, WIDTH, width);
    CMT__SET(e, HEIGHT, height);
    CMT__SET(e, SIZE, width * height); /* requested; replaced by pitch × height on success */
    if (ok && pPitch) {
        CMT__SET(e, PITCH, *pPitch);
        CMT__SET(e, SIZE, *pPitch * height);
    }
    CMT__OUT(e, ok, PTR, dptr);
    (void)elem;
}

void cmt__rec_cuMemAllocManaged(struct cmt_event *e, int ok, CUdeviceptr *dptr, size_t bytesize,
                                unsigned int flags)
{
    CMT__SET(e, SIZE, bytesize);
    CMT__SET(e, FLAGS, flags);
    CMT__OUT(e, ok, PTR, dptr);
}

void cmt__rec_cuMemFree_v2(struct cmt_event *e, int ok, CUdeviceptr dptr)
{
    CMT__SET(e, PTR, dptr);
}

void cmt__rec_cuMemGetInfo_v2(struct cmt_event *e, int ok, size_t *free, size_t *total)
{
    CMT__OUT(e, ok, FREE, free);
    CMT__OUT(e, ok, TOTAL, total);
}

void cmt__rec_cuIpcOpenMemHandle_v2(struct cmt_event *e, int ok, CUdeviceptr *pdptr,
                                    CUipcMemHandle handle, unsigned int flags)
{
    CMT__SET(e, FLAGS, flags);
    CMT__OUT(e, ok, PTR, pdptr);
}

CMT__REC_SAME(cuIpcOpenMemHandle, cuIpcOpenMemHandle_v2);

void cmt__rec_cuIpcCloseMemHandle(struct cmt_event *e, int ok, CUdeviceptr dptr)
{
    CMT__SET(e, PTR, dptr);
}

void cmt__rec_cuMemAllocHost_v2(struct cmt_event *e, int ok, void **pp, size_t bytesize)
{
    CMT__SET(e, SIZE, bytesize);
    if (ok && pp)
        CMT__SET(e, PTR, (uintptr_t)*pp);
}

void cmt__rec_cuMemHostAlloc(struct cmt_event *e, int ok, void **pp, size_t bytesize,
                             unsigned int flags)
{
    cmt__rec_cuMemAllocHost_v2(e, ok, pp, bytesize);
    CMT__SET(e, FLAGS, flags);
}

void cmt__rec_cuMemFreeHost(struct cmt_event *e, int ok, void *p)
{
    CMT__SET(e, PTR, (uintptr_t)p);
}

/* Pinned host registration: existing host memory becomes page-locked (host_pinned bytes). */
void cmt__rec_cuMemHostRegister_v2(struct cmt_event *e, int ok, void *p, size_t bytesize,
                                   unsigned int flags)
{
    CMT__SET(e, PTR, (uintptr_t)p);
    CMT__SET(e, SIZE, bytesize);
    CMT__SET(e, FLAGS, flags);
}

void cmt__rec_cuMemHostUnregister(struct cmt_event *e, int ok, void *p)
{
    CMT__SET(e, PTR, (uintptr_t)p);
}

/* CUDA arrays: the requested bytes are width × height × depth × element size (a zero height
 * or depth counts as 1), summed over mip levels (each halves every extent down to 1; layered
 * and cubemap arrays keep their depth, the layer count). YUV and block-compressed formats have
 * no element size here: their size is recorded as 0 (docs/analysis.md). */
static uint64_t array_element_bytes(CUarray_format format, unsigned channels)
{
    switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: return channels;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 2ull * channels;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: return 4ull * channels;
    case CU_AD_FORMAT_UNORM_INT8X1:
    case CU_AD_FORMAT_SNORM_INT8X1: return 1;
    case CU_AD_FORMAT_UNORM_INT8X2:
    case CU_AD_FORMAT_SNORM_INT8X2:
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X1: return 2;
    case CU_AD_FORMAT_UNORM_INT8X4:
    case CU_AD_FORMAT_SNORM_INT8X4:
    case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X2:
    case CU_AD_FORMAT_UNORM_INT_101010_2: return 4;
    case CU_AD_FORMAT_UNORM_INT16X4:
    case CU_AD_FORMAT_SNORM_INT16X4: return 8;
    default: return 0;
    }
}

static uint64_t array_extent(uint64_t n, unsigned level)
{
    return n == 0 ? 1 : (n >> level) ? (n >> level) : 1;
}

static void rec_array(struct cmt_event *e, int ok, void *handle, size_t width, size_t height,
                      size_t depth, CUarray_format format, unsigned channels, unsigned flags,
                      unsigned levels)
{
    int keeps_depth = (flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) != 0;
    uint64_t element = array_element_bytes(format, channels), bytes = 0;
    for (unsigned level = 0; level < levels && width; level++)
        bytes += array_extent(width, level) * array_extent(height, level) *
                 array_extent(depth, keeps_depth ? 0 : level) * element;
    CMT__SET(e, SIZE, bytes);
    CMT__SET(e, WIDTH, width);
    CMT__SET(e, HEIGHT, height);
    if (ok)
        CMT__SET(e, PTR, (uintptr_t)handle);
}

void cmt__rec_cuArrayCreate_v2(struct cmt_event *e, int ok, CUarray *pHandle,
                               const CUDA_ARRAY_DESCRIPTOR *d)
{
    if (d)
        rec_array(e, ok && pHandle, pHandle ? *pHandle : NULL, d->Width, d->Height, 0, d->Format,
                  d->NumChannels, 0, 1);
    else
        CMT__SET(e, SIZE, 0);
}

static void rec_array_3d(struct cmt_event *e, int ok, void *handle,
                         const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
    if (!d) {
        CMT__SET(e, SIZE, 0);
        return;
    }
    rec_array(e, ok, handle, d->Width, d->Height, d->Depth, d->Format, d->NumChannels, d->Flags,
              levels);
    CMT__SET(e, FLAGS, d->Flags);
}

void cmt__rec_cuArray3DCreate_v2(struct cmt_event *e, int ok, CUarray *pHandle,
                                 const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    rec_array_3d(e, ok && pHandle, pHandle ? *pHandle : NULL, d, 1);
}

void cmt__rec_cuMipmappedArrayCreate(struct cmt_event *e, int ok, CUmipmappedArray *pHandle,
                                     const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
    rec_array_3d(e, ok && pHandle, pHandle ? *pHandle : NULL, d, levels);
    CMT__SET(e, COUNT, levels);
}

void cmt__rec_cuArrayDestroy(struct cmt_event *e, int ok, CUarray hArray)
{
    CMT__SET(e, PTR, (uintptr_t)hArray);
}

void cmt__rec_cuMipmappedArrayDestroy(struct cmt_event *e, int ok, CUmipmappedArray h)
{
    CMT__SET(e, PTR, (uintptr_t)h);
}

/* The legacy ABI (32-bit sizes and pointers, v1 descriptors): recorded as their _v2
 * counterparts. */
void cmt__rec_cuMemAlloc(struct cmt_event *e, int ok, CUdeviceptr_v1 *dptr, unsigned bytesize)
{
    CMT__SET(e, SIZE, bytesize);
    CMT__OUT(e, ok, PTR, dptr);
}

void cmt__rec_cuMemAllocPitch(struct cmt_event *e, int ok, CUdeviceptr_v1 *dptr, unsigned *pPitch,
                              unsigned width, unsigned height, unsigned elem)
{
    CMT__SET(e, WIDTH, width);
    CMT__SET(e, HEIGHT, height);
    CMT__SET(e, SIZE, (uint64_t)width * height);
    if (ok && pPitch) {
        CMT__SET(e, PITCH, *pPitch);
        CMT__SET(e, SIZE, (uint64_t)*pPitch * height);
    }
    CMT__OUT(e, ok, PTR, dptr);
    (void)elem;
}

void cmt__rec_cuMemFree(struct cmt_event *e, int ok, CUdeviceptr_v1 dptr)
{
    CMT__SET(e, PTR, dptr);
}

void cmt__rec_cuMemAllocHost(struct cmt_event *e, int ok, void **pp, unsigned bytesize)
{
    cmt__rec_cuMemAllocHost_v2(e, ok, pp, bytesize);
}

void cmt__rec_cuMemGetInfo(struct cmt_event *e, int ok, unsigned *free, unsigned *total)
{
    CMT__OUT(e, ok, FREE, free);
    CMT__OUT(e, ok, TOTAL, total);
}

void cmt__rec_cuArrayCreate(struct cmt_event *e, int ok, CUarray *pHandle,
                            const CUDA_ARRAY_DESCRIPTOR_v1 *d)
{
    if (d)
        rec_array(e, ok && pHandle, pHandle ? *pHandle : NULL, d->Width, d->Height, 0, d->Format,
                  d->NumChannels, 0, 1);
    else
        CMT__SET(e, SIZE, 0);
}

void cmt__rec_cuArray3DCreate(struct cmt_event *e, int ok, CUarray *pHandle,
                              const CUDA_ARRAY3D_DESCRIPTOR_v1 *d)
{
    if (!d) {
        CMT__SET(e, SIZE, 0);
        return;
    }
    rec_array(e, ok && pHandle, pHandle ? *pHandle : NULL, d->Width, d->Height, d->Depth, d->Format,
              d->NumChannels, d->Flags, 1);
    CMT__SET(e, FLAGS, d->Flags);
}
