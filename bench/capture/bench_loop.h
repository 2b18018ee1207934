/* bench_loop.h — the loop shape shared by bench_capture_loop and bench_malloc_loop.
 *
 * Each thread descends `depth` noinline frames, then runs `warmup` untimed pairs (first-call
 * setup, stack caches) and `pairs` timed alloc/free pairs. A pair is two intercepted calls,
 * so ns per call = elapsed / (2 × pairs). Both wall time and the thread's CPU time are kept:
 * with more threads than cores the wall figure includes time spent descheduled. */
#ifndef BENCH_LOOP_H
#define BENCH_LOOP_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct bench_options {
    long pairs, warmup;
    int depth, threads;
    size_t size;
};

struct bench_result {
    uint64_t wall_ns, cpu_ns;
    long calls;
};

static inline uint64_t bench_clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The leaf: runs the pairs. `arg` is the benchmark's per-thread state. */
typedef void (*bench_leaf_fn)(void *arg);

/* Recurses `depth` frames, then calls leaf(arg). The empty asm after the call keeps the
 * compiler from turning the recursion into a loop or a tail call, so every frame is real. */
static __attribute__((noinline)) void bench_descend(int depth, bench_leaf_fn leaf, void *arg)
{
    if (depth > 0)
        bench_descend(depth - 1, leaf, arg);
    else
        leaf(arg);
    __asm__ volatile("" ::: "memory");
}

static inline void bench_usage(const char *prog, const char *what)
{
    fprintf(stderr,
            "usage: %s [-n PAIRS] [-w WARMUP] [-d DEPTH] [-t THREADS] [-s BYTES]\n"
            "  %s, PAIRS timed pairs per thread (default 200000) after WARMUP untimed ones\n"
            "  (default 1000), DEPTH frames deep (default 20), BYTES each (default 1048576).\n"
            "Prints one line: ... ns_per_call=WALL cpu_ns_per_call=CPU (means over threads).\n",
            prog, what);
    exit(2);
}

static inline void bench_parse(int argc, char **argv, struct bench_options *o, const char *what)
{
    *o = (struct bench_options){
        .pairs = 200000, .warmup = 1000, .depth = 20, .threads = 1, .size = 1 << 20};
    for (int i = 1; i < argc; i += 2) { /* -X VALUE pairs */
        if (strlen(argv[i]) != 2 || argv[i][0] != '-' || i + 1 >= argc)
            bench_usage(argv[0], what);
        char *end;
        long v = strtol(argv[i + 1], &end, 10);
        if (*end || v < 0)
            bench_usage(argv[0], what);
        switch (argv[i][1]) {
        case 'n': o->pairs = v > 0 ? v : 1; break;
        case 'w': o->warmup = v; break;
        case 'd': o->depth = (int)v; break;
        case 't': o->threads = v > 0 && v <= 256 ? (int)v : 1; break;
        case 's': o->size = (size_t)v; break;
        default: bench_usage(argv[0], what);
        }
    }
}

static inline void bench_report(const char *name, const struct bench_options *o,
                                const struct bench_result *r, int n, uint64_t wall_total_ns)
{
    double wall = 0, cpu = 0;
    long calls = 0;
    for (int i = 0; i < n; i++) {
        wall += (double)r[i].wall_ns / (double)r[i].calls;
        cpu += (double)r[i].cpu_ns / (double)r[i].calls;
        calls += r[i].calls;
    }
    printf("%s threads=%d depth=%d pairs=%ld size=%zu ns_per_call=%.1f cpu_ns_per_call=%.1f "
           "throughput_ns_per_call=%.1f\n",
           name, o->threads, o->depth, o->pairs, o->size, wall / n, cpu / n,
           (double)wall_total_ns / (double)calls);
}

/* One thread's state; `ctx` is the benchmark's own (a CUcontext for the driver loop). */
struct bench_worker {
    const struct bench_options *opt;
    void *ctx;
    int (*setup)(struct bench_worker *w);          /* on the thread, first; may be NULL */
    void (*pairs)(struct bench_worker *w, long n); /* n alloc/free pairs; sets failed */
    pthread_barrier_t *start;
    struct bench_result result;
    int failed;
};

/* At the bottom of the recursion: untimed warm-up pairs, the barrier, then the timed pairs. */
static void bench_leaf(void *arg)
{
    struct bench_worker *w = arg;
    w->pairs(w, w->opt->warmup);
    pthread_barrier_wait(w->start);
    uint64_t wall0 = bench_clock_ns(CLOCK_MONOTONIC);
    uint64_t cpu0 = bench_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    w->pairs(w, w->opt->pairs);
    w->result.cpu_ns = bench_clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    w->result.wall_ns = bench_clock_ns(CLOCK_MONOTONIC) - wall0;
    w->result.calls = 2 * w->opt->pairs;
}

static void *bench_thread(void *arg)
{
    struct bench_worker *w = arg;
    if (w->setup && w->setup(w)) {
        w->failed = 1;
        pthread_barrier_wait(w->start);
        return NULL;
    }
    bench_descend(w->opt->depth, bench_leaf, w);
    return NULL;
}

/* Runs `pairs` on opt->threads threads, each `depth` frames deep, and prints the report line
 * (or `failure` on stderr). @return the exit status. */
static inline int bench_run(const char *name, const struct bench_options *opt, void *ctx,
                            int (*setup)(struct bench_worker *),
                            void (*pairs)(struct bench_worker *, long), const char *failure)
{
    int n = opt->threads, failed = 0;
    struct bench_worker *w = calloc((size_t)n, sizeof *w);
    pthread_t *tid = calloc((size_t)n, sizeof *tid);
    struct bench_result *r = calloc((size_t)n, sizeof *r);
    pthread_barrier_t start;
    if (!w || !tid || !r || pthread_barrier_init(&start, NULL, (unsigned)n + 1))
        return 1;
    for (int i = 0; i < n; i++) {
        w[i] = (struct bench_worker){
            .opt = opt, .ctx = ctx, .setup = setup, .pairs = pairs, .start = &start};
        if (pthread_create(&tid[i], NULL, bench_thread, &w[i])) {
            fprintf(stderr, "%s: cannot start thread %d\n", name, i);
            return 1;
        }
    }
    pthread_barrier_wait(&start);
    uint64_t wall0 = bench_clock_ns(CLOCK_MONOTONIC);
    for (int i = 0; i < n; i++) {
        pthread_join(tid[i], NULL);
        failed |= w[i].failed;
        r[i] = w[i].result;
    }
    uint64_t wall = bench_clock_ns(CLOCK_MONOTONIC) - wall0;
    if (failed)
        fprintf(stderr, "%s: %s\n", name, failure);
    else
        bench_report(name, opt, r, n, wall);
    free(w);
    free(tid);
    free(r);
    return failed;
}

#endif
