/* Memory pools and stream-ordered allocation.
 *
 * A pool block holds whole pages of its device. cuMemFreeAsync keeps the block in the pool
 * (retained: still counted as used by cuMemGetInfo). Like the real driver, the release
 * threshold is compared with the pool's reserved memory (live + retained): at stream or
 * context synchronisation retained blocks are released while the pool reserves more than
 * the threshold, and cuMemPoolTrimTo does the same down to minBytesToKeep. An allocation
 * first reuses a retained block that is large enough (best fit), then, when the device is
 * short of pages, releases the pool's retained blocks, then fails with OUT_OF_MEMORY.
 */
#include "simcuda_internal.h"
#include "simcuda_log.h"

#include <stdlib.h>
#include <string.h>

void simcuda__pool_init(struct CUmemPoolHandle_st *pool, int device, bool is_default)
{
    memset(pool, 0, sizeof(*pool));
    pool->magic = SIMCUDA__POOL_MAGIC;
    pool->alive = true;
    pool->is_default = is_default;
    pool->device = device;
    pool->backing_fd = -1;
    for (int i = 0; i < 3; i++)
        pool->reuse_flags[i] = 1;
}

static bool pool_valid(const struct CUmemPoolHandle_st *pool)
{
    return pool && pool->magic == SIMCUDA__POOL_MAGIC && pool->alive;
}

bool simcuda__pool_valid(const struct CUmemPoolHandle_st *pool)
{
    return pool_valid(pool);
}

void simcuda__pool_link(struct CUmemPoolHandle_st *pool)
{
    pool->next_all = simcuda__state.pools;
    simcuda__state.pools = pool;
}

static void update_high_marks(struct CUmemPoolHandle_st *pool)
{
    if (pool->reserved_pages > pool->reserved_high_pages)
        pool->reserved_high_pages = pool->reserved_pages;
    if (pool->used_pages > pool->used_high_pages)
        pool->used_high_pages = pool->used_pages;
}

void simcuda__pool_block_release(struct simcuda__va_space *space, struct simcuda__va_entry *entry)
{
    struct simcuda__pool_block *block = entry->object;
    struct CUmemPoolHandle_st *pool = block->pool;
    pool->reserved_pages -= block->pages;
    if (block->live)
        pool->used_pages -= block->pages;
    simcuda__state.devices[pool->device].pages_in_use -= block->pages;
    simcuda__pool_block_unback(pool, block);
    simcuda__va_release(space, block->base);
    free(block);
}

/* Lock held. Releases retained blocks while the pool reserves more than keep bytes. */
static void pool_trim(struct CUmemPoolHandle_st *pool, uint64_t keep)
{
    struct simcuda__va_space *space = &simcuda__state.devices[pool->device].va;
    for (size_t i = space->count; i-- > 0 && pool->reserved_pages * SIMCUDA__PAGE_SIZE > keep;) {
        struct simcuda__va_entry *entry = &space->entries[i];
        struct simcuda__pool_block *block = entry->object;
        if (entry->kind == SIMCUDA__RANGE_POOL_BLOCK && block->pool == pool && !block->live)
            simcuda__pool_block_release(space, entry);
    }
}

void simcuda__pools_synchronize(int device)
{
    struct simcuda__device *dev = &simcuda__state.devices[device];
    pool_trim(&dev->default_pool, dev->default_pool.release_threshold);
    for (struct CUmemPoolHandle_st *pool = simcuda__state.pools; pool; pool = pool->next_all) {
        if (pool->alive && pool->device == device)
            pool_trim(pool, pool->release_threshold);
    }
}

CUresult simcuda__pool_free_block(struct simcuda__pool_block *block)
{
    struct CUmemPoolHandle_st *pool = block->pool;
    if (!block->live)
        return CUDA_ERROR_INVALID_VALUE;
    block->live = false;
    pool->used_pages -= block->pages;
    if (!pool->alive) {
        struct simcuda__va_space *space = &simcuda__state.devices[pool->device].va;
        simcuda__pool_block_release(space, simcuda__va_find(space, block->base));
    }
    return CUDA_SUCCESS;
}

