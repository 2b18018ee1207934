// A runtime program (nvcc -cudart shared) with graph memory nodes in the shape of NVIDIA's
// graphMemoryNodes sample: a graph that allocates its input and a result, copies the input in,
// runs a kernel, copies the result out and frees both itself; a second graph whose output
// outlives it, freed by cudaFreeAsync after each launch; the graph pool's attributes read,
// then trimmed. On simcudart and simcuda it runs to the end (exit 0); the kernel does not run
// there, so nothing checks its result. Every failing call prints its line and exits 1.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                          \
    do {                                                                     \
        cudaError_t check_error = (call);                                    \
        if (check_error != cudaSuccess) {                                    \
            fprintf(stderr, "rt_graph_memory:%d: %s: %s\n", __LINE__, #call, \
                    cudaGetErrorName(check_error));                          \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

#define N (1 << 20)
#define LAUNCHES 3

__global__ void square(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i] * in[i];
}

static cudaMemAllocNodeParams on_device(int device, size_t bytes)
{
    cudaMemAllocNodeParams p = {};
    p.poolProps.allocType = cudaMemAllocationTypePinned;
    p.poolProps.location.type = cudaMemLocationTypeDevice;
    p.poolProps.location.id = device;
    p.bytesize = bytes;
    return p;
}

int main()
{
    int device = 0;
    CHECK(cudaSetDevice(device));
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    float *host = (float *)calloc(N, sizeof(float));
    size_t bytes = N * sizeof(float);

    // the sample's explicit graph: alloc, copy in, kernel, copy out, free
    cudaGraph_t graph;
    cudaGraphNode_t alloc_in, alloc_out, copy_in, kernel, copy_out, free_in, free_out;
    CHECK(cudaGraphCreate(&graph, 0));
    cudaMemAllocNodeParams params = on_device(device, bytes);
    CHECK(cudaGraphAddMemAllocNode(&alloc_in, graph, NULL, 0, &params));
    float *d_in = (float *)params.dptr;
    CHECK(cudaGraphAddMemAllocNode(&alloc_out, graph, &alloc_in, 1, &params));
    float *d_out = (float *)params.dptr;
    CHECK(cudaGraphAddMemcpyNode1D(&copy_in, graph, &alloc_out, 1, d_in, host, bytes,
                                   cudaMemcpyHostToDevice));
    int n = N;
    void *args[] = {&d_in, &d_out, &n};
    cudaKernelNodeParams kernel_params = {};
    kernel_params.func = (void *)square;
    kernel_params.gridDim = dim3((N + 255) / 256);
    kernel_params.blockDim = dim3(256);
    kernel_params.kernelParams = args;
    CHECK(cudaGraphAddKernelNode(&kernel, graph, &copy_in, 1, &kernel_params));
    CHECK(cudaGraphAddMemcpyNode1D(&copy_out, graph, &kernel, 1, host, d_out, bytes,
                                   cudaMemcpyDeviceToHost));
    CHECK(cudaGraphAddMemFreeNode(&free_in, graph, &kernel, 1, d_in));
    CHECK(cudaGraphAddMemFreeNode(&free_out, graph, &copy_out, 1, d_out));
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphDestroy(graph));
    for (int i = 0; i < LAUNCHES; i++)
        CHECK(cudaGraphLaunch(exec, stream));
    CHECK(cudaStreamSynchronize(stream));

    // a graph whose output outlives it: freed in stream order after each launch
    cudaGraph_t producer;
    cudaGraphNode_t alloc_result;
    CHECK(cudaGraphCreate(&producer, 0));
    cudaMemAllocNodeParams result = on_device(device, bytes / 2);
    CHECK(cudaGraphAddMemAllocNode(&alloc_result, producer, NULL, 0, &result));
    cudaGraphExec_t producer_exec;
    CHECK(cudaGraphInstantiate(&producer_exec, producer, 0));
    for (int i = 0; i < LAUNCHES; i++) {
        CHECK(cudaGraphLaunch(producer_exec, stream));
        CHECK(cudaMemsetAsync(result.dptr, 0, bytes / 2, stream));
        CHECK(cudaFreeAsync(result.dptr, stream));
    }
    CHECK(cudaStreamSynchronize(stream));

    unsigned long long used = 1, reserved = 0; // the attributes are 64-bit
    CHECK(cudaDeviceGetGraphMemAttribute(device, cudaGraphMemAttrUsedMemCurrent, &used));
    CHECK(cudaDeviceGetGraphMemAttribute(device, cudaGraphMemAttrReservedMemCurrent, &reserved));
    if (used != 0 || reserved < 2 * bytes) {
        fprintf(stderr, "rt_graph_memory: used %llu, reserved %llu\n", used, reserved);
        return 2;
    }
    CHECK(cudaGraphExecDestroy(producer_exec));
    CHECK(cudaGraphDestroy(producer));
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaDeviceGraphMemTrim(device));
    CHECK(cudaStreamDestroy(stream));
    free(host);
    printf("rt_graph_memory: %d launches of each graph\n", LAUNCHES);
    return 0;
}
