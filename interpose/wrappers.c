/* wrappers.c — the exported wrappers, generated from calls.def, and what each records.
 *
 * A wrapper: begin (recursion guard; release ops take their seq here) → call the real
 * function with the exact arguments → record inputs, and outputs only on success → finish.
 * Recording functions tolerate NULL arguments and never call the driver, except that a
 * stream-ordered allocation or free asks for its stream's capture while a capture is open. */
#include <errno.h>

#include "shim.h"

#define SET(e, field, value) \
    ((e)->fields |= CMT_F(field), (e)->v[CMT_FIELD_##field] = (uint64_t)(value))
#define OUT(e, ok, field, ptr)     \
    do {                           \
        if ((ok) && (ptr))         \
            SET(e, field, *(ptr)); \
    } while (0)

/* ---- recording functions: cmt__rec_<name>(event, ok, arguments...) ---- */

static void cmt__rec_cuMemAlloc_v2(struct cmt_event *e, int ok, CUdeviceptr *dptr, size_t bytesize)
{
    SET(e, SIZE, bytesize);
    OUT(e, ok, PTR, dptr);
}

static void cmt__rec_cuMemAllocPitch_v2(struct cmt_event *e, int ok, CUdeviceptr *dptr,
                                        size_t *pPitch, size_t width, size_t height,
                                        unsigned int elem)
{
    SET(e, WIDTH, width);
    SET(e, HEIGHT, height);
    SET(e, SIZE, width * height); /* requested; replaced by pitch × height on success */
    if (ok && pPitch) {
        SET(e, PITCH, *pPitch);
        SET(e, SIZE, *pPitch * height);
    }
    OUT(e, ok, PTR, dptr);
    (void)elem;
}

static void cmt__rec_cuMemAllocManaged(struct cmt_event *e, int ok, CUdeviceptr *dptr,
                                       size_t bytesize, unsigned int flags)
{
    SET(e, SIZE, bytesize);
    SET(e, FLAGS, flags);
    OUT(e, ok, PTR, dptr);
}

static void cmt__rec_cuMemFree_v2(struct cmt_event *e, int ok, CUdeviceptr dptr)
{
    SET(e, PTR, dptr);
}

static void cmt__rec_cuMemGetInfo_v2(struct cmt_event *e, int ok, size_t *free, size_t *total)
{
    OUT(e, ok, FREE, free);
    OUT(e, ok, TOTAL, total);
}

atomic_int cmt__open_captures;

/* The stream's capture status and graph from the driver (_v2, else _v3). @return 0 when the
 * driver answered. */
static int capture_info(CUstream stream, CUstreamCaptureStatus *status, CUgraph *graph)
{
    if (cmt__real.cuStreamGetCaptureInfo_v2)
        return cmt__real.cuStreamGetCaptureInfo_v2(stream, status, NULL, graph, NULL, NULL) !=
               CUDA_SUCCESS;
    if (cmt__real.cuStreamGetCaptureInfo_v3)
        return cmt__real.cuStreamGetCaptureInfo_v3(stream, status, NULL, graph, NULL, NULL, NULL) !=
               CUDA_SUCCESS;
    return -1;
}

/* A successful call on a capturing stream made a node of the capture's graph, not memory:
 * the event carries that graph as handle. Asked only while some capture is open; the
 * per-thread variants' stream 0 is the per-thread default stream. */
static void mark_captured(struct cmt_event *e, int ok, CUstream stream, int per_thread)
{
    if (__builtin_expect(!atomic_load_explicit(&cmt__open_captures, memory_order_relaxed), 1) ||
        !ok)
        return;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUgraph graph = NULL;
    if (!stream && per_thread)
        stream = CU_STREAM_PER_THREAD;
    if (capture_info(stream, &status, &graph) == 0 && status == CU_STREAM_CAPTURE_STATUS_ACTIVE &&
        graph)
        SET(e, HANDLE, (uintptr_t)graph);
}

static void rec_alloc_async(struct cmt_event *e, int ok, CUdeviceptr *dptr, size_t bytesize,
                            CUmemoryPool pool, CUstream stream, int per_thread)
{
    SET(e, SIZE, bytesize);
    SET(e, STREAM, (uintptr_t)stream);
    if (pool)
        SET(e, POOL, (uintptr_t)pool);
    OUT(e, ok, PTR, dptr);
    mark_captured(e, ok, stream, per_thread);
}

static void cmt__rec_cuMemAllocAsync(struct cmt_event *e, int ok, CUdeviceptr *dptr,
                                     size_t bytesize, CUstream stream)
{
    rec_alloc_async(e, ok, dptr, bytesize, NULL, stream, 0);
}

static void cmt__rec_cuMemAllocAsync_ptsz(struct cmt_event *e, int ok, CUdeviceptr *dptr,
                                          size_t bytesize, CUstream stream)
{
    rec_alloc_async(e, ok, dptr, bytesize, NULL, stream, 1);
}

static void cmt__rec_cuMemAllocFromPoolAsync(struct cmt_event *e, int ok, CUdeviceptr *dptr,
                                             size_t bytesize, CUmemoryPool pool, CUstream stream)
{
    rec_alloc_async(e, ok, dptr, bytesize, pool, stream, 0);
}

static void cmt__rec_cuMemAllocFromPoolAsync_ptsz(struct cmt_event *e, int ok, CUdeviceptr *dptr,
                                                  size_t bytesize, CUmemoryPool pool,
                                                  CUstream stream)
{
    rec_alloc_async(e, ok, dptr, bytesize, pool, stream, 1);
}

static void cmt__rec_cuMemFreeAsync(struct cmt_event *e, int ok, CUdeviceptr dptr, CUstream stream)
{
    SET(e, PTR, dptr);
    SET(e, STREAM, (uintptr_t)stream);
    mark_captured(e, ok, stream, 0);
}

static void cmt__rec_cuMemFreeAsync_ptsz(struct cmt_event *e, int ok, CUdeviceptr dptr,
                                         CUstream stream)
{
    SET(e, PTR, dptr);
    SET(e, STREAM, (uintptr_t)stream);
    mark_captured(e, ok, stream, 1);
}

static void cmt__rec_cuMemPoolCreate(struct cmt_event *e, int ok, CUmemoryPool *pool,
                                     const CUmemPoolProps *props)
{
    if (props && props->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
        e->dev = props->location.id;
    if (ok && pool)
        SET(e, POOL, (uintptr_t)*pool);
}

static void cmt__rec_cuMemPoolDestroy(struct cmt_event *e, int ok, CUmemoryPool pool)
{
    SET(e, POOL, (uintptr_t)pool);
}

static void cmt__rec_cuMemPoolTrimTo(struct cmt_event *e, int ok, CUmemoryPool pool, size_t keep)
{
    SET(e, POOL, (uintptr_t)pool);
    SET(e, SIZE, keep);
}

static void cmt__rec_cuMemPoolSetAttribute(struct cmt_event *e, int ok, CUmemoryPool pool,
                                           CUmemPool_attribute attr, void *value)
{
    SET(e, POOL, (uintptr_t)pool);
    SET(e, FLAGS, (uint64_t)attr);
    if (ok && value && attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
        SET(e, SIZE, *(cuuint64_t *)value);
}

static void cmt__rec_cuDeviceSetMemPool(struct cmt_event *e, int ok, CUdevice dev,
                                        CUmemoryPool pool)
{
    e->dev = dev;
    SET(e, POOL, (uintptr_t)pool);
}

static void cmt__rec_cuStreamSynchronize(struct cmt_event *e, int ok, CUstream stream)
{
    SET(e, STREAM, (uintptr_t)stream);
}

#define cmt__rec_cuStreamSynchronize_ptsz cmt__rec_cuStreamSynchronize

static void cmt__rec_cuCtxSynchronize_v2(struct cmt_event *e, int ok, CUcontext ctx)
{
    if (ctx)
        SET(e, CTX, (uintptr_t)ctx);
}

static void cmt__rec_cuCtxSynchronize(struct cmt_event *e, int ok)
{
}

static void cmt__rec_cuMemCreate(struct cmt_event *e, int ok, CUmemGenericAllocationHandle *handle,
                                 size_t size, const CUmemAllocationProp *prop,
                                 unsigned long long flags)
{
    if (prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
        e->dev = prop->location.id;
    SET(e, SIZE, size);
    SET(e, FLAGS, flags);
    OUT(e, ok, HANDLE, handle);
}

static void cmt__rec_cuMemRelease(struct cmt_event *e, int ok, CUmemGenericAllocationHandle handle)
{
    SET(e, HANDLE, handle);
}

static void cmt__rec_cuMemMap(struct cmt_event *e, int ok, CUdeviceptr ptr, size_t size,
                              size_t offset, CUmemGenericAllocationHandle handle,
                              unsigned long long flags)
{
    SET(e, PTR, ptr);
    SET(e, SIZE, size);
    SET(e, OFFSET, offset);
    SET(e, HANDLE, handle);
}

static void cmt__rec_cuMemUnmap(struct cmt_event *e, int ok, CUdeviceptr ptr, size_t size)
{
    SET(e, PTR, ptr);
    SET(e, SIZE, size);
}

static void cmt__rec_cuMemAddressReserve(struct cmt_event *e, int ok, CUdeviceptr *ptr, size_t size,
                                         size_t alignment, CUdeviceptr addr,
                                         unsigned long long flags)
{
    SET(e, SIZE, size);
    SET(e, ALIGN, alignment);
    SET(e, FLAGS, flags);
    OUT(e, ok, PTR, ptr);
    (void)addr;
}

#define cmt__rec_cuMemAddressFree cmt__rec_cuMemUnmap

static void cmt__rec_cuMemSetAccess(struct cmt_event *e, int ok, CUdeviceptr ptr, size_t size,
                                    const CUmemAccessDesc *desc, size_t count)
{
    SET(e, PTR, ptr);
    SET(e, SIZE, size);
    SET(e, COUNT, count);
    if (desc && count > 0 && desc[0].location.type == CU_MEM_LOCATION_TYPE_DEVICE)
        e->dev = desc[0].location.id;
}

static void cmt__rec_cuMemRetainAllocationHandle(struct cmt_event *e, int ok,
                                                 CUmemGenericAllocationHandle *handle, void *addr)
{
    SET(e, PTR, (uintptr_t)addr);
    OUT(e, ok, HANDLE, handle);
}

static void cmt__rec_cuMemImportFromShareableHandle(struct cmt_event *e, int ok,
                                                    CUmemGenericAllocationHandle *handle,
                                                    void *os_handle, CUmemAllocationHandleType type)
{
    SET(e, FLAGS, type);
    OUT(e, ok, HANDLE, handle);
    (void)os_handle;
}

static void cmt__rec_cuMemExportToShareableHandle(struct cmt_event *e, int ok, void *shareable,
                                                  CUmemGenericAllocationHandle handle,
                                                  CUmemAllocationHandleType type,
                                                  unsigned long long flags)
{
    SET(e, HANDLE, handle);
    SET(e, FLAGS, type);
    (void)shareable;
}

static void cmt__rec_cuIpcOpenMemHandle_v2(struct cmt_event *e, int ok, CUdeviceptr *pdptr,
                                           CUipcMemHandle handle, unsigned int flags)
{
    SET(e, FLAGS, flags);
    OUT(e, ok, PTR, pdptr);
}

#define cmt__rec_cuIpcOpenMemHandle cmt__rec_cuIpcOpenMemHandle_v2

static void cmt__rec_cuIpcCloseMemHandle(struct cmt_event *e, int ok, CUdeviceptr dptr)
{
    SET(e, PTR, dptr);
}

static void cmt__rec_cuMemAllocHost_v2(struct cmt_event *e, int ok, void **pp, size_t bytesize)
{
    SET(e, SIZE, bytesize);
    if (ok && pp)
        SET(e, PTR, (uintptr_t)*pp);
}

static void cmt__rec_cuMemHostAlloc(struct cmt_event *e, int ok, void **pp, size_t bytesize,
                                    unsigned int flags)
{
    cmt__rec_cuMemAllocHost_v2(e, ok, pp, bytesize);
    SET(e, FLAGS, flags);
}

static void cmt__rec_cuMemFreeHost(struct cmt_event *e, int ok, void *p)
{
    SET(e, PTR, (uintptr_t)p);
}

/* Pinned host registration: existing host memory becomes page-locked (host_pinned bytes). */
static void cmt__rec_cuMemHostRegister_v2(struct cmt_event *e, int ok, void *p, size_t bytesize,
                                          unsigned int flags)
{
    SET(e, PTR, (uintptr_t)p);
    SET(e, SIZE, bytesize);
    SET(e, FLAGS, flags);
}

static void cmt__rec_cuMemHostUnregister(struct cmt_event *e, int ok, void *p)
{
    SET(e, PTR, (uintptr_t)p);
}

static void rec_ctx_create(struct cmt_event *e, int ok, CUcontext *pctx, unsigned int flags,
                           CUdevice dev)
{
    e->dev = dev;
    SET(e, FLAGS, flags);
    if (ok && pctx)
        SET(e, CTX, (uintptr_t)*pctx);
}

static void cmt__rec_cuCtxCreate_v2(struct cmt_event *e, int ok, CUcontext *pctx,
                                    unsigned int flags, CUdevice dev)
{
    rec_ctx_create(e, ok, pctx, flags, dev);
}

static void cmt__rec_cuCtxCreate_v3(struct cmt_event *e, int ok, CUcontext *pctx,
                                    CUexecAffinityParam *params, int n, unsigned int flags,
                                    CUdevice dev)
{
    rec_ctx_create(e, ok, pctx, flags, dev);
}

static void cmt__rec_cuCtxCreate_v4(struct cmt_event *e, int ok, CUcontext *pctx,
                                    CUctxCreateParams *params, unsigned int flags, CUdevice dev)
{
    rec_ctx_create(e, ok, pctx, flags, dev);
}

static void cmt__rec_cuCtxDestroy_v2(struct cmt_event *e, int ok, CUcontext ctx)
{
    SET(e, CTX, (uintptr_t)ctx);
}

static void cmt__rec_cuDevicePrimaryCtxRetain(struct cmt_event *e, int ok, CUcontext *pctx,
                                              CUdevice dev)
{
    rec_ctx_create(e, ok, pctx, 0, dev);
    e->fields &= ~CMT_F(FLAGS);
}

static void cmt__rec_cuDevicePrimaryCtxRelease_v2(struct cmt_event *e, int ok, CUdevice dev)
{
    e->dev = dev;
}

#define cmt__rec_cuDevicePrimaryCtxReset_v2 cmt__rec_cuDevicePrimaryCtxRelease_v2
#define cmt__rec_cuDevicePrimaryCtxRelease cmt__rec_cuDevicePrimaryCtxRelease_v2
#define cmt__rec_cuDevicePrimaryCtxReset cmt__rec_cuDevicePrimaryCtxRelease_v2

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
    SET(e, SIZE, bytes);
    SET(e, WIDTH, width);
    SET(e, HEIGHT, height);
    if (ok)
        SET(e, PTR, (uintptr_t)handle);
}

static void cmt__rec_cuArrayCreate_v2(struct cmt_event *e, int ok, CUarray *pHandle,
                                      const CUDA_ARRAY_DESCRIPTOR *d)
{
    if (d)
        rec_array(e, ok && pHandle, pHandle ? *pHandle : NULL, d->Width, d->Height, 0, d->Format,
                  d->NumChannels, 0, 1);
    else
        SET(e, SIZE, 0);
}

static void rec_array_3d(struct cmt_event *e, int ok, void *handle,
                         const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
    if (!d) {
        SET(e, SIZE, 0);
        return;
    }
    rec_array(e, ok, handle, d->Width, d->Height, d->Depth, d->Format, d->NumChannels, d->Flags,
              levels);
    SET(e, FLAGS, d->Flags);
}

static void cmt__rec_cuArray3DCreate_v2(struct cmt_event *e, int ok, CUarray *pHandle,
                                        const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    rec_array_3d(e, ok && pHandle, pHandle ? *pHandle : NULL, d, 1);
}

static void cmt__rec_cuMipmappedArrayCreate(struct cmt_event *e, int ok, CUmipmappedArray *pHandle,
                                            const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
    rec_array_3d(e, ok && pHandle, pHandle ? *pHandle : NULL, d, levels);
    SET(e, COUNT, levels);
}

static void cmt__rec_cuArrayDestroy(struct cmt_event *e, int ok, CUarray hArray)
{
    SET(e, PTR, (uintptr_t)hArray);
}

static void cmt__rec_cuMipmappedArrayDestroy(struct cmt_event *e, int ok, CUmipmappedArray h)
{
    SET(e, PTR, (uintptr_t)h);
}

/* The pool of a location: a device location is that device (dev); any other location (host,
 * host NUMA node) is recorded with device -1 and its type in flags. */
static void cmt__rec_cuMemSetMemPool(struct cmt_event *e, int ok, CUmemLocation *location,
                                     CUmemAllocationType type, CUmemoryPool pool)
{
    e->dev = location && location->type == CU_MEM_LOCATION_TYPE_DEVICE ? location->id : -1;
    if (location && location->type != CU_MEM_LOCATION_TYPE_DEVICE)
        SET(e, FLAGS, location->type);
    SET(e, POOL, (uintptr_t)pool);
    (void)type;
}

/* Graph memory nodes: the graph is the handle, an exec the ptr (docs/capture.md). An
 * allocation node is recorded on its location's device (-1 for another location). */
static void cmt__rec_cuGraphAddMemAllocNode(struct cmt_event *e, int ok, CUgraphNode *node,
                                            CUgraph graph, const CUgraphNode *deps, size_t ndeps,
                                            CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
    SET(e, HANDLE, (uintptr_t)graph);
    if (p) {
        SET(e, SIZE, p->bytesize);
        e->dev = p->poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE
                     ? p->poolProps.location.id
                     : -1;
        if (ok)
            SET(e, PTR, p->dptr);
    }
}

static void cmt__rec_cuGraphAddMemFreeNode(struct cmt_event *e, int ok, CUgraphNode *node,
                                           CUgraph graph, const CUgraphNode *deps, size_t ndeps,
                                           CUdeviceptr dptr)
{
    SET(e, HANDLE, (uintptr_t)graph);
    SET(e, PTR, dptr);
}

static void cmt__rec_cuGraphInstantiateWithFlags(struct cmt_event *e, int ok, CUgraphExec *exec,
                                                 CUgraph graph, unsigned long long flags)
{
    SET(e, HANDLE, (uintptr_t)graph);
    SET(e, FLAGS, flags);
    if (ok && exec)
        SET(e, PTR, (uintptr_t)*exec);
}

static void cmt__rec_cuGraphInstantiateWithParams(struct cmt_event *e, int ok, CUgraphExec *exec,
                                                  CUgraph graph,
                                                  CUDA_GRAPH_INSTANTIATE_PARAMS *params)
{
    cmt__rec_cuGraphInstantiateWithFlags(e, ok, exec, graph, params ? params->flags : 0);
}

#define cmt__rec_cuGraphInstantiateWithParams_ptsz cmt__rec_cuGraphInstantiateWithParams

/* The CUDA 11 five-argument ABI: no flags (recorded as 0). */
static void cmt__rec_cuGraphInstantiate(struct cmt_event *e, int ok, CUgraphExec *exec,
                                        CUgraph graph, CUgraphNode *error_node, char *log,
                                        size_t log_size)
{
    cmt__rec_cuGraphInstantiateWithFlags(e, ok, exec, graph, 0);
}

#define cmt__rec_cuGraphInstantiate_v2 cmt__rec_cuGraphInstantiate

static void cmt__rec_cuGraphLaunch(struct cmt_event *e, int ok, CUgraphExec exec, CUstream stream)
{
    SET(e, PTR, (uintptr_t)exec);
    SET(e, STREAM, (uintptr_t)stream);
}

#define cmt__rec_cuGraphLaunch_ptsz cmt__rec_cuGraphLaunch

static void cmt__rec_cuGraphExecDestroy(struct cmt_event *e, int ok, CUgraphExec exec)
{
    SET(e, PTR, (uintptr_t)exec);
}

static void cmt__rec_cuGraphDestroy(struct cmt_event *e, int ok, CUgraph graph)
{
    SET(e, HANDLE, (uintptr_t)graph);
}

static void cmt__rec_cuDeviceGraphMemTrim(struct cmt_event *e, int ok, CUdevice device)
{
    e->dev = device;
}

/* Stream capture: the streams capturing now, so that cmt__open_captures is exact: a begin
 * that succeeded adds its stream, an end removes it when the capture is over (a successful
 * end, or a failed one after which the driver says the stream no longer captures, as after an
 * invalidated capture). A begin that finds no free slot still counts, for good: that costs
 * each later stream-ordered call one question to the driver, never a missed capture. */
#define CMT__CAPTURE_SLOTS 64
static _Atomic(uintptr_t) capturing[CMT__CAPTURE_SLOTS];

static void capture_opened(CUstream stream)
{
    atomic_fetch_add(&cmt__open_captures, 1);
    for (int i = 0; i < CMT__CAPTURE_SLOTS; i++) {
        uintptr_t none = 0;
        if (atomic_compare_exchange_strong(&capturing[i], &none, (uintptr_t)stream))
            return;
    }
}

static void capture_closed(CUstream stream)
{
    for (int i = 0; i < CMT__CAPTURE_SLOTS; i++) {
        uintptr_t mine = (uintptr_t)stream;
        if (mine && atomic_compare_exchange_strong(&capturing[i], &mine, 0)) {
            atomic_fetch_sub(&cmt__open_captures, 1);
            return;
        }
    }
}

static void cmt__rec_cuStreamBeginCapture(struct cmt_event *e, int ok, CUstream stream)
{
    SET(e, STREAM, (uintptr_t)stream);
    if (ok)
        capture_opened(stream);
}

#define cmt__rec_cuStreamBeginCapture_ptsz cmt__rec_cuStreamBeginCapture

static void cmt__rec_cuStreamBeginCapture_v2(struct cmt_event *e, int ok, CUstream stream,
                                             CUstreamCaptureMode mode)
{
    SET(e, FLAGS, (unsigned)mode);
    cmt__rec_cuStreamBeginCapture(e, ok, stream);
}

#define cmt__rec_cuStreamBeginCapture_v2_ptsz cmt__rec_cuStreamBeginCapture_v2

static void cmt__rec_cuStreamEndCapture(struct cmt_event *e, int ok, CUstream stream,
                                        CUgraph *graph)
{
    SET(e, STREAM, (uintptr_t)stream);
    if (ok && graph)
        SET(e, HANDLE, (uintptr_t)*graph);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    if (!ok && capture_info(stream, &status, NULL) != 0)
        status = CU_STREAM_CAPTURE_STATUS_ACTIVE; /* unknown: keep asking */
    if (ok || status == CU_STREAM_CAPTURE_STATUS_NONE)
        capture_closed(stream);
}

#define cmt__rec_cuStreamEndCapture_ptsz cmt__rec_cuStreamEndCapture

static void cmt__rec_cuDeviceSetGraphMemAttribute(struct cmt_event *e, int ok, CUdevice device,
                                                  CUgraphMem_attribute attr, void *value)
{
    e->dev = device;
    SET(e, FLAGS, attr);
    if (value)
        SET(e, SIZE, *(const cuuint64_t *)value);
}

/* Pool IPC. A POSIX descriptor (the export's and the range handle's output) is recorded as
 * handle; other handle types' outputs are not read. */
static void cmt__rec_cuMemPoolExportToShareableHandle(struct cmt_event *e, int ok, void *handle_out,
                                                      CUmemoryPool pool,
                                                      CUmemAllocationHandleType type,
                                                      unsigned long long flags)
{
    SET(e, POOL, (uintptr_t)pool);
    SET(e, FLAGS, type);
    if (ok && handle_out && type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        SET(e, HANDLE, (uint64_t)(int64_t) * (int *)handle_out);
    (void)flags;
}

static void cmt__rec_cuMemPoolImportFromShareableHandle(struct cmt_event *e, int ok,
                                                        CUmemoryPool *pool_out, void *handle,
                                                        CUmemAllocationHandleType type,
                                                        unsigned long long flags)
{
    SET(e, FLAGS, type);
    if (ok && pool_out)
        SET(e, POOL, (uintptr_t)*pool_out);
    (void)handle;
    (void)flags;
}

static void cmt__rec_cuMemPoolExportPointer(struct cmt_event *e, int ok,
                                            CUmemPoolPtrExportData *share, CUdeviceptr ptr)
{
    SET(e, PTR, ptr);
    (void)share;
}

static void cmt__rec_cuMemPoolImportPointer(struct cmt_event *e, int ok, CUdeviceptr *ptr_out,
                                            CUmemoryPool pool, CUmemPoolPtrExportData *share)
{
    SET(e, POOL, (uintptr_t)pool);
    OUT(e, ok, PTR, ptr_out);
    (void)share;
}

/* The pool queries: the device (a device location's id) and, on success, the handle. */
static void rec_pool_query(struct cmt_event *e, int ok, CUmemoryPool *pool, int dev)
{
    e->dev = dev;
    if (ok && pool)
        SET(e, POOL, (uintptr_t)*pool);
}

static void cmt__rec_cuDeviceGetDefaultMemPool(struct cmt_event *e, int ok, CUmemoryPool *pool,
                                               CUdevice dev)
{
    rec_pool_query(e, ok, pool, dev);
}

static void cmt__rec_cuDeviceGetMemPool(struct cmt_event *e, int ok, CUmemoryPool *pool,
                                        CUdevice dev)
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
        SET(e, FLAGS, location->type);
}

static void cmt__rec_cuMemGetDefaultMemPool(struct cmt_event *e, int ok, CUmemoryPool *pool,
                                            CUmemLocation *location, CUmemAllocationType type)
{
    rec_location_query(e, ok, pool, location);
    (void)type;
}

static void cmt__rec_cuMemGetMemPool(struct cmt_event *e, int ok, CUmemoryPool *pool,
                                     CUmemLocation *location, CUmemAllocationType type)
{
    rec_location_query(e, ok, pool, location);
    (void)type;
}

static void cmt__rec_cuMemGetHandleForAddressRange(struct cmt_event *e, int ok, void *handle,
                                                   CUdeviceptr dptr, size_t size,
                                                   CUmemRangeHandleType type,
                                                   unsigned long long flags)
{
    SET(e, PTR, dptr);
    SET(e, SIZE, size);
    SET(e, FLAGS, type);
    if (ok && handle && type == CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD)
        SET(e, HANDLE, (uint64_t)(int64_t) * (int *)handle);
    (void)flags;
}

/* Multicast objects: handle = the object, ptr = what is bound (the physical handle, or the
 * address of mapped memory), offset = into the object; the device a call names is dev. */
static void cmt__rec_cuMulticastCreate(struct cmt_event *e, int ok,
                                       CUmemGenericAllocationHandle *handle,
                                       const CUmulticastObjectProp *prop)
{
    if (prop) {
        SET(e, SIZE, prop->size);
        SET(e, COUNT, prop->numDevices);
        SET(e, FLAGS, prop->handleTypes);
    }
    OUT(e, ok, HANDLE, handle);
}

static void cmt__rec_cuMulticastAddDevice(struct cmt_event *e, int ok,
                                          CUmemGenericAllocationHandle handle, CUdevice dev)
{
    e->dev = dev;
    SET(e, HANDLE, handle);
}

static void rec_bind(struct cmt_event *e, CUmemGenericAllocationHandle handle, size_t offset,
                     uint64_t bound, size_t size, unsigned long long flags)
{
    SET(e, HANDLE, handle);
    SET(e, OFFSET, offset);
    SET(e, PTR, bound);
    SET(e, SIZE, size);
    SET(e, FLAGS, flags);
}

static void cmt__rec_cuMulticastBindMem(struct cmt_event *e, int ok,
                                        CUmemGenericAllocationHandle handle, size_t offset,
                                        CUmemGenericAllocationHandle memory, size_t memory_offset,
                                        size_t size, unsigned long long flags)
{
    rec_bind(e, handle, offset, memory, size, flags);
    (void)memory_offset;
}

static void cmt__rec_cuMulticastBindAddr(struct cmt_event *e, int ok,
                                         CUmemGenericAllocationHandle handle, size_t offset,
                                         CUdeviceptr memory, size_t size, unsigned long long flags)
{
    rec_bind(e, handle, offset, memory, size, flags);
}

static void cmt__rec_cuMulticastUnbind(struct cmt_event *e, int ok,
                                       CUmemGenericAllocationHandle handle, CUdevice dev,
                                       size_t offset, size_t size)
{
    e->dev = dev;
    SET(e, HANDLE, handle);
    SET(e, OFFSET, offset);
    SET(e, SIZE, size);
}

static void cmt__rec_cuMulticastGetGranularity(struct cmt_event *e, int ok, size_t *granularity,
                                               const CUmulticastObjectProp *prop,
                                               CUmulticastGranularity_flags option)
{
    SET(e, FLAGS, option);
    OUT(e, ok, SIZE, granularity);
    (void)prop;
}

/* The legacy ABI (32-bit sizes and pointers, v1 descriptors): recorded as their _v2
 * counterparts. */
static void cmt__rec_cuMemAlloc(struct cmt_event *e, int ok, CUdeviceptr_v1 *dptr,
                                unsigned bytesize)
{
    SET(e, SIZE, bytesize);
    OUT(e, ok, PTR, dptr);
}

static void cmt__rec_cuMemAllocPitch(struct cmt_event *e, int ok, CUdeviceptr_v1 *dptr,
                                     unsigned *pPitch, unsigned width, unsigned height,
                                     unsigned elem)
{
    SET(e, WIDTH, width);
    SET(e, HEIGHT, height);
    SET(e, SIZE, (uint64_t)width * height);
    if (ok && pPitch) {
        SET(e, PITCH, *pPitch);
        SET(e, SIZE, (uint64_t)*pPitch * height);
    }
    OUT(e, ok, PTR, dptr);
    (void)elem;
}

static void cmt__rec_cuMemFree(struct cmt_event *e, int ok, CUdeviceptr_v1 dptr)
{
    SET(e, PTR, dptr);
}

static void cmt__rec_cuMemAllocHost(struct cmt_event *e, int ok, void **pp, unsigned bytesize)
{
    cmt__rec_cuMemAllocHost_v2(e, ok, pp, bytesize);
}

static void cmt__rec_cuMemGetInfo(struct cmt_event *e, int ok, unsigned *free, unsigned *total)
{
    OUT(e, ok, FREE, free);
    OUT(e, ok, TOTAL, total);
}

static void cmt__rec_cuArrayCreate(struct cmt_event *e, int ok, CUarray *pHandle,
                                   const CUDA_ARRAY_DESCRIPTOR_v1 *d)
{
    if (d)
        rec_array(e, ok && pHandle, pHandle ? *pHandle : NULL, d->Width, d->Height, 0, d->Format,
                  d->NumChannels, 0, 1);
    else
        SET(e, SIZE, 0);
}

static void cmt__rec_cuArray3DCreate(struct cmt_event *e, int ok, CUarray *pHandle,
                                     const CUDA_ARRAY3D_DESCRIPTOR_v1 *d)
{
    if (!d) {
        SET(e, SIZE, 0);
        return;
    }
    rec_array(e, ok && pHandle, pHandle ? *pHandle : NULL, d->Width, d->Height, d->Depth, d->Format,
              d->NumChannels, d->Flags, 1);
    SET(e, FLAGS, d->Flags);
}

/* ---- the wrappers ---- */

#define X(name, op, params, args)                     \
    CMT_EXPORT CUresult name params                   \
    {                                                 \
        if (!cmt__resolve() || !cmt__real.name)       \
            return CUDA_ERROR_NOT_INITIALIZED;        \
        struct cmt__call c;                           \
        if (!cmt__begin(&c, CMT__API_##name))         \
            return cmt__real.name args;               \
        CUresult rc = cmt__real.name args;            \
        c.errno_saved = errno;                        \
        cmt__rec_##name CMT__PREPEND_EVENT(rc, args); \
        cmt__finish(&c, rc);                          \
        return rc;                                    \
    }
#define XP(name, op, params, args) /* hand-written in getproc.c */
#define CMT__PREPEND_EVENT(rc, args) (&c.ev, (rc) == CUDA_SUCCESS CMT__COMMA_ARGS args)
#define CMT__COMMA_ARGS(...) __VA_OPT__(, ) __VA_ARGS__
#include "calls.def"
#undef X
#undef XP

/* ---- the tables ---- */

const char *const cmt__api_name[CMT__API_COUNT] = {
#define X(name, op, params, args) [CMT__API_##name] = #name,
#define XP X
#include "calls.def"
#undef X
#undef XP
};

const uint8_t cmt__api_op[CMT__API_COUNT] = {
#define X(name, op, params, args) [CMT__API_##name] = CMT_OP_##op,
#define XP X
#include "calls.def"
#undef X
#undef XP
};

void *const cmt__api_wrapper[CMT__API_COUNT] = {
#define X(name, op, params, args) [CMT__API_##name] = (void *)name,
#define XP X
#include "calls.def"
#undef X
#undef XP
};
