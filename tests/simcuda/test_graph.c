/* Graph memory nodes (simcuda_graph.c): addresses fixed at node creation, pages taken from the
 * graph pool at launch and kept reserved until a trim. */
#include <dlfcn.h>

#include "simcuda_test_util.h"

static CUDA_MEM_ALLOC_NODE_PARAMS alloc_params(uint64_t bytes)
{
    CUDA_MEM_ALLOC_NODE_PARAMS p = {0};
    p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.poolProps.location.id = 0;
    p.bytesize = bytes;
    return p;
}

static uint64_t graph_attr(CUgraphMem_attribute attr)
{
    cuuint64_t value = 0;
    CU_OK(cuDeviceGetGraphMemAttribute(0, attr, &value));
    return value;
}

Test(graph, the_address_is_fixed_at_creation_and_memory_taken_at_launch)
{
    simcuda_test_start("1GiB", "0");
    size_t before = simcuda_test_free();
    CUgraph graph;
    CUgraphNode node;
    CU_OK(cuGraphCreate(&graph, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS p = alloc_params(5 * MiB); /* three pages */
    CU_OK(cuGraphAddMemAllocNode(&node, graph, NULL, 0, &p));
    cr_assert_neq(p.dptr, 0);
    cr_assert_eq(simcuda_test_free(), before, "a node reserves an address, no memory");
    CUDA_MEM_ALLOC_NODE_PARAMS got;
    CU_OK(cuGraphMemAllocNodeGetParams(node, &got));
    cr_assert_eq(got.dptr, p.dptr);
    cr_assert_eq(got.bytesize, 5 * MiB);
    CUgraphExec exec;
    CU_OK(cuGraphInstantiate(&exec, graph, 0));
    CU_OK(cuGraphLaunch(exec, NULL));
    cr_assert_eq(before - simcuda_test_free(), 3 * PAGE);
    cr_assert_eq(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 3 * PAGE);
    CU_OK(cuMemsetD8(p.dptr, 0, 5 * MiB));                         /* live device memory */
    CU_FAILS(cuGraphLaunch(exec, NULL), CUDA_ERROR_INVALID_VALUE); /* still live */
    CU_OK(cuMemFreeAsync(p.dptr, NULL));
    CU_FAILS(cuMemFree(p.dptr), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 0);
    cr_assert_eq(graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 3 * PAGE);
    cr_assert_eq(before - simcuda_test_free(), 3 * PAGE, "freed to the graph pool: reserved");
    CU_OK(cuGraphLaunch(exec, NULL)); /* reuses the reserve */
    cr_assert_eq(before - simcuda_test_free(), 3 * PAGE);
    CU_OK(cuMemFree(p.dptr));
    CU_OK(cuDeviceGraphMemTrim(0));
    cr_assert_eq(simcuda_test_free(), before, "a trim releases the unused reserve");
    cr_assert_eq(graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH), 3 * PAGE);
    cuuint64_t zero = 0;
    CU_OK(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &zero));
    cr_assert_eq(graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH), 0);
    CU_OK(cuGraphExecDestroy(exec));
    CU_OK(cuGraphDestroy(graph));
    CU_FAILS(cuGraphDestroy(graph), CUDA_ERROR_INVALID_VALUE);
}

