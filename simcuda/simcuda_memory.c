/* Classic device allocations (cuMemAlloc family, managed), memory info, address ranges, IPC
 * handles and a range's dma-buf handle. Managed memory lies in its own window and is backed by host pages at the same
 * address (MAP_NORESERVE: untouched pages cost nothing), so the host can read and write it. */
#include "simcuda_internal.h"
#include "simcuda_log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Lock held. Host pages at the managed range's own address; NULL (and one line on stderr, the
 * first time) where the host has something there or refuses, e.g. under a sanitizer's fixed
 * memory layout. The allocation then works as before, for bookkeeping only. */
static void *managed_host_pages(CUdeviceptr base, uint64_t size)
{
    static bool warned;
    void *want = (void *)(uintptr_t)base;
    void *got = mmap(want, size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (got == want)
        return got;
    if (got != MAP_FAILED)
        munmap(got, size); /* a kernel before 4.17 took the address as a hint */
    if (!warned) {
        warned = true;
        fprintf(stderr,
                "simcuda: managed memory at 0x%llx has no host pages (%s): the host must not "
                "touch it\n",
                (unsigned long long)base, got == MAP_FAILED ? strerror(errno) : "address taken");
    }
    return NULL;
}

static const char ipc_magic[8] = "SIMCUDA";

struct ipc_payload {
    char magic[8];
    uint64_t phys_id;
    uint64_t size;
};

/* Lock held. New pages on the context's device, at a fresh address in the chosen space. */
static CUresult alloc_device_memory(struct CUctx_st *ctx, uint64_t size, bool legacy,
                                    enum simcuda__alloc_type type, CUdeviceptr *out)
{
    struct simcuda__device *dev = &simcuda__state.devices[ctx->device];
    struct simcuda__alloc *alloc = calloc(1, sizeof(*alloc));
    struct simcuda__phys *phys;
    if (!alloc)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult result = simcuda__phys_create(ctx->device, size, &phys);
    struct simcuda__va_space *space = type == SIMCUDA__ALLOC_MANAGED ? &dev->managed_va
                                      : legacy                       ? &dev->legacy_va
                                                                     : &dev->va;
    if (result == CUDA_SUCCESS) {
        result = simcuda__va_reserve(space, phys->pages * SIMCUDA__PAGE_SIZE, SIMCUDA__PAGE_SIZE, 0,
                                     SIMCUDA__RANGE_ALLOC, alloc, out);
        if (result != CUDA_SUCCESS)
            simcuda__phys_maybe_free(phys);
    }
    if (result != CUDA_SUCCESS) {
        free(alloc);
        return result;
    }
    phys->map_count = 1;
    alloc->phys = phys;
    alloc->size = size;
    alloc->ctx = ctx;
    alloc->type = type;
    if (type == SIMCUDA__ALLOC_MANAGED)
        alloc->host = managed_host_pages(*out, phys->pages * SIMCUDA__PAGE_SIZE);
    return CUDA_SUCCESS;
}

void simcuda__alloc_release(struct simcuda__va_space *space, struct simcuda__va_entry *entry)
{
    struct simcuda__alloc *alloc = entry->object;
    if (alloc->host) /* the range spans the host pages (a pool import: no phys) */
        munmap(alloc->host, entry->size);
    simcuda__va_release(space, entry->base);
    if (alloc->phys) {
        alloc->phys->map_count--;
        simcuda__phys_maybe_free(alloc->phys);
    }
    free(alloc);
}

void simcuda__free_context_memory(struct CUctx_st *ctx)
{
    for (int d = 0; d < simcuda__state.device_count; d++) {
        struct simcuda__va_space *spaces[SIMCUDA__SPACES];
        simcuda__device_spaces(&simcuda__state.devices[d], spaces);
        for (int s = 0; s < SIMCUDA__SPACES; s++) {
            /* Backwards, since releasing removes the entry at i. */
            for (size_t i = spaces[s]->count; i-- > 0;) {
                struct simcuda__va_entry *entry = &spaces[s]->entries[i];
                if (entry->kind == SIMCUDA__RANGE_ALLOC &&
                    ((struct simcuda__alloc *)entry->object)->ctx == ctx)
                    simcuda__alloc_release(spaces[s], entry);
                else if (entry->kind == SIMCUDA__RANGE_POOL_BLOCK &&
                         ((struct simcuda__pool_block *)entry->object)->ctx == ctx)
                    simcuda__pool_block_release(spaces[s], entry);
            }
        }
    }
}

static CUresult mem_alloc(CUdeviceptr *dptr, uint64_t size, bool legacy,
                          enum simcuda__alloc_type type)
{
    struct CUctx_st *ctx;
    simcuda__lock();
    CUresult result = simcuda__require_context(&ctx);
    if (result == CUDA_SUCCESS && (!dptr || size == 0))
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS)
        result = alloc_device_memory(ctx, size, legacy, type, dptr);
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    CUresult result = mem_alloc(dptr, bytesize, false, SIMCUDA__ALLOC_DEVICE);
    return SIMCUDA__LOG(result, result == CUDA_SUCCESS ? *dptr : 0, bytesize, 0);
}

