/* Pool IPC: exportable pools, their shareable handles, and pointers shared between processes.
 *
 * A pool created with handle type POSIX fd (CUmemPoolProps.handleTypes) keeps the bytes of
 * its blocks in one memfd: a header (the exporting process, the pool) at offset 0, then each
 * block at an offset of its own, mapped into this process (the block's `host`), so copies and
 * sets move real bytes. cuMemPoolExportToShareableHandle gives a new descriptor of that memfd
 * (the caller owns it; it passes to other processes by SCM_RIGHTS or fork);
 * cuMemPoolImportFromShareableHandle makes an imported pool holding its own descriptor of it.
 * cuMemPoolExportPointer writes share data naming the block (process, pool, offset, size);
 * cuMemPoolImportPointer, in a process holding the imported pool, maps the same bytes at an
 * address of its own (a write in one process is seen in the other). The imported pointer takes
 * no pages of the importer's device (it is the exporter's memory); cuMemFree or
 * cuMemFreeAsync unmaps it in the importer only. An imported pool makes no allocations.
 * Errors, as the driver documents them: CUDA_ERROR_INVALID_VALUE for a pool that is not
 * exportable, a handle type the pool was not made with, an unknown or interior pointer, share
 * data of another pool, non-zero flags. */
#include "simcuda_internal.h"
#include "simcuda_log.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The memfd's header: who exported the pool. */
struct pool_header {
    char magic[8];
    int64_t pid;
    uint64_t pool; /* the pool's handle in the exporting process */
    int32_t device;
};

/* CUmemPoolPtrExportData (64 bytes): one block of one exported pool. */
struct pointer_share {
    char magic[8];
    int64_t pid;
    uint64_t pool;
    uint64_t offset; /* of the block in the pool's memfd */
    uint64_t size;   /* as allocated */
    uint64_t pages;
};

_Static_assert(sizeof(struct pointer_share) <= sizeof(CUmemPoolPtrExportData),
               "share data fits CUmemPoolPtrExportData");

static const char header_magic[8] = "SIMPOOL";
static const char share_magic[8] = "SIMPPTR";

