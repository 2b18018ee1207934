/* rec_graph.c — what the wrappers record of CUDA graphs: memory nodes, instantiation, launch,
 * the graph memory pool, and stream capture, whose state (which streams capture now) lives
 * here so that a stream-ordered call asks the driver only while a capture may be open
 * (record.h). */
#include <stdatomic.h>

#include "record.h"

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

/* cmt__mark_captured's question to the driver, asked only while some capture is open. */
void cmt__mark_captured_slow(struct cmt_event *e, CUstream stream, int per_thread)
{
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUgraph graph = NULL;
    if (!stream && per_thread)
        stream = CU_STREAM_PER_THREAD;
    if (capture_info(stream, &status, &graph) == 0 && status == CU_STREAM_CAPTURE_STATUS_ACTIVE &&
        graph)
        CMT__SET(e, HANDLE, (uintptr_t)graph);
}

/* Graph memory nodes: the graph is the handle, an exec the ptr (docs/capture.md). An
 * allocation node is recorded on its location's device (-1 for another location). */
void cmt__rec_cuGraphAddMemAllocNode(struct cmt_event *e, int ok, CUgraphNode *node, CUgraph graph,
                                     const CUgraphNode *deps, size_t ndeps,
                                     CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
    CMT__SET(e, HANDLE, (uintptr_t)graph);
    if (p) {
        CMT__SET(e, SIZE, p->bytesize);
        e->dev = p->poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE
                     ? p->poolProps.location.id
                     : -1;
        if (ok)
            CMT__SET(e, PTR, p->dptr);
    }
}

void cmt__rec_cuGraphAddMemFreeNode(struct cmt_event *e, int ok, CUgraphNode *node, CUgraph graph,
                                    const CUgraphNode *deps, size_t ndeps, CUdeviceptr dptr)
{
    CMT__SET(e, HANDLE, (uintptr_t)graph);
    CMT__SET(e, PTR, dptr);
}

void cmt__rec_cuGraphInstantiateWithFlags(struct cmt_event *e, int ok, CUgraphExec *exec,
                                          CUgraph graph, unsigned long long flags)
{
    CMT__SET(e, HANDLE, (uintptr_t)graph);
    CMT__SET(e, FLAGS, flags);
    if (ok && exec)
        CMT__SET(e, PTR, (uintptr_t)*exec);
}

void cmt__rec_cuGraphInstantiateWithParams(struct cmt_event *e, int ok, CUgraphExec *exec,
                                           CUgraph graph, CUDA_GRAPH_INSTANTIATE_PARAMS *params)
{
    cmt__rec_cuGraphInstantiateWithFlags(e, ok, exec, graph, params ? params->flags : 0);
}

CMT__REC_SAME(cuGraphInstantiateWithParams_ptsz, cuGraphInstantiateWithParams);

/* The CUDA 11 five-argument ABI: no flags (recorded as 0). */
void cmt__rec_cuGraphInstantiate(struct cmt_event *e, int ok, CUgraphExec *exec, CUgraph graph,
                                 CUgraphNode *error_node, char *log, size_t log_size)
{
    cmt__rec_cuGraphInstantiateWithFlags(e, ok, exec, graph, 0);
}

CMT__REC_SAME(cuGraphInstantiate_v2, cuGraphInstantiate);

void cmt__rec_cuGraphLaunch(struct cmt_event *e, int ok, CUgraphExec exec, CUstream stream)
{
    CMT__SET(e, PTR, (uintptr_t)exec);
    CMT__SET(e, STREAM, (uintptr_t)stream);
}

CMT__REC_SAME(cuGraphLaunch_ptsz, cuGraphLaunch);

void cmt__rec_cuGraphExecDestroy(struct cmt_event *e, int ok, CUgraphExec exec)
{
    CMT__SET(e, PTR, (uintptr_t)exec);
}

void cmt__rec_cuGraphDestroy(struct cmt_event *e, int ok, CUgraph graph)
{
    CMT__SET(e, HANDLE, (uintptr_t)graph);
}

void cmt__rec_cuDeviceGraphMemTrim(struct cmt_event *e, int ok, CUdevice device)
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

void cmt__rec_cuStreamBeginCapture(struct cmt_event *e, int ok, CUstream stream)
{
    CMT__SET(e, STREAM, (uintptr_t)stream);
    if (ok)
        capture_opened(stream);
}

CMT__REC_SAME(cuStreamBeginCapture_ptsz, cuStreamBeginCapture);

void cmt__rec_cuStreamBeginCapture_v2(struct cmt_event *e, int ok, CUstream stream,
                                      CUstreamCaptureMode mode)
{
    CMT__SET(e, FLAGS, (unsigned)mode);
    cmt__rec_cuStreamBeginCapture(e, ok, stream);
}

CMT__REC_SAME(cuStreamBeginCapture_v2_ptsz, cuStreamBeginCapture_v2);

void cmt__rec_cuStreamEndCapture(struct cmt_event *e, int ok, CUstream stream, CUgraph *graph)
{
    CMT__SET(e, STREAM, (uintptr_t)stream);
    if (ok && graph)
        CMT__SET(e, HANDLE, (uintptr_t)*graph);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    if (!ok && capture_info(stream, &status, NULL) != 0)
        status = CU_STREAM_CAPTURE_STATUS_ACTIVE; /* unknown: keep asking */
    if (ok || status == CU_STREAM_CAPTURE_STATUS_NONE)
        capture_closed(stream);
}

CMT__REC_SAME(cuStreamEndCapture_ptsz, cuStreamEndCapture);

void cmt__rec_cuDeviceSetGraphMemAttribute(struct cmt_event *e, int ok, CUdevice device,
                                           CUgraphMem_attribute attr, void *value)
{
    e->dev = device;
    CMT__SET(e, FLAGS, attr);
    if (value)
        CMT__SET(e, SIZE, *(const cuuint64_t *)value);
}