static struct simcuda__pool_block *best_retained_block(struct CUmemPoolHandle_st *pool,
                                                       uint64_t pages)
{
    struct simcuda__va_space *space = &simcuda__state.devices[pool->device].va;
    struct simcuda__pool_block *best = NULL;
    for (size_t i = 0; i < space->count; i++) {
        struct simcuda__pool_block *block = space->entries[i].object;
        if (space->entries[i].kind != SIMCUDA__RANGE_POOL_BLOCK || block->pool != pool ||
            block->live || block->pages < pages)
            continue;
        if (!best || block->pages < best->pages)
            best = block;
    }
    return best;
}

/* Lock held. */
static CUresult pool_alloc(struct CUmemPoolHandle_st *pool, uint64_t size, struct CUctx_st *ctx,
                           CUdeviceptr *out)
{
    uint64_t pages = simcuda__pages_for(size);
    struct simcuda__pool_block *block = best_retained_block(pool, pages);
    if (!block) {
        if (pages > simcuda__free_bytes(pool->device) / SIMCUDA__PAGE_SIZE)
            pool_trim(pool, 0);
        if (pages > simcuda__free_bytes(pool->device) / SIMCUDA__PAGE_SIZE)
            return CUDA_ERROR_OUT_OF_MEMORY;
        if (!(block = calloc(1, sizeof(*block))))
            return CUDA_ERROR_OUT_OF_MEMORY;
        CUresult result = simcuda__va_reserve(&simcuda__state.devices[pool->device].va,
                                              pages * SIMCUDA__PAGE_SIZE, SIMCUDA__PAGE_SIZE, 0,
                                              SIMCUDA__RANGE_POOL_BLOCK, block, &block->base);
        if (result != CUDA_SUCCESS) {
            free(block);
            return result;
        }
        block->pool = pool;
        block->pages = pages;
        if ((result = simcuda__pool_block_back(pool, block)) != CUDA_SUCCESS) {
            simcuda__va_release(&simcuda__state.devices[pool->device].va, block->base);
            free(block);
            return result;
        }
        simcuda__state.devices[pool->device].pages_in_use += pages;
        pool->reserved_pages += pages;
    }
    block->live = true;
    block->size = size;
    block->ctx = ctx;
    pool->used_pages += block->pages;
    update_high_marks(pool);
    *out = block->base;
    return CUDA_SUCCESS;
}

/* pool NULL: the current pool of the stream's device (cuMemAllocAsync). On a capturing
 * stream (simcuda_capture.c) an allocation node of its graph, *graph that graph (else 0). */
static CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, bool from_pool,
                            CUstream hStream, uintptr_t *graph)
{
    struct CUctx_st *ctx;
    struct CUgraph_st *capture = NULL;
    *graph = 0;
    simcuda__lock();
    CUresult result = simcuda__stream_context(hStream, &ctx);
    if (result == CUDA_SUCCESS &&
        (!dptr || bytesize == 0 || (from_pool && (!pool_valid(pool) || pool->imported))))
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS)
        result = simcuda__capture_of(hStream, &capture);
    if (result == CUDA_SUCCESS && capture) {
        result = simcuda__graph_capture_alloc(capture, from_pool ? pool->device : ctx->device,
                                              bytesize, dptr);
        *graph = (uintptr_t)capture;
        if (result == CUDA_SUCCESS)
            simcuda__capture_node_added(hStream);
    } else if (result == CUDA_SUCCESS) {
        result = pool_alloc(from_pool ? pool : simcuda__state.devices[ctx->device].current_pool,
                            bytesize, ctx, dptr);
    }
    simcuda__unlock();
    return result;
}

/* Logged with handle = the pool (cuMemAllocFromPoolAsync), or the graph when captured. */
static CUresult alloc_async_logged(const char *entry, CUdeviceptr *dptr, size_t bytesize,
                                   CUmemoryPool pool, bool from_pool, CUstream hStream)
{
    uintptr_t graph;
    CUresult result = alloc_async(dptr, bytesize, pool, from_pool, hStream, &graph);
    return simcuda__log(entry, result, result == CUDA_SUCCESS ? *dptr : 0, bytesize,
                        graph ? graph : (uintptr_t)pool);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize,
                                                CUstream hStream)
{
    return alloc_async_logged(__func__, dptr, bytesize, NULL, false, hStream);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                     CUstream hStream)
{
    return alloc_async_logged(__func__, dptr, bytesize, NULL, false, hStream);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
                                                        CUmemoryPool pool, CUstream hStream)
{
    return alloc_async_logged(__func__, dptr, bytesize, pool, true, hStream);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                             CUmemoryPool pool, CUstream hStream)
{
    return alloc_async_logged(__func__, dptr, bytesize, pool, true, hStream);
}

