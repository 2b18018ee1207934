/* SIMCUDA_LOG (simcuda_log.c): one line per served memory call, with the process id, appended
 * by every process that shares the file. */
#include "simcuda_test_util.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char log_file[] = "/tmp/simcuda-log-XXXXXX";

static void use_log(void)
{
    int fd = mkstemp(log_file);
    cr_assert_geq(fd, 0);
    close(fd);
    setenv("SIMCUDA_LOG", log_file, 1);
}

struct line {
    long pid;
    char entry[64];
    int result;
    unsigned long long address, size, handle;
};

static int read_lines(struct line *lines, int max)
{
    FILE *f = fopen(log_file, "r");
    cr_assert_not_null(f);
    int n = 0;
    char text[512];
    while (n < max && fgets(text, sizeof text, f)) {
        struct line *l = &lines[n++];
        cr_assert_eq(sscanf(text,
                            "simcuda pid=%ld entry=%63s result=%d address=0x%llx size=%llu "
                            "handle=0x%llx\n",
                            &l->pid, l->entry, &l->result, &l->address, &l->size, &l->handle),
                     6, "not a log line: %s", text);
    }
    fclose(f);
    remove(log_file);
    return n;
}

Test(log, one_line_per_served_call)
{
    use_log();
    simcuda_test_start("64MiB", "0");
    CUdeviceptr a, b;
    CU_OK(cuMemAlloc(&a, 3 * MiB));
    CU_FAILS(cuMemAlloc(&b, 1 * GiB), CUDA_ERROR_OUT_OF_MEMORY);
    CU_OK(cuMemFree(a));
    CU_OK(cuMemGetInfo(&(size_t){0}, &(size_t){0})); /* not a memory change: not logged */
    struct line lines[8];
    cr_assert_eq(read_lines(lines, 8), 3);
    cr_assert_eq(lines[0].pid, (long)getpid());
    cr_assert_str_eq(lines[0].entry, "cuMemAlloc_v2");
    cr_assert_eq(lines[0].address, a);
    cr_assert_eq(lines[0].size, 3 * MiB);
    cr_assert_eq(lines[1].result, CUDA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(lines[1].address, 0);
    cr_assert_str_eq(lines[2].entry, "cuMemFree_v2");
    cr_assert_eq(lines[2].address, a);
}

Test(log, vmm_calls_carry_their_handle)
{
    use_log();
    simcuda_test_start("1GiB", "0");
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemGenericAllocationHandle handle;
    CUdeviceptr va;
    CU_OK(cuMemCreate(&handle, PAGE, &prop, 0));
    CU_OK(cuMemAddressReserve(&va, 2 * PAGE, 0, 0, 0));
    CU_OK(cuMemMap(va, PAGE, 0, handle, 0));
    CU_OK(cuMemUnmap(va, PAGE));
    CU_OK(cuMemAddressFree(va, 2 * PAGE));
    CU_OK(cuMemRelease(handle));
    struct line lines[8];
    cr_assert_eq(read_lines(lines, 8), 6);
    cr_assert_str_eq(lines[0].entry, "cuMemCreate");
    cr_assert_eq(lines[0].handle, handle);
    cr_assert_eq(lines[0].size, PAGE);
    cr_assert_str_eq(lines[2].entry, "cuMemMap");
    cr_assert_eq(lines[2].address, va);
    cr_assert_eq(lines[2].handle, handle);
    cr_assert_str_eq(lines[5].entry, "cuMemRelease");
}

Test(log, multicast_calls_carry_the_object_and_the_memory_bound)
{
    use_log();
    simcuda_test_start("1GiB", "0");
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmulticastObjectProp team = {.numDevices = 1, .size = 2 * PAGE};
    CUmemGenericAllocationHandle mc, handle;
    CUdeviceptr va;
    CU_OK(cuMulticastCreate(&mc, &team));
    CU_OK(cuMulticastAddDevice(mc, 0)); /* no memory: not logged */
    CU_OK(cuMemCreate(&handle, 2 * PAGE, &prop, 0));
    CU_OK(cuMulticastBindMem(mc, 0, handle, 0, PAGE, 0));
    CU_OK(cuMemAddressReserve(&va, 2 * PAGE, 0, 0, 0));
    CU_OK(cuMemMap(va, 2 * PAGE, 0, handle, 0));
    CU_OK(cuMulticastBindAddr(mc, PAGE, va + PAGE, PAGE, 0));
    CU_FAILS(cuMulticastBindAddr(mc, PAGE, va, PAGE, 0), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMulticastUnbind(mc, 0, 0, 2 * PAGE));
    struct line lines[16];
    cr_assert_eq(read_lines(lines, 16), 8);
    cr_assert_str_eq(lines[0].entry, "cuMulticastCreate");
    cr_assert_eq(lines[0].handle, mc);
    cr_assert_eq(lines[0].size, 2 * PAGE, "the object's size");
    cr_assert_str_eq(lines[2].entry, "cuMulticastBindMem");
    cr_assert_eq(lines[2].address, handle, "the physical handle bound");
    cr_assert_eq(lines[2].handle, mc);
    cr_assert_eq(lines[2].size, PAGE);
    cr_assert_str_eq(lines[5].entry, "cuMulticastBindAddr");
    cr_assert_eq(lines[5].address, va + PAGE, "the address bound");
    cr_assert_eq(lines[6].result, CUDA_ERROR_INVALID_VALUE, "the range is bound already");
    cr_assert_str_eq(lines[7].entry, "cuMulticastUnbind");
    cr_assert_eq(lines[7].handle, mc);
    cr_assert_eq(lines[7].size, 2 * PAGE);
}

Test(log, pool_attributes_carry_the_pool_and_the_threshold)
{
    use_log();
    simcuda_test_start("1GiB", "0");
    CUmemoryPool pool;
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CU_OK(cuMemPoolCreate(&pool, &props));
    cuuint64_t threshold = 32 * MiB;
    int reuse = 0;
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &reuse));
    CU_FAILS(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, NULL),
             CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemPoolDestroy(pool));
    struct line lines[8];
    cr_assert_eq(read_lines(lines, 8), 5);
    cr_assert_str_eq(lines[1].entry, "cuMemPoolSetAttribute");
    cr_assert_eq(lines[1].handle, (uintptr_t)pool);
    cr_assert_eq(lines[1].size, 32 * MiB, "the threshold set");
    cr_assert_eq(lines[2].size, 0, "another attribute has no size");
    cr_assert_neq(lines[3].result, 0);
    cr_assert_eq(lines[3].size, 0);
}

