/* late_clock.c — a clock out of step across threads, for the writer's "late" NOTE
 * (interpose/writer_thread.c, drain()). Run under the shim with CUMEMTRACE_CLOCK=monotonic:
 * the program defines clock_gettime itself, which the shim's calls reach (the executable comes
 * first in the lookup), and gives one thread a CLOCK_MONOTONIC 200 ms behind the others'.
 *   late_clock N [MS]  N alloc/free pairs on the main thread (about 300 ms in all, so the
 *                      writer writes past them), then one pair on a thread whose clock lags
 *                      MS ms (default 200; 0: none): its seqs are below what the writer has
 *                      written */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long lag_ns;
static __thread int lagging;
static CUcontext ctx;

int clock_gettime(clockid_t clock, struct timespec *ts)
{
    int rc = (int)syscall(SYS_clock_gettime, clock, ts);
    if (rc == 0 && lagging && clock == CLOCK_MONOTONIC) {
        ts->tv_nsec -= lag_ns % 1000000000L;
        ts->tv_sec -= lag_ns / 1000000000L;
        if (ts->tv_nsec < 0) {
            ts->tv_nsec += 1000000000L;
            ts->tv_sec--;
        }
    }
    return rc;
}

static int pair(void)
{
    CUdeviceptr p;
    if (cuMemAlloc(&p, 1 << 20) != CUDA_SUCCESS || cuMemFree(p) != CUDA_SUCCESS)
        return -1;
    return 0;
}

static void *laggard(void *arg)
{
    lagging = 1;
    *(int *)arg = cuCtxSetCurrent(ctx) == CUDA_SUCCESS ? pair() : -1;
    return NULL;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000;
    lag_ns = (argc > 2 ? atol(argv[2]) : 200) * 1000000L;
    CUdevice dev;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx))
        return 10;
    struct timespec gap = {0, 300000000L / (n > 0 ? n : 1)};
    for (long i = 0; i < n; i++) {
        if (pair())
            return 11;
        nanosleep(&gap, NULL);
    }
    int rc = -1;
    pthread_t t;
    if (pthread_create(&t, NULL, laggard, &rc) || pthread_join(t, NULL) || rc)
        return 12;
    return 0;
}
