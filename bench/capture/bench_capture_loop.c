/* bench_capture_loop — alloc/free pairs through the CUDA driver API, 20 frames deep.
 *
 * Linked against libcuda.so.1 (simcuda in the build tree). Each thread makes the device's
 * primary context current on itself, then runs cuMemAlloc_v2/cuMemFree_v2 pairs from the
 * bottom of the recursion. Run it bare and under `cumemtrace record` to see what the shim
 * adds per intercepted call (bench/capture/run.sh does both). Prints figures, asserts none. */
#include <cuda.h>

#include "bench_loop.h"

static int make_current(struct bench_worker *w)
{
    return cuCtxSetCurrent((CUcontext)w->ctx) != CUDA_SUCCESS;
}

static void pairs(struct bench_worker *w, long n)
{
    for (long i = 0; i < n; i++) {
        CUdeviceptr p = 0;
        if (cuMemAlloc(&p, w->opt->size) != CUDA_SUCCESS || cuMemFree(p) != CUDA_SUCCESS) {
            w->failed = 1;
            return;
        }
    }
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
    int rc = bench_run("bench_capture_loop", &opt, ctx, make_current, pairs,
                       "a driver call failed");
    cuDevicePrimaryCtxRelease(dev);
    return rc;
}