/* Graph memory calls: the graph is the handle, the exec the address; a launch logs the bytes
 * its allocation nodes took, a trim the reserve it released. */
Test(log, graph_memory_calls_carry_their_graph_exec_and_bytes)
{
    use_log();
    simcuda_test_start("1GiB", "0");
    CUgraph graph;
    CUgraphNode node;
    CUgraphExec exec;
    CU_OK(cuGraphCreate(&graph, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS p = {.poolProps = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                                                  .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}},
                                    .bytesize = 3 * MiB};
    CU_OK(cuGraphAddMemAllocNode(&node, graph, NULL, 0, &p));
    CU_OK(cuGraphAddMemFreeNode(&node, graph, &node, 1, p.dptr));
    CU_OK(cuGraphInstantiate(&exec, graph, 0));
    CU_OK(cuGraphLaunch(exec, NULL));
    CU_OK(cuDeviceGraphMemTrim(0));
    CU_OK(cuGraphExecDestroy(exec));
    CU_OK(cuGraphDestroy(graph)); /* cuGraphCreate is not logged: no memory */
    struct line lines[8];
    cr_assert_eq(read_lines(lines, 8), 7);
    cr_assert_str_eq(lines[0].entry, "cuGraphAddMemAllocNode");
    cr_assert_eq(lines[0].address, p.dptr);
    cr_assert_eq(lines[0].size, 3 * MiB);
    cr_assert_eq(lines[0].handle, (uintptr_t)graph);
    cr_assert_eq(lines[1].address, p.dptr, "the free node names what it frees");
    cr_assert_eq(lines[2].address, (uintptr_t)exec);
    cr_assert_eq(lines[2].handle, (uintptr_t)graph);
    cr_assert_str_eq(lines[3].entry, "cuGraphLaunch");
    cr_assert_eq(lines[3].size, 3 * MiB, "the bytes the launch's allocation took");
    cr_assert_str_eq(lines[4].entry, "cuDeviceGraphMemTrim");
    cr_assert_eq(lines[4].size, 2 * PAGE, "the reserve released, in pages");
    cr_assert_eq(lines[5].address, (uintptr_t)exec);
    cr_assert_eq(lines[6].handle, (uintptr_t)graph);
}

Test(log, forked_children_append_with_their_own_pid)
{
    use_log();
    simcuda_test_start("1GiB", "0");
    CUdeviceptr a;
    CU_OK(cuMemAlloc(&a, MiB));
    pid_t child = fork();
    if (child == 0) {
        CUdeviceptr b;
        _exit(cuMemAlloc(&b, MiB) == CUDA_SUCCESS ? 0 : 1);
    }
    int status;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct line lines[4];
    cr_assert_eq(read_lines(lines, 4), 2);
    cr_assert_eq(lines[0].pid, (long)getpid());
    cr_assert_eq(lines[1].pid, (long)child);
}

Test(log, unset_writes_nothing)
{
    unsetenv("SIMCUDA_LOG");
    int fd = mkstemp(log_file);
    cr_assert_geq(fd, 0);
    close(fd);
    simcuda_test_start("1GiB", "0");
    CUdeviceptr a;
    CU_OK(cuMemAlloc(&a, MiB));
    struct line lines[1];
    cr_assert_eq(read_lines(lines, 1), 0);
}

Test(log, a_log_that_cannot_be_opened_leaves_the_driver_working)
{
    setenv("SIMCUDA_LOG", "/nonexistent-directory/simcuda.log", 1);
    simcuda_test_start("1GiB", "0");
    CUdeviceptr a;
    CU_OK(cuMemAlloc(&a, MiB));
}
