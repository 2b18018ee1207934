/* bench_sim_alloc.c — what one simcuda cuMemAlloc_v2 costs at a given live count, against
 * what it costs at 1,000 live (issue 26 item 1: simcuda's allocation in O(log n) of the live
 * allocations, so that a recorded run of a million live allocations is a test, not a wait).
 *
 * On device 0, allocates live_million's sizes (4 KiB + (i % 64) x 512 B, one 2 MiB page
 * each), never freed. When the live count reaches each LIVE given (ascending), it times the
 * next WINDOW allocations with the thread's CPU clock, in SLICES rounds of four slices: device
 * 0, device 1, device 1, device 0 (ABBA). Device 1 holds ANCHOR (1,000) live allocations: each
 * of its slices is freed after it is timed, so that it keeps its count. Printed per LIVE: the
 * median round's CPU per call on each device and the median of the rounds' ratios (this
 * machine's speed changes from second to second; a round takes microseconds). Device 0's timed
 * allocations stay live, so the next count starts where it says.
 * A device holds at most 1 TiB of addresses (about 524,000 pages): simcuda needs
 * SIMCUDA_DEVICES=2, SIMCUDA_MEMORY of 2 MiB per allocation and SIMCUDA_REUSE_ADDRESSES=0, so
 * that both devices take the same path, a fresh range above the highest one handed out (with
 * reuse, device 1 would refill what it freed); run.sh sets them.
 *
 * usage: bench_sim_alloc [-w WINDOW] [-s SLICES] [-a ANCHOR] LIVE...
 *   (defaults: window 4000, 20 slices, anchor 1000; LIVE ascending, each at least ANCHOR)
 * Prints per LIVE: "bench_sim_alloc live=N cpu_ns_per_call=X anchor_live=A
 * anchor_cpu_ns_per_call=Y ratio=R process_cpu_s=S" (S: the process's CPU, every thread's,
 * from its start until N were live). Exits 1 naming the first allocation that fails. */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_SLICES 64

static uint64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One device's allocations: how many were made (all live unless given back) and, for the
 * anchor's, the last slice's addresses to give back. */
struct side {
    CUcontext ctx;
    unsigned long live;
    CUdeviceptr *made;
};

/* Makes `count` more allocations on the side's device (its addresses into made[] when there
 * is one); 0, or -1 after naming the one that failed. */
static int allocate(struct side *side, unsigned long count)
{
    for (unsigned long i = 0; i < count; i++, side->live++) {
        CUdeviceptr p;
        CUresult rc = cuMemAlloc_v2(&p, 4096 + (side->live % 64) * 512);
        if (rc != CUDA_SUCCESS) {
            fprintf(stderr, "bench_sim_alloc: allocation %lu failed (%d)\n", side->live, (int)rc);
            return -1;
        }
        if (side->made)
            side->made[i] = p;
    }
    return 0;
}

/* The thread's CPU nanoseconds for `count` allocations on the side's device. */
static int64_t timed(struct side *side, unsigned long count)
{
    if (cuCtxSetCurrent(side->ctx) != CUDA_SUCCESS)
        return -1;
    uint64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    if (allocate(side, count) != 0)
        return -1;
    return (int64_t)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Allocates `count` on the anchor's side, timed, then gives them back: its CPU nanoseconds. */
static int64_t timed_anchor(struct side *anchor, unsigned long count)
{
    int64_t t = timed(anchor, count);
    for (unsigned long i = 0; t >= 0 && i < count; i++)
        if (cuMemFree_v2(anchor->made[i]) != CUDA_SUCCESS)
            return -1;
    anchor->live -= count;
    return t;
}

/* `slices` rounds of four slices of `half` allocations, measured, anchor, anchor, measured
 * (ABBA: a drift in the machine's speed, or what the first slice after a switch pays, hits
 * both alike); the measured side's allocations are kept, the anchor's given back. Prints the
 * medians of each side's CPU per call and of the rounds' ratios. */
static int measure(struct side *big, struct side *anchor, unsigned long half, int slices)
{
    double cost[MAX_SLICES], base[MAX_SLICES], ratio[MAX_SLICES];
    unsigned long live = big->live;
    double reach = (double)clock_ns(CLOCK_PROCESS_CPUTIME_ID) / 1e9;
    for (int s = 0; s < slices; s++) {
        int64_t b1 = timed(big, half), a1 = timed_anchor(anchor, half);
        int64_t a2 = timed_anchor(anchor, half), b2 = timed(big, half);
        if (b1 < 0 || a1 < 0 || a2 < 0 || b2 < 0)
            return -1;
        cost[s] = (double)(b1 + b2) / (double)(2 * half);
        base[s] = (double)(a1 + a2) / (double)(2 * half);
        ratio[s] = a1 + a2 > 0 ? (double)(b1 + b2) / (double)(a1 + a2) : 0;
    }
    printf("bench_sim_alloc live=%lu cpu_ns_per_call=%.1f anchor_live=%lu "
           "anchor_cpu_ns_per_call=%.1f ratio=%.3f process_cpu_s=%.3f\n",
           live, median(cost, slices), anchor->live, median(base, slices), median(ratio, slices),
           reach);
    fflush(stdout);
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_sim_alloc [-w WINDOW] [-s SLICES] [-a ANCHOR] LIVE... "
                    "(ascending, each at least ANCHOR)\n");
    exit(2);
}

static int open_side(int device, struct side *side)
{
    CUdevice dev;
    if (cuDeviceGet(&dev, device) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&side->ctx, dev) != CUDA_SUCCESS ||
        cuCtxSetCurrent(side->ctx) != CUDA_SUCCESS) {
        fprintf(stderr, "bench_sim_alloc: no device %d (SIMCUDA_DEVICES=2)\n", device);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    unsigned long window = 4000, anchor_live = 1000;
    int slices = 20, opt;
    while ((opt = getopt(argc, argv, "w:s:a:")) != -1) {
        if (opt == 'w')
            window = strtoul(optarg, NULL, 10);
        else if (opt == 's')
            slices = atoi(optarg);
        else if (opt == 'a')
            anchor_live = strtoul(optarg, NULL, 10);
        else
            usage();
    }
    if (optind >= argc || slices < 1 || slices > MAX_SLICES || window < 4 * (unsigned long)slices)
        usage();
    unsigned long half = window / (unsigned long)slices / 4;
    static struct side big, anchor;
    if (cuInit(0) != CUDA_SUCCESS || open_side(1, &anchor) != 0 ||
        allocate(&anchor, anchor_live) != 0 || open_side(0, &big) != 0)
        return 1;
    anchor.made = malloc(half * sizeof anchor.made[0]);
    if (!anchor.made)
        return 1;
    for (int i = optind; i < argc; i++) {
        char *end = NULL;
        unsigned long n = strtoul(argv[i], &end, 10);
        if (*end || n < big.live || n < anchor_live)
            usage();
        if (cuCtxSetCurrent(big.ctx) != CUDA_SUCCESS || allocate(&big, n - big.live) != 0 ||
            measure(&big, &anchor, half, slices) != 0)
            return 1;
    }
    free(anchor.made);
    return 0;
}
