/* What nvcc-generated code calls (registration, launch configuration, kernel handles,
 * launches), symbols, graphs, stream capture, and cudaGetDriverEntryPoint. */
#include <criterion/criterion.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "simcudart_nvcc.h" /* the __cuda* calls, as nvcc's crt/host_runtime.h declares them */

#define RT_OK(call) cr_assert_eq((call), cudaSuccess, "%s failed", #call)

static void kernel_stub(void)
{
}

static int symbol_shadow[16];

static void start(void)
{
    setenv("SIMCUDA_MEMORY", "1GiB", 1);
    setenv("SIMCUDA_CONTEXT_OVERHEAD", "0", 1);
    void **module = __cudaRegisterFatBinary((void *)"fatbin");
    __cudaRegisterFunction(module, (const char *)kernel_stub, (char *)"kernel", "kernel", -1, NULL,
                           NULL, NULL, NULL, NULL);
    __cudaRegisterVar(module, (char *)symbol_shadow, (char *)"symbol", "symbol", 0,
                      sizeof symbol_shadow, 0, 0);
    __cudaRegisterFatBinaryEnd(module);
}

Test(launch, a_registered_kernel_launches_and_runs_nothing)
{
    start();
    dim3 grid = {4, 1, 1}, block = {256, 1, 1}, got_grid, got_block;
    size_t shared;
    cudaStream_t stream;
    __cudaPushCallConfiguration(grid, block, 128, NULL);
    RT_OK(__cudaPopCallConfiguration(&got_grid, &got_block, &shared, &stream));
    cr_assert_eq(got_grid.x, 4);
    cr_assert_eq(shared, 128);
    cudaKernel_t kernel;
    RT_OK(__cudaGetKernel(&kernel, (const void *)kernel_stub));
    RT_OK(__cudaLaunchKernel(kernel, grid, block, NULL, 0, NULL));
    RT_OK(cudaLaunchKernel((const void *)kernel_stub, grid, block, NULL, 0, NULL));
    dim3 too_big = {2048, 1, 1};
    cr_assert_eq(cudaLaunchKernel((const void *)kernel_stub, grid, too_big, NULL, 0, NULL),
                 cudaErrorInvalidConfiguration);
    cr_assert_eq(cudaLaunchKernel((const void *)start, grid, block, NULL, 0, NULL),
                 cudaErrorInvalidDeviceFunction);
    cudaLaunchAttribute priority = {.id = cudaLaunchAttributePriority, .val.priority = 1};
    cudaLaunchConfig_t config = {
        .gridDim = grid, .blockDim = block, .attrs = &priority, .numAttrs = 1};
    RT_OK(cudaLaunchKernelExC(&config, (const void *)kernel_stub, NULL));
    cr_assert_eq(cudaLaunchKernelExC(&config, (const void *)start, NULL),
                 cudaErrorInvalidDeviceFunction);
    config.blockDim = too_big;
    cr_assert_eq(cudaLaunchKernelExC(&config, (const void *)kernel_stub, NULL),
                 cudaErrorInvalidConfiguration);
    cr_assert_eq(cudaLaunchKernelExC(NULL, (const void *)kernel_stub, NULL), cudaErrorInvalidValue);
    struct cudaFuncAttributes attributes;
    RT_OK(cudaFuncGetAttributes(&attributes, (const void *)kernel_stub));
    cr_assert_eq(attributes.maxThreadsPerBlock, 1024);
    int blocks = 0;
    RT_OK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, (const void *)kernel_stub, 512, 0));
    cr_assert_eq(blocks, 4);
}