CUresult simcuda__pool_backing_create(struct CUmemPoolHandle_st *pool)
{
    struct pool_header header = {
        .pid = getpid(), .pool = (uint64_t)(uintptr_t)pool, .device = pool->device};
    memcpy(header.magic, header_magic, sizeof header.magic);
    int fd = memfd_create("simcuda-pool", MFD_CLOEXEC);
    if (fd >= 0 && (ftruncate(fd, (off_t)SIMCUDA__PAGE_SIZE) != 0 ||
                    pwrite(fd, &header, sizeof header, 0) != (ssize_t)sizeof header)) {
        close(fd);
        fd = -1;
    }
    if (fd < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pool->backing_fd = fd;
    pool->backing_end = SIMCUDA__PAGE_SIZE; /* blocks start after the header's page */
    return CUDA_SUCCESS;
}

void simcuda__pool_backing_close(struct CUmemPoolHandle_st *pool)
{
    if (pool->backing_fd >= 0)
        close(pool->backing_fd); /* live blocks keep their mappings until freed */
    pool->backing_fd = -1;
}

CUresult simcuda__pool_block_back(struct CUmemPoolHandle_st *pool,
                                  struct simcuda__pool_block *block)
{
    if (pool->backing_fd < 0)
        return CUDA_SUCCESS;
    uint64_t bytes = block->pages * SIMCUDA__PAGE_SIZE, offset = pool->backing_end;
    if (ftruncate(pool->backing_fd, (off_t)(offset + bytes)) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    void *host = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, pool->backing_fd,
                      (off_t)offset);
    if (host == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pool->backing_end = offset + bytes;
    block->host = host;
    block->offset = offset;
    return CUDA_SUCCESS;
}

void simcuda__pool_block_unback(struct CUmemPoolHandle_st *pool, struct simcuda__pool_block *block)
{
    if (!block->host)
        return;
    uint64_t bytes = block->pages * SIMCUDA__PAGE_SIZE;
    munmap(block->host, bytes);
    block->host = NULL;
    if (pool->backing_fd >= 0) /* gives the pages back; importers must have freed first */
        fallocate(pool->backing_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                  (off_t)block->offset, (off_t)bytes);
}

/* Lock held. Whether pool is a live pool of this process made with handle type `type`. */
static bool exportable(const struct CUmemPoolHandle_st *pool, CUmemAllocationHandleType type)
{
    return simcuda__pool_valid(pool) && !pool->imported && pool->backing_fd >= 0 &&
           type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
}

static CUresult export_pool(int *fd_out, CUmemoryPool pool, CUmemAllocationHandleType type,
                            unsigned long long flags)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!fd_out || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    simcuda__lock();
    if (!exportable(pool, type))
        result = CUDA_ERROR_INVALID_VALUE;
    else if ((*fd_out = fcntl(pool->backing_fd, F_DUPFD_CLOEXEC, 0)) < 0)
        result = CUDA_ERROR_OUT_OF_MEMORY;
    simcuda__unlock();
    return result;
}

/* The descriptor is logged as the handle: the tracer records it as the export's. */
SIMCUDA_EXPORT CUresult CUDAAPI
cuMemPoolExportToShareableHandle(void *handle_out, CUmemoryPool pool,
                                 CUmemAllocationHandleType handleType, unsigned long long flags)
{
    CUresult result = export_pool(handle_out, pool, handleType, flags);
    return SIMCUDA__LOG(result, 0, 0, result == CUDA_SUCCESS ? *(int *)handle_out : 0);
}

static CUresult import_pool(CUmemoryPool *pool_out, void *handle, CUmemAllocationHandleType type,
                            unsigned long long flags)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    struct pool_header header;
    int fd = (int)(intptr_t)handle;
    if (!pool_out || flags != 0 || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
        pread(fd, &header, sizeof header, 0) != (ssize_t)sizeof header ||
        memcmp(header.magic, header_magic, sizeof header.magic) != 0 ||
        simcuda__check_device(header.device) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUmemPoolHandle_st *pool = malloc(sizeof(*pool));
    if (!pool)
        return CUDA_ERROR_OUT_OF_MEMORY;
    simcuda__pool_init(pool, header.device, false);
    if ((pool->backing_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
        free(pool);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pool->imported = true;
    pool->origin_pid = header.pid;
    pool->origin_pool = header.pool;
    simcuda__lock();
    simcuda__pool_link(pool);
    simcuda__unlock();
    *pool_out = pool;
    return CUDA_SUCCESS;
}

SIMCUDA_EXPORT CUresult CUDAAPI
cuMemPoolImportFromShareableHandle(CUmemoryPool *pool_out, void *handle,
                                   CUmemAllocationHandleType handleType, unsigned long long flags)
{
    CUresult result = import_pool(pool_out, handle, handleType, flags);
    return SIMCUDA__LOG(result, 0, 0, result == CUDA_SUCCESS ? (uintptr_t)*pool_out : 0);
}

static CUresult export_pointer(CUmemPoolPtrExportData *share_out, CUdeviceptr ptr,
                               uint64_t *pool_out)
{
    struct CUctx_st *ctx;
    simcuda__lock();
    CUresult result = simcuda__require_context(&ctx);
    struct simcuda__va_entry *entry = simcuda__find_range(ptr, NULL);
    struct simcuda__pool_block *block = entry && entry->kind == SIMCUDA__RANGE_POOL_BLOCK &&
                                                entry->base == ptr
                                            ? entry->object
                                            : NULL;
    if (result == CUDA_SUCCESS &&
        (!share_out || !block || !block->live || !block->host ||
         !exportable(block->pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)))
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS) {
        struct pointer_share share = {.pid = getpid(),
                                      .pool = (uint64_t)(uintptr_t)block->pool,
                                      .offset = block->offset,
                                      .size = block->size,
                                      .pages = block->pages};
        memcpy(share.magic, share_magic, sizeof share.magic);
        memset(share_out, 0, sizeof(*share_out));
        memcpy(share_out->reserved, &share, sizeof share);
        *pool_out = share.pool;
    }
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemPoolExportPointer(CUmemPoolPtrExportData *shareData_out,
                                                       CUdeviceptr ptr)
{
    uint64_t pool = 0;
    CUresult result = export_pointer(shareData_out, ptr, &pool);
    return SIMCUDA__LOG(result, ptr, 0, pool);
}

/* Lock held. The exporter's block mapped at a new address of pool's device. */
static CUresult map_import(struct CUmemPoolHandle_st *pool, const struct pointer_share *share,
                           struct CUctx_st *ctx, CUdeviceptr *out)
{
    struct stat st;
    uint64_t bytes = share->pages * SIMCUDA__PAGE_SIZE;
    if (share->pages == 0 || share->size > bytes || fstat(pool->backing_fd, &st) != 0 ||
        share->offset < SIMCUDA__PAGE_SIZE || share->offset % SIMCUDA__PAGE_SIZE != 0 ||
        share->offset + bytes < share->offset || share->offset + bytes > (uint64_t)st.st_size)
        return CUDA_ERROR_INVALID_VALUE;
    struct simcuda__alloc *alloc = calloc(1, sizeof(*alloc));
    if (!alloc)
        return CUDA_ERROR_OUT_OF_MEMORY;
    alloc->host = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, pool->backing_fd,
                       (off_t)share->offset);
    CUresult result = alloc->host == MAP_FAILED ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
    if (result == CUDA_SUCCESS)
        result = simcuda__va_reserve(&simcuda__state.devices[pool->device].va, bytes,
                                     SIMCUDA__PAGE_SIZE, 0, SIMCUDA__RANGE_ALLOC, alloc, out);
    if (result != CUDA_SUCCESS) {
        if (alloc->host != MAP_FAILED)
            munmap(alloc->host, bytes);
        free(alloc);
        return result;
    }
    alloc->size = share->size;
    alloc->ctx = ctx;
    alloc->type = SIMCUDA__ALLOC_POOL_IMPORT;
    return CUDA_SUCCESS;
}

static CUresult import_pointer(CUdeviceptr *ptr_out, CUmemoryPool pool,
                               CUmemPoolPtrExportData *share_data)
{
    struct CUctx_st *ctx;
    struct pointer_share share;
    simcuda__lock();
    CUresult result = simcuda__require_context(&ctx);
    if (result == CUDA_SUCCESS && share_data)
        memcpy(&share, share_data->reserved, sizeof share);
    if (result == CUDA_SUCCESS &&
        (!ptr_out || !share_data || !simcuda__pool_valid(pool) || !pool->imported ||
         memcmp(share.magic, share_magic, sizeof share.magic) != 0 ||
         share.pid != pool->origin_pid || share.pool != pool->origin_pool))
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS)
        result = map_import(pool, &share, ctx, ptr_out);
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemPoolImportPointer(CUdeviceptr *ptr_out, CUmemoryPool pool,
                                                       CUmemPoolPtrExportData *shareData)
{
    CUresult result = import_pointer(ptr_out, pool, shareData);
    return SIMCUDA__LOG(result, result == CUDA_SUCCESS ? *ptr_out : 0, 0, (uintptr_t)pool);
}
