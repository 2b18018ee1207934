/* bench_whatif.c — how fast `cumemtrace whatif` replays. Builds a synthetic
 * tensor-level stream shaped like a training loop (weights kept, activations
 * allocated and freed mostly last-in first-out, a few streams, sizes from
 * 512 B to hundreds of MiB), then reports events/s for each setting alone,
 * for all settings on the available threads, and for reading the same stream
 * out of a trace. Prints figures; asserts nothing. With a second argument the
 * trace is also written to that file, so `cumemtrace whatif --json` can be run
 * over exactly the stream timed here (to check that a faster model gives the
 * same answers). With a third, the stream is also written as an oracle script
 * (tests/oracle/oracle_driver's "alloc SIZE STREAM" / "free N"), so PyTorch's
 * real allocator can be timed on the same requests: bench/whatif/run.sh gives
 * the ratio. With --write-only first, it only builds the stream and writes the trace (run.sh
 * makes its larger trace so, for the peak RSS at two sizes). The box is often shared: the CPU seconds of each replay are
 * the figure to compare, wall seconds are printed beside them. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "whatif.h"
#include "writer.h"

#define MIB ((uint64_t)1 << 20)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double process_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng = 0x2545f4914f6cdd1dULL;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint64_t tensor_size(void)
{
    uint64_t r = next() % 100;
    if (r < 40)
        return 512 + next() % MIB; /* small pool */
    if (r < 85)
        return MIB + next() % (16 * MIB); /* medium */
    if (r < 98)
        return 16 * MIB + next() % (256 * MIB); /* large activations */
    return 256 * MIB + next() % (512 * MIB);    /* rare huge buffers */
}

/* @return the number of events written to ev (n rounded to whole iterations). */
static size_t build(struct cmt_whatif_event *ev, size_t n, uint32_t *id_count)
{
    uint32_t *live = malloc(n * sizeof *live);
    size_t live_count = 0, k = 0;
    uint32_t ids = 0;
    /* Weights: 200 tensors kept for the whole run. */
    for (int i = 0; i < 200 && k < n; i++)
        ev[k++] = (struct cmt_whatif_event){.size = 8 * MIB + next() % (64 * MIB), .id = ids++};
    uint32_t *free_ids = malloc(n * sizeof *free_ids);
    size_t free_count = 0;
    while (k + 2 < n) {
        bool alloc = live_count < 8 || (live_count < 400 && next() % 100 < 52);
        if (alloc) {
            uint32_t id = free_count ? free_ids[--free_count] : ids++;
            ev[k] = (struct cmt_whatif_event){.size = tensor_size(),
                                              .stream = next() % 8 == 0 ? 7 : 0,
                                              .t_ns = k + 1,
                                              .seq = k + 1,
                                              .id = id};
            k++;
            live[live_count++] = id;
        } else {
            /* Mostly the newest tensor, sometimes an older one. */
            size_t at = next() % 4 ? live_count - 1 : next() % live_count;
            uint32_t id = live[at];
            live[at] = live[--live_count];
            ev[k] = (struct cmt_whatif_event){.t_ns = k + 1, .seq = k + 1, .id = id, .is_free = 1};
            k++;
            free_ids[free_count++] = id;
        }
    }
    free(live);
    free(free_ids);
    *id_count = ids;
    return k;
}

/* The same stream as a trace in memory, to time cmt_whatif_stream_load. */
static void write_trace(const struct cmt_whatif_stream *s, struct cmt_membuf *buf)
{
    cmt_writer *w;
    if (cmt_writer_create(&w, cmt_membuf_sink, buf, NULL) != 0) {
        fprintf(stderr, "bench_whatif: out of memory\n");
        exit(1);
    }
    const char *argv[] = {"bench"};
    struct cmt_process p = {.pid = 1,
                            .hostname = "h",
                            .exe = "bench",
                            .argc = 1,
                            .argv = argv,
                            .rank = -1,
                            .local_rank = -1,
                            .world_size = -1};
    cmt_writer_process(w, &p);
    cmt_writer_api(w, &(struct cmt_api){1, CMT_OP_ALLOC_ASYNC, "cuMemAllocAsync"});
    cmt_writer_api(w, &(struct cmt_api){2, CMT_OP_FREE_ASYNC, "cuMemFreeAsync"});
    cmt_writer_device(w, &(struct cmt_device){0, "GPU0", 80ull << 30, 79ull << 30, 0});
    struct cmt_whatif_cursor c;
    struct cmt_whatif_event event;
    cmt_whatif_cursor_init(&c, s);
    for (size_t k = 0; cmt_whatif_cursor_next(&c, &event); k++) {
        const struct cmt_whatif_event *e = &event;
        struct cmt_event ev = {.seq = k,
                               .t_ns = k,
                               .tid = 1,
                               .api = e->is_free ? 2 : 1,
                               .fields = CMT_F(PTR) | CMT_F(STREAM) |
                                         (e->is_free ? 0 : CMT_F(SIZE))};
        ev.v[CMT_FIELD_PTR] = 0x7f0000000000ull + (uint64_t)e->id * 0x100000000ull;
        ev.v[CMT_FIELD_SIZE] = e->size;
        ev.v[CMT_FIELD_STREAM] = e->stream;
        cmt_writer_event(w, &ev);
    }
    cmt_writer_flush(w);
    cmt_writer_destroy(w);
}

