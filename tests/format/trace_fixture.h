/* trace_fixture.h — builds a small trace with every record type, in memory. */
#ifndef CMT_TEST_TRACE_FIXTURE_H
#define CMT_TEST_TRACE_FIXTURE_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "cmt_error.h"
#include "reader.h"
#include "writer.h"
#include "varint.h"

#define FIXTURE_EVENTS 1000

/* Writes the fixture into *buf with chunks of `chunk_bytes` raw bytes. */
static inline void fixture_write(struct cmt_membuf *buf, size_t chunk_bytes)
{
    cmt_writer *w;
    struct cmt_writer_options opt = {.chunk_bytes = chunk_bytes};
    cr_assert_eq(cmt_writer_create(&w, cmt_membuf_sink, buf, &opt), 0);
    const char *argv[] = {"./prog", "--flag", "x y"};
    struct cmt_process p = {.pid = 4242,
                            .ppid = 1,
                            .start_wall_ns = 1700000000000000000ull,
                            .start_mono_ns = 123456789,
                            .driver_version = 13000,
                            .hostname = "host",
                            .exe = "/bin/prog",
                            .argc = 3,
                            .argv = argv,
                            .rank = 3,
                            .local_rank = 1,
                            .world_size = 8,
                            .job_id = "job-7"};
    cr_assert_eq(cmt_writer_process(w, &p), 0);
    cr_assert_eq(cmt_writer_env(w, "PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:6144"), 0);
    cr_assert_eq(cmt_writer_api(w, &(struct cmt_api){1, CMT_OP_ALLOC, "cuMemAlloc_v2"}), 0);
    cr_assert_eq(cmt_writer_api(w, &(struct cmt_api){2, CMT_OP_FREE, "cuMemFree_v2"}), 0);
    cr_assert_eq(cmt_writer_string(w, 1, "main"), 0);
    cr_assert_eq(cmt_writer_string(w, 2, "/src/prog.c"), 0);
    uint8_t bid[4] = {0xde, 0xad, 0xbe, 0xef};
    cr_assert_eq(
        cmt_writer_module(w, &(struct cmt_module){1, "/bin/prog", 0x400000, 0x10000, bid, 4}), 0);
    cr_assert_eq(cmt_writer_stack_node(w, &(struct cmt_stack_node){1, 0, 0x401000}), 0);
    cr_assert_eq(cmt_writer_stack_node(w, &(struct cmt_stack_node){2, 1, 0x402000}), 0);
    cr_assert_eq(cmt_writer_thread(w, &(struct cmt_thread){77, "worker"}), 0);
    cr_assert_eq(cmt_writer_device(w, &(struct cmt_device){0, "GPU0", 24ull << 30, 23ull << 30, 5}),
                 0);
    for (uint64_t i = 0; i < FIXTURE_EVENTS; i++) {
        struct cmt_event e = {.seq = i,
                              .t_ns = 1000 + i * 10,
                              .tid = 77,
                              .api = 1 + (i & 1),
                              .result = i == 7 ? 2 : 0,
                              .dev = 0,
                              .stack = 2,
                              .fields = CMT_F(PTR) | CMT_F(SIZE)};
        e.v[CMT_FIELD_PTR] = 0x7f0000000000ull + (i / 2) * 0x200000;
        e.v[CMT_FIELD_SIZE] = 12345678 + i;
        cr_assert_eq(cmt_writer_event(w, &e), 0);
    }
    cr_assert_eq(
        cmt_writer_alloc_info(w, &(struct cmt_alloc_info){1, 1500, -1, "pytorch-cuda-caching",
                                                          "2.6.0", "max_split_size_mb:6144"}),
        0);
    struct cmt_alloc_event ae = {.allocator = 1,
                                 .action = CMT_AA_ALLOC,
                                 .t_ns = 1600,
                                 .tid = 77,
                                 .dev = 0,
                                 .stack = 2,
                                 .fields = CMT_AF(ADDR) | CMT_AF(SIZE) | CMT_AF(REQUESTED) |
                                           CMT_AF(SEQ)};
    ae.v[CMT_AFIELD_ADDR] = 0x7f0000000000ull;
    ae.v[CMT_AFIELD_SIZE] = 6635388928ull;
    ae.v[CMT_AFIELD_REQUESTED] = 6635388000ull;
    ae.v[CMT_AFIELD_SEQ] = 60;
    cr_assert_eq(cmt_writer_alloc_event(w, &ae), 0);
    cr_assert_eq(cmt_writer_range(w, &(struct cmt_range){.action = CMT_RA_START,
                                                         .t_ns = 1700,
                                                         .tid = 77,
                                                         .domain = 2,
                                                         .category = 3,
                                                         .id = 9,
                                                         .message = "Optimizer.step",
                                                         .have_seq = 1,
                                                         .seq = 0}),
                 0);
    cr_assert_eq(cmt_writer_meminfo(
                     w, &(struct cmt_meminfo){20000, 0, CMT_MEMINFO_OOM, 1 << 20, 24ull << 30, 7}),
                 0);
    cr_assert_eq(cmt_writer_note(w, &(struct cmt_note){CMT_NOTE_WARNING, "deepbind"}), 0);
    cr_assert_eq(cmt_writer_signal(w, &(struct cmt_signal){30000, 11, 77}), 0);
    cr_assert_eq(cmt_writer_end(w, &(struct cmt_end){40000, FIXTURE_EVENTS, 0}), 0);
    cr_assert_eq(cmt_writer_symbol(w, &(struct cmt_symbol){2, 1, 2, 42, 1}), 0);
    cr_assert_eq(cmt_writer_flush(w), 0);
    cmt_writer_destroy(w);
}

