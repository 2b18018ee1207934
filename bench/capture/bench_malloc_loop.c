/* bench_malloc_loop — the loop shape of bench_capture_loop on malloc/free, for heaptrack.
 *
 * `heaptrack ./bench_malloc_loop` against a bare run gives heaptrack's added ns per call: the
 * anchor for what an LD_PRELOAD + libunwind + zstd tracer costs on this machine. The empty
 * asm hands each pointer to "unknown code" so the compiler cannot drop the pair. */
#include <pthread.h>

#include "bench_loop.h"

struct worker {
    const struct bench_options *opt;
    pthread_barrier_t *start;
    struct bench_result result;
    int failed;
};

static void pairs(struct worker *w, long n)
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
    bench_descend(w->opt->depth, leaf, w);
    return NULL;
}

int main(int argc, char **argv)
{
    struct bench_options opt;
    bench_parse(argc, argv, &opt, "malloc/free pairs on T threads");
    struct worker *w = calloc((size_t)opt.threads, sizeof *w);
    pthread_t *tid = calloc((size_t)opt.threads, sizeof *tid);
    struct bench_result *r = calloc((size_t)opt.threads, sizeof *r);
    pthread_barrier_t start;
    if (!w || !tid || !r || pthread_barrier_init(&start, NULL, (unsigned)opt.threads + 1))
        return 1;
    for (int i = 0; i < opt.threads; i++) {
        w[i] = (struct worker){.opt = &opt, .start = &start};
        if (pthread_create(&tid[i], NULL, worker_main, &w[i])) {
            fprintf(stderr, "bench_malloc_loop: cannot start thread %d\n", i);
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
        fprintf(stderr, "bench_malloc_loop: malloc failed\n");
        return 1;
    }
    bench_report("bench_malloc_loop", &opt, r, opt.threads, wall);
    free(w);
    free(tid);
    free(r);
    return 0;
}
