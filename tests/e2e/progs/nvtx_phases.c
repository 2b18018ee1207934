/* nvtx_phases [annotate]: NVTX ranges on several threads with allocations inside, for
 * test_phases.c. Prints one line per range it opens ("range ACTION TID NAME") and per
 * allocation ("alloc TID BYTES PHASE", PHASE the innermost range open for it), so the test
 * compares the trace's ranges and the phase analysis with what the program did.
 *
 * main:     domain "cmt-test"; push "load" (1 MiB) pop; start "train" (process-wide)
 *           4 workers: 128 KiB (in "train"), push "worker<i>" ((i + 1) MiB), push "inner"
 *           (64 KiB) pop, pop
 *           end "train"; push "leak" (3 MiB, never freed) pop; a domain push "tail" (512 KiB)
 *           pop; mark "done"; an allocation outside every range (256 KiB)
 * annotate: the same ranges of main through cumemtrace/annotate.h instead of NVTX.
 * kill:     push "doomed" (1 MiB), start "epoch", then SIGKILL: record salvages the ranges. */
#include <cuda.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

#include "cumemtrace/annotate.h"

#define WORKERS 4
#define MIB (1u << 20)

static int annotate;
static pthread_mutex_t out = PTHREAD_MUTEX_INITIALIZER;

static unsigned tid(void)
{
    return (unsigned)syscall(SYS_gettid);
}

static void say(const char *what, const char *a, unsigned long long n, const char *b)
{
    pthread_mutex_lock(&out);
    printf("%s %u %s %llu %s\n", what, tid(), a, n, b);
    fflush(stdout);
    pthread_mutex_unlock(&out);
}

static CUdeviceptr alloc(size_t bytes, const char *phase)
{
    CUdeviceptr p = 0;
    if (cuMemAlloc(&p, bytes) != CUDA_SUCCESS) {
        fprintf(stderr, "nvtx_phases: cuMemAlloc failed\n");
        _exit(1);
    }
    say("alloc", "-", bytes, phase);
    return p;
}

static void push(const char *name)
{
    if (annotate)
        cmt_annotate_range_push(name);
    else
        nvtxRangePushA(name);
    say("range", "push", 0, name);
}

static void pop(void)
{
    if (annotate)
        cmt_annotate_range_pop();
    else
        nvtxRangePop();
}

static CUcontext ctx;

static void *work(void *arg)
{
    int i = (int)(long)arg;
    char name[32];
    snprintf(name, sizeof name, "worker%d", i);
    cuCtxSetCurrent(ctx);
    CUdeviceptr pre = alloc(128u << 10, "train"); /* no push open here: the start range's */
    cuMemFree(pre);
    push(name);
    CUdeviceptr a = alloc((size_t)(i + 1) * MIB, name);
    push("inner");
    CUdeviceptr b = alloc(64u << 10, "inner");
    cuMemFree(b);
    pop();
    cuMemFree(a);
    pop();
    return NULL;
}

int main(int argc, char **argv)
{
    annotate = argc > 1 && !strcmp(argv[1], "annotate");
    CUdevice dev;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx))
        return 1;
    if (argc > 1 && !strcmp(argv[1], "kill")) {
        push("doomed");
        alloc(MIB, "doomed");
        nvtxRangeStartA("epoch");
        say("range", "start", 0, "epoch");
        raise(SIGKILL);
    }
    nvtxDomainHandle_t domain = annotate ? NULL : nvtxDomainCreateA("cmt-test");
    push("load");
    CUdeviceptr a = alloc(MIB, "load");
    pop();
    uint64_t train = annotate ? cmt_annotate_range_start("train") : nvtxRangeStartA("train");
    say("range", "start", 0, "train");
    pthread_t t[WORKERS];
    for (long i = 0; i < WORKERS; i++)
        pthread_create(&t[i], NULL, work, (void *)i);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);
    if (annotate)
        cmt_annotate_range_end(train);
    else
        nvtxRangeEnd(train);
    cuMemFree(a);
    push("leak");
    alloc(3 * MIB, "leak");
    pop();
    if (!annotate) {
        nvtxEventAttributes_t attr = {0};
        attr.version = NVTX_VERSION;
        attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
        attr.category = 7;
        attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
        attr.message.ascii = "tail";
        nvtxDomainRangePushEx(domain, &attr);
        say("range", "push", 0, "tail");
        CUdeviceptr c = alloc(512u << 10, "tail");
        cuMemFree(c);
        nvtxDomainRangePop(domain);
        nvtxMarkA("done");
    }
    CUdeviceptr d = alloc(256u << 10, "-");
    cuMemFree(d);
    return 0;
}
