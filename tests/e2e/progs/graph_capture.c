/* graph_capture.c — a training step in PyTorch's CUDA-graph shape with the cudaMallocAsync
 * backend, on the driver API: warm-up steps run eagerly (stream-ordered allocations from the
 * pool), then one step is captured on a side stream (its workspace allocated and freed inside
 * the capture, its output allocated there and kept), the graph is instantiated with
 * auto-free-on-launch and replayed STEPS times; the output is then freed by its consumer.
 * Driver API, linked against libcuda.so.1 (simcuda). Prints the graph pool's use after the
 * replays ("graph_capture: used U reserved R"), then lets a synchronisation invalidate a
 * second capture; exits 0 when every call behaved so and a captured allocation took memory
 * only at launch. */
#define PROG_NAME "graph_capture"
#include "prog_driver.h"
#include <stdio.h>
#include <stdlib.h>

#define STEPS 5
#define MiB (1u << 20)

static cuuint64_t graph_mem(CUdevice dev, CUgraphMem_attribute attr)
{
    cuuint64_t value = 0;
    CHECK(cuDeviceGetGraphMemAttribute(dev, attr, &value));
    return value;
}

/* One step: a workspace freed within the step, an output kept for the consumer. */
static CUdeviceptr step(CUstream stream, size_t workspace_bytes, size_t output_bytes)
{
    CUdeviceptr workspace, output;
    CHECK(cuMemAllocAsync(&workspace, workspace_bytes, stream));
    CHECK(cuMemAllocAsync(&output, output_bytes, stream));
    CHECK(cuMemsetD8Async(output, 0, output_bytes, stream)); /* runs at once, uncaptured */
    CHECK(cuMemFreeAsync(workspace, stream));
    return output;
}

int main(void)
{
    CUdevice dev = prog_start();
    CUstream stream;
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < 3; i++) /* warm-up, eager: smaller than the captured step */
        CHECK(cuMemFreeAsync(step(stream, 4 * MiB, 2 * MiB), stream));
    CHECK(cuStreamSynchronize(stream));

    size_t free_before, free_after, total;
    CHECK(cuMemGetInfo(&free_before, &total));
    CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CUdeviceptr output = step(stream, 24 * MiB, 10 * MiB);
    CUgraph graph;
    CHECK(cuStreamEndCapture(stream, &graph));
    CHECK(cuMemGetInfo(&free_after, &total));
    if (free_after != free_before || graph_mem(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT)) {
        fprintf(stderr, "graph_capture: a captured allocation took memory before launch\n");
        return 2;
    }

    CUgraphExec exec;
    CHECK(cuGraphInstantiate(&exec, graph, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
    for (int i = 0; i < STEPS; i++)
        CHECK(cuGraphLaunch(exec, stream)); /* the output of the launch before is freed */
    CHECK(cuMemsetD8Async(output, 1, 10 * MiB, stream)); /* the same address each launch */
    printf("graph_capture: used %llu reserved %llu\n",
           (unsigned long long)graph_mem(dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT),
           (unsigned long long)graph_mem(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT));
    CHECK(cuMemFreeAsync(output, stream)); /* the consumer is done with it */
    CHECK(cuStreamSynchronize(stream));
    CHECK(cuGraphExecDestroy(exec));
    CHECK(cuGraphDestroy(graph));
    CHECK(cuDeviceGraphMemTrim(dev));

    /* a capture that a synchronisation invalidates: its end fails and leaves no graph */
    CUdeviceptr lost;
    CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK(cuMemAllocAsync(&lost, 4 * MiB, stream));
    if (cuStreamSynchronize(stream) != CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED ||
        cuStreamEndCapture(stream, &graph) != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) {
        fprintf(stderr, "graph_capture: a sync should invalidate the capture\n");
        return 2;
    }
    CHECK(cuStreamDestroy(stream));
    CHECK(cuDevicePrimaryCtxRelease(dev));
    return 0;
}
