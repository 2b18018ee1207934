/* ledger_libs.c — memory of every owner the ledger names (test_ledger.c): NCCL-like memory
 * from libnccl.so (ledger_nccl.c), a cuBLAS-like workspace from libcublas.so (ledger_cublas.c),
 * a CUDA graph's allocation node launched and left live (the graph pool), and plain user
 * allocations at two call sites; then a request no device holds fails with out-of-memory, and
 * the program exits with everything still allocated. Prints each allocation's address or
 * handle ("OWNER address=0x..", "OWNER handle=0x..") for the test to find in SIMCUDA_LOG. */
#define PROG_NAME "ledger_libs"
#include "prog_driver.h"

void ncclCommInitLike(CUdevice dev);
void handle_create_like(void);

#define MiB (1u << 20)

static CUdeviceptr user_alloc(size_t bytes)
{
    CUdeviceptr p;
    CHECK(cuMemAlloc(&p, bytes));
    printf("user address=0x%llx\n", (unsigned long long)p);
    return p;
}

static CUdeviceptr weights(void)
{
    return user_alloc(10 * MiB);
}

static CUdeviceptr scratch(void)
{
    return user_alloc(MiB + 12345);
}

static void graph_output(CUdevice dev)
{
    CUstream stream;
    CUgraph graph;
    CUgraphNode node;
    CUgraphExec exec;
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK(cuGraphCreate(&graph, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS p = {0};
    p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.poolProps.location.id = dev;
    p.bytesize = 6 * MiB;
    CHECK(cuGraphAddMemAllocNode(&node, graph, NULL, 0, &p));
    CHECK(cuGraphInstantiate(&exec, graph, 0));
    CHECK(cuGraphLaunch(exec, stream));
    CHECK(cuStreamSynchronize(stream));
    printf("graph address=0x%llx\n", (unsigned long long)p.dptr);
}

int main(void)
{
    CUdevice dev = prog_start();
    ncclCommInitLike(dev);
    handle_create_like();
    graph_output(dev);
    weights();
    scratch();
    CUdeviceptr huge;
    size_t free_bytes, total;
    CHECK(cuMemGetInfo(&free_bytes, &total));
    if (cuMemAlloc(&huge, total) != CUDA_ERROR_OUT_OF_MEMORY) {
        fprintf(stderr, "ledger_libs: a request of the whole device should fail\n");
        return 2;
    }
    return 0;
}
