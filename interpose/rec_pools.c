/* rec_pools.c — what the wrappers record of stream-ordered allocation and memory pools: the
 * allocations and frees, pool creation, trims, attributes, the current pool, pool IPC and the
 * pool queries (record.h). */
#include "record.h"

static void rec_alloc_async(struct cmt_event *e, int ok, CUdeviceptr *dptr, size_t bytesize,
                            CUmemoryPool pool, CUstream stream, int per_thread)
{
    CMT__SET(e, SIZE, bytesize);
    CMT__SET(e, STREAM, (uintptr_t)stream);
    if (pool)
        CMT__SET(e, POOL, (uintptr_t)pool);
    CMT__OUT(e, ok, PTR, dptr);
    cmt__mark_captured(e, ok, stream, per_thread);
}

void cmt__rec_cuMemAllocAsync(struct cmt_event *e, int ok, CUdeviceptr *dptr, size_t bytesize,
                              CUstream stream)
{
    rec_alloc_async(e, ok, dptr, bytesize, NULL, stream, 0);
}

void cmt__rec_cuMemAllocAsync_ptsz(struct cmt_event *e, int ok, CUdeviceptr *dptr, size_t bytesize,
                                   CUstream stream)
{
    rec_alloc_async(e, ok, dptr, bytesize, NULL, stream, 1);
}

void cmt__rec_cuMemAllocFromPoolAsync(struct cmt_event *e, int ok, CUdeviceptr *dptr,
                                      size_t bytesize, CUmemoryPool pool, CUstream stream)
{
    rec_alloc_async(e, ok, dptr, bytesize, pool, stream, 0);
}

void cmt__rec_cuMemAllocFromPoolAsync_ptsz(struct cmt_event *e, int ok, CUdeviceptr *dptr,
                                           size_t bytesize, CUmemoryPool pool, CUstream stream)
{
    rec_alloc_async(e, ok, dptr, bytesize, pool, stream, 1);
}

void cmt__rec_cuMemFreeAsync(struct cmt_event *e, int ok, CUdeviceptr dptr, CUstream stream)
{
    CMT__SET(e, PTR, dptr);
    CMT__SET(e, STREAM, (uintptr_t)stream);
    cmt__mark_captured(e, ok, stream, 0);
}

void cmt__rec_cuMemFreeAsync_ptsz(struct cmt_event *e, int ok, CUdeviceptr dptr, CUstream stream)
{
    CMT__SET(e, PTR, dptr);
    CMT__SET(e, STREAM, (uintptr_t)stream);
    cmt__mark_captured(e, ok, stream, 1);
}

