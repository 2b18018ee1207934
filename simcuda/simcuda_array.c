/* simcuda_array.c — CUDA arrays and mipmapped arrays (simulated): device pages, no texels.
 *
 * An array takes the pages of its requested bytes: width × height × depth × element size, a
 * zero height or depth counting as 1, summed over the mip levels of a mipmapped array (each
 * level halves every extent, down to 1; a layered or cubemap array keeps its depth, the
 * layer count). Element sizes are those of the plain and normalized formats; the YUV and
 * block-compressed formats are not simulated (CUDA_ERROR_NOT_SUPPORTED). A handle is an
 * object of this file, found in its list before use, so a stale or foreign handle gives
 * CUDA_ERROR_INVALID_HANDLE. Arrays belong to the context current at creation and go away
 * with it. */
#include <stdlib.h>

#include "simcuda_internal.h"
#include "simcuda_log.h"

/* One array or mipmapped array (CUarray and CUmipmappedArray point at this). */
struct simcuda__array {
    struct simcuda__phys *phys;
    struct CUctx_st *ctx;
    uint64_t bytes;
    bool mipmapped;
    struct simcuda__array *next;
};

static struct simcuda__array *arrays; /* lock held */

/* @return bytes of one element of `format` with `channels` channels, 0 when not simulated. */
static uint64_t element_bytes(CUarray_format format, unsigned channels)
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

static uint64_t extent(uint64_t n, unsigned level)
{
    if (n == 0)
        return 1;
    n >>= level;
    return n ? n : 1;
}

/* @return the descriptor's bytes over `levels` mip levels, 0 for an unsimulated format or a
 * zero width. */
static uint64_t array_bytes(const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned levels)
{
    uint64_t element = element_bytes(desc->Format, desc->NumChannels);
    bool keeps_depth = desc->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP);
    uint64_t bytes = 0;
    for (unsigned level = 0; level < levels && desc->Width; level++)
        bytes += extent(desc->Width, level) * extent(desc->Height, level) *
                 extent(desc->Depth, keeps_depth ? 0 : level) * element;
    return bytes;
}

static CUresult array_create(void **out, const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned levels,
                             bool mipmapped, uint64_t *bytes)
{
    /* computed before any check, so that a failed call logs the size it asked for */
    *bytes = desc ? array_bytes(desc, levels) : 0;
    struct CUctx_st *ctx;
    simcuda__lock();
    CUresult result = simcuda__require_context(&ctx);
    if (result == CUDA_SUCCESS && (!out || !desc || desc->Width == 0 || levels == 0 ||
                                   desc->NumChannels == 0 || desc->NumChannels > 4))
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS && *bytes == 0)
        result = CUDA_ERROR_NOT_SUPPORTED;
    struct simcuda__array *array = NULL;
    if (result == CUDA_SUCCESS && !(array = calloc(1, sizeof(*array))))
        result = CUDA_ERROR_OUT_OF_MEMORY;
    if (result == CUDA_SUCCESS)
        result = simcuda__phys_create(ctx->device, *bytes, &array->phys);
    if (result == CUDA_SUCCESS) {
        array->phys->handle_refs = 1;
        array->ctx = ctx;
        array->bytes = *bytes;
        array->mipmapped = mipmapped;
        array->next = arrays;
        arrays = array;
        *out = array;
    } else {
        free(array);
    }
    simcuda__unlock();
    return result;
}

static void array_free(struct simcuda__array **link)
{
    struct simcuda__array *array = *link;
    *link = array->next;
    array->phys->handle_refs = 0;
    simcuda__phys_maybe_free(array->phys);
    free(array);
}

static CUresult array_destroy(void *handle, bool mipmapped)
{
    simcuda__lock();
    CUresult result = simcuda__require_init();
    struct simcuda__array **link = &arrays;
    while (*link && (*link != handle || (*link)->mipmapped != mipmapped))
        link = &(*link)->next;
    if (result == CUDA_SUCCESS && !*link)
        result = CUDA_ERROR_INVALID_HANDLE;
    if (result == CUDA_SUCCESS)
        array_free(link);
    simcuda__unlock();
    return result;
}

void simcuda__free_context_arrays(struct CUctx_st *ctx)
{
    for (struct simcuda__array **link = &arrays; *link;) {
        if ((*link)->ctx == ctx)
            array_free(link);
        else
            link = &(*link)->next;
    }
}

/* Creates a one-level array from a descriptor in 3D form; logs the call as `entry`. */
static CUresult create_logged(const char *entry, CUarray *pHandle,
                              const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
    void *array = NULL;
    uint64_t bytes = 0;
    CUresult result = array_create(pHandle ? &array : NULL, desc, 1, false, &bytes);
    if (result == CUDA_SUCCESS)
        *pHandle = array;
    return simcuda__log(entry, result, (uintptr_t)array, bytes, 0);
}

/* A 2D descriptor (either width of its extents) in 3D form. */
#define SIMCUDA__ARRAY_2D(desc, p)             \
    do {                                       \
        (desc).Width = (p)->Width;             \
        (desc).Height = (p)->Height;           \
        (desc).Format = (p)->Format;           \
        (desc).NumChannels = (p)->NumChannels; \
    } while (0)

SIMCUDA_EXPORT CUresult CUDAAPI cuArrayCreate_v2(CUarray *pHandle,
                                                 const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    CUDA_ARRAY3D_DESCRIPTOR desc = {0};
    if (pAllocateArray)
        SIMCUDA__ARRAY_2D(desc, pAllocateArray);
    return create_logged(__func__, pHandle, pAllocateArray ? &desc : NULL);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuArray3DCreate_v2(CUarray *pHandle,
                                                   const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    return create_logged(__func__, pHandle, pAllocateArray);
}

/* The legacy variants, with 32-bit extents. */
SIMCUDA_EXPORT CUresult CUDAAPI cuArrayCreate(CUarray *pHandle,
                                              const CUDA_ARRAY_DESCRIPTOR_v1 *pAllocateArray)
{
    CUDA_ARRAY3D_DESCRIPTOR desc = {0};
    if (pAllocateArray)
        SIMCUDA__ARRAY_2D(desc, pAllocateArray);
    return create_logged(__func__, pHandle, pAllocateArray ? &desc : NULL);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuArray3DCreate(CUarray *pHandle,
                                                const CUDA_ARRAY3D_DESCRIPTOR_v1 *pAllocateArray)
{
    CUDA_ARRAY3D_DESCRIPTOR desc = {0};
    if (pAllocateArray) {
        desc.Width = pAllocateArray->Width;
        desc.Height = pAllocateArray->Height;
        desc.Depth = pAllocateArray->Depth;
        desc.Format = pAllocateArray->Format;
        desc.NumChannels = pAllocateArray->NumChannels;
        desc.Flags = pAllocateArray->Flags;
    }
    return create_logged(__func__, pHandle, pAllocateArray ? &desc : NULL);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMipmappedArrayCreate(
    CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
    unsigned int numMipmapLevels)
{
    void *array = NULL;
    uint64_t bytes;
    CUresult result = array_create(pHandle ? &array : NULL, pMipmappedArrayDesc, numMipmapLevels,
                                   true, &bytes);
    if (result == CUDA_SUCCESS)
        *pHandle = array;
    return SIMCUDA__LOG(result, (uintptr_t)array, bytes, 0);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuArrayDestroy(CUarray hArray)
{
    return SIMCUDA__LOG(array_destroy(hArray, false), (uintptr_t)hArray, 0, 0);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    return SIMCUDA__LOG(array_destroy(hMipmappedArray, true), (uintptr_t)hMipmappedArray, 0, 0);
}
