/* scenarios.c — one driver-API program, many behaviours the e2e tests record.
 * Linked against libcuda.so.1 (simcuda), built without -rdynamic.
 *   scenarios threads T N   T threads × N alloc/free pairs
 *   scenarios threads-vm T N  the same, every failure (a thread not started) an exit 3; then
 *                           prints "vmpeak KB" (the address space it needed, /proc/self/status)
 *   scenarios fork          parent allocs, a child that uses CUDA, a child that never does
 *   scenarios forkstorm N   two threads unwind (alloc/free) without pause while the main
 *                           thread forks N children, each of which walks the loaded objects
 *                           (dl_iterate_phdr, as C++ exceptions and unwinders do) and exits
 *   scenarios exec PROG     allocs, then execs PROG
 *   scenarios exec-chain F... allocs 10 times, then execs itself with the first exec function
 *                           named (execl execle execlp execv execve execvp execvpe fexecve)
 *                           and the rest: one image per name, plus the last
 *   scenarios exec-fail     allocs 10 times, an exec that fails (ENOENT kept), 10 more
 *   scenarios vfork-exec PROG  allocs 10 times, vfork + exec PROG in the child, 10 more
 *   scenarios signal NAME   allocs, then dies: segv | abort | term | term-handled | kill | _exit
 *   scenarios oom           fills the device until an allocation fails
 *   scenarios all-apis      every intercepted memory entry point once
 *   scenarios deepbind LIB  dlopen(LIB, RTLD_DEEPBIND) after some CUDA use
 *   scenarios cache-oom     a caching allocator's OOM: fill with segments, fail 4 GiB, free
 *                           two cached 512 MiB segments, fail again, exit 1
 *   scenarios retry-oom     the same, but the retry comes with no frees between
 *   scenarios array-formats one 1000-element 1D array of each format in array_formats[], freed
 *   scenarios sleepy        alloc, sleep 300 ms, alloc (timestamps against real time); prints
 *                           "outer_ns N": CLOCK_MONOTONIC from before the first to after the last
 *   scenarios none          no CUDA at all */
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK(call)                                                                    \
    do {                                                                               \
        CUresult rc_ = (call);                                                         \
        if (rc_ != CUDA_SUCCESS) {                                                     \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, rc_); \
            exit(10);                                                                  \
        }                                                                              \
    } while (0)

static CUcontext ctx;
static CUdevice dev;

static void init_cuda(void)
{
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
}

static CUdeviceptr alloc(size_t n)
{
    CUdeviceptr p;
    CHECK(cuMemAlloc(&p, n));
    return p;
}

static void *thread_main(void *arg)
{
    long n = (long)arg;
    CHECK(cuCtxSetCurrent(ctx));
    for (long i = 0; i < n; i++) {
        CUdeviceptr p = alloc((size_t)(1 + (i % 7)) << 20);
        CHECK(cuMemFree(p));
    }
    return NULL;
}

static int threads(int t, long n)
{
    init_cuda();
    pthread_t th[64];
    for (int i = 0; i < t && i < 64; i++)
        pthread_create(&th[i], NULL, thread_main, (void *)n);
    for (int i = 0; i < t && i < 64; i++)
        pthread_join(th[i], NULL);
    return 0;
}

static long vm_peak_kb(void)
{
    char line[256];
    long kb = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmPeak:", 7))
            kb = atol(line + 7);
    if (f)
        fclose(f);
    return kb;
}

static pthread_mutex_t go_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go_cond = PTHREAD_COND_INITIALIZER;
static int go;

static void *thread_after_go(void *arg)
{
    pthread_mutex_lock(&go_lock);
    while (!go)
        pthread_cond_wait(&go_cond, &go_lock);
    pthread_mutex_unlock(&go_lock);
    return thread_main(arg);
}

/* Every thread (its stack) exists before any works, so what the address space must hold does
 * not depend on how the threads' first mallocs race. */
