/* simcuda_capture.c — driver stream capture as far as memory needs it (simulated).
 *
 * cuStreamBeginCapture gives a stream a new empty graph; while it captures, cuMemAllocAsync
 * and cuMemAllocFromPoolAsync on it add an allocation node to that graph (its address fixed
 * then, no memory until the instantiated graph is launched) and cuMemFreeAsync a free node,
 * as cuGraphAddMemAllocNode / cuGraphAddMemFreeNode do (simcuda_graph.c); cuStreamEndCapture
 * hands the graph over. A stream synchronisation on a capturing stream fails with
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture, whose end then fails with
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and destroys the graph. Simplifications: only created
 * streams capture (the legacy and per-thread default streams answer
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED); other work on a capturing stream (copies, sets,
 * events, launches) runs at once as without capture; no cross-stream capture (events do not
 * join streams into a capture); capture modes are kept per thread
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

CUresult simcuda__capture_of(CUstream stream, struct CUgraph_st **graph)
{
    *graph = NULL;
    if (!stream || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD)
        return CUDA_SUCCESS;
    if (stream->capture_invalidated)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    *graph = stream->capture;
    return CUDA_SUCCESS;
}

CUresult simcuda__capture_forbids_sync(CUstream stream)
{
    if (!stream || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD || !stream->capture)
        return CUDA_SUCCESS;
    stream->capture_invalidated = true;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
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
    if (result == CUDA_SUCCESS) {
        *phGraph = stream->capture;
        if (stream->capture_invalidated) {
            simcuda__graph_discard(stream->capture);
            *phGraph = NULL;
            result = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
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
        struct CUstream_st *s = !hStream || hStream == CU_STREAM_LEGACY ||
                                        hStream == CU_STREAM_PER_THREAD
                                    ? NULL
                                    : hStream;
        bool capturing = s && s->capture;
        *status = !capturing               ? CU_STREAM_CAPTURE_STATUS_NONE
                  : s->capture_invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
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