/* Legacy 32-bit variant: served from the device's window below 4 GiB. */
SIMCUDA_EXPORT CUresult CUDAAPI cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
    CUdeviceptr address;
    CUresult result = mem_alloc(dptr ? &address : NULL, bytesize, true, SIMCUDA__ALLOC_DEVICE);
    if (result == CUDA_SUCCESS)
        *dptr = (CUdeviceptr_v1)address;
    return SIMCUDA__LOG(result, result == CUDA_SUCCESS ? address : 0, bytesize, 0);
}

static CUresult mem_alloc_pitch(CUdeviceptr *dptr, uint64_t *pitch, uint64_t width, uint64_t height,
                                unsigned element_size, bool legacy)
{
    struct CUctx_st *ctx;
    simcuda__lock();
    CUresult result = simcuda__require_context(&ctx);
    uint64_t row = (width + SIMCUDA__PITCH_ALIGNMENT - 1) / SIMCUDA__PITCH_ALIGNMENT *
                   SIMCUDA__PITCH_ALIGNMENT;
    if (result == CUDA_SUCCESS && (!dptr || !pitch || width == 0 || height == 0 || row < width ||
                                   (element_size != 4 && element_size != 8 && element_size != 16) ||
                                   height > UINT64_MAX / row))
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS)
        result = alloc_device_memory(ctx, row * height, legacy, SIMCUDA__ALLOC_DEVICE, dptr);
    if (result == CUDA_SUCCESS)
        *pitch = row;
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch,
                                                   size_t WidthInBytes, size_t Height,
                                                   unsigned int ElementSizeBytes)
{
    uint64_t pitch;
    CUresult result = mem_alloc_pitch(dptr, pPitch ? &pitch : NULL, WidthInBytes, Height,
                                      ElementSizeBytes, false);
    if (result == CUDA_SUCCESS)
        *pPitch = pitch;
    return SIMCUDA__LOG(result, result == CUDA_SUCCESS ? *dptr : 0,
                        result == CUDA_SUCCESS ? pitch * Height : (uint64_t)WidthInBytes * Height,
                        0);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch,
                                                unsigned int WidthInBytes, unsigned int Height,
                                                unsigned int ElementSizeBytes)
{
    CUdeviceptr address;
    uint64_t pitch;
    CUresult result = mem_alloc_pitch(dptr ? &address : NULL, pPitch ? &pitch : NULL, WidthInBytes,
                                      Height, ElementSizeBytes, true);
    if (result == CUDA_SUCCESS) {
        *dptr = (CUdeviceptr_v1)address;
        *pPitch = (unsigned int)pitch;
    }
    return SIMCUDA__LOG(result, result == CUDA_SUCCESS ? address : 0,
                        result == CUDA_SUCCESS ? pitch * Height : (uint64_t)WidthInBytes * Height,
                        0);
}

