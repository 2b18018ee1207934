/* graph_memory.c — graph memory nodes the way a client uses them (cuda.core's
 * GraphMemoryResource, cudax's graph_memory_resource, the graphMemoryNodes sample): a step
 * graph built once, whose workspace is allocated and freed inside the graph and whose output
 * is allocated by the graph and freed by the consumer with cuMemFreeAsync after each launch;
 * a second graph freeing that output itself, instantiated with auto-free-on-launch; the graph
 * pool queried, its high mark reset, then trimmed. Driver API, linked against libcuda.so.1
 * (simcuda). Exits 0 when every call succeeded and the pool behaved as the guide says. */
#define PROG_NAME "graph_memory"
#include "prog_driver.h"
#include <stdio.h>
#include <stdlib.h>

#define STEPS 4
#define MiB (1u << 20)

static CUDA_MEM_ALLOC_NODE_PARAMS on_device(CUdevice dev, size_t bytes)
{
    CUDA_MEM_ALLOC_NODE_PARAMS p = {0};
    p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.poolProps.location.id = dev;
    p.bytesize = bytes;
    return p;
}

static cuuint64_t graph_mem(CUdevice dev, CUgraphMem_attribute attr)
{
    cuuint64_t value = 0;
    CHECK(cuDeviceGetGraphMemAttribute(dev, attr, &value));
    return value;
}

int main(void)
{
    CUstream stream;
    CUdevice dev = prog_start();
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

    /* the step: workspace (freed in the graph), output (freed by the consumer) */
    CUgraph step;
    CUgraphNode workspace_node, output_node, release_node;
    CHECK(cuGraphCreate(&step, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS workspace = on_device(dev, 24 * MiB);
    CHECK(cuGraphAddMemAllocNode(&workspace_node, step, NULL, 0, &workspace));
    CUDA_MEM_ALLOC_NODE_PARAMS output = on_device(dev, 10 * MiB);
    CHECK(cuGraphAddMemAllocNode(&output_node, step, &workspace_node, 1, &output));
    CUgraphNode deps[] = {workspace_node, output_node};
    CHECK(cuGraphAddMemFreeNode(&release_node, step, deps, 2, workspace.dptr));
    CUgraphExec step_exec;
    CHECK(cuGraphInstantiate(&step_exec, step, 0));
    CHECK(cuGraphDestroy(step)); /* the exec keeps its nodes */
    for (int i = 0; i < STEPS; i++) {
        CHECK(cuGraphLaunch(step_exec, stream));
        CHECK(cuMemFreeAsync(output.dptr, stream)); /* the consumer is done with it */
    }
    CHECK(cuStreamSynchronize(stream));
    if (graph_mem(dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) != 0 ||
        graph_mem(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) < 34 * MiB) {
        fprintf(stderr, "graph_memory: the graph pool should keep the step's memory reserved\n");
        return 2;
    }

    /* a graph that frees the step's output itself, relaunched with auto-free */
    CUgraph consumer;
    CUgraphNode node;
    CHECK(cuGraphCreate(&consumer, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS scratch = on_device(dev, 3 * MiB);
    CHECK(cuGraphAddMemAllocNode(&node, consumer, NULL, 0, &scratch));
    CUgraphExec consumer_exec;
    CUDA_GRAPH_INSTANTIATE_PARAMS params = {
        .flags = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH};
    CHECK(cuGraphInstantiateWithParams(&consumer_exec, consumer, &params));
    CHECK(cuGraphLaunch(consumer_exec, stream));
    CHECK(cuGraphLaunch(consumer_exec, stream)); /* scratch freed, then taken again */
    CHECK(cuMemFree(scratch.dptr));
    CHECK(cuGraphLaunch(step_exec, stream));
    CUgraph freer;
    CUgraphExec freer_exec;
    CHECK(cuGraphCreate(&freer, 0));
    CHECK(cuGraphAddMemFreeNode(&node, freer, NULL, 0, output.dptr));
    CHECK(cuGraphInstantiate(&freer_exec, freer, 0));
    CHECK(cuGraphLaunch(freer_exec, stream));

    cuuint64_t zero = 0;
    CHECK(cuDeviceSetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &zero));
    CHECK(cuStreamSynchronize(stream));
    CHECK(cuDeviceGraphMemTrim(dev));
    if (graph_mem(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) != 0) {
        fprintf(stderr, "graph_memory: a trim should release the graph pool\n");
        return 2;
    }
    CHECK(cuGraphExecDestroy(freer_exec));
    CHECK(cuGraphDestroy(freer));
    CHECK(cuGraphExecDestroy(consumer_exec));
    CHECK(cuGraphDestroy(consumer));
    CHECK(cuGraphExecDestroy(step_exec));
    CHECK(cuStreamDestroy(stream));
    CHECK(cuDevicePrimaryCtxRelease(dev));
    printf("graph_memory: %d steps\n", STEPS);
    return 0;
}
