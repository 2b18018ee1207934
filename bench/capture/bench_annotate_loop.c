/* bench_annotate_loop — alloc/free_requested report pairs through cumemtrace/annotate.h,
 * 20 frames deep: what a sub-allocator pays per report. Without the shim every report is a
 * no-op (the declaration returns 0); under `cumemtrace record` each becomes an ALLOC_EVENT
 * through the driver events' path. bench/capture/run.sh runs both beside the driver loop,
 * whose shimmed figures are the anchor. Prints figures, asserts none. */
#include "bench_loop.h"
#include "cumemtrace/annotate.h"

static uint32_t pool;

static void pairs(struct bench_worker *w, long n)
{
    uint64_t size = w->opt->size, base = 0x7f0000000000ull;
    for (long i = 0; i < n; i++) {
        uint64_t addr = base + (uint64_t)(i & 1023) * size;
        cmt_annotate_alloc(pool, 0, addr, size, size - 100, 0, 0, base, 0);
        cmt_annotate_free(pool, CMT_ANNOTATE_FREE_REQUESTED, 0, addr, size, 0);
    }
}

int main(int argc, char **argv)
{
    struct bench_options opt;
    bench_parse(argc, argv, &opt, "annotate.h alloc/free_requested report pairs on T threads");
    pool = cmt_annotate_allocator("bench-pool", "1", "");
    return bench_run("bench_annotate_loop", &opt, NULL, NULL, pairs, "a report failed");
}
