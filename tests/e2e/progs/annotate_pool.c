/* annotate_pool MODE: a tiny sub-allocator over one cuMemAlloc segment that reports what it
 * does through cumemtrace/annotate.h, and prints each report on stdout (one line per action:
 * "action addr size requested") for the test to compare with the trace.
 * MODE: plain (every action once), fork (the child reports too, into its own trace), kill
 * (reports, then SIGKILLs itself: record salvages the rest), threads (20 threads, each
 * cycling cuMemAlloc, segment_alloc, alloc, free_requested, segment_free, cuMemFree: the
 * trace must keep every thread's cycle in order; prints nothing per action). */
#include <cuda.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cumemtrace/annotate.h"

#define SEGMENT (8u << 20)
#define STREAM 7

static uint32_t pool;
static CUdeviceptr base;
static uint64_t used;

static void say(const char *action, uint64_t addr, uint64_t size, uint64_t requested)
{
    printf("%s %llu %llu %llu\n", action, (unsigned long long)addr, (unsigned long long)size,
           (unsigned long long)requested);
    fflush(stdout);
}

static uint64_t pool_alloc(uint64_t n)
{
    uint64_t rounded = (n + 511) / 512 * 512, addr = base + used;
    used += rounded;
    cmt_annotate_alloc(pool, 0, addr, rounded, n, STREAM, 0, base, CMT_ANNOTATE_FLAG_SMALL);
    say("alloc", addr, rounded, n);
    return addr;
}

static void pool_free(uint64_t addr, uint64_t size)
{
    cmt_annotate_free(pool, CMT_ANNOTATE_FREE_REQUESTED, 0, addr, size, STREAM);
    say("free_requested", addr, size, 0);
    cmt_annotate_free(pool, CMT_ANNOTATE_FREE_COMPLETED, 0, addr, size, STREAM);
    say("free_completed", addr, size, 0);
}

/* named frames the test looks for in the alloc's stack */
static __attribute__((noinline)) uint64_t make_tensor(uint64_t n)
{
    return pool_alloc(n);
}

static void work(const char *who)
{
    uint64_t a = make_tensor(1000), b = make_tensor(3000);
    pool_free(a, 1024);
    cmt_annotate_oom(pool, 0, 64u << 20, STREAM, 1u << 20, 24ull << 30, 3584, SEGMENT);
    say("oom", 0, 64u << 20, 0);
    pool_free(b, 3072);
    (void)who;
}

#define THREADS 20
#define CYCLES 300

static CUcontext shared_ctx;

static void *cycle(void *arg)
{
    uint64_t id = (uint64_t)(uintptr_t)arg;
    cuCtxSetCurrent(shared_ctx);
    for (int i = 0; i < CYCLES; i++) {
        CUdeviceptr p;
        if (cuMemAlloc(&p, 4096) != CUDA_SUCCESS)
            return (void *)1;
        cmt_annotate_segment(pool, CMT_ANNOTATE_SEGMENT_ALLOC, 0, p, 4096, id, 0, 0);
        cmt_annotate_alloc(pool, 0, p, 4096, 4000 + id, id, 0, p, 0);
        cmt_annotate_free(pool, CMT_ANNOTATE_FREE_REQUESTED, 0, p, 4096, id);
        cmt_annotate_segment(pool, CMT_ANNOTATE_SEGMENT_FREE, 0, p, 4096, id, 0, 0);
        if (cuMemFree(p) != CUDA_SUCCESS)
            return (void *)1;
    }
    return NULL;
}

static int threads(void)
{
    pthread_t t[THREADS];
    void *failed = NULL, *rc;
    for (uintptr_t i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, cycle, (void *)i) != 0)
            return 1;
    for (int i = 0; i < THREADS; i++)
        if (pthread_join(t[i], &rc) == 0 && rc)
            failed = rc;
    printf("threads %d cycles %d\n", THREADS, CYCLES);
    return failed != NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "plain";
    CUcontext ctx;
    CUdevice dev;
    cuInit(0);
    cuDeviceGet(&dev, 0);
    cuDevicePrimaryCtxRetain(&ctx, dev);
    cuCtxSetCurrent(ctx);
    pool = cmt_annotate_allocator("test-pool", "1.2", "block:512,segment:8MiB");
    printf("allocator %u\n", pool);
    if (!strcmp(mode, "threads")) {
        shared_ctx = ctx;
        return threads();
    }
    if (cuMemAlloc(&base, SEGMENT) != CUDA_SUCCESS)
        return 1;
    cmt_annotate_segment(pool, CMT_ANNOTATE_SEGMENT_ALLOC, 0, base, SEGMENT, STREAM, 0, 0);
    say("segment_alloc", base, SEGMENT, 0);
    work("parent");
    if (!strcmp(mode, "fork")) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            printf("child\n");
            work("child");
            _exit(0);
        }
        int st;
        waitpid(pid, &st, 0);
        printf("parent\n");
    }
    if (!strcmp(mode, "kill"))
        kill(getpid(), SIGKILL);
    cmt_annotate_segment(pool, CMT_ANNOTATE_SEGMENT_FREE, 0, base, SEGMENT, STREAM, 0, 0);
    say("segment_free", base, SEGMENT, 0);
    cuMemFree(base);
    return 0;
}
