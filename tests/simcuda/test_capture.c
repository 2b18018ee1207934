/* Driver stream capture of stream-ordered allocations (simcuda_capture.c): a captured
 * cuMemAllocAsync is an allocation node of the capture's graph, its address fixed at once and
 * its memory taken only when the instantiated graph is launched. */
#include "simcuda_test_util.h"

static uint64_t graph_attr(CUgraphMem_attribute attr)
{
    cuuint64_t value = 0;
    CU_OK(cuDeviceGetGraphMemAttribute(0, attr, &value));
    return value;
}

static CUstream new_stream(void)
{
    CUstream stream;
    CU_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    return stream;
}

Test(capture, a_captured_allocation_is_a_node_with_memory_only_at_launch)
{
    simcuda_test_start("1GiB", "0");
    CUstream stream = new_stream();
    size_t before = simcuda_test_free();
    CU_OK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUstreamCaptureStatus status;
    cuuint64_t id = 0;
    CUgraph capturing = NULL;
    CU_OK(cuStreamGetCaptureInfo_v3(stream, &status, &id, &capturing, NULL, NULL, NULL));
    cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    cr_assert_neq(id, 0);
    CUdeviceptr a = 0, b = 0;
    CU_OK(cuMemAllocAsync(&a, 3 * MiB, stream)); /* two pages */
    CU_OK(cuMemAllocAsync(&b, PAGE, stream));
    CU_OK(cuMemFreeAsync(b, stream)); /* a free node of the same graph */
    cr_assert_neq(a, 0);
    cr_assert_eq(simcuda_test_free(), before, "captured: an address, no memory");
    CUgraph graph = NULL;
    CU_OK(cuStreamEndCapture(stream, &graph));
    cr_assert_eq(graph, capturing, "the graph the capture built");
    CU_OK(cuStreamIsCapturing(stream, &status));
    cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_NONE);
    CUgraphExec exec;
    CU_OK(
        cuGraphInstantiateWithFlags(&exec, graph, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
    for (int i = 0; i < 3; i++) {
        CU_OK(cuGraphLaunch(exec, stream));
        cr_assert_eq(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 2 * PAGE, "a stays live");
        cr_assert_eq(graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 3 * PAGE);
        cr_assert_eq(before - simcuda_test_free(), 3 * PAGE);
    }
    CU_OK(cuMemsetD8(a, 0, 3 * MiB)); /* the same address, launched */
    CU_OK(cuMemFreeAsync(a, stream)); /* outside the capture: back to the graph pool */
    CU_OK(cuDeviceGraphMemTrim(0));
    cr_assert_eq(simcuda_test_free(), before);
    CU_OK(cuGraphExecDestroy(exec));
    CU_OK(cuGraphDestroy(graph));
}

Test(capture, an_allocation_from_a_pool_is_captured_too)
{
    simcuda_test_start("1GiB", "0");
    CUstream stream = new_stream();
    CUmemoryPool pool;
    CU_OK(cuDeviceGetDefaultMemPool(&pool, 0));
    size_t before = simcuda_test_free();
    CU_OK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_RELAXED));
    CUdeviceptr a = 0;
    CU_OK(cuMemAllocFromPoolAsync(&a, PAGE, pool, stream));
    CUgraph graph;
    CU_OK(cuStreamEndCapture(stream, &graph));
    cr_assert_eq(simcuda_test_free(), before);
    CUgraphExec exec;
    CU_OK(cuGraphInstantiateWithFlags(&exec, graph, 0));
    CU_OK(cuGraphLaunch(exec, stream));
    cr_assert_eq(before - simcuda_test_free(), PAGE);
    CU_FAILS(cuGraphLaunch(exec, stream), CUDA_ERROR_INVALID_VALUE); /* still live */
    CU_OK(cuMemFreeAsync(a, stream));
    CU_OK(cuGraphLaunch(exec, stream));
}

