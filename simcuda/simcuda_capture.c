/* simcuda_capture.c — driver stream capture as far as memory needs it (simulated).
 *
 * cuStreamBeginCapture gives a stream a new empty graph; while it captures, cuMemAllocAsync
 * and cuMemAllocFromPoolAsync on it add an allocation node to that graph (its address fixed
 * then, no memory until the instantiated graph is launched) and cuMemFreeAsync a free node,
 * as cuGraphAddMemAllocNode / cuGraphAddMemFreeNode do (simcuda_graph.c); cuStreamEndCapture
 * hands the graph over. A stream synchronisation on a capturing stream fails with
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture, whose end then fails with
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and destroys the graph.
 *
 * Cross-stream capture: an event recorded on a capturing stream is marked with the capture; a
 * stream that waits on it joins the capture (captures into the same graph, its status and
 * graph those of the origin stream, where the capture began) until the origin's
 * cuStreamEndCapture, which ends it for every joined stream; cuStreamEndCapture on a joined
 * stream is CUDA_ERROR_STREAM_CAPTURE_UNMATCHED. The end fails with
 * CUDA_ERROR_STREAM_CAPTURE_UNJOINED (ending the capture, destroying the graph) when a joined
 * stream captured a memory node that no stream of the capture waited on afterwards (through an
 * event recorded on it after the node); other unjoined work is not seen, as simcuda does not
 * capture it.
 *
 * Simplifications: only created streams capture (the legacy and per-thread default streams
 * answer CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED); other work on a capturing stream (copies,
 * sets, events, launches) runs at once as without capture; capture modes are kept per thread
 * (cuThreadExchangeStreamCaptureMode) but never enforced; captured nodes have no
 * dependencies. */
#include "simcuda_internal.h"
#include "simcuda_log.h"

static uint64_t next_capture_id = 1; /* lock held */
static __thread CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