Test(launch, symbols_are_their_host_shadows)
{
    start();
    int in[4] = {1, 2, 3, 4}, out[4] = {0};
    RT_OK(cudaMemcpyToSymbol(symbol_shadow, in, sizeof in, 8, cudaMemcpyHostToDevice));
    cr_assert_eq(symbol_shadow[2], 1);
    RT_OK(cudaMemcpyFromSymbol(out, symbol_shadow, sizeof out, 8, cudaMemcpyDeviceToHost));
    cr_assert_eq(out[3], 4);
    size_t size = 0;
    void *address = NULL;
    RT_OK(cudaGetSymbolSize(&size, symbol_shadow));
    cr_assert_eq(size, sizeof symbol_shadow);
    RT_OK(cudaGetSymbolAddress(&address, symbol_shadow));
    cr_assert_eq(address, symbol_shadow);
    cr_assert_eq(cudaMemcpyToSymbol(symbol_shadow, in, 64, 8, cudaMemcpyHostToDevice),
                 cudaErrorInvalidValue);
    cr_assert_eq(cudaMemcpyToSymbol(in, in, 4, 0, cudaMemcpyHostToDevice), cudaErrorInvalidSymbol);
}

static void mark(void *flag)
{
    ++*(int *)flag;
}

Test(launch, a_graph_runs_its_nodes_in_order)
{
    start();
    int *managed = NULL, ran = 0;
    RT_OK(cudaMallocManaged((void **)&managed, 4096, cudaMemAttachGlobal));
    int source[4] = {5, 6, 7, 8};
    cudaGraph_t graph, clone;
    cudaGraphExec_t exec;
    cudaGraphNode_t copy, set, host, nodes[4];
    RT_OK(cudaGraphCreate(&graph, 0));
    RT_OK(cudaGraphAddMemcpyNode1D(&copy, graph, NULL, 0, managed, source, sizeof source,
                                   cudaMemcpyHostToDevice));
    struct cudaMemsetParams params = {
        .dst = managed + 1, .value = 9, .elementSize = 4, .width = 1, .height = 1};
    RT_OK(cudaGraphAddMemsetNode(&set, graph, &copy, 1, &params));
    struct cudaHostNodeParams host_params = {mark, &ran};
    RT_OK(cudaGraphAddHostNode(&host, graph, &set, 1, &host_params));
    size_t count = 0;
    RT_OK(cudaGraphGetNodes(graph, NULL, &count));
    cr_assert_eq(count, 3);
    count = 4;
    RT_OK(cudaGraphGetNodes(graph, nodes, &count));
    cr_assert_eq(nodes[1], set);
    RT_OK(cudaGraphClone(&clone, graph));
    RT_OK(cudaGraphInstantiate(&exec, clone, 0));
    RT_OK(cudaGraphLaunch(exec, 0));
    RT_OK(cudaGraphLaunch(exec, 0));
    cr_assert_eq(managed[0], 5);
    cr_assert_eq(managed[1], 9);
    cr_assert_eq(ran, 2);
    char dot_path[] = "/tmp/simcudart_dot_XXXXXX";
    int fd = mkstemp(dot_path);
    cr_assert_geq(fd, 0);
    close(fd);
    RT_OK(cudaGraphDebugDotPrint(graph, dot_path, cudaGraphDebugDotFlagsVerbose));
    char dot[512] = {0};
    FILE *file = fopen(dot_path, "r");
    cr_assert_not_null(file);
    size_t got = fread(dot, 1, sizeof dot - 1, file);
    fclose(file);
    unlink(dot_path);
    cr_assert_gt(got, 0);
    cr_assert_not_null(strstr(dot, "node0 [label=\"memcpy\"]"), "%s", dot);
    cr_assert_not_null(strstr(dot, "node1 -> node2"), "%s", dot);
    cr_assert_not_null(strstr(dot, "node2 [label=\"host\"]"), "%s", dot);
    cr_assert_eq(cudaGraphDebugDotPrint(graph, "/nonexistent/dir/g.dot", 0),
                 cudaErrorOperatingSystem);
    cr_assert_eq(cudaGetLastError(), cudaErrorOperatingSystem);
    cudaGraphNode_t alloc_node;
    struct cudaMemAllocNodeParams alloc = {0};
    cr_assert_eq(cudaGraphAddMemAllocNode(&alloc_node, graph, NULL, 0, &alloc),
                 cudaErrorInvalidValue, "the driver checks the parameters (no pinned location)");
    RT_OK(cudaGraphExecDestroy(exec));
    RT_OK(cudaGraphDestroy(clone));
    RT_OK(cudaGraphDestroy(graph));
    RT_OK(cudaFree(managed));
}