/* Pool blocks go back to their pool, graph memory to the graph pool; cuMemAlloc memory is
 * freed at once. */
static CUresult free_async(CUdeviceptr dptr, CUstream hStream, uintptr_t *graph)
{
    struct CUctx_st *ctx;
    struct CUgraph_st *capture = NULL;
    *graph = 0;
    simcuda__lock();
    CUresult result = simcuda__stream_context(hStream, &ctx);
    if (result == CUDA_SUCCESS)
        result = simcuda__capture_of(hStream, &capture);
    if (result != CUDA_SUCCESS) {
        /* keep the context error */
    } else if (capture) { /* a free node of the captured graph */
        result = simcuda__graph_capture_free(capture, dptr);
        *graph = (uintptr_t)capture;
        if (result == CUDA_SUCCESS)
            simcuda__capture_node_added(hStream);
    } else {
        result = simcuda__free_at(dptr);
    }
    simcuda__unlock();
    return result;
}

/* Logged with handle = the graph when captured. */
SIMCUDA_EXPORT CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    uintptr_t graph;
    CUresult result = free_async(dptr, hStream, &graph);
    return SIMCUDA__LOG(result, dptr, 0, graph);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    uintptr_t graph;
    CUresult result = free_async(dptr, hStream, &graph);
    return SIMCUDA__LOG(result, dptr, 0, graph);
}

static CUresult pool_create(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!pool || !poolProps || poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        simcuda__check_device(poolProps->location.id) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    if (poolProps->handleTypes != CU_MEM_HANDLE_TYPE_NONE &&
        poolProps->handleTypes != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_NOT_SUPPORTED; /* Win32, fabric: not simulated */
    struct CUmemPoolHandle_st *created = malloc(sizeof(*created));
    if (!created)
        return CUDA_ERROR_OUT_OF_MEMORY;
    simcuda__pool_init(created, poolProps->location.id, false);
    simcuda__lock();
    if (poolProps->handleTypes == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR &&
        (result = simcuda__pool_backing_create(created)) != CUDA_SUCCESS) {
        simcuda__unlock();
        free(created);
        return result;
    }
    simcuda__pool_link(created);
    simcuda__unlock();
    *pool = created;
    return CUDA_SUCCESS;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    CUresult result = pool_create(pool, poolProps);
    return SIMCUDA__LOG(result, 0, 0, result == CUDA_SUCCESS ? (uintptr_t)*pool : 0);
}

/* Retained memory is released now; live blocks are released when they are freed. */
static CUresult pool_destroy(CUmemoryPool pool)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    simcuda__lock();
    if (!pool_valid(pool) || pool->is_default) {
        result = CUDA_ERROR_INVALID_VALUE;
    } else {
        pool_trim(pool, 0);
        pool->alive = false;
        simcuda__pool_backing_close(pool);
        struct simcuda__device *dev = &simcuda__state.devices[pool->device];
        if (dev->current_pool == pool)
            dev->current_pool = &dev->default_pool;
    }
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool)
{
    CUresult result = pool_destroy(pool);
    return SIMCUDA__LOG(result, 0, 0, (uintptr_t)pool);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    simcuda__lock();
    if (pool_valid(pool))
        pool_trim(pool, minBytesToKeep);
    else
        result = CUDA_ERROR_INVALID_VALUE;
    simcuda__unlock();
    return result;
}