/* The stream as an oracle_driver script: stream 0 stays 0, any other becomes 1 (c10's pool
 * stream), a free names the alloc line of its tensor. */
static int write_script(const struct cmt_whatif_stream *s, const char *path)
{
    FILE *f = fopen(path, "w");
    uint64_t *line_of = calloc(s->id_count ? s->id_count : 1, sizeof *line_of);
    if (!f || !line_of) {
        free(line_of);
        if (f)
            fclose(f);
        return -1;
    }
    struct cmt_whatif_cursor c;
    struct cmt_whatif_event e;
    uint64_t allocs = 0;
    cmt_whatif_cursor_init(&c, s);
    while (cmt_whatif_cursor_next(&c, &e)) {
        if (e.is_free) {
            fprintf(f, "free %" PRIu64 "\n", line_of[e.id]);
        } else {
            line_of[e.id] = allocs++;
            fprintf(f, "alloc %" PRIu64 " %d\n", e.size, e.stream ? 1 : 0);
        }
    }
    free(line_of);
    return fclose(f);
}

/* @return 0 (nothing to do for "-"), or 1 after saying why not. */
static int save_trace(const struct cmt_membuf *buf, const char *path)
{
    if (strcmp(path, "-") == 0)
        return 0;
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf->data, 1, buf->len, f) != buf->len || fclose(f) != 0) {
        fprintf(stderr, "bench_whatif: cannot write %s\n", path);
        return 1;
    }
    printf("  wrote the stream as a trace to %s (its capacity: use --capacity 60GiB)\n", path);
    return 0;
}

static int write_trace_file(struct cmt_whatif_stream *s, const char *path)
{
    struct cmt_membuf buf = {0};
    write_trace(s, &buf);
    int rc = save_trace(&buf, path);
    cmt_membuf_free(&buf);
    cmt_whatif_stream_free(s);
    return rc;
}

