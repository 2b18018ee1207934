/* Pinned host memory: allocations (real page-aligned memory, never counted against a
 * device), registration of the program's own memory, and their device pointers (the host
 * address itself: simcuda's devices use unified addressing). */
#include "simcuda_internal.h"
#include "simcuda_log.h"

#include <stdlib.h>

static CUresult host_alloc(void **pp, uint64_t size, unsigned int flags)
{
    struct CUctx_st *ctx;
    simcuda__lock();
    CUresult result = simcuda__require_context(&ctx);
    if (result == CUDA_SUCCESS && (!pp || size == 0 || (flags & ~7u)))
        result = CUDA_ERROR_INVALID_VALUE;
    struct simcuda__host_block *block = NULL;
    void *pointer = NULL;
    if (result == CUDA_SUCCESS) {
        block = malloc(sizeof(*block));
        if (!block || posix_memalign(&pointer, 4096, size) != 0) {
            free(block);
            result = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    if (result == CUDA_SUCCESS) {
        *block = (struct simcuda__host_block){.pointer = pointer, .size = size, .flags = flags};
        block->next = simcuda__state.host_blocks;
        simcuda__state.host_blocks = block;
        *pp = pointer;
    }
    simcuda__unlock();
    return result;
}

/* Lock held. The host block (allocated or registered) containing p, or NULL. */
static struct simcuda__host_block *host_block_at(const void *p)
{
    for (struct simcuda__host_block *b = simcuda__state.host_blocks; b; b = b->next) {
        if ((uintptr_t)p - (uintptr_t)b->pointer < b->size)
            return b;
    }
    return NULL;
}

bool simcuda__host_range_pinned(uint64_t address, uint64_t size)
{
    const struct simcuda__host_block *b = host_block_at((const void *)(uintptr_t)address);
    return b && b->size - (address - (uintptr_t)b->pointer) >= size;
}

#define SIMCUDA__HOST_OUT(result, pp) ((result) == CUDA_SUCCESS ? (uintptr_t) * (pp) : 0)

SIMCUDA_EXPORT CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    CUresult result = host_alloc(pp, bytesize, 0);
    return SIMCUDA__LOG(result, SIMCUDA__HOST_OUT(result, pp), bytesize, 0);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemAllocHost(void **pp, unsigned int bytesize)
{
    CUresult result = host_alloc(pp, bytesize, 0);
    return SIMCUDA__LOG(result, SIMCUDA__HOST_OUT(result, pp), bytesize, 0);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    CUresult result = host_alloc(pp, bytesize, Flags);
    return SIMCUDA__LOG(result, SIMCUDA__HOST_OUT(result, pp), bytesize, 0);
}

/* Removes the host block that starts at p, allocated (registered 0) or registered (1).
 * @return CUDA_SUCCESS, or `missing` when there is no such block. */
static CUresult host_release(void *p, int registered, CUresult missing)
{
    struct CUctx_st *ctx;
    simcuda__lock();
    CUresult result = simcuda__require_context(&ctx);
    if (result == CUDA_SUCCESS) {
        result = missing;
        for (struct simcuda__host_block **link = &simcuda__state.host_blocks; *link;
             link = &(*link)->next) {
            if ((*link)->pointer == p && (*link)->registered == registered) {
                struct simcuda__host_block *block = *link;
                *link = block->next;
                if (!registered)
                    free(block->pointer);
                free(block);
                result = CUDA_SUCCESS;
                break;
            }
        }
    }
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemFreeHost(void *p)
{
    return SIMCUDA__LOG(host_release(p, 0, CUDA_ERROR_INVALID_VALUE), (uintptr_t)p, 0, 0);
}

/* Registration pins the program's own memory: ranges may not overlap, only the start of a
 * registered range unregisters it, and cuMemFreeHost never frees it. */
static CUresult host_register(void *p, size_t bytesize, unsigned int flags)
{
    struct CUctx_st *ctx;
    simcuda__lock();
    CUresult result = simcuda__require_context(&ctx);
    if (result == CUDA_SUCCESS && (!p || bytesize == 0 || (flags & ~15u)))
        result = CUDA_ERROR_INVALID_VALUE;
    uintptr_t lo = (uintptr_t)p, hi = lo + bytesize;
    for (struct simcuda__host_block *b = simcuda__state.host_blocks; result == CUDA_SUCCESS && b;
         b = b->next) {
        uintptr_t blo = (uintptr_t)b->pointer, bhi = blo + b->size;
        if (b->registered && lo < bhi && blo < hi)
            result = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    }
    struct simcuda__host_block *block = NULL;
    if (result == CUDA_SUCCESS && !(block = malloc(sizeof(*block))))
        result = CUDA_ERROR_OUT_OF_MEMORY;
    if (result == CUDA_SUCCESS) {
        *block = (struct simcuda__host_block){.pointer = p,
                                              .size = bytesize,
                                              .flags = flags,
                                              .registered = 1,
                                              .next = simcuda__state.host_blocks};
        simcuda__state.host_blocks = block;
    }
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    return SIMCUDA__LOG(host_register(p, bytesize, Flags), (uintptr_t)p, bytesize, 0);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    return SIMCUDA__LOG(host_register(p, bytesize, Flags), (uintptr_t)p, bytesize, 0);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemHostUnregister(void *p)
{
    return SIMCUDA__LOG(host_release(p, 1, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED), (uintptr_t)p, 0,
                        0);
}

/* Unified addressing: the device pointer of pinned host memory is its host address. */
static CUresult host_device_pointer(uint64_t *out, void *p, unsigned int flags)
{
    struct CUctx_st *ctx;
    simcuda__lock();
    CUresult result = simcuda__require_context(&ctx);
    if (result == CUDA_SUCCESS && (!out || flags != 0))
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS && !host_block_at(p))
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS)
        *out = (uintptr_t)p;
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p,
                                                             unsigned int Flags)
{
    uint64_t address;
    CUresult result = host_device_pointer(pdptr ? &address : NULL, p, Flags);
    if (result == CUDA_SUCCESS)
        *pdptr = address;
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr_v1 *pdptr, void *p,
                                                          unsigned int Flags)
{
    uint64_t address;
    CUresult result = host_device_pointer(pdptr ? &address : NULL, p, Flags);
    if (result == CUDA_SUCCESS && address > UINT32_MAX)
        result = CUDA_ERROR_INVALID_VALUE; /* no 32-bit device pointer for it */
    if (result == CUDA_SUCCESS)
        *pdptr = (CUdeviceptr_v1)address;
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
    struct CUctx_st *ctx;
    simcuda__lock();
    CUresult result = simcuda__require_context(&ctx);
    struct simcuda__host_block *block = result == CUDA_SUCCESS ? host_block_at(p) : NULL;
    if (result == CUDA_SUCCESS && (!pFlags || !block))
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS)
        *pFlags = block->flags;
    simcuda__unlock();
    return result;
}