/* Managed memory is counted against the current context's device like cuMemAlloc. */
SIMCUDA_EXPORT CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize,
                                                  unsigned int flags)
{
    CUresult result = simcuda__require_init();
    if (result == CUDA_SUCCESS && flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS)
        result = mem_alloc(dptr, bytesize, false, SIMCUDA__ALLOC_MANAGED);
    return SIMCUDA__LOG(result, result == CUDA_SUCCESS ? *dptr : 0, bytesize, 0);
}

CUresult simcuda__free_at(CUdeviceptr dptr)
{
    struct simcuda__va_space *space = simcuda__space_of(dptr, NULL);
    struct simcuda__va_entry *entry = space ? simcuda__va_find(space, dptr) : NULL;
    if (!entry || entry->base != dptr)
        return CUDA_ERROR_INVALID_VALUE;
    if (entry->kind == SIMCUDA__RANGE_ALLOC &&
        ((struct simcuda__alloc *)entry->object)->type != SIMCUDA__ALLOC_IPC) {
        simcuda__alloc_release(space, entry);
        return CUDA_SUCCESS;
    }
    if (entry->kind == SIMCUDA__RANGE_POOL_BLOCK)
        return simcuda__pool_free_block(entry->object);
    if (entry->kind == SIMCUDA__RANGE_GRAPH)
        return simcuda__graph_free(entry->object);
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult mem_free(CUdeviceptr dptr)
{
    struct CUctx_st *ctx;
    simcuda__lock();
    CUresult result = simcuda__require_context(&ctx);
    if (result == CUDA_SUCCESS)
        result = simcuda__free_at(dptr);
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
    return SIMCUDA__LOG(mem_free(dptr), dptr, 0, 0);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemFree(CUdeviceptr_v1 dptr)
{
    return SIMCUDA__LOG(mem_free(dptr), dptr, 0, 0);
}

static CUresult mem_get_info(uint64_t *free_bytes, uint64_t *total_bytes)
{
    struct CUctx_st *ctx;
    simcuda__lock();
    CUresult result = simcuda__require_context(&ctx);
    if (result == CUDA_SUCCESS && (!free_bytes || !total_bytes))
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS) {
        *free_bytes = simcuda__free_bytes(ctx->device);
        *total_bytes = simcuda__state.devices[ctx->device].capacity;
    }
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemGetInfo_v2(size_t *free, size_t *total)
{
    uint64_t free_bytes, total_bytes;
    CUresult result = mem_get_info(free ? &free_bytes : NULL, total ? &total_bytes : NULL);
    if (result == CUDA_SUCCESS) {
        *free = free_bytes;
        *total = total_bytes;
    }
    return result;
}

/* The 32-bit legacy variant saturates both values at 4 GiB - 1. */
SIMCUDA_EXPORT CUresult CUDAAPI cuMemGetInfo(unsigned int *free, unsigned int *total)
{
    uint64_t free_bytes, total_bytes;
    CUresult result = mem_get_info(free ? &free_bytes : NULL, total ? &total_bytes : NULL);
    if (result == CUDA_SUCCESS) {
        *free = free_bytes > UINT32_MAX ? UINT32_MAX : (unsigned int)free_bytes;
        *total = total_bytes > UINT32_MAX ? UINT32_MAX : (unsigned int)total_bytes;
    }
    return result;
}

/* Lock held. The allocation (or VMM mapping) containing address; NOT_FOUND otherwise. */
static CUresult address_range(CUdeviceptr address, CUdeviceptr *base, uint64_t *size)
{
    struct simcuda__va_entry *entry = simcuda__find_range(address, NULL);
    if (entry && entry->kind == SIMCUDA__RANGE_ALLOC) {
        *base = entry->base;
        *size = ((struct simcuda__alloc *)entry->object)->size;
        return address - entry->base < *size ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
    }
    if (entry && entry->kind == SIMCUDA__RANGE_POOL_BLOCK) {
        struct simcuda__pool_block *block = entry->object;
        *base = block->base;
        *size = block->size;
        return block->live && address - block->base < block->size ? CUDA_SUCCESS
                                                                  : CUDA_ERROR_NOT_FOUND;
    }
    if (entry && entry->kind == SIMCUDA__RANGE_RESERVATION) {
        struct simcuda__reservation *reservation = entry->object;
        for (size_t i = 0; i < reservation->count; i++) {
            if (address - reservation->mappings[i].base < reservation->mappings[i].size) {
                *base = reservation->mappings[i].base;
                *size = reservation->mappings[i].size;
                return CUDA_SUCCESS;
            }
        }
    }
    return CUDA_ERROR_NOT_FOUND;
}

static CUresult mem_get_address_range(CUdeviceptr *pbase, uint64_t *psize, CUdeviceptr dptr)
{
    struct CUctx_st *ctx;
    CUdeviceptr base;
    uint64_t size;
    simcuda__lock();
    CUresult result = simcuda__require_context(&ctx);
    if (result == CUDA_SUCCESS)
        result = address_range(dptr, &base, &size);
    if (result == CUDA_SUCCESS && pbase)
        *pbase = base;
    if (result == CUDA_SUCCESS && psize)
        *psize = size;
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize,
                                                        CUdeviceptr dptr)
{
    uint64_t size;
    CUresult result = mem_get_address_range(pbase, &size, dptr);
    if (result == CUDA_SUCCESS && psize)
        *psize = size;
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr_v1 *pbase, unsigned int *psize,
                                                     CUdeviceptr_v1 dptr)
{
    CUdeviceptr base;
    uint64_t size;
    CUresult result = mem_get_address_range(&base, &size, dptr);
    if (result == CUDA_SUCCESS && pbase)
        *pbase = (CUdeviceptr_v1)base;
    if (result == CUDA_SUCCESS && psize)
        *psize = size > UINT32_MAX ? UINT32_MAX : (unsigned int)size;
    return result;
}

/* The handle names the physical allocation; any process-local open maps the same pages. */
SIMCUDA_EXPORT CUresult CUDAAPI cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    struct CUctx_st *ctx;
    simcuda__lock();
    CUresult result = simcuda__require_context(&ctx);
    struct simcuda__va_entry *entry = simcuda__find_range(dptr, NULL);
    struct simcuda__alloc *alloc =
        entry && entry->kind == SIMCUDA__RANGE_ALLOC && entry->base == dptr ? entry->object : NULL;
    if (result == CUDA_SUCCESS && (!pHandle || !alloc || alloc->type != SIMCUDA__ALLOC_DEVICE))
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS) {
        struct ipc_payload payload = {.phys_id = alloc->phys->id, .size = alloc->size};
        memcpy(payload.magic, ipc_magic, sizeof(payload.magic));
        memset(pHandle, 0, sizeof(*pHandle));
        memcpy(pHandle->reserved, &payload, sizeof(payload));
    }
    simcuda__unlock();
    return result;
}