int main(int argc, char **argv)
{
    /* --write-only: build the stream and write the trace (and script), time nothing: run.sh
     * makes its larger trace so, for the peak RSS of `cumemtrace whatif`. */
    bool write_only = argc > 1 && strcmp(argv[1], "--write-only") == 0;
    if (write_only) {
        argv++;
        argc--;
    }
    double millions = argc > 1 ? atof(argv[1]) : 4.0;
    if (!(millions > 0 && millions <= 200)) {
        fprintf(stderr, "usage: bench_whatif [--write-only] [MILLIONS_OF_EVENTS (0-200], default "
                        "4] [TRACE_OUT|-] [ORACLE_SCRIPT_OUT]\n");
        return 2;
    }
    size_t n = (size_t)(millions * 1e6);
    struct cmt_whatif_event *ev = malloc(n * sizeof *ev);
    uint32_t ids;
    n = build(ev, n, &ids);
    struct cmt_whatif_stream s;
    if (cmt_whatif_stream_from_events(ev, n, ids, 80ull << 30, 79ull << 30, &s) != 0) {
        fprintf(stderr, "bench_whatif: bad synthetic stream\n");
        return 1;
    }
    free(ev);
    printf("bench_whatif: the stream's encoding takes %.2f bytes an event (%zu bytes, %zu of "
           "them in memory, the rest in a temporary file; the events as structs: %zu bytes an "
           "event)\n",
           (double)cmt_whatif_stream_bytes(&s) / (double)s.event_count, cmt_whatif_stream_bytes(&s),
           cmt_whatif_stream_memory(&s), sizeof(struct cmt_whatif_event));
    if (argc > 3 && strcmp(argv[3], "-") != 0) {
        if (write_script(&s, argv[3]) != 0) {
            fprintf(stderr, "bench_whatif: cannot write %s\n", argv[3]);
            return 1;
        }
        printf("  wrote the stream as an oracle script to %s\n", argv[3]);
    }
    if (write_only) {
        printf("bench_whatif: %zu events written\n", s.event_count);
        return write_trace_file(&s, argc > 2 ? argv[2] : "-");
    }
    uint64_t capacity = 60ull << 30;
    struct cmt_whatif_setting settings[] = {
        {.max_split_size = UINT64_MAX},
        {.max_split_size = 4096 * MIB},
        {.max_split_size = 512 * MIB},
        {.max_split_size = 128 * MIB},
        {.max_split_size = UINT64_MAX, .expandable_segments = true},
        {.max_split_size = UINT64_MAX, .roundup_power2_divisions = 4},
        {.max_split_size = UINT64_MAX, .garbage_collection_threshold = 0.8},
    };
    size_t count = sizeof settings / sizeof *settings;
    /* The cap of a fraction 0.75 of 80 GiB is the capacity: garbage collection acts (it acts
     * only with a fraction), the other settings are as without one. */
    struct cmt_whatif_device dev = {
        .capacity = capacity, .device_total = 80ull << 30, .memory_fraction = 0.75};
    struct cmt_whatif_result results[16];
    printf("bench_whatif: %zu events (%" PRIu64 " allocs, %" PRIu64 " frees), capacity 60 GiB, "
           "%ld CPUs\n",
           s.event_count, s.allocs, s.frees, sysconf(_SC_NPROCESSORS_ONLN));
    printf("  %-34s %8s %8s %12s  %s\n", "setting", "cpu s", "wall s", "events/cpu-s", "outcome");
    for (size_t i = 0; i < count; i++) {
        char conf[160];
        /* One thread: the replay runs on this thread, so its CPU clock times it. */
        double cpu0 = thread_cpu();
        cmt_whatif_run_on(&s, &dev, &settings[i], 1, 1, &results[i]);
        double cpu = thread_cpu() - cpu0;
        if (cmt_whatif_setting_conf(&settings[i], conf, sizeof conf) <= 0)
            snprintf(conf, sizeof conf, "default");
        const struct cmt_whatif_result *r = &results[i];
        printf("  %-34s %8.3f %8.3f %12.3g  %s, peak reserved %.2f GiB, %" PRIu64
               " device allocs\n",
               conf, cpu, r->seconds, (double)r->events_replayed / cpu, r->oom ? "OOM" : "ok",
               (double)r->peak_reserved / (double)(1ull << 30), r->device_alloc_calls);
    }
    uint64_t replayed = 0;
    for (size_t i = 0; i < count; i++)
        replayed += results[i].events_replayed;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    for (long threads = 1; threads <= cpus && threads <= 8; threads *= 2) {
        double t0 = now(), cpu0 = process_cpu();
        cmt_whatif_run_on(&s, &dev, settings, count, (unsigned)threads, results);
        double all = now() - t0, cpu = process_cpu() - cpu0;
        printf("  all %zu settings on %ld thread%s: %.3f s wall, %.3f cpu s, %.3g events/s wall\n",
               count, threads, threads == 1 ? "" : "s", all, cpu, (double)replayed / all);
    }

    struct cmt_membuf buf = {0};
    write_trace(&s, &buf);
    if (argc > 2 && save_trace(&buf, argv[2]) != 0)
        return 1;
    cmt_reader *r;
    struct cmt_whatif_stream loaded;
    double t0 = now();
    if (cmt_reader_open_memory(&r, buf.data, buf.len) != 0 ||
        cmt_whatif_stream_load(r, &loaded, NULL) != 0) {
        fprintf(stderr, "bench_whatif: cannot read the synthetic trace back\n");
        return 1;
    }
    double load = now() - t0;
    printf("  reading the stream from a %.1f MiB trace: %.3f s, %.3g events/s (%zu events kept)\n",
           (double)buf.len / (double)MIB, load, (double)s.event_count / load, loaded.event_count);
    cmt_reader_close(r);
    cmt_whatif_stream_free(&loaded);
    cmt_membuf_free(&buf);
    cmt_whatif_stream_free(&s);
    return 0;
}
