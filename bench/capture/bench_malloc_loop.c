/* bench_malloc_loop — the loop shape of bench_capture_loop on malloc/free, for heaptrack.
 *
 * `heaptrack ./bench_malloc_loop` against a bare run gives heaptrack's added ns per call: the
 * anchor for what an LD_PRELOAD + libunwind + zstd tracer costs on this machine. The empty
 * asm hands each pointer to "unknown code" so the compiler cannot drop the pair. */
#include "bench_loop.h"

static void pairs(struct bench_worker *w, long n)
{
    for (long i = 0; i < n; i++) {
        void *p = malloc(w->opt->size);
        if (!p) {
            w->failed = 1;
            return;
        }
        __asm__ volatile("" : : "r"(p) : "memory");
        free(p);
    }
}

int main(int argc, char **argv)
{
    struct bench_options opt;
    bench_parse(argc, argv, &opt, "malloc/free pairs on T threads");
    return bench_run("bench_malloc_loop", &opt, NULL, NULL, pairs, "malloc failed");
}
