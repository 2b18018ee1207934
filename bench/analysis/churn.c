/* churn.c — a workload for the analysis benchmark, recorded through the shim on simcuda:
 * stream-ordered allocations (cuMemAllocAsync/cuMemFreeAsync) of sizes from 512 B to 8 MiB
 * made from 16 call sites, a live set of 2048 buffers replaced at random, and now and then a
 * cuMemAlloc_v2 segment, a cuMemGetInfo and a stream synchronisation.
 *
 * usage: bench_churn [EVENTS]   (driver calls to make, default 4,000,000) */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_rng.h"

#define LIVE 2048
#define SITES 16

static CUstream stream;
static long calls;

/* One call site per depth: the same function reached through 4 to 19 frames of itself, so
 * each depth is a stack of its own. */
static __attribute__((noinline)) int alloc_at(int depth, CUdeviceptr *p, size_t size)
{
    int rc = depth > 0 ? alloc_at(depth - 1, p, size)
                       : cuMemAllocAsync(p, size, stream) != CUDA_SUCCESS;
    __asm__ volatile("" ::: "memory"); /* keeps the frames (no tail call) */
    return rc;
}

static int fail(const char *what)
{
    fprintf(stderr, "bench_churn: %s failed\n", what);
    return 1;
}

int main(int argc, char **argv)
{
    long target = argc > 1 ? atol(argv[1]) : 4000000;
    CUdevice dev;
    CUcontext ctx;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx) || cuStreamCreate(&stream, 0))
        return fail("CUDA set-up");
    calls = 5;
    static CUdeviceptr live[LIVE];
    for (long round = 0; calls < target; round++) {
        uint32_t i = (uint32_t)(next_rand() % LIVE);
        if (live[i]) {
            if (cuMemFreeAsync(live[i], stream) != CUDA_SUCCESS)
                return fail("cuMemFreeAsync");
            calls++;
        }
        size_t size = (size_t)512 << (next_rand() % 15);
        if (alloc_at(4 + (int)(next_rand() % SITES), &live[i], size))
            return fail("cuMemAllocAsync");
        calls++;
        if (round % 1000 == 999) {
            if (cuStreamSynchronize(stream) != CUDA_SUCCESS)
                return fail("cuStreamSynchronize");
            calls++;
        }
        if (round % 5000 == 4999) {
            size_t free_b, total_b;
            CUdeviceptr seg;
            if (cuMemGetInfo(&free_b, &total_b) || cuMemAlloc(&seg, 64u << 20) || cuMemFree(seg))
                return fail("cuMemGetInfo/cuMemAlloc/cuMemFree");
            calls += 3;
        }
    }
    for (uint32_t i = 0; i < LIVE; i++)
        if (live[i] && cuMemFreeAsync(live[i], stream) != CUDA_SUCCESS)
            return fail("cuMemFreeAsync");
    cuStreamSynchronize(stream);
    cuStreamDestroy(stream);
    cuDevicePrimaryCtxRelease(dev);
    return 0;
}
