/* Copies and sets. Device memory holds no bytes (its range is checked and nothing moves),
 * except managed memory with host pages behind it (simcuda_memory.c) and the blocks of an
 * exportable pool and their imports in another process (simcuda_pool_ipc.c). Host memory (pinned, or
 * the program's own, reached through unified addressing) is real. Between two endpoints that
 * hold bytes the bytes really move, so a program that fills managed memory on the host, copies
 * it and reads it back sees its data; a copy out of plain device memory leaves the destination
 * as it was. Streams never hold work, so the asynchronous variants are the synchronous ones
 * after a check of the stream. */
#include "simcuda_internal.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* One side of a copy: `bytes` is where its bytes are, NULL for device memory without any. */
struct endpoint {
    void *bytes;
};

enum side { SIDE_DEVICE, SIDE_HOST, SIDE_ANY };

/* Whether the first and last page of a host range are mapped (a copy to an address that is
 * neither a live device range nor mapped host memory fails instead of crashing). */
static bool host_mapped(uint64_t address, uint64_t size)
{
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    unsigned char resident;
    uint64_t last = size ? address + size - 1 : address;
    return mincore((void *)(uintptr_t)(address / page * page), 1, &resident) == 0 &&
           mincore((void *)(uintptr_t)(last / page * page), 1, &resident) == 0;
}

/* Lock held. Classifies [address, address + size): a live device range (checked whole), pinned
 * host memory (a device address too, under unified addressing), or, for SIDE_HOST/SIDE_ANY,
 * host memory: an address that lies in no live device allocation is the program's, whatever
 * numeric range it falls in. */
static CUresult endpoint_of(uint64_t address, uint64_t size, enum side side, struct endpoint *out)
{
    struct simcuda__va_entry *entry = side == SIDE_HOST ? NULL : simcuda__find_range(address, NULL);
    out->bytes = NULL;
    if (!entry && side == SIDE_DEVICE && simcuda__host_range_pinned(address, size)) {
        out->bytes = (void *)(uintptr_t)address; /* pinned host memory's device pointer */
        return CUDA_SUCCESS;
    }
    if (!entry) {
        if (side == SIDE_DEVICE || (address == 0 && size > 0) ||
            (side == SIDE_ANY && size > 0 && !host_mapped(address, size)))
            return CUDA_ERROR_INVALID_VALUE;
        out->bytes = (void *)(uintptr_t)address;
        return CUDA_SUCCESS;
    }
    CUresult result = simcuda__check_device_range(address, size);
    if (result == CUDA_SUCCESS && entry->kind == SIMCUDA__RANGE_ALLOC) {
        const struct simcuda__alloc *alloc = entry->object;
        if (alloc->host)
            out->bytes = (char *)alloc->host + (address - entry->base);
    } else if (result == CUDA_SUCCESS && entry->kind == SIMCUDA__RANGE_POOL_BLOCK) {
        const struct simcuda__pool_block *block = entry->object;
        if (block->host) /* an exportable pool's block (simcuda_pool_ipc.c) */
            out->bytes = (char *)block->host + (address - entry->base);
    }
    return result;
}

static CUresult copy(uint64_t dst, enum side dst_side, uint64_t src, enum side src_side,
                     uint64_t size, CUstream stream)
{
    struct CUctx_st *ctx;
    struct endpoint to, from;
    simcuda__lock();
    CUresult result = simcuda__stream_context(stream, &ctx);
    if (result == CUDA_SUCCESS)
        result = endpoint_of(dst, size, dst_side, &to);
    if (result == CUDA_SUCCESS)
        result = endpoint_of(src, size, src_side, &from);
    if (result == CUDA_SUCCESS && size > 0 && to.bytes && from.bytes)
        memmove(to.bytes, from.bytes, size);
    simcuda__unlock();
    return result;
}

/* Sets count elements of `width` bytes (1, 2 or 4) to value. */
static CUresult set(uint64_t dst, uint32_t value, uint64_t count, unsigned width, CUstream stream)
{
    struct CUctx_st *ctx;
    struct endpoint to;
    if (count > UINT64_MAX / width)
        return CUDA_ERROR_INVALID_VALUE;
    simcuda__lock();
    CUresult result = simcuda__stream_context(stream, &ctx);
    if (result == CUDA_SUCCESS)
        result = endpoint_of(dst, count * width, SIDE_DEVICE, &to);
    for (uint64_t i = 0; result == CUDA_SUCCESS && to.bytes && i < count; i++)
        memcpy((char *)to.bytes + i * width, &value, width); /* little-endian: the low bytes */
    simcuda__unlock();
    return result;
}