static int threads_vm(int t, long n)
{
    init_cuda();
    pthread_t th[64];
    int started = 0;
    for (; started < t && started < 64; started++) {
        int rc = pthread_create(&th[started], NULL, thread_after_go, (void *)n);
        if (rc) {
            fprintf(stderr, "thread %d: %s\n", started, strerror(rc));
            break;
        }
    }
    pthread_mutex_lock(&go_lock);
    go = 1;
    pthread_cond_broadcast(&go_cond);
    pthread_mutex_unlock(&go_lock);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    if (started < t)
        return 3;
    printf("vmpeak %ld\n", vm_peak_kb());
    return 0;
}

static int forks(void)
{
    init_cuda();
    CUdeviceptr keep = alloc(11111111); /* the parent's: must never appear in a child's trace */
    pid_t cuda_child = fork();
    if (cuda_child == 0) {
        CUdeviceptr p = alloc(22222222);
        CHECK(cuMemFree(p));
        _exit(0);
    }
    pid_t quiet_child = fork();
    if (quiet_child == 0)
        _exit(0);
    int st;
    waitpid(cuda_child, &st, 0);
    waitpid(quiet_child, &st, 0);
    CHECK(cuMemFree(keep));
    return 0;
}

static atomic_int storm_over;

static void *storm_thread(void *arg)
{
    CHECK(cuCtxSetCurrent(ctx));
    while (!atomic_load(&storm_over))
        CHECK(cuMemFree(alloc(1 << 20)));
    return NULL;
}

static int count_object(struct dl_phdr_info *info, size_t size, void *data)
{
    ++*(int *)data;
    return 0;
}

/* A fork while another thread holds the dynamic loader's lock (an unwind, a module scan)
 * used to leave the child deadlocked the first time it walked the loaded objects. */
static int forkstorm(int n)
{
    init_cuda();
    CHECK(cuMemFree(alloc(1 << 20)));
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, storm_thread, NULL);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        pid_t child = fork();
        if (child == 0) {
            int objects = 0;
            dl_iterate_phdr(count_object, &objects);
            _exit(objects > 0 ? 0 : 1);
        }
        int st;
        waitpid(child, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "forkstorm: child %d of %d %s %d\n", i, n,
                    WIFEXITED(st) ? "exited with" : "died of signal",
                    WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
            bad++;
        }
    }
    atomic_store(&storm_over, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    return bad ? 1 : 0;
}

static int exec_prog(const char *prog)
{
    init_cuda();
    alloc(33333333);
    execl(prog, prog, (char *)NULL);
    perror("execl");
    return 1;
}

static int exec_chain(int n, char **fns)
{
    init_cuda();
    for (int i = 0; i < 10; i++)
        alloc(5555555);
    if (n == 0)
        return 0;
    const char *self = "/proc/self/exe", *f = fns[0];
    char *argv[16] = {"scenarios", "exec-chain"};
    int k = 2;
    for (int i = 1; i < n && k < 15; i++)
        argv[k++] = fns[i];
    argv[k] = NULL;
    extern char **environ;
    if (!strcmp(f, "execv"))
        execv(self, argv);
    else if (!strcmp(f, "execve"))
        execve(self, argv, environ);
    else if (!strcmp(f, "execvp"))
        execvp(self, argv);
    else if (!strcmp(f, "execvpe"))
        execvpe(self, argv, environ);
    else if (!strcmp(f, "fexecve")) {
        int fd = open(self, O_RDONLY); /* not O_CLOEXEC: a script would need it open */
        fexecve(fd, argv, environ);
    } else if (n > 4) {
        fprintf(stderr, "exec-chain: the l-forms come last (at most 3 more names)\n");
        return 2;
    } else if (!strcmp(f, "execl"))
        execl(self, argv[0], argv[1], argv[2], argv[3], argv[4], (char *)NULL);
    else if (!strcmp(f, "execlp"))
        execlp(self, argv[0], argv[1], argv[2], argv[3], argv[4], (char *)NULL);
    else if (!strcmp(f, "execle") && k == 2) /* the environment follows the first NULL */
        execle(self, argv[0], argv[1], (char *)NULL, environ);
    else if (!strcmp(f, "execle") && k == 3)
        execle(self, argv[0], argv[1], argv[2], (char *)NULL, environ);
    else if (!strcmp(f, "execle") && k == 4)
        execle(self, argv[0], argv[1], argv[2], argv[3], (char *)NULL, environ);
    else if (!strcmp(f, "execle"))
        execle(self, argv[0], argv[1], argv[2], argv[3], argv[4], (char *)NULL, environ);
    fprintf(stderr, "exec-chain: %s failed or unknown\n", f);
    return 1;
}