Test(capture, a_sync_invalidates_the_capture)
{
    simcuda_test_start("1GiB", "0");
    CUstream stream = new_stream();
    CU_OK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_FAILS(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
    CUdeviceptr a = 0;
    CU_OK(cuMemAllocAsync(&a, PAGE, stream));
    CU_FAILS(cuStreamSynchronize(stream), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUstreamCaptureStatus status;
    CU_OK(cuStreamIsCapturing(stream, &status));
    cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    CU_FAILS(cuMemAllocAsync(&a, PAGE, stream), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CUgraph graph = (CUgraph)1;
    CU_FAILS(cuStreamEndCapture(stream, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    cr_assert_null(graph);
    CU_FAILS(cuStreamEndCapture(stream, &graph), CUDA_ERROR_ILLEGAL_STATE); /* not capturing */
    CU_OK(cuStreamSynchronize(stream));
}

Test(capture, only_created_streams_capture_and_frees_need_graph_memory)
{
    simcuda_test_start("1GiB", "0");
    CU_FAILS(cuStreamBeginCapture_v2(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
             CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUstream stream = new_stream();
    CUdeviceptr plain = 0;
    CU_OK(cuMemAllocAsync(&plain, PAGE, stream)); /* before the capture: a pool block */
    CU_OK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CU_FAILS(cuMemFreeAsync(plain, stream), CUDA_ERROR_INVALID_VALUE);
    CUgraph graph;
    CU_OK(cuStreamEndCapture(stream, &graph));
    CU_OK(cuMemFreeAsync(plain, stream));
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    CU_OK(cuThreadExchangeStreamCaptureMode(&mode));
    cr_assert_eq(mode, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CU_OK(cuGraphDestroy(graph));
}

/* The graph a stream captures into (NULL when it does not capture). */
static CUgraph capture_graph(CUstream stream, CUstreamCaptureStatus *status)
{
    CUgraph graph = NULL;
    CU_OK(cuStreamGetCaptureInfo_v3(stream, status, NULL, &graph, NULL, NULL, NULL));
    return graph;
}

/* A fork from origin into side through an event, and the join back through another. */
static void fork_into(CUstream origin, CUstream side, CUevent event)
{
    CU_OK(cuEventRecord(event, origin));
    CU_OK(cuStreamWaitEvent(side, event, 0));
}

Test(capture, a_stream_waiting_on_a_captured_event_joins_the_capture)
{
    simcuda_test_start("1GiB", "0");
    CUstream origin = new_stream(), side = new_stream();
    CUevent forked, joined;
    CU_OK(cuEventCreate(&forked, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuEventCreate(&joined, CU_EVENT_DISABLE_TIMING));
    size_t before = simcuda_test_free();
    CU_OK(cuStreamBeginCapture(origin, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUstreamCaptureStatus status;
    CUgraph graph = capture_graph(origin, &status);
    cr_assert_null(capture_graph(side, &status));
    cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_NONE, "not joined before the wait");
    fork_into(origin, side, forked);
    cr_assert_eq(capture_graph(side, &status), graph, "the origin's graph");
    cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CUdeviceptr a = 0, b = 0;
    CU_OK(cuMemAllocAsync(&a, 2 * PAGE, side)); /* a node of the origin's graph */
    CU_OK(cuMemAllocAsync(&b, PAGE, origin));
    CU_OK(cuMemFreeAsync(b, side)); /* a free node of an allocation captured on origin */
    cr_assert_eq(simcuda_test_free(), before, "captured on the joined stream: no memory");
    CU_FAILS(cuStreamEndCapture(side, &graph), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
    fork_into(side, origin, joined);
    CUgraph ended = NULL;
    CU_OK(cuStreamEndCapture(origin, &ended));
    cr_assert_eq(ended, graph);
    CU_OK(cuStreamIsCapturing(side, &status));
    cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_NONE, "the origin's end ends the join");
    CUdeviceptr eager = 0;
    CU_OK(cuMemAllocAsync(&eager, PAGE, side)); /* no longer captured: a pool block */
    cr_assert_lt(simcuda_test_free(), before);
    CU_OK(cuMemFreeAsync(eager, side));
    CUgraphExec exec;
    CU_OK(cuGraphInstantiateWithFlags(&exec, ended, 0));
    CU_OK(cuGraphLaunch(exec, origin));
    cr_assert_eq(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 2 * PAGE, "a, from side");
    CU_OK(cuMemFreeAsync(a, side));
    CU_OK(cuGraphExecDestroy(exec));
    CU_OK(cuGraphDestroy(ended));
}

Test(capture, a_joined_stream_shares_the_capture_state)
{
    simcuda_test_start("1GiB", "0");
    CUstream origin = new_stream(), side = new_stream(), other = new_stream();
    CUevent forked, foreign;
    CU_OK(cuEventCreate(&forked, 0));
    CU_OK(cuEventCreate(&foreign, 0));
    CU_OK(cuStreamBeginCapture(other, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuEventRecord(foreign, other));
    CU_OK(cuStreamBeginCapture(origin, CU_STREAM_CAPTURE_MODE_GLOBAL));
    fork_into(origin, side, forked);
    CU_FAILS(cuStreamWaitEvent(side, foreign, 0), CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
    CU_FAILS(cuStreamWaitEvent(NULL, forked, 0), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CU_FAILS(cuStreamSynchronize(side), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUstreamCaptureStatus status;
    CU_OK(cuStreamIsCapturing(origin, &status));
    cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_INVALIDATED, "a sync of side invalidates it");
    CUgraph graph = (CUgraph)1;
    CU_FAILS(cuStreamEndCapture(origin, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    cr_assert_null(graph);
    CU_OK(cuStreamIsCapturing(side, &status));
    cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_NONE);
    CU_OK(cuStreamWaitEvent(side, forked, 0)); /* its capture ended: an ordinary wait */
    CU_OK(cuStreamEndCapture(other, &graph));
    CU_OK(cuGraphDestroy(graph));
}

Test(capture, a_node_not_joined_back_fails_the_end_as_unjoined)
{
    simcuda_test_start("1GiB", "0");
    CUstream origin = new_stream(), side = new_stream();
    CUevent forked, joined;
    CU_OK(cuEventCreate(&forked, 0));
    CU_OK(cuEventCreate(&joined, 0));
    CU_OK(cuStreamBeginCapture(origin, CU_STREAM_CAPTURE_MODE_GLOBAL));
    fork_into(origin, side, forked);
    CUdeviceptr a = 0, b = 0;
    CU_OK(cuMemAllocAsync(&a, PAGE, side));
    fork_into(side, origin, joined);        /* a joined back */
    CU_OK(cuMemAllocAsync(&b, PAGE, side)); /* b never */
    CUgraph graph = (CUgraph)1;
    CU_FAILS(cuStreamEndCapture(origin, &graph), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
    cr_assert_null(graph);
    CUstreamCaptureStatus status;
    CU_OK(cuStreamIsCapturing(side, &status));
    cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_NONE);
    /* the same with b joined back ends well */
    CU_OK(cuStreamBeginCapture(origin, CU_STREAM_CAPTURE_MODE_GLOBAL));
    fork_into(origin, side, forked);
    CU_OK(cuMemAllocAsync(&a, PAGE, side));
    fork_into(side, origin, joined);
    CU_OK(cuStreamEndCapture(origin, &graph));
    CU_OK(cuGraphDestroy(graph));
}
