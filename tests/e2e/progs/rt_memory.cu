// A runtime program (built with nvcc -cudart shared) that uses every family of the runtime's
// memory API once: classic, pitched and 3D, stream-ordered and pools, managed, pinned host
// memory (allocated and registered), copies and sets, streams, events, a graph, a kernel
// launch, and a driver function reached through cudaGetDriverEntryPoint. On simcudart and
// simcuda it must run to the end (exit 0); the kernel does not run there, so nothing checks
// its result. Every failing call prints its line and exits 1.
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                    \
    do {                                                               \
        cudaError_t check_error = (call);                              \
        if (check_error != cudaSuccess) {                              \
            fprintf(stderr, "rt_memory:%d: %s: %s\n", __LINE__, #call, \
                    cudaGetErrorName(check_error));                    \
            exit(1);                                                   \
        }                                                              \
    } while (0)

#define MiB (1u << 20)

__global__ void scale(float *data, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        data[i] *= 2.0f;
}

static void host_done(void *flag)
{
    *(int *)flag = 1;
}

int main(void)
{
    float *device = NULL, *async = NULL, *pooled = NULL, *managed = NULL, *host = NULL;
    float *registered = (float *)malloc(2 * MiB), *mapped = NULL;
    cudaStream_t stream;
    cudaEvent_t start, stop;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    CHECK(cudaEventRecord(start, stream));

    // classic, with a launch and copies both ways
    CHECK(cudaMalloc(&device, 3 * MiB));
    CHECK(cudaMemset(device, 0, 3 * MiB));
    CHECK(cudaMemcpy(device, registered, MiB, cudaMemcpyHostToDevice));
    scale<<<4, 256>>>(device, 1024);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(registered, device, MiB, cudaMemcpyDeviceToHost));

    // pitched and 3D
    void *pitched = NULL;
    size_t pitch = 0;
    CHECK(cudaMallocPitch(&pitched, &pitch, 1000, 100));
    CHECK(cudaMemset2D(pitched, pitch, 1, 1000, 100));
    cudaPitchedPtr volume;
    CHECK(cudaMalloc3D(&volume, make_cudaExtent(256, 64, 8)));

    // stream-ordered, from the default pool and from a pool of our own
    cudaMemPool_t pool;
    cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    CHECK(cudaMemPoolCreate(&pool, &props));
    CHECK(cudaMallocAsync(&async, 5 * MiB, stream));
    CHECK(cudaMallocFromPoolAsync(&pooled, 6 * MiB, pool, stream));
    CHECK(cudaMemsetAsync(async, 0, 5 * MiB, stream));
    CHECK(cudaFreeAsync(async, stream));
    CHECK(cudaFreeAsync(pooled, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaMemPoolDestroy(pool));

    // managed memory holds bytes the host can read back after a round trip
    CHECK(cudaMallocManaged(&managed, MiB));
    for (int i = 0; i < 1024; i++)
        managed[i] = (float)i;
    CHECK(cudaMemcpy(device, managed, 4096, cudaMemcpyDefault));
    CHECK(cudaMemcpy(managed + 2048, managed, 4096, cudaMemcpyDefault));
    if (managed[2048 + 7] != 7.0f) {
        fprintf(stderr, "rt_memory: managed memory lost its bytes\n");
        return 1;
    }

    // pinned host memory, allocated and registered, and its device pointers
    CHECK(cudaMallocHost(&host, MiB));
    CHECK(cudaHostAlloc(&mapped, MiB, cudaHostAllocMapped));
    void *device_view = NULL;
    CHECK(cudaHostGetDevicePointer(&device_view, mapped, 0));
    CHECK(cudaHostRegister(registered, 2 * MiB, cudaHostRegisterDefault));
    CHECK(cudaMemcpyAsync(host, registered, MiB, cudaMemcpyHostToHost, stream));

    // a graph: a copy, a set and a host node
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cudaGraphNode_t copy_node, set_node, host_node;
    int host_ran = 0;
    CHECK(cudaGraphCreate(&graph, 0));
    CHECK(cudaGraphAddMemcpyNode1D(&copy_node, graph, NULL, 0, device, host, 4096,
                                   cudaMemcpyHostToDevice));
    cudaMemsetParams set = {};
    set.dst = device;
    set.value = 0;
    set.elementSize = 4;
    set.width = 1024;
    set.height = 1;
    CHECK(cudaGraphAddMemsetNode(&set_node, graph, &copy_node, 1, &set));
    cudaHostNodeParams host_params = {host_done, &host_ran};
    CHECK(cudaGraphAddHostNode(&host_node, graph, &set_node, 1, &host_params));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphLaunch(exec, stream));
    CHECK(cudaStreamSynchronize(stream));
    if (!host_ran) {
        fprintf(stderr, "rt_memory: the graph's host node did not run\n");
        return 1;
    }
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));

    // a driver allocation through the runtime's entry-point lookup
    void *function = NULL;
    cudaDriverEntryPointQueryResult status;
    CHECK(cudaGetDriverEntryPointByVersion("cuMemAlloc", &function, 12000, cudaEnableDefault,
                                           &status));
    CUdeviceptr through_driver = 0;
    if (status != cudaDriverEntryPointSuccess ||
        ((CUresult(*)(CUdeviceptr *, size_t))function)(&through_driver, 7 * MiB) != CUDA_SUCCESS) {
        fprintf(stderr, "rt_memory: cuMemAlloc through cudaGetDriverEntryPointByVersion failed\n");
        return 1;
    }
    CHECK(cudaFree((void *)through_driver));

    CHECK(cudaEventRecord(stop, stream));
    CHECK(cudaEventSynchronize(stop));
    float ms = -1;
    CHECK(cudaEventElapsedTime(&ms, start, stop));

    CHECK(cudaHostUnregister(registered));
    CHECK(cudaFreeHost(mapped));
    CHECK(cudaFreeHost(host));
    CHECK(cudaFree(managed));
    CHECK(cudaFree(volume.ptr));
    CHECK(cudaFree(pitched));
    CHECK(cudaFree(device));
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    CHECK(cudaStreamDestroy(stream));
    free(registered);
    printf("rt_memory: done\n");
    return 0;
}
