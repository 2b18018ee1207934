/* graph_capture_fork.c — cross-stream capture, the shape of cuda-samples' graphMemoryNodes
 * stream-captured run (not its code): a capture begun on an origin stream forks into a side
 * stream through an event (cuEventRecord on the origin, cuStreamWaitEvent on the side); the
 * side stream allocates and frees inside the capture, then joins back through a second event
 * before the origin ends the capture. Then a capture whose side stream allocates after its
 * join back ends with CUDA_ERROR_STREAM_CAPTURE_UNJOINED. Driver API, linked against
 * libcuda.so.1 (simcuda). Exits 0 when every call behaved so and the captured allocations took
 * memory only at launch. */
#define PROG_NAME "graph_capture_fork"
#include "prog_driver.h"
#include <stdio.h>

#define MiB (1u << 20)

/* An event recorded on from, waited on by to. */
static void pass(CUstream from, CUstream to, CUevent event)
{
    CHECK(cuEventRecord(event, from));
    CHECK(cuStreamWaitEvent(to, event, 0));
}

int main(void)
{
    CUdevice dev = prog_start();
    CUstream origin, side;
    CUevent forked, joined;
    CHECK(cuStreamCreate(&origin, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
    CHECK(cuEventCreate(&forked, CU_EVENT_DISABLE_TIMING));
    CHECK(cuEventCreate(&joined, CU_EVENT_DISABLE_TIMING));
    CUdeviceptr warm; /* eager, on the side stream: not a node */
    CHECK(cuMemAllocAsync(&warm, 2 * MiB, side));
    CHECK(cuMemFreeAsync(warm, side));
    CHECK(cuStreamSynchronize(side));

    size_t free_before, free_after, total;
    CHECK(cuMemGetInfo(&free_before, &total));
    CHECK(cuStreamBeginCapture(origin, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr input, square, output;
    CHECK(cuMemAllocAsync(&input, 8 * MiB, origin));
    pass(origin, side, forked); /* side joins the capture */
    CHECK(cuMemAllocAsync(&square, 8 * MiB, side));
    CHECK(cuMemFreeAsync(input, side)); /* a free node, on the joined stream */
    CHECK(cuMemAllocAsync(&output, 4 * MiB, side));
    CHECK(cuMemFreeAsync(square, side));
    pass(side, origin, joined); /* and joins back */
    CUgraph graph;
    CHECK(cuStreamEndCapture(origin, &graph));
    CUstreamCaptureStatus status;
    CHECK(cuStreamIsCapturing(side, &status));
    CHECK(cuMemGetInfo(&free_after, &total));
    if (status != CU_STREAM_CAPTURE_STATUS_NONE || free_after != free_before) {
        fprintf(stderr, "graph_capture_fork: the side stream still captures, or a captured "
                        "allocation took memory\n");
        return 2;
    }
    CUgraphExec exec;
    CHECK(cuGraphInstantiate(&exec, graph, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
    CHECK(cuGraphLaunch(exec, origin));
    CHECK(cuGraphLaunch(exec, origin));
    CHECK(cuMemsetD8Async(output, 1, 4 * MiB, side));
    CHECK(cuMemFreeAsync(output, side)); /* after the capture: back to the graph pool */
    CHECK(cuStreamSynchronize(origin));
    CHECK(cuGraphExecDestroy(exec));
    CHECK(cuGraphDestroy(graph));
    CHECK(cuDeviceGraphMemTrim(dev));

    /* an allocation on the side stream after its join back: the end fails, leaves no graph */
    CUdeviceptr stray;
    CHECK(cuStreamBeginCapture(origin, CU_STREAM_CAPTURE_MODE_GLOBAL));
    pass(origin, side, forked);
    pass(side, origin, joined);
    CHECK(cuMemAllocAsync(&stray, MiB, side));
    if (cuStreamEndCapture(origin, &graph) != CUDA_ERROR_STREAM_CAPTURE_UNJOINED) {
        fprintf(stderr, "graph_capture_fork: the end should fail as unjoined\n");
        return 2;
    }
    CHECK(cuEventDestroy(forked));
    CHECK(cuEventDestroy(joined));
    CHECK(cuStreamDestroy(side));
    CHECK(cuStreamDestroy(origin));
    CHECK(cuDevicePrimaryCtxRelease(dev));
    return 0;
}
