/* bench_capture_loop — alloc/free pairs through the CUDA driver API, 20 frames deep.
 *
 * Linked against libcuda.so.1 (simcuda in the build tree). Each thread makes the device's
 * primary context current on itself, then runs cuMemAlloc_v2/cuMemFree_v2 pairs from the
 * bottom of the recursion. Run it bare and under `cumemtrace record` to see what the shim
 * adds per intercepted call (bench/capture/run.sh does both). Prints figures, asserts none. */
#include <cuda.h>
#include <pthread.h>

#include "bench_loop.h"

struct worker {
    const struct bench_options *opt;
    CUcontext ctx;
    pthread_barrier_t *start;
    struct bench_result result;
    int failed;
};

static void pairs(struct worker *w, long n)
{
    for (long i = 0; i < n; i++) {
        CUdeviceptr p = 0;
        if (cuMemAlloc(&p, w->opt->size) != CUDA_SUCCESS || cuMemFree(p) != CUDA_SUCCESS) {
            w->failed = 1;
            return;
        }
    }
}

static void leaf(void *arg)
{
    struct worker *w = arg;
    pairs(w, w->opt->warmup);
    pthread_barrier_wait(w->start);
    uint64_t wall0 = bench_clock_ns(CLOCK_MONOTONIC);
    uint64_t cpu0 = bench_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    pairs(w, w->opt->pairs);
    w->result.cpu_ns = bench_clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    w->result.wall_ns = bench_clock_ns(CLOCK_MONOTONIC) - wall0;
    w->result.calls = 2 * w->opt->pairs;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    if (cuCtxSetCurrent(w->ctx) != CUDA_SUCCESS) {
        w->failed = 1;
        pthread_barrier_wait(w->start);
        return NULL;
    }
    bench_descend(w->opt->depth, leaf, w);
    return NULL;
}

int main(int argc, char **argv)
{
    struct bench_options opt;
    bench_parse(argc, argv, &opt, "cuMemAlloc_v2/cuMemFree_v2 pairs on T threads");
    CUdevice dev;
    CUcontext ctx;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev)) {
        fprintf(stderr, "bench_capture_loop: no CUDA device\n");
        return 1;
    }
    struct worker *w = calloc((size_t)opt.threads, sizeof *w);
    pthread_t *tid = calloc((size_t)opt.threads, sizeof *tid);
    struct bench_result *r = calloc((size_t)opt.threads, sizeof *r);
    pthread_barrier_t start;
    if (!w || !tid || !r || pthread_barrier_init(&start, NULL, (unsigned)opt.threads + 1))
        return 1;
    for (int i = 0; i < opt.threads; i++) {
        w[i] = (struct worker){.opt = &opt, .ctx = ctx, .start = &start};
        if (pthread_create(&tid[i], NULL, worker_main, &w[i])) {
            fprintf(stderr, "bench_capture_loop: cannot start thread %d\n", i);
            return 1;
        }
    }
    pthread_barrier_wait(&start);
    uint64_t wall0 = bench_clock_ns(CLOCK_MONOTONIC);
    int failed = 0;
    for (int i = 0; i < opt.threads; i++) {
        pthread_join(tid[i], NULL);
        failed |= w[i].failed;
        r[i] = w[i].result;
    }
    uint64_t wall = bench_clock_ns(CLOCK_MONOTONIC) - wall0;
    if (failed) {
        fprintf(stderr, "bench_capture_loop: a driver call failed\n");
        return 1;
    }
    bench_report("bench_capture_loop", &opt, r, opt.threads, wall);
    cuDevicePrimaryCtxRelease(dev);
    free(w);
    free(tid);
    free(r);
    return 0;
}