/* Memory nodes go through the driver: the allocation's address comes back at once, its memory
 * is taken at the launch and stays in the graph pool until a trim; the graph's other nodes
 * run on it. */
Test(launch, graph_memory_nodes_take_their_memory_from_the_driver_at_launch)
{
    start();
    size_t free_before, free_now, total;
    RT_OK(cudaMemGetInfo(&free_before, &total));
    cudaGraph_t graph, clone;
    cudaGraphExec_t exec;
    cudaGraphNode_t alloc_node, set, free_node;
    RT_OK(cudaGraphCreate(&graph, 0));
    struct cudaMemAllocNodeParams alloc = {
        .poolProps = {.allocType = cudaMemAllocationTypePinned,
                      .location = {cudaMemLocationTypeDevice, 0}},
        .bytesize = 6 << 20};
    RT_OK(cudaGraphAddMemAllocNode(&alloc_node, graph, NULL, 0, &alloc));
    cr_assert_not_null(alloc.dptr);
    struct cudaMemsetParams params = {
        .dst = alloc.dptr, .value = 1, .elementSize = 1, .width = 6 << 20, .height = 1};
    RT_OK(cudaGraphAddMemsetNode(&set, graph, &alloc_node, 1, &params));
    RT_OK(cudaGraphAddMemFreeNode(&free_node, graph, &set, 1, alloc.dptr));
    void *freed = NULL;
    RT_OK(cudaGraphMemFreeNodeGetParams(free_node, &freed));
    cr_assert_eq(freed, alloc.dptr);
    cr_assert_eq(cudaGraphClone(&clone, graph), cudaErrorNotSupported);
    RT_OK(cudaMemGetInfo(&free_now, &total));
    cr_assert_eq(free_now, free_before, "no memory before the launch");
    RT_OK(cudaGraphInstantiate(&exec, graph, 0));
    RT_OK(cudaGraphLaunch(exec, 0));
    RT_OK(cudaGraphLaunch(exec, 0));
    RT_OK(cudaMemGetInfo(&free_now, &total));
    cr_assert_geq(free_before - free_now, 6 << 20, "the graph pool keeps the memory");
    cuuint64_t used = 1, reserved = 0;
    RT_OK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &used));
    RT_OK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrReservedMemCurrent, &reserved));
    cr_assert_eq(used, 0, "freed inside the graph");
    cr_assert_eq(reserved, free_before - free_now);
    RT_OK(cudaGraphExecDestroy(exec));
    RT_OK(cudaGraphDestroy(graph));
    RT_OK(cudaDeviceGraphMemTrim(0));
    RT_OK(cudaMemGetInfo(&free_now, &total));
    cr_assert_eq(free_now, free_before);
}

Test(launch, capture_runs_the_work_and_returns_an_empty_graph)
{
    start();
    cudaStream_t stream;
    enum cudaStreamCaptureStatus status;
    cudaGraph_t graph;
    int ran = 0;
    RT_OK(cudaStreamCreate(&stream));
    RT_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    RT_OK(cudaStreamIsCapturing(stream, &status));
    cr_assert_eq(status, cudaStreamCaptureStatusActive);
    cr_assert_eq(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal),
                 cudaErrorIllegalState);
    RT_OK(cudaLaunchHostFunc(stream, mark, &ran));
    cr_assert_eq(ran, 1);
    RT_OK(cudaStreamEndCapture(stream, &graph));
    size_t count = 9;
    RT_OK(cudaGraphGetNodes(graph, NULL, &count));
    cr_assert_eq(count, 0);
    cudaGraph_t clone = NULL; /* its driver graph has no memory nodes: it clones */
    RT_OK(cudaGraphClone(&clone, graph));
    cr_assert_not_null(clone);
    cudaGraphExec_t exec;
    RT_OK(cudaGraphInstantiate(&exec, clone, 0));
    RT_OK(cudaGraphLaunch(exec, stream));
    RT_OK(cudaGraphExecDestroy(exec));
    RT_OK(cudaGraphDestroy(clone));
    RT_OK(cudaGraphDestroy(graph));
    RT_OK(cudaStreamIsCapturing(stream, &status));
    cr_assert_eq(status, cudaStreamCaptureStatusNone);
    cr_assert_eq(cudaStreamEndCapture(stream, &graph), cudaErrorIllegalState);
    RT_OK(cudaStreamDestroy(stream));
}