static CUresult ipc_open(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int flags)
{
    struct CUctx_st *ctx;
    struct ipc_payload payload;
    memcpy(&payload, handle.reserved, sizeof(payload));
    simcuda__lock();
    CUresult result = simcuda__require_context(&ctx);
    struct simcuda__phys *phys = simcuda__phys_lookup(payload.phys_id);
    if (result == CUDA_SUCCESS &&
        (!pdptr || (flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ||
         memcmp(payload.magic, ipc_magic, sizeof(ipc_magic)) != 0 || !phys || phys->vmm))
        result = CUDA_ERROR_INVALID_VALUE;
    struct simcuda__alloc *alloc = NULL;
    if (result == CUDA_SUCCESS && !(alloc = calloc(1, sizeof(*alloc))))
        result = CUDA_ERROR_OUT_OF_MEMORY;
    if (result == CUDA_SUCCESS)
        result = simcuda__va_reserve(&simcuda__state.devices[phys->device].va,
                                     phys->pages * SIMCUDA__PAGE_SIZE, SIMCUDA__PAGE_SIZE, 0,
                                     SIMCUDA__RANGE_ALLOC, alloc, pdptr);
    if (result == CUDA_SUCCESS) {
        phys->map_count++;
        alloc->phys = phys;
        alloc->size = payload.size;
        alloc->ctx = ctx;
        alloc->type = SIMCUDA__ALLOC_IPC;
    } else {
        free(alloc);
    }
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle,
                                                      unsigned int Flags)
{
    CUresult result = ipc_open(pdptr, handle, Flags);
    return SIMCUDA__LOG(result, result == CUDA_SUCCESS ? *pdptr : 0, 0, 0);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle,
                                                   unsigned int Flags)
{
    CUresult result = ipc_open(pdptr, handle, Flags);
    return SIMCUDA__LOG(result, result == CUDA_SUCCESS ? *pdptr : 0, 0, 0);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    struct CUctx_st *ctx;
    simcuda__lock();
    CUresult result = simcuda__require_context(&ctx);
    struct simcuda__va_space *space = simcuda__space_of(dptr, NULL);
    struct simcuda__va_entry *entry = space ? simcuda__va_find(space, dptr) : NULL;
    if (result == CUDA_SUCCESS &&
        (!entry || entry->base != dptr || entry->kind != SIMCUDA__RANGE_ALLOC ||
         ((struct simcuda__alloc *)entry->object)->type != SIMCUDA__ALLOC_IPC))
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS)
        simcuda__alloc_release(space, entry);
    simcuda__unlock();
    return SIMCUDA__LOG(result, dptr, 0, 0);
}