#define H(pointer) ((uint64_t)(uintptr_t)(pointer))

/* The per-thread-stream variants without a prototype in cuda.h take their base's. */
__typeof__(cuMemcpyHtoDAsync_v2) cuMemcpyHtoDAsync_v2_ptsz;
__typeof__(cuMemcpyDtoHAsync_v2) cuMemcpyDtoHAsync_v2_ptsz;
__typeof__(cuMemcpyDtoDAsync_v2) cuMemcpyDtoDAsync_v2_ptsz;
__typeof__(cuMemcpyDtoD_v2) cuMemcpyDtoD_v2_ptds;
__typeof__(cuMemcpy) cuMemcpy_ptds;
__typeof__(cuMemcpyAsync) cuMemcpyAsync_ptsz;
__typeof__(cuMemsetD32_v2) cuMemsetD32_v2_ptds;
__typeof__(cuMemsetD8Async) cuMemsetD8Async_ptsz;
__typeof__(cuMemsetD32Async) cuMemsetD32Async_ptsz;
__typeof__(cuStreamWriteValue32_v2) cuStreamWriteValue32_v2_ptsz;

/* clang-format off */
#define SIMCUDA__HTOD(name, ptr_t, size_t_, stream_param, stream) \
    SIMCUDA_EXPORT CUresult CUDAAPI name(ptr_t dst, const void *src, size_t_ n stream_param) \
    { return copy(dst, SIDE_DEVICE, H(src), SIDE_HOST, n, stream); }
#define SIMCUDA__DTOH(name, ptr_t, size_t_, stream_param, stream) \
    SIMCUDA_EXPORT CUresult CUDAAPI name(void *dst, ptr_t src, size_t_ n stream_param) \
    { return copy(H(dst), SIDE_HOST, src, SIDE_DEVICE, n, stream); }
#define SIMCUDA__DTOD(name, ptr_t, size_t_, stream_param, stream) \
    SIMCUDA_EXPORT CUresult CUDAAPI name(ptr_t dst, ptr_t src, size_t_ n stream_param) \
    { return copy(dst, SIDE_DEVICE, src, SIDE_DEVICE, n, stream); }
#define SIMCUDA__ANY(name, stream_param, stream) \
    SIMCUDA_EXPORT CUresult CUDAAPI name(CUdeviceptr dst, CUdeviceptr src, size_t n stream_param) \
    { return copy(dst, SIDE_ANY, src, SIDE_ANY, n, stream); }
#define SIMCUDA__SET(name, ptr_t, value_t, width, size_t_, stream_param, stream) \
    SIMCUDA_EXPORT CUresult CUDAAPI name(ptr_t dst, value_t value, size_t_ n stream_param) \
    { return set(dst, value, n, width, stream); }
#define SIMCUDA__STREAM , CUstream hStream
#define SIMCUDA__NONE