static int exec_fail(void)
{
    init_cuda();
    for (int i = 0; i < 10; i++)
        alloc(5555555);
    char *argv[] = {"missing", NULL};
    errno = 0;
    if (execv("/no/such/program", argv) != -1 || errno != ENOENT)
        return 3;
    for (int i = 0; i < 10; i++)
        alloc(5555555);
    return 0;
}

static int vfork_exec(const char *prog)
{
    init_cuda();
    for (int i = 0; i < 10; i++)
        alloc(5555555);
    pid_t pid = vfork();
    if (pid == 0) {
        char *argv[] = {(char *)prog, NULL};
        execv(prog, argv);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    for (int i = 0; i < 10; i++)
        alloc(5555555);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

static void on_term(int sig)
{
    static const char msg[] = "handled SIGTERM\n";
    write(1, msg, sizeof msg - 1);
    _exit(42);
}

static int die(const char *how)
{
    init_cuda();
    for (int i = 0; i < 10; i++)
        alloc(4444444);
    if (!strcmp(how, "segv")) {
        volatile int *null = NULL;
        return *null;
    }
    if (!strcmp(how, "abort"))
        abort();
    if (!strcmp(how, "term"))
        raise(SIGTERM);
    if (!strcmp(how, "term-handled")) {
        signal(SIGTERM, on_term); /* installed after the shim's: replaces it */
        raise(SIGTERM);
    }
    struct timespec nap = {0, 400 * 1000000L}; /* longer than CUMEMTRACE_FLUSH_MS in the test */
    nanosleep(&nap, NULL);
    if (!strcmp(how, "kill"))
        raise(SIGKILL);
    if (!strcmp(how, "_exit"))
        _exit(7);
    return 1;
}

static int oom(void)
{
    init_cuda();
    CUdeviceptr p;
    int n = 0;
    while (cuMemAlloc(&p, 1ull << 30) == CUDA_SUCCESS)
        n++;
    printf("allocated %d GiB before OOM\n", n);
    return 0;
}

/* cuMemCreate with no context current (as NVIDIA's memMapIPCDrv sample does): the device is
 * first named by the call's prop.location; the second request is larger than the device. */
static int vmm_no_context(void)
{
    CHECK(cuInit(0));
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    size_t granularity = 0;
    CHECK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUmemGenericAllocationHandle h, big;
    CHECK(cuMemCreate(&h, 16 * granularity, &prop, 0));
    CUresult rc = cuMemCreate(&big, (size_t)1 << 50, &prop, 0);
    CHECK(cuMemRelease(h));
    return rc == CUDA_ERROR_OUT_OF_MEMORY ? 0 : 5;
}

/* Formats and channel counts whose element sizes test_apis.c states as its own literals. */
static const struct {
    CUarray_format format;
    unsigned channels;
} array_formats[] = {
    {CU_AD_FORMAT_UNSIGNED_INT8, 1},
    {CU_AD_FORMAT_SIGNED_INT8, 2},
    {CU_AD_FORMAT_UNSIGNED_INT16, 4},
    {CU_AD_FORMAT_HALF, 1},
    {CU_AD_FORMAT_FLOAT, 2},
    {CU_AD_FORMAT_SIGNED_INT32, 4},
    {CU_AD_FORMAT_UNORM_INT8X1, 1},
    {CU_AD_FORMAT_SNORM_INT8X2, 2},
    {CU_AD_FORMAT_UNORM_INT16X1, 1},
    {CU_AD_FORMAT_UNORM_INT8X4, 4},
    {CU_AD_FORMAT_UNORM_INT_101010_2, 4},
    {CU_AD_FORMAT_SNORM_INT16X4, 4},
};

static int array_format_sizes(void)
{
    init_cuda();
    for (size_t i = 0; i < sizeof array_formats / sizeof *array_formats; i++) {
        CUarray array;
        CUDA_ARRAY_DESCRIPTOR d = {.Width = 1000,
                                   .Height = 0,
                                   .Format = array_formats[i].format,
                                   .NumChannels = array_formats[i].channels};
        CHECK(cuArrayCreate(&array, &d));
        CHECK(cuArrayDestroy(array));
    }
    return 0;
}

static int all_apis(void)
{
    init_cuda();
    CUdeviceptr p, q;
    size_t pitch, free_b, total_b;
    CHECK(cuMemAlloc(&p, 1 << 20));
    CHECK(cuMemFree(p));
    CHECK(cuMemAllocPitch(&p, &pitch, 1000, 100, 4));
    CHECK(cuMemFree(p));
    CHECK(cuMemAllocManaged(&p, 3 << 20, CU_MEM_ATTACH_GLOBAL));
    CHECK(cuMemFree(p));
    CHECK(cuMemGetInfo(&free_b, &total_b));
    CUstream s;
    CHECK(cuStreamCreate(&s, 0));
    CHECK(cuMemAllocAsync(&p, 5 << 20, s));
    CHECK(cuMemFreeAsync(p, s));
    CHECK(cuStreamSynchronize(s));
    CUmemoryPool pool;
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CHECK(cuMemPoolCreate(&pool, &props));
    CHECK(cuMemAllocFromPoolAsync(&p, 6 << 20, pool, s));
    CHECK(cuMemFreeAsync(p, s));
    CHECK(cuMemPoolTrimTo(pool, 0));
    cuuint64_t threshold = 64 << 20, reserved = 0; /* a raised threshold keeps the block */
    CHECK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
    CHECK(cuMemAllocFromPoolAsync(&p, 6 << 20, pool, s));
    CHECK(cuMemFreeAsync(p, s));
    CHECK(cuStreamSynchronize(s));
    CHECK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
    CHECK(reserved >= (6 << 20) ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN);
    CHECK(cuMemPoolTrimTo(pool, 0));
    CHECK(cuDeviceSetMemPool(dev, pool));
    CUmemoryPool def;
    CHECK(cuDeviceGetDefaultMemPool(&def, dev));
    CHECK(cuDeviceSetMemPool(dev, def));
    CHECK(cuDeviceGetMemPool(&def, dev)); /* the default pool is current again */
    /* a raised threshold on the default pool (its handle from the queries) keeps the block */
    CHECK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
    CHECK(cuMemAllocAsync(&p, 5 << 20, s));
    CHECK(cuMemFreeAsync(p, s));
    CHECK(cuStreamSynchronize(s));
    CHECK(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
    CHECK(reserved >= (5 << 20) ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN);
    CHECK(cuMemPoolTrimTo(def, 0));
    CUmemLocation here = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev};
    CUmemoryPool current, by_location;
    CHECK(cuMemSetMemPool(&here, CU_MEM_ALLOCATION_TYPE_PINNED, pool));
    CHECK(cuMemGetMemPool(&current, &here, CU_MEM_ALLOCATION_TYPE_PINNED));
    CHECK(cuMemGetDefaultMemPool(&by_location, &here, CU_MEM_ALLOCATION_TYPE_PINNED));
    CHECK(current == pool && by_location == def ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN);
    CHECK(cuMemSetMemPool(&here, CU_MEM_ALLOCATION_TYPE_PINNED, def));
    CHECK(cuMemPoolDestroy(pool));
    /* pool IPC, exported and imported within one process (tests/e2e/progs/pool_ipc.c does it
     * across two) */
    CUmemoryPool exportable, imported;
    CUmemPoolProps shared_props = props;
    shared_props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemPoolPtrExportData share;
    int pool_fd = -1;
    CHECK(cuMemPoolCreate(&exportable, &shared_props));
    CHECK(cuMemAllocFromPoolAsync(&p, 2 << 20, exportable, s));
    CHECK(cuMemPoolExportToShareableHandle(&pool_fd, exportable,
                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    CHECK(cuMemPoolImportFromShareableHandle(&imported, (void *)(long)pool_fd,
                                             CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    close(pool_fd);
    CHECK(cuMemPoolExportPointer(&share, p));
    CHECK(cuMemPoolImportPointer(&q, imported, &share));
    CHECK(cuMemFree(q)); /* unmaps the import only */
    CHECK(cuMemFreeAsync(p, s));
    CHECK(cuStreamSynchronize(s));
    CHECK(cuMemPoolDestroy(imported));
    CHECK(cuMemPoolDestroy(exportable));
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                                .requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR};
    CUmemGenericAllocationHandle h, h2, h3;
    CHECK(cuMemCreate(&h, 4 << 20, &prop, 0));
    CHECK(cuMemAddressReserve(&q, 8 << 20, 0, 0, 0));
    CHECK(cuMemMap(q, 4 << 20, 0, h, 0));
    CUmemAccessDesc acc = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CHECK(cuMemSetAccess(q, 4 << 20, &acc, 1));
    CHECK(cuMemRetainAllocationHandle(&h2, (void *)q));
    CHECK(cuMemRelease(h2));
    int fd = -1;
    CHECK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    CHECK(cuMemImportFromShareableHandle(&h3, (void *)(long)fd,
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    CHECK(cuMemRelease(h3));
    CHECK(cuMemUnmap(q, 4 << 20));
    CUmulticastObjectProp team = {.numDevices = 1, .size = 4 << 20}; /* h bound, mapped */
    CUmemGenericAllocationHandle mc;
    size_t granularity;
    CHECK(cuMulticastGetGranularity(&granularity, &team, CU_MULTICAST_GRANULARITY_MINIMUM));
    CHECK(cuMulticastCreate(&mc, &team));
    CHECK(cuMulticastAddDevice(mc, dev));
    CHECK(cuMulticastBindMem(mc, 0, h, 0, 4 << 20, 0));
    CHECK(cuMemMap(q, 4 << 20, 0, mc, 0));
    CHECK(cuMemUnmap(q, 4 << 20));
    CHECK(cuMulticastUnbind(mc, dev, 0, 4 << 20));
    CHECK(cuMemMap(q, 4 << 20, 0, h, 0));
    CHECK(cuMulticastBindAddr(mc, 0, q, 4 << 20, 0));
    CHECK(cuMemRelease(mc)); /* lets the binding go */
    CHECK(cuMemUnmap(q, 4 << 20));
    CHECK(cuMemRelease(h));
    CHECK(cuMemAddressFree(q, 8 << 20));
    CUipcMemHandle ipc;
    CHECK(cuMemAlloc(&p, 2 << 20));
    CHECK(cuIpcGetMemHandle(&ipc, p));
    CHECK(cuIpcOpenMemHandle(&q, ipc, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    CHECK(cuIpcCloseMemHandle(q));
    int dma_buf = -1;
    CHECK(cuMemGetHandleForAddressRange(&dma_buf, p, 2 << 20, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                                        0));
    close(dma_buf);
    CHECK(cuMemFree(p));
    void *host;
    CHECK(cuMemAllocHost(&host, 1 << 20));
    CHECK(cuMemFreeHost(host));
    CHECK(cuMemHostAlloc(&host, 1 << 20, 0));
    CHECK(cuMemFreeHost(host));
    static char registered[3 << 20] __attribute__((aligned(4096)));
    CHECK(cuMemHostRegister(registered, sizeof registered, CU_MEMHOSTREGISTER_PORTABLE));
    CHECK(cuMemHostUnregister(registered));
    CUarray array;
    CUmipmappedArray mipmapped;
    CUDA_ARRAY_DESCRIPTOR plane = {
        .Width = 1024, .Height = 512, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4}; /* 8 MiB */
    CHECK(cuArrayCreate(&array, &plane));
    CHECK(cuArrayDestroy(array));
    CUDA_ARRAY3D_DESCRIPTOR volume = {.Width = 64,
                                      .Height = 64,
                                      .Depth = 64,
                                      .Format = CU_AD_FORMAT_UNSIGNED_INT16,
                                      .NumChannels = 2};
    CHECK(cuArray3DCreate(&array, &volume)); /* 1 MiB */
    CHECK(cuArrayDestroy(array));
    CHECK(cuMipmappedArrayCreate(&mipmapped, &volume, 7)); /* 64³ ... 1³, × 4 bytes */
    CHECK(cuMipmappedArrayDestroy(mipmapped));
    CUgraph graph;
    CUgraphNode alloc_node, free_node;
    CUgraphExec exec;
    CUDA_MEM_ALLOC_NODE_PARAMS node = {
        .poolProps = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED, .location = prop.location},
        .bytesize = 4 << 20};
    CHECK(cuGraphCreate(&graph, 0));
    CHECK(cuGraphAddMemAllocNode(&alloc_node, graph, NULL, 0, &node));
    CHECK(cuGraphAddMemFreeNode(&free_node, graph, &alloc_node, 1, node.dptr));
    CHECK(cuGraphInstantiate(&exec, graph, 0));
    CHECK(cuGraphLaunch(exec, s));
    CHECK(cuGraphExecDestroy(exec));
    CHECK(cuGraphDestroy(graph));
    /* a stream-ordered allocation and free captured into a graph, which the CUDA 11
     * five-argument cuGraphInstantiate (looked up as a CUDA 11 program links it) instantiates */
    CUresult (*instantiate_v2)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t) =
        (CUresult(*)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t))dlsym(
            RTLD_DEFAULT, "cuGraphInstantiate_v2");
    if (!instantiate_v2)
        return 12;
    CUstream capturing;
    CUdeviceptr captured;
    CHECK(cuStreamCreate(&capturing, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamBeginCapture(capturing, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK(cuMemAllocAsync(&captured, 2 << 20, capturing));
    CHECK(cuMemFreeAsync(captured, capturing));
    CHECK(cuStreamEndCapture(capturing, &graph));
    CHECK(instantiate_v2(&exec, graph, NULL, NULL, 0));
    CHECK(cuGraphLaunch(exec, capturing));
    CHECK(cuGraphExecDestroy(exec));
    CHECK(cuGraphDestroy(graph));
    CHECK(cuStreamDestroy(capturing));
    cuuint64_t zero = 0;
    CHECK(cuDeviceSetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &zero));
    CHECK(cuDeviceGraphMemTrim(dev));
    CHECK(cuCtxSynchronize());
    CUcontext own;
    CHECK(cuCtxCreate(&own, NULL, 0, dev));
    CHECK(cuMemAlloc(&p, 7 << 20)); /* freed implicitly by the destroy below */
    CHECK(cuCtxDestroy(own));
    CHECK(cuCtxSetCurrent(ctx));
    CUcontext again; /* a second reference to the primary context, given back */
    CHECK(cuDevicePrimaryCtxRetain(&again, dev));
    CHECK(cuDevicePrimaryCtxRelease(dev));
    if (cuMemFree(0xdead0000) == CUDA_SUCCESS) /* unknown pointer: passed through, failing */
        return 11;
    return 0;
}

/* The "weights" and "activations" call sites hold the memory; the request comes from "decode". */
static __attribute__((noinline)) CUdeviceptr load_weights(void)
{
    CUdeviceptr p = 0;
    return cuMemAlloc(&p, 512ull << 20) == CUDA_SUCCESS ? p : 0;
}

static __attribute__((noinline)) CUdeviceptr activations(void)
{
    CUdeviceptr p = 0;
    return cuMemAlloc(&p, 64ull << 20) == CUDA_SUCCESS ? p : 0;
}

static __attribute__((noinline)) CUresult decode(CUdeviceptr *out)
{
    return cuMemAlloc(out, 4ull << 30);
}

static int cache_oom(int release)
{
    init_cuda();
    size_t free_b, total_b;
    CHECK(cuMemGetInfo(&free_b, &total_b));
    CUdeviceptr segs[256];
    int n = 0;
    for (int i = 0; i < 8 && free_b > (1ull << 30) + (64ull << 20); i++, free_b -= 64ull << 20)
        activations();
    while (n < 256 && free_b >= (1ull << 30) + (512ull << 20)) { /* leave ~1 GiB free */
        segs[n++] = load_weights();
        free_b -= 512ull << 20;
    }
    CUdeviceptr big;
    if (decode(&big) != CUDA_ERROR_OUT_OF_MEMORY)
        return 20;
    if (release) { /* release two cached segments, retry */
        CHECK(cuMemFree(segs[--n]));
        CHECK(cuMemFree(segs[--n]));
    }
    if (decode(&big) != CUDA_ERROR_OUT_OF_MEMORY)
        return 21;
    fprintf(stderr, "CUDA out of memory. Tried to allocate 4.00 GiB\n");
    return 1;
}

static int deepbind(const char *lib)
{
    init_cuda();
    alloc(1 << 20);
    void *h = dlopen(lib, RTLD_NOW | RTLD_DEEPBIND);
    return h ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "threads") && argc > 3)
        return threads(atoi(argv[2]), atol(argv[3]));
    if (!strcmp(mode, "threads-vm") && argc > 3)
        return threads_vm(atoi(argv[2]), atol(argv[3]));
    if (!strcmp(mode, "fork"))
        return forks();
    if (!strcmp(mode, "forkstorm") && argc > 2)
        return forkstorm(atoi(argv[2]));
    if (!strcmp(mode, "exec") && argc > 2)
        return exec_prog(argv[2]);
    if (!strcmp(mode, "exec-chain"))
        return exec_chain(argc - 2, argv + 2);
    if (!strcmp(mode, "exec-fail"))
        return exec_fail();
    if (!strcmp(mode, "vfork-exec") && argc > 2)
        return vfork_exec(argv[2]);
    if (!strcmp(mode, "signal") && argc > 2)
        return die(argv[2]);
    if (!strcmp(mode, "oom"))
        return oom();
    if (!strcmp(mode, "vmm-no-context"))
        return vmm_no_context();
    if (!strcmp(mode, "array-formats"))
        return array_format_sizes();
    if (!strcmp(mode, "all-apis"))
        return all_apis();
    if (!strcmp(mode, "deepbind") && argc > 2)
        return deepbind(argv[2]);
    if (!strcmp(mode, "cache-oom"))
        return cache_oom(1);
    if (!strcmp(mode, "retry-oom")) /* nothing cached is whole: retried with no frees */
        return cache_oom(0);
    if (!strcmp(mode, "sleepy")) {
        init_cuda();
        struct timespec t0, t1, nap = {0, 300 * 1000000L};
        clock_gettime(CLOCK_MONOTONIC, &t0);
        alloc(1 << 20);
        nanosleep(&nap, NULL);
        alloc(2 << 20);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        printf("outer_ns %lld\n",
               (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
        return 0;
    }
    if (!strcmp(mode, "none"))
        return 0;
    fprintf(stderr, "usage: scenarios MODE ...\n");
    return 2;
}