void cmt__rec_cuMemPoolCreate(struct cmt_event *e, int ok, CUmemoryPool *pool,
                              const CUmemPoolProps *props)
{
    if (props && props->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
        e->dev = props->location.id;
    if (ok && pool)
        CMT__SET(e, POOL, (uintptr_t)*pool);
}

void cmt__rec_cuMemPoolDestroy(struct cmt_event *e, int ok, CUmemoryPool pool)
{
    CMT__SET(e, POOL, (uintptr_t)pool);
}

void cmt__rec_cuMemPoolTrimTo(struct cmt_event *e, int ok, CUmemoryPool pool, size_t keep)
{
    CMT__SET(e, POOL, (uintptr_t)pool);
    CMT__SET(e, SIZE, keep);
}

void cmt__rec_cuMemPoolSetAttribute(struct cmt_event *e, int ok, CUmemoryPool pool,
                                    CUmemPool_attribute attr, void *value)
{
    CMT__SET(e, POOL, (uintptr_t)pool);
    CMT__SET(e, FLAGS, (uint64_t)attr);
    if (ok && value && attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
        CMT__SET(e, SIZE, *(cuuint64_t *)value);
}

void cmt__rec_cuDeviceSetMemPool(struct cmt_event *e, int ok, CUdevice dev, CUmemoryPool pool)
{
    e->dev = dev;
    CMT__SET(e, POOL, (uintptr_t)pool);
}

/* The pool of a location: a device location is that device (dev); any other location (host,
 * host NUMA node) is recorded with device -1 and its type in flags. */
void cmt__rec_cuMemSetMemPool(struct cmt_event *e, int ok, CUmemLocation *location,
                              CUmemAllocationType type, CUmemoryPool pool)
{
    e->dev = location && location->type == CU_MEM_LOCATION_TYPE_DEVICE ? location->id : -1;
    if (location && location->type != CU_MEM_LOCATION_TYPE_DEVICE)
        CMT__SET(e, FLAGS, location->type);
    CMT__SET(e, POOL, (uintptr_t)pool);
    (void)type;
}

/* Pool IPC. A POSIX descriptor (the export's and the range handle's output) is recorded as
 * handle; other handle types' outputs are not read. */
void cmt__rec_cuMemPoolExportToShareableHandle(struct cmt_event *e, int ok, void *handle_out,
                                               CUmemoryPool pool, CUmemAllocationHandleType type,
                                               unsigned long long flags)
{
    CMT__SET(e, POOL, (uintptr_t)pool);
    CMT__SET(e, FLAGS, type);
    if (ok && handle_out && type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        CMT__SET(e, HANDLE, (uint64_t)(int64_t) * (int *)handle_out);
    (void)flags;
}

void cmt__rec_cuMemPoolImportFromShareableHandle(struct cmt_event *e, int ok,
                                                 CUmemoryPool *pool_out, void *handle,
                                                 CUmemAllocationHandleType type,
                                                 unsigned long long flags)
{
    CMT__SET(e, FLAGS, type);
    if (ok && pool_out)
        CMT__SET(e, POOL, (uintptr_t)*pool_out);
    (void)handle;
    (void)flags;
}

void cmt__rec_cuMemPoolExportPointer(struct cmt_event *e, int ok, CUmemPoolPtrExportData *share,
                                     CUdeviceptr ptr)
{
    CMT__SET(e, PTR, ptr);
    (void)share;
}

void cmt__rec_cuMemPoolImportPointer(struct cmt_event *e, int ok, CUdeviceptr *ptr_out,
                                     CUmemoryPool pool, CUmemPoolPtrExportData *share)
{
    CMT__SET(e, POOL, (uintptr_t)pool);
    CMT__OUT(e, ok, PTR, ptr_out);
    (void)share;
}

/* The pool queries: the device (a device location's id) and, on success, the handle. */
static void rec_pool_query(struct cmt_event *e, int ok, CUmemoryPool *pool, int dev)
{
    e->dev = dev;
    if (ok && pool)
        CMT__SET(e, POOL, (uintptr_t)*pool);
}

void cmt__rec_cuDeviceGetDefaultMemPool(struct cmt_event *e, int ok, CUmemoryPool *pool,
                                        CUdevice dev)
{
    rec_pool_query(e, ok, pool, dev);
}

void cmt__rec_cuDeviceGetMemPool(struct cmt_event *e, int ok, CUmemoryPool *pool, CUdevice dev)
{
    rec_pool_query(e, ok, pool, dev);
}

/* A host or host-NUMA location: device -1, its type in flags (as cuMemSetMemPool). */
static void rec_location_query(struct cmt_event *e, int ok, CUmemoryPool *pool,
                               const CUmemLocation *location)
{
    int device = location && location->type == CU_MEM_LOCATION_TYPE_DEVICE;
    rec_pool_query(e, ok, pool, device ? location->id : -1);
    if (location && !device)
        CMT__SET(e, FLAGS, location->type);
}

void cmt__rec_cuMemGetDefaultMemPool(struct cmt_event *e, int ok, CUmemoryPool *pool,
                                     CUmemLocation *location, CUmemAllocationType type)
{
    rec_location_query(e, ok, pool, location);
    (void)type;
}

void cmt__rec_cuMemGetMemPool(struct cmt_event *e, int ok, CUmemoryPool *pool,
                              CUmemLocation *location, CUmemAllocationType type)
{
    rec_location_query(e, ok, pool, location);
    (void)type;
}
