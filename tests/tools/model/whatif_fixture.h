/* whatif_fixture.h — traces for the whatif tests, written with the format's
 * writer into memory or a temporary file, and a way to run a command with its
 * output captured. */
#ifndef CMT_TEST_WHATIF_FIXTURE_H
#define CMT_TEST_WHATIF_FIXTURE_H

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "reader.h"
#include "writer.h"

#define MiB ((uint64_t)1 << 20)
#define KiB ((uint64_t)1 << 10)
#define GiB ((uint64_t)1 << 30)

enum { API_ALLOC = 1, API_FREE = 2, API_ALLOC_ASYNC = 3, API_FREE_ASYNC = 4 };
/* Stack 2 is "vae_decode demo.c:211" called from main; stack 3 has no symbol. */
enum { STACK_VAE = 2, STACK_RAW = 3 };

struct tb {
    cmt_writer *w;
    struct cmt_membuf buf;
    uint64_t seq, t;
};

static inline void tb_open(struct tb *b, uint64_t total, uint64_t free_bytes)
{
    memset(b, 0, sizeof *b);
    cr_assert_eq(cmt_writer_create(&b->w, cmt_membuf_sink, &b->buf, NULL), 0);
    const char *argv[] = {"./demo"};
    struct cmt_process p = {.pid = 1,
                            .start_mono_ns = 1,
                            .hostname = "h",
                            .exe = "/demo",
                            .argc = 1,
                            .argv = argv,
                            .rank = -1,
                            .local_rank = -1,
                            .world_size = -1};
    cr_assert_eq(cmt_writer_process(b->w, &p), 0);
    cr_assert_eq(cmt_writer_api(b->w, &(struct cmt_api){API_ALLOC, CMT_OP_ALLOC, "cuMemAlloc_v2"}),
                 0);
    cr_assert_eq(cmt_writer_api(b->w, &(struct cmt_api){API_FREE, CMT_OP_FREE, "cuMemFree_v2"}), 0);
    cr_assert_eq(cmt_writer_api(b->w, &(struct cmt_api){API_ALLOC_ASYNC, CMT_OP_ALLOC_ASYNC,
                                                        "cuMemAllocAsync"}),
                 0);
    cr_assert_eq(cmt_writer_api(
                     b->w, &(struct cmt_api){API_FREE_ASYNC, CMT_OP_FREE_ASYNC, "cuMemFreeAsync"}),
                 0);
    cr_assert_eq(cmt_writer_string(b->w, 1, "main"), 0);
    cr_assert_eq(cmt_writer_string(b->w, 2, "vae_decode"), 0);
    cr_assert_eq(cmt_writer_string(b->w, 3, "demo.c"), 0);
    cr_assert_eq(cmt_writer_stack_node(b->w, &(struct cmt_stack_node){1, 0, 0x401000}), 0);
    cr_assert_eq(cmt_writer_stack_node(b->w, &(struct cmt_stack_node){2, 1, 0x402000}), 0);
    cr_assert_eq(cmt_writer_stack_node(b->w, &(struct cmt_stack_node){3, 1, 0x403000}), 0);
    if (total)
        cr_assert_eq(cmt_writer_device(b->w, &(struct cmt_device){0, "GPU0", total, free_bytes, 1}),
                     0);
}

static inline void tb_event(struct tb *b, uint32_t api, int result, uint64_t ptr, uint64_t size,
                            uint64_t stream, uint32_t stack)
{
    struct cmt_event e = {.seq = b->seq++,
                          .t_ns = (b->t += 1000),
                          .tid = 1,
                          .api = api,
                          .result = result,
                          .dev = 0,
                          .stack = stack};
    e.fields = CMT_F(PTR);
    e.v[CMT_FIELD_PTR] = result ? 0 : ptr;
    if (api == API_ALLOC || api == API_ALLOC_ASYNC) {
        e.fields |= CMT_F(SIZE);
        e.v[CMT_FIELD_SIZE] = size;
    }
    if (api == API_ALLOC_ASYNC || api == API_FREE_ASYNC) {
        e.fields |= CMT_F(STREAM);
        e.v[CMT_FIELD_STREAM] = stream;
    }
    cr_assert_eq(cmt_writer_event(b->w, &e), 0);
}

static inline void tb_alloc(struct tb *b, uint64_t ptr, uint64_t size)
{
    tb_event(b, API_ALLOC, 0, ptr, size, 0, STACK_RAW);
}
static inline void tb_free(struct tb *b, uint64_t ptr)
{
    tb_event(b, API_FREE, 0, ptr, 0, 0, STACK_RAW);
}

static inline void tb_close(struct tb *b)
{
    cr_assert_eq(cmt_writer_end(b->w, &(struct cmt_end){b->t + 1, b->seq, 0}), 0);
    cr_assert_eq(cmt_writer_symbol(b->w, &(struct cmt_symbol){2, 2, 3, 211, 0}), 0);
    cr_assert_eq(cmt_writer_symbol(b->w, &(struct cmt_symbol){1, 1, 3, 300, 0}), 0);
    cr_assert_eq(cmt_writer_flush(b->w), 0);
    cmt_writer_destroy(b->w);
}

#define P(i) (0x7f0000000000ull + (uint64_t)(i)*0x200000000ull)
#define X_SIZE (6330 * MiB - 768 * KiB)

/* The write-up's live blocks P(0..8) and its three freed 1000 MiB blocks between them. */
static inline void tb_writeup_blocks(struct tb *b)
{
    tb_alloc(b, P(0), 3000 * MiB);
    tb_alloc(b, P(1), 3000 * MiB);
    tb_alloc(b, P(2), 2714 * MiB);
    for (int k = 0; k < 3; k++) {
        tb_alloc(b, P(3 + 2 * k), 1000 * MiB);
        tb_free(b, P(3 + 2 * k));
        tb_alloc(b, P(4 + 2 * k), 950 * MiB);
    }
}

/* The write-up's tensor-level stream (tools/model/model_scenario.h) on a
 * 24 GiB card with 21556 MiB free at first use; x2 comes from vae_decode. */
static inline void tb_writeup(struct tb *b)
{
    tb_open(b, 24 * GiB, 21556 * MiB);
    tb_writeup_blocks(b);
    tb_alloc(b, P(9), X_SIZE);
    tb_free(b, P(9));
    tb_alloc(b, P(10), 100 * MiB);
    tb_event(b, API_ALLOC, 0, P(11), X_SIZE, 0, STACK_VAE);
    tb_close(b);
}

static inline cmt_reader *tb_reader(struct tb *b)
{
    cmt_reader *r = NULL;
    cr_assert_eq(cmt_reader_open_memory(&r, b->buf.data, b->buf.len), 0);
    return r;
}

/* Writes the trace to a fresh temporary file. @return its path (malloc'ed). */
static inline char *tb_file(struct tb *b)
{
    char *path = strdup("/tmp/cmt-whatif-test.XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, b->buf.data, b->buf.len), (ssize_t)b->buf.len);
    close(fd);
    return path;
}

/* Runs fn(argc, argv) with stdout and stderr captured (tests/tools/analysis/capture.h);
 * the strings are left to the test process, which ends with the test. */
static inline void capture(struct captured *c, int (*fn)(int, char **), const char *const *argv)
{
    *c = capture_run(fn, argv);
    cr_assert(c->out && c->err);
}

static inline int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

#endif