Test(graph, a_free_node_in_the_same_graph_leaves_the_pages_reserved)
{
    simcuda_test_start("1GiB", "0");
    size_t before = simcuda_test_free();
    CUgraph graph;
    CUgraphNode alloc, release;
    CU_OK(cuGraphCreate(&graph, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS p = alloc_params(PAGE);
    CU_OK(cuGraphAddMemAllocNode(&alloc, graph, NULL, 0, &p));
    CU_OK(cuGraphAddMemFreeNode(&release, graph, &alloc, 1, p.dptr));
    CU_FAILS(cuGraphAddMemFreeNode(&release, graph, &alloc, 1, p.dptr), CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr freed = 0;
    CU_OK(cuGraphMemFreeNodeGetParams(release, &freed));
    cr_assert_eq(freed, p.dptr);
    CUgraphExec exec, second;
    CU_OK(cuGraphInstantiate(&exec, graph, 0));
    CU_FAILS(cuGraphInstantiate(&second, graph, 0), CUDA_ERROR_INVALID_VALUE);
    for (int i = 0; i < 3; i++)
        CU_OK(cuGraphLaunch(exec, NULL));
    cr_assert_eq(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 0);
    cr_assert_eq(before - simcuda_test_free(), PAGE, "one page, reused by every launch");
    CU_FAILS(cuMemFree(p.dptr), CUDA_ERROR_INVALID_VALUE); /* freed inside its graph only */
    CU_OK(cuGraphExecDestroy(exec));
    CU_OK(cuGraphDestroy(graph));
    cr_assert_eq(before - simcuda_test_free(), PAGE, "an exec's end releases nothing");
    CU_OK(cuDeviceGraphMemTrim(0));
    cr_assert_eq(simcuda_test_free(), before);
}

Test(graph, a_launch_that_does_not_fit_fails_and_auto_free_relaunches)
{
    simcuda_test_start("64MiB", "0");
    CUgraph graph;
    CUgraphNode node;
    CU_OK(cuGraphCreate(&graph, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS big = alloc_params(128 * MiB);
    CU_OK(cuGraphAddMemAllocNode(&node, graph, NULL, 0, &big)); /* an address only */
    CUgraphExec exec;
    CU_OK(cuGraphInstantiateWithFlags(&exec, graph, 0));
    CU_FAILS(cuGraphLaunch(exec, NULL), CUDA_ERROR_OUT_OF_MEMORY);
    CU_OK(cuGraphExecDestroy(exec));
    CU_OK(cuGraphDestroy(graph));

    CUgraph small_graph;
    CU_OK(cuGraphCreate(&small_graph, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS small = alloc_params(MiB);
    CU_OK(cuGraphAddMemAllocNode(&node, small_graph, NULL, 0, &small));
    CUDA_GRAPH_INSTANTIATE_PARAMS params = {
        .flags = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH};
    CU_OK(cuGraphInstantiateWithParams(&exec, small_graph, &params));
    cr_assert_eq(params.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
    CU_OK(cuGraphLaunch(exec, NULL));
    CU_OK(cuGraphLaunch(exec, NULL)); /* the live allocation is freed first */
    cr_assert_eq(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), PAGE);
    /* a free node in another graph frees it at that graph's launch */
    CUgraph freer;
    CUgraphExec freer_exec;
    CU_OK(cuGraphCreate(&freer, 0));
    CU_OK(cuGraphAddMemFreeNode(&node, freer, NULL, 0, small.dptr));
    CU_OK(cuGraphInstantiate(&freer_exec, freer, 0));
    CU_OK(cuGraphLaunch(freer_exec, NULL));
    cr_assert_eq(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 0);
    CU_FAILS(cuGraphLaunch(freer_exec, NULL), CUDA_ERROR_INVALID_VALUE); /* nothing to free */
    CU_FAILS(cuGraphAddMemFreeNode(&node, freer, NULL, 0, small.dptr + 4096),
             CUDA_ERROR_INVALID_VALUE);
}

Test(graph, a_context_reset_frees_graph_memory)
{
    simcuda_test_start("1GiB", "0");
    size_t before = simcuda_test_free();
    CUgraph graph;
    CUgraphNode node;
    CU_OK(cuGraphCreate(&graph, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS p = alloc_params(8 * MiB);
    CU_OK(cuGraphAddMemAllocNode(&node, graph, NULL, 0, &p));
    CUgraphExec exec;
    CU_OK(cuGraphInstantiate(&exec, graph, 0));
    CU_OK(cuGraphLaunch(exec, NULL));
    cr_assert_lt(simcuda_test_free(), before);
    CU_OK(cuDevicePrimaryCtxReset(0));
    CUcontext ctx;
    CU_OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CU_OK(cuCtxSetCurrent(ctx));
    cr_assert_eq(simcuda_test_free(), before);
    CU_OK(cuGraphLaunch(exec, NULL)); /* the graph survives; its address too */
}

/* The CUDA 11 five-argument ABI (cuda.h now names cuGraphInstantiateWithFlags
 * cuGraphInstantiate), looked up as a CUDA 11 program links it. */
Test(graph, the_five_argument_instantiate_of_cuda_11)
{
    simcuda_test_start("1GiB", "0");
    typedef CUresult (*legacy_instantiate)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t);
    legacy_instantiate v2 = (legacy_instantiate)dlsym(RTLD_DEFAULT, "cuGraphInstantiate_v2");
    legacy_instantiate v1 = (legacy_instantiate)dlsym(RTLD_DEFAULT, "cuGraphInstantiate");
    cr_assert(v1 && v2);
    CUgraph graph;
    CUgraphNode node, error_node = (CUgraphNode)1;
    CU_OK(cuGraphCreate(&graph, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS p = alloc_params(PAGE);
    CU_OK(cuGraphAddMemAllocNode(&node, graph, NULL, 0, &p));
    char log[16] = "stale";
    CUgraphExec exec, second;
    CU_OK(v2(&exec, graph, &error_node, log, sizeof log));
    cr_assert_null(error_node);
    cr_assert_str_empty(log);
    CU_FAILS(v1(&second, graph, NULL, NULL, 0), CUDA_ERROR_INVALID_VALUE); /* one exec at a time */
    size_t before = simcuda_test_free();
    CU_OK(cuGraphLaunch(exec, NULL));
    cr_assert_eq(before - simcuda_test_free(), PAGE);
    CU_OK(cuMemFree(p.dptr));
    CU_OK(cuGraphExecDestroy(exec));
    CU_OK(v1(&second, graph, NULL, NULL, 0));
    CU_OK(cuGraphExecDestroy(second));
    CU_OK(cuGraphDestroy(graph));
}

Test(graph, get_nodes_counts_and_lists_the_memory_nodes)
{
    simcuda_test_start("1GiB", "0");
    CUgraph graph;
    CUgraphNode alloc, release, nodes[3] = {NULL, NULL, (CUgraphNode)1};
    CU_OK(cuGraphCreate(&graph, 0));
    size_t count = 7;
    CU_OK(cuGraphGetNodes(graph, NULL, &count));
    cr_assert_eq(count, 0, "a new graph has no nodes");
    CUDA_MEM_ALLOC_NODE_PARAMS p = alloc_params(PAGE);
    CU_OK(cuGraphAddMemAllocNode(&alloc, graph, NULL, 0, &p));
    CU_OK(cuGraphAddMemFreeNode(&release, graph, &alloc, 1, p.dptr));
    CU_OK(cuGraphGetNodes(graph, NULL, &count));
    cr_assert_eq(count, 2);
    count = 3;
    CU_OK(cuGraphGetNodes(graph, nodes, &count));
    cr_assert_eq(count, 2);
    cr_assert(nodes[0] == release && nodes[1] == alloc, "newest first");
    cr_assert_null(nodes[2], "an unused entry is NULL");
    count = 1;
    CU_OK(cuGraphGetNodes(graph, nodes, &count));
    cr_assert_eq(count, 1, "a short array: filled, the count kept");
    CU_FAILS(cuGraphGetNodes(graph, nodes, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuGraphDestroy(graph));
    CU_FAILS(cuGraphGetNodes(graph, NULL, &count), CUDA_ERROR_INVALID_VALUE);
}