/* What a range handle's memfd holds (a stand-in for a dma-buf: no importer reads it). */
struct range_payload {
    char magic[8];
    int64_t pid;
    uint64_t address, size;
};

/* Lock held. Whether [dptr, dptr + size) lies in one cuMemAlloc allocation, or in one
 * reservation fully mapped there: the ranges the driver gives a dma-buf for. */
static bool dma_buf_range(CUdeviceptr dptr, uint64_t size)
{
    struct simcuda__va_entry *entry = simcuda__find_range(dptr, NULL);
    if (!entry || simcuda__check_device_range(dptr, size) != CUDA_SUCCESS)
        return false;
    return entry->kind == SIMCUDA__RANGE_RESERVATION ||
           (entry->kind == SIMCUDA__RANGE_ALLOC &&
            ((struct simcuda__alloc *)entry->object)->type == SIMCUDA__ALLOC_DEVICE);
}

static CUresult range_handle(int *fd_out, CUdeviceptr dptr, uint64_t size,
                             CUmemRangeHandleType type, unsigned long long flags)
{
    struct CUctx_st *ctx;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    simcuda__lock();
    CUresult result = simcuda__require_context(&ctx);
    if (result == CUDA_SUCCESS && flags == CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE)
        result = CUDA_ERROR_NOT_SUPPORTED; /* no PCIe BAR1 here */
    else if (result == CUDA_SUCCESS &&
             (!fd_out || type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD || flags != 0 || size == 0 ||
              dptr % page != 0 || size % page != 0 || !dma_buf_range(dptr, size)))
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS) {
        struct range_payload payload = {.pid = getpid(), .address = dptr, .size = size};
        memcpy(payload.magic, "SIMDMAB", 8);
        int fd = memfd_create("simcuda-dma-buf", MFD_CLOEXEC);
        if (fd >= 0 && pwrite(fd, &payload, sizeof payload, 0) != (ssize_t)sizeof payload) {
            close(fd);
            fd = -1;
        }
        if (fd < 0)
            result = CUDA_ERROR_OUT_OF_MEMORY;
        else
            *fd_out = fd;
    }
    simcuda__unlock();
    return result;
}

/* A dma-buf's stand-in: a real descriptor (a memfd describing the range) the caller owns and
 * closes; no device or importer can read the memory through it. */
SIMCUDA_EXPORT CUresult CUDAAPI cuMemGetHandleForAddressRange(void *handle, CUdeviceptr dptr,
                                                              size_t size,
                                                              CUmemRangeHandleType handleType,
                                                              unsigned long long flags)
{
    CUresult result = range_handle(handle, dptr, size, handleType, flags);
    return SIMCUDA__LOG(result, dptr, size, result == CUDA_SUCCESS ? *(int *)handle : 0);
}