SIMCUDA__HTOD(cuMemcpyHtoD, CUdeviceptr_v1, unsigned int, SIMCUDA__NONE, NULL)
SIMCUDA__HTOD(cuMemcpyHtoD_v2, CUdeviceptr, size_t, SIMCUDA__NONE, NULL)
SIMCUDA__HTOD(cuMemcpyHtoD_v2_ptds, CUdeviceptr, size_t, SIMCUDA__NONE, NULL)
SIMCUDA__HTOD(cuMemcpyHtoDAsync, CUdeviceptr_v1, unsigned int, SIMCUDA__STREAM, hStream)
SIMCUDA__HTOD(cuMemcpyHtoDAsync_v2, CUdeviceptr, size_t, SIMCUDA__STREAM, hStream)
SIMCUDA__HTOD(cuMemcpyHtoDAsync_v2_ptsz, CUdeviceptr, size_t, SIMCUDA__STREAM, hStream)
SIMCUDA__DTOH(cuMemcpyDtoH, CUdeviceptr_v1, unsigned int, SIMCUDA__NONE, NULL)
SIMCUDA__DTOH(cuMemcpyDtoH_v2, CUdeviceptr, size_t, SIMCUDA__NONE, NULL)
SIMCUDA__DTOH(cuMemcpyDtoH_v2_ptds, CUdeviceptr, size_t, SIMCUDA__NONE, NULL)
SIMCUDA__DTOH(cuMemcpyDtoHAsync, CUdeviceptr_v1, unsigned int, SIMCUDA__STREAM, hStream)
SIMCUDA__DTOH(cuMemcpyDtoHAsync_v2, CUdeviceptr, size_t, SIMCUDA__STREAM, hStream)
SIMCUDA__DTOH(cuMemcpyDtoHAsync_v2_ptsz, CUdeviceptr, size_t, SIMCUDA__STREAM, hStream)
SIMCUDA__DTOD(cuMemcpyDtoD, CUdeviceptr_v1, unsigned int, SIMCUDA__NONE, NULL)
SIMCUDA__DTOD(cuMemcpyDtoD_v2, CUdeviceptr, size_t, SIMCUDA__NONE, NULL)
SIMCUDA__DTOD(cuMemcpyDtoD_v2_ptds, CUdeviceptr, size_t, SIMCUDA__NONE, NULL)
SIMCUDA__DTOD(cuMemcpyDtoDAsync, CUdeviceptr_v1, unsigned int, SIMCUDA__STREAM, hStream)
SIMCUDA__DTOD(cuMemcpyDtoDAsync_v2, CUdeviceptr, size_t, SIMCUDA__STREAM, hStream)
SIMCUDA__DTOD(cuMemcpyDtoDAsync_v2_ptsz, CUdeviceptr, size_t, SIMCUDA__STREAM, hStream)
SIMCUDA__ANY(cuMemcpy, SIMCUDA__NONE, NULL)
SIMCUDA__ANY(cuMemcpy_ptds, SIMCUDA__NONE, NULL)
SIMCUDA__ANY(cuMemcpyAsync, SIMCUDA__STREAM, hStream)
SIMCUDA__ANY(cuMemcpyAsync_ptsz, SIMCUDA__STREAM, hStream)
SIMCUDA__SET(cuMemsetD8, CUdeviceptr_v1, unsigned char, 1, unsigned int, SIMCUDA__NONE, NULL)
SIMCUDA__SET(cuMemsetD8_v2, CUdeviceptr, unsigned char, 1, size_t, SIMCUDA__NONE, NULL)
SIMCUDA__SET(cuMemsetD8_v2_ptds, CUdeviceptr, unsigned char, 1, size_t, SIMCUDA__NONE, NULL)
SIMCUDA__SET(cuMemsetD8Async, CUdeviceptr, unsigned char, 1, size_t, SIMCUDA__STREAM, hStream)
SIMCUDA__SET(cuMemsetD8Async_ptsz, CUdeviceptr, unsigned char, 1, size_t, SIMCUDA__STREAM, hStream)
SIMCUDA__SET(cuMemsetD32, CUdeviceptr_v1, unsigned int, 4, unsigned int, SIMCUDA__NONE, NULL)
SIMCUDA__SET(cuMemsetD32_v2, CUdeviceptr, unsigned int, 4, size_t, SIMCUDA__NONE, NULL)
SIMCUDA__SET(cuMemsetD32_v2_ptds, CUdeviceptr, unsigned int, 4, size_t, SIMCUDA__NONE, NULL)
/* PyTorch's c10 insists on finding cuMemsetD32Async and cuStreamWriteValue32 in the driver. */
SIMCUDA__SET(cuMemsetD32Async, CUdeviceptr, unsigned int, 4, size_t, SIMCUDA__STREAM, hStream)
SIMCUDA__SET(cuMemsetD32Async_ptsz, CUdeviceptr, unsigned int, 4, size_t, SIMCUDA__STREAM, hStream)
/* clang-format on */

/* One 32-bit word, written now (the stream never holds work). */
static CUresult write_value32(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                              unsigned int flags)
{
    return flags & ~(unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER
               ? CUDA_ERROR_INVALID_VALUE
               : set(addr, value, 1, 4, stream);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamWriteValue32(CUstream stream, CUdeviceptr addr,
                                                     cuuint32_t value, unsigned int flags)
{
    return write_value32(stream, addr, value, flags);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamWriteValue32_ptsz(CUstream stream, CUdeviceptr addr,
                                                          cuuint32_t value, unsigned int flags)
{
    return write_value32(stream, addr, value, flags);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamWriteValue32_v2(CUstream stream, CUdeviceptr addr,
                                                        cuuint32_t value, unsigned int flags)
{
    return write_value32(stream, addr, value, flags);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamWriteValue32_v2_ptsz(CUstream stream, CUdeviceptr addr,
                                                             cuuint32_t value, unsigned int flags)
{
    return write_value32(stream, addr, value, flags);
}