/* Through the driver's capture: cudaMallocAsync in a capture is a memory node of the graph
 * cudaStreamEndCapture returns, with memory only when its exec is launched. */
Test(launch, a_captured_cudaMallocAsync_is_a_node_backed_at_launch)
{
    start();
    cudaStream_t stream;
    size_t free_before, free_now, total;
    RT_OK(cudaStreamCreate(&stream));
    RT_OK(cudaMemGetInfo(&free_before, &total));
    RT_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    enum cudaStreamCaptureStatus status;
    unsigned long long id = 0;
    RT_OK(cudaStreamGetCaptureInfo(stream, &status, &id, NULL, NULL, NULL, NULL));
    cr_assert_eq(status, cudaStreamCaptureStatusActive);
    cr_assert_neq(id, 0);
    void *kept, *scratch;
    RT_OK(cudaMallocAsync(&kept, 4 << 20, stream));
    RT_OK(cudaMallocAsync(&scratch, 8 << 20, stream));
    RT_OK(cudaFreeAsync(scratch, stream));
    cudaGraph_t graph;
    RT_OK(cudaStreamEndCapture(stream, &graph));
    cudaGraph_t clone = NULL;
    cr_assert_eq(cudaGraphClone(&clone, graph), cudaErrorNotSupported, "it has memory nodes");
    RT_OK(cudaMemGetInfo(&free_now, &total));
    cr_assert_eq(free_now, free_before, "captured: no memory yet");
    cudaGraphExec_t exec;
    RT_OK(cudaGraphInstantiate(&exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch));
    RT_OK(cudaGraphLaunch(exec, stream));
    RT_OK(cudaGraphLaunch(exec, stream)); /* auto-free: the same pages again */
    RT_OK(cudaMemGetInfo(&free_now, &total));
    cr_assert_eq(free_before - free_now, 12u << 20, "kept and scratch's pages, reserved");
    RT_OK(cudaMemsetAsync(kept, 0, 4 << 20, stream));
    RT_OK(cudaFreeAsync(kept, stream));
    RT_OK(cudaGraphExecDestroy(exec));
    RT_OK(cudaGraphDestroy(graph));
    RT_OK(cudaDeviceGraphMemTrim(0));
    RT_OK(cudaMemGetInfo(&free_now, &total));
    cr_assert_eq(free_now, free_before);
    RT_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    cr_assert_eq(cudaStreamSynchronize(stream), cudaErrorStreamCaptureUnsupported);
    cr_assert_eq(cudaStreamEndCapture(stream, &graph), cudaErrorStreamCaptureInvalidated);
    RT_OK(cudaStreamDestroy(stream));
}

Test(launch, driver_entry_points_come_from_cuGetProcAddress)
{
    start();
    void *function = NULL;
    enum cudaDriverEntryPointQueryResult status;
    RT_OK(cudaGetDriverEntryPointByVersion("cuMemAlloc", &function, 12000, cudaEnableDefault,
                                           &status));
    cr_assert_eq(status, cudaDriverEntryPointSuccess);
    CUdeviceptr address = 0;
    RT_OK(cudaFree(NULL)); /* initialises the runtime: a context is current */
    cr_assert_eq(((CUresult(*)(CUdeviceptr *, size_t))function)(&address, 4096), CUDA_SUCCESS);
    RT_OK(cudaFree((void *)(uintptr_t)address));
    cr_assert_eq(cudaGetDriverEntryPointByVersion("cuNoSuchCall", &function, 12000,
                                                  cudaEnableDefault, &status),
                 cudaErrorSymbolNotFound);
    cr_assert_eq(status, cudaDriverEntryPointSymbolNotFound);
    cr_assert_null(function);
}