/* Lock held. The stream object that can capture, or an error. */
static CUresult capturable(CUstream stream, struct CUstream_st **out)
{
    struct CUctx_st *ctx;
    CUresult result = simcuda__stream_context(stream, &ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (!stream || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    *out = stream;
    return CUDA_SUCCESS;
}

static bool is_default(CUstream stream)
{
    return !stream || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
}

/* The origin stream of a capturing stream's capture (itself when it began it). */
static struct CUstream_st *origin_of(struct CUstream_st *stream)
{
    return stream->capture_origin ? stream->capture_origin : stream;
}

CUresult simcuda__capture_of(CUstream stream, struct CUgraph_st **graph)
{
    *graph = NULL;
    if (is_default(stream) || !stream->capture)
        return CUDA_SUCCESS;
    if (origin_of(stream)->capture_invalidated)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    *graph = stream->capture;
    return CUDA_SUCCESS;
}

CUresult simcuda__capture_forbids_sync(CUstream stream)
{
    if (is_default(stream) || !stream->capture)
        return CUDA_SUCCESS;
    origin_of(stream)->capture_invalidated = true;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

void simcuda__capture_node_added(CUstream stream)
{
    if (!is_default(stream) && stream->capture_origin)
        stream->capture_nodes++;
}

void simcuda__capture_record(CUstream stream, struct simcuda__capture_mark *mark)
{
    *mark = (struct simcuda__capture_mark){0};
    simcuda__lock();
    if (!is_default(stream) && stream->capture) {
        mark->origin = origin_of(stream);
        mark->id = stream->capture_id;
        mark->source = stream;
        mark->nodes = stream->capture_nodes;
    }
    simcuda__unlock();
}

CUresult simcuda__capture_wait(CUstream stream, const struct simcuda__capture_mark *mark)
{
    CUresult result = CUDA_SUCCESS;
    simcuda__lock();
    struct CUstream_st *origin = mark->origin;
    bool active = origin && origin->capture && origin->capture_id == mark->id;
    if (!active) {
        /* an event of no capture, or of one that has ended: an ordinary wait */
    } else if (is_default(stream)) {
        result = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    } else if (stream->capture && origin_of(stream) != origin) {
        result = CUDA_ERROR_STREAM_CAPTURE_ISOLATION; /* captures into another graph */
    } else if (stream->capture) { /* within the capture: the source's nodes are joined */
        struct CUstream_st *source = mark->source;
        if (source != stream && source->capture_nodes_joined < mark->nodes)
            source->capture_nodes_joined = mark->nodes;
    } else { /* the fork: stream joins the capture */
        stream->capture = origin->capture;
        stream->capture_id = origin->capture_id;
        stream->capture_origin = origin;
        stream->capture_nodes = 0;
        stream->capture_nodes_joined = 0;
    }
    simcuda__unlock();
    return result;
}

static CUresult begin_capture(CUstream hStream, CUstreamCaptureMode mode)
{
    simcuda__lock();
    struct CUstream_st *stream = NULL;
    CUresult result = capturable(hStream, &stream);
    if (result == CUDA_SUCCESS && (unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS && stream->capture)
        result = CUDA_ERROR_ILLEGAL_STATE; /* already capturing */
    if (result == CUDA_SUCCESS && !(stream->capture = simcuda__graph_new()))
        result = CUDA_ERROR_OUT_OF_MEMORY;
    if (result == CUDA_SUCCESS) {
        stream->capture_id = next_capture_id++;
        stream->capture_invalidated = false;
    }
    simcuda__unlock();
    return result;
}

/* Logged with nothing but the result (the stream is no memory handle). */
SIMCUDA_EXPORT CUresult CUDAAPI cuStreamBeginCapture(CUstream hStream)
{
    return SIMCUDA__LOG(begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL), 0, 0, 0);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamBeginCapture_ptsz(CUstream hStream)
{
    return SIMCUDA__LOG(begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL), 0, 0, 0);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
    return SIMCUDA__LOG(begin_capture(hStream, mode), 0, 0, 0);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream hStream,
                                                             CUstreamCaptureMode mode)
{
    return SIMCUDA__LOG(begin_capture(hStream, mode), 0, 0, 0);
}

static CUresult end_capture(CUstream hStream, CUgraph *phGraph)
{
    simcuda__lock();
    struct CUstream_st *stream = NULL;
    CUresult result = capturable(hStream, &stream);
    if (result == CUDA_SUCCESS && !phGraph)
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS && !stream->capture)
        result = CUDA_ERROR_ILLEGAL_STATE; /* not capturing */
    if (result == CUDA_SUCCESS && stream->capture_origin)
        result = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED; /* joined: the origin ends it */
    if (result == CUDA_SUCCESS) {
        /* the capture ends for every stream joined into it */
        bool unjoined = false;
        for (struct CUstream_st *s = simcuda__state.streams; s; s = s->next_all) {
            if (s->capture_origin != stream)
                continue;
            unjoined = unjoined || s->capture_nodes > s->capture_nodes_joined;
            s->capture = NULL;
            s->capture_origin = NULL;
            s->capture_nodes = s->capture_nodes_joined = 0;
        }
        *phGraph = stream->capture;
        if (stream->capture_invalidated || unjoined) {
            simcuda__graph_discard(stream->capture);
            *phGraph = NULL;
            result = stream->capture_invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
                                                 : CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
        }
        stream->capture = NULL;
        stream->capture_invalidated = false;
    }
    simcuda__unlock();
    return result;
}

/* Logged with handle = the graph returned. */
SIMCUDA_EXPORT CUresult CUDAAPI cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    CUresult result = end_capture(hStream, phGraph);
    return SIMCUDA__LOG(result, 0, 0, result == CUDA_SUCCESS ? (uintptr_t)*phGraph : 0);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
    CUresult result = end_capture(hStream, phGraph);
    return SIMCUDA__LOG(result, 0, 0, result == CUDA_SUCCESS ? (uintptr_t)*phGraph : 0);
}

/* The stream's capture: status, id and graph (each out pointer may be NULL). */
static CUresult capture_info(CUstream hStream, CUstreamCaptureStatus *status, cuuint64_t *id,
                             CUgraph *graph, const CUgraphNode **deps, size_t *count)
{
    simcuda__lock();
    struct CUctx_st *ctx;
    CUresult result = simcuda__stream_context(hStream, &ctx);
    if (result == CUDA_SUCCESS && !status)
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS) {
        struct CUstream_st *s = is_default(hStream) ? NULL : hStream;
        bool capturing = s && s->capture;
        *status = !capturing                          ? CU_STREAM_CAPTURE_STATUS_NONE
                  : origin_of(s)->capture_invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                                      : CU_STREAM_CAPTURE_STATUS_ACTIVE;
        if (id && capturing)
            *id = s->capture_id;
        if (graph && capturing)
            *graph = s->capture;
        if (deps && capturing)
            *deps = NULL;
        if (count && capturing)
            *count = 0; /* captured nodes have no dependencies here */
    }
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamIsCapturing(CUstream hStream,
                                                    CUstreamCaptureStatus *captureStatus)
{
    return capture_info(hStream, captureStatus, NULL, NULL, NULL, NULL);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream hStream,
                                                         CUstreamCaptureStatus *captureStatus)
{
    return capture_info(hStream, captureStatus, NULL, NULL, NULL, NULL);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream hStream,
                                                       CUstreamCaptureStatus *captureStatus_out,
                                                       cuuint64_t *id_out)
{
    return capture_info(hStream, captureStatus_out, id_out, NULL, NULL, NULL);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_ptsz(
    CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out)
{
    return capture_info(hStream, captureStatus_out, id_out, NULL, NULL, NULL);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v2(CUstream hStream,
                                                          CUstreamCaptureStatus *captureStatus_out,
                                                          cuuint64_t *id_out, CUgraph *graph_out,
                                                          const CUgraphNode **dependencies_out,
                                                          size_t *numDependencies_out)
{
    return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                        numDependencies_out);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v2_ptsz(
    CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
    CUgraph *graph_out, const CUgraphNode **dependencies_out, size_t *numDependencies_out)
{
    return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                        numDependencies_out);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v3(CUstream hStream,
                                                          CUstreamCaptureStatus *captureStatus_out,
                                                          cuuint64_t *id_out, CUgraph *graph_out,
                                                          const CUgraphNode **dependencies_out,
                                                          const CUgraphEdgeData **edgeData_out,
                                                          size_t *numDependencies_out)
{
    if (edgeData_out)
        *edgeData_out = NULL;
    return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                        numDependencies_out);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v3_ptsz(
    CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
    CUgraph *graph_out, const CUgraphNode **dependencies_out, const CUgraphEdgeData **edgeData_out,
    size_t *numDependencies_out)
{
    if (edgeData_out)
        *edgeData_out = NULL;
    return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                        numDependencies_out);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    if (!mode || (unsigned)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode old = thread_mode;
    thread_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}