static CUresult pool_set(struct CUmemPoolHandle_st *pool, CUmemPool_attribute attr, void *value)
{
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        pool->reuse_flags[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] = *(int *)value !=
                                                                                    0;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        pool->release_threshold = *(cuuint64_t *)value;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        if (*(cuuint64_t *)value != 0)
            return CUDA_ERROR_INVALID_VALUE;
        pool->reserved_high_pages = pool->reserved_pages;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        if (*(cuuint64_t *)value != 0)
            return CUDA_ERROR_INVALID_VALUE;
        pool->used_high_pages = pool->used_pages;
        return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

static CUresult pool_get(const struct CUmemPoolHandle_st *pool, CUmemPool_attribute attr,
                         void *value)
{
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        *(int *)value = pool->reuse_flags[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        *(cuuint64_t *)value = pool->release_threshold;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
        *(cuuint64_t *)value = pool->reserved_pages * SIMCUDA__PAGE_SIZE;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        *(cuuint64_t *)value = pool->reserved_high_pages * SIMCUDA__PAGE_SIZE;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
        *(cuuint64_t *)value = pool->used_pages * SIMCUDA__PAGE_SIZE;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        *(cuuint64_t *)value = pool->used_high_pages * SIMCUDA__PAGE_SIZE;
        return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                                      void *value)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    simcuda__lock();
    result = pool_valid(pool) && value ? pool_set(pool, attr, value) : CUDA_ERROR_INVALID_VALUE;
    simcuda__unlock();
    uint64_t threshold = result == CUDA_SUCCESS && attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
                             ? *(cuuint64_t *)value
                             : 0;
    return SIMCUDA__LOG(result, 0, threshold, pool);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                                      void *value)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    simcuda__lock();
    result = pool_valid(pool) && value ? pool_get(pool, attr, value) : CUDA_ERROR_INVALID_VALUE;
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if ((result = simcuda__check_device(dev)) != CUDA_SUCCESS)
        return result;
    simcuda__lock();
    if (pool_valid(pool) && pool->device == dev && !pool->imported)
        simcuda__state.devices[dev].current_pool = pool;
    else
        result = CUDA_ERROR_INVALID_VALUE;
    simcuda__unlock();
    return result;
}

static CUresult device_pool(CUmemoryPool *pool, CUdevice dev, bool current)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    if ((result = simcuda__check_device(dev)) != CUDA_SUCCESS)
        return result;
    simcuda__lock();
    struct simcuda__device *device = &simcuda__state.devices[dev];
    *pool = current ? device->current_pool : &device->default_pool;
    simcuda__unlock();
    return CUDA_SUCCESS;
}

/* The queries log the handle they return (the tracer ties a default pool's handle to its
 * device). */
SIMCUDA_EXPORT CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    CUresult result = device_pool(pool, dev, true);
    return SIMCUDA__LOG(result, 0, 0, result == CUDA_SUCCESS ? (uintptr_t)*pool : 0);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    CUresult result = device_pool(pool_out, dev, false);
    return SIMCUDA__LOG(result, 0, 0, result == CUDA_SUCCESS ? (uintptr_t)*pool_out : 0);
}

/* CUDA 13's location-based pools: a device location of pinned memory is the device's pool
 * (as the cuDevice* calls); host and NUMA locations are not simulated. */
static CUresult device_of_location(const CUmemLocation *location, CUmemAllocationType type,
                                   CUdevice *dev)
{
    if (!location)
        return CUDA_ERROR_INVALID_VALUE;
    if (location->type != CU_MEM_LOCATION_TYPE_DEVICE || type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_NOT_SUPPORTED;
    *dev = location->id;
    return CUDA_SUCCESS;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemSetMemPool(CUmemLocation *location, CUmemAllocationType type,
                                                CUmemoryPool pool)
{
    CUdevice dev;
    CUresult result = device_of_location(location, type, &dev);
    return result != CUDA_SUCCESS ? result : cuDeviceSetMemPool(dev, pool);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemGetMemPool(CUmemoryPool *pool_out, CUmemLocation *location,
                                                CUmemAllocationType type)
{
    CUdevice dev;
    CUresult result = device_of_location(location, type, &dev);
    if (result == CUDA_SUCCESS)
        result = device_pool(pool_out, dev, true);
    return SIMCUDA__LOG(result, 0, 0, result == CUDA_SUCCESS ? (uintptr_t)*pool_out : 0);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemGetDefaultMemPool(CUmemoryPool *pool_out,
                                                       CUmemLocation *location,
                                                       CUmemAllocationType type)
{
    CUdevice dev;
    CUresult result = device_of_location(location, type, &dev);
    if (result == CUDA_SUCCESS)
        result = device_pool(pool_out, dev, false);
    return SIMCUDA__LOG(result, 0, 0, result == CUDA_SUCCESS ? (uintptr_t)*pool_out : 0);
}
