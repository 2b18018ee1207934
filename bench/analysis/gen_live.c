/* gen_live.c — writes a trace of N device allocations that are never freed, the shape of
 * issue 26's "live objects" figure: the replay must hold N objects at the end.
 *
 * usage: cmt_bench_gen_live OUT.cmt N
 *
 * N cuMemAlloc_v2 calls of 512 B to 8.5 KiB (random, rounded up to 512 B as a driver does) at
 * increasing addresses with the gaps an allocator leaves, from 16 call sites 8 frames deep on
 * one thread, then the end record. No frees: every object is live when the trace ends. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <fcntl.h>

#include "bench_rng.h"
#include "writer.h"

#define SITES 16
#define DEPTH 8

static void check(int rc, const char *what)
{
    if (rc) {
        fprintf(stderr, "cmt_bench_gen_live: %s failed (%d)\n", what, rc);
        exit(1);
    }
}

static void header(cmt_writer *w, uint32_t *site_leaf)
{
    static const char *argv[] = {"live_objects"};
    struct cmt_process p = {4242,
                            1,
                            1700000000000000000ull,
                            1000,
                            12040,
                            "bench-host",
                            "/usr/bin/live_objects",
                            1,
                            argv,
                            -1,
                            -1,
                            -1,
                            NULL};
    check(cmt_writer_process(w, &p), "process");
    struct cmt_api api = {1, CMT_OP_ALLOC, "cuMemAlloc_v2"};
    check(cmt_writer_api(w, &api), "api");
    struct cmt_module m = {1, "/usr/bin/live_objects", 0x400000ull, 0x100000, NULL, 0};
    check(cmt_writer_module(w, &m), "module");
    uint32_t id = 1;
    for (uint32_t s = 0; s < SITES; s++) {
        uint32_t parent = 0;
        for (uint32_t f = 0; f < DEPTH; f++, id++) {
            struct cmt_stack_node n = {id, parent, 0x401000ull + s * 0x1000 + f * 0x10};
            check(cmt_writer_stack_node(w, &n), "node");
            parent = id;
        }
        site_leaf[s] = parent;
    }
    struct cmt_device d = {0, "NVIDIA H100 80GB HBM3", 80ull << 30, 79ull << 30, 0};
    check(cmt_writer_device(w, &d), "device");
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: cmt_bench_gen_live OUT.cmt N\n");
        return 2;
    }
    char *end_ptr;
    uint64_t n = strtoull(argv[2], &end_ptr, 10);
    if (*end_ptr || n == 0) {
        fprintf(stderr, "cmt_bench_gen_live: N must be a positive count, not '%s'\n", argv[2]);
        return 2;
    }
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        fprintf(stderr, "cmt_bench_gen_live: cannot write %s\n", argv[1]);
        return 1;
    }
    cmt_writer *w;
    struct cmt_writer_options opt = {.level = 1, .raw_literals = 1}; /* the shim's settings */
    check(cmt_writer_create(&w, cmt_fd_sink, &fd, &opt), "writer");
    uint32_t site_leaf[SITES];
    header(w, site_leaf);
    uint64_t addr = 0x7f1000000000ull, t_ns = 0;
    for (uint64_t seq = 1; seq <= n; seq++) {
        uint64_t r = next_rand();
        uint64_t size = ((512 + r % 8192) + 511) & ~511ull;
        t_ns += 200 + (r >> 40) % 800;
        struct cmt_event e = {.seq = seq,
                              .t_ns = t_ns,
                              .tid = 1000,
                              .api = 1,
                              .dev = 0,
                              .stack = site_leaf[(r >> 32) % SITES],
                              .fields = CMT_F(PTR) | CMT_F(SIZE)};
        e.v[CMT_FIELD_PTR] = addr;
        e.v[CMT_FIELD_SIZE] = size;
        check(cmt_writer_event(w, &e), "event");
        addr += size + ((r >> 20) % 4) * 512;
    }
    struct cmt_end end = {t_ns, n, 0};
    check(cmt_writer_end(w, &end), "end");
    check(cmt_writer_flush(w), "flush");
    cmt_writer_destroy(w);
    if (close(fd) != 0) {
        fprintf(stderr, "cmt_bench_gen_live: cannot write %s\n", argv[1]);
        return 1;
    }
    printf("%s: %" PRIu64 " live allocations\n", argv[1], n);
    return 0;
}