/* A hand-built EVENTS or ALLOC_EVENTS record (`type`) into out: count, the column mask, a
 * length per column of the mask, then the columns (cols[i] of lens[i] bytes, in bit order).
 * @return the bytes written. */
static inline size_t fixture_block(uint8_t *out, uint32_t type, uint64_t count, uint64_t mask,
                                   const uint8_t *const *cols, const size_t *lens)
{
    uint8_t payload[512], *p = payload;
    int n = __builtin_popcountll(mask);
    p = cmt__put_varint(p, count);
    p = cmt__put_varint(p, mask);
    for (int i = 0; i < n; i++)
        p = cmt__put_varint(p, lens[i]);
    for (int i = 0; i < n; i++) {
        memcpy(p, cols[i], lens[i]);
        p += lens[i];
    }
    uint8_t *o = cmt__put_varint(out, type);
    o = cmt__put_varint(o, (uint64_t)(p - payload));
    memcpy(o, payload, (size_t)(p - payload));
    return (size_t)(o - out) + (size_t)(p - payload);
}

/* A trace of one hand-built chunk: the writer's file header, then raw[0, n) (records) as one
 * zstd frame declaring `records` records. */
static inline void fixture_hand_chunk(struct cmt_membuf *buf, const uint8_t *raw, size_t n,
                                      uint32_t records)
{
    cmt_writer *w;
    cr_assert_eq(cmt_writer_create(&w, cmt_membuf_sink, buf, NULL), 0);
    cr_assert_eq(cmt_writer_flush(w), 0);
    cmt_writer_destroy(w);
    size_t bound = ZSTD_compressBound(n);
    uint8_t *chunk = malloc(16 + bound);
    size_t len = ZSTD_compress(chunk + 16, bound, raw, n, 1);
    uint32_t hdr[4] = {CMT_CHUNK_MAGIC, (uint32_t)len, (uint32_t)n, records};
    memcpy(chunk, hdr, 16); /* little-endian host */
    cmt_membuf_sink(buf, chunk, 16 + len);
    free(chunk);
}

/* Reads until the end or damage; counts records per type. @return the final code. */
static inline int fixture_read_all(cmt_reader *r, uint64_t counts[CMT_REC_MAX])
{
    struct cmt_record rec;
    int rc;
    memset(counts, 0, sizeof(uint64_t) * CMT_REC_MAX);
    while ((rc = cmt_reader_next(r, &rec)) > 0)
        counts[rec.type]++;
    return rc;
}

/* A digest of every event read (until the end or damage), to compare two readings. */
static inline uint64_t fixture_event_digest(cmt_reader *r)
{
    struct cmt_record rec;
    uint64_t h = 1469598103934665603ull;
    while (cmt_reader_next(r, &rec) > 0) {
        if (rec.type != CMT_REC_EVENT)
            continue;
        const struct cmt_event *e = &rec.u.event;
        uint64_t parts[] = {e->seq,
                            e->t_ns,
                            e->tid,
                            e->api,
                            (uint32_t)e->result,
                            (uint32_t)e->dev,
                            e->stack,
                            e->fields,
                            e->v[CMT_FIELD_PTR],
                            e->v[CMT_FIELD_SIZE]};
        for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
            h = (h ^ parts[i]) * 1099511628211ull;
    }
    return h;
}

#endif
