#include "trace_fixture.h"
#include "varint.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <zstd.h>

/* A reader over a hand-built chunk (fixture_hand_chunk into buf). */
static cmt_reader *open_hand_chunk(struct cmt_membuf *buf, const uint8_t *raw, size_t n,
                                   uint32_t records)
{
    fixture_hand_chunk(buf, raw, n, records);
    cmt_reader *r;
    cr_assert_eq(cmt_reader_open_memory(&r, buf->data, buf->len), 0);
    return r;
}

/* The rest of r is the NOTE "after" that the hand-built chunks end with, then the end. */
static void expect_after_note_then_end(cmt_reader *r)
{
    struct cmt_record rec;
    cr_assert_eq(cmt_reader_next(r, &rec), 1);
    cr_assert_eq(rec.type, CMT_REC_NOTE);
    cr_assert_str_eq(rec.u.note.text, "after");
    cr_assert_eq(cmt_reader_next(r, &rec), 0);
}

Test(writer_reader, round_trips_every_record_type)
{
    struct cmt_membuf buf = {0};
    fixture_write(&buf, 0);
    cmt_reader *r;
    cr_assert_eq(cmt_reader_open_memory(&r, buf.data, buf.len), 0);
    struct cmt_record rec;
    uint64_t events = 0, seen[CMT_REC_MAX] = {0};
    int rc;
    while ((rc = cmt_reader_next(r, &rec)) > 0) {
        seen[rec.type]++;
        switch (rec.type) {
        case CMT_REC_PROCESS:
            cr_assert_eq(rec.u.process.pid, 4242);
            cr_assert_eq(rec.u.process.start_mono_ns, 123456789);
            cr_assert_eq(rec.u.process.driver_version, 13000);
            cr_assert_str_eq(rec.u.process.hostname, "host");
            cr_assert_eq(rec.u.process.argc, 3);
            cr_assert_str_eq(rec.u.process.argv[2], "x y");
            cr_assert_eq(rec.u.process.rank, 3);
            cr_assert_eq(rec.u.process.local_rank, 1);
            cr_assert_eq(rec.u.process.world_size, 8);
            cr_assert_str_eq(rec.u.process.job_id, "job-7");
            break;
        case CMT_REC_ENV: cr_assert_str_eq(rec.u.env.value, "max_split_size_mb:6144"); break;
        case CMT_REC_MODULE:
            cr_assert_eq(rec.u.module.base, 0x400000);
            cr_assert_eq(rec.u.module.build_id_len, 4);
            cr_assert_eq(rec.u.module.build_id[3], 0xef);
            break;
        case CMT_REC_DEVICE: cr_assert_eq(rec.u.device.total_bytes, 24ull << 30); break;
        case CMT_REC_EVENT: {
            const struct cmt_event *e = &rec.u.event;
            cr_assert_eq(e->seq, events);
            cr_assert_eq(e->t_ns, 1000 + events * 10);
            cr_assert_eq(e->api, 1 + (events & 1));
            cr_assert_eq(e->result, events == 7 ? 2 : 0);
            cr_assert_eq(e->fields, CMT_F(PTR) | CMT_F(SIZE));
            cr_assert_eq(e->v[CMT_FIELD_PTR], 0x7f0000000000ull + (events / 2) * 0x200000);
            cr_assert_eq(e->v[CMT_FIELD_SIZE], 12345678 + events);
            events++;
            break;
        }
        case CMT_REC_MEMINFO:
            cr_assert_eq(rec.u.meminfo.t_ns, 20000);
            cr_assert_eq(rec.u.meminfo.reason, CMT_MEMINFO_OOM);
            cr_assert_eq(rec.u.meminfo.free_bytes, 1 << 20);
            cr_assert_eq(rec.u.meminfo.seq, 7);
            break;
        case CMT_REC_SIGNAL: cr_assert_eq(rec.u.signal.signo, 11); break;
        case CMT_REC_ALLOCATOR:
            cr_assert_eq(rec.u.alloc_info.id, 1);
            cr_assert_eq(rec.u.alloc_info.t_ns, 1500);
            cr_assert_eq(rec.u.alloc_info.dev, -1);
            cr_assert_str_eq(rec.u.alloc_info.name, "pytorch-cuda-caching");
            cr_assert_str_eq(rec.u.alloc_info.version, "2.6.0");
            cr_assert_str_eq(rec.u.alloc_info.conf, "max_split_size_mb:6144");
            break;
        case CMT_REC_ALLOC_EVENT: {
            const struct cmt_alloc_event *a = &rec.u.alloc_event;
            cr_assert_eq(a->allocator, 1);
            cr_assert_eq(a->action, CMT_AA_ALLOC);
            cr_assert_str_eq(cmt_alloc_action_name(a->action), "alloc");
            cr_assert_eq(a->t_ns, 1600);
            cr_assert_eq(a->tid, 77);
            cr_assert_eq(a->stack, 2);
            cr_assert_eq(a->fields, CMT_AF(ADDR) | CMT_AF(SIZE) | CMT_AF(REQUESTED) | CMT_AF(SEQ));
            cr_assert_eq(a->v[CMT_AFIELD_SIZE], 6635388928ull);
            cr_assert_eq(a->v[CMT_AFIELD_REQUESTED], 6635388000ull);
            cr_assert_eq(a->v[CMT_AFIELD_SEQ], 60);
            cr_assert_eq(a->v[CMT_AFIELD_STREAM], 0, "an absent field reads as 0");
            break;
        }
        case CMT_REC_RANGE: {
            const struct cmt_range *g = &rec.u.range;
            cr_assert_eq(g->action, CMT_RA_START);
            cr_assert_str_eq(cmt_range_action_name(g->action), "start");
            cr_assert_eq(g->t_ns, 1700);
            cr_assert_eq(g->tid, 77);
            cr_assert_eq(g->domain, 2);
            cr_assert_eq(g->category, 3);
            cr_assert_eq(g->id, 9);
            cr_assert_str_eq(g->message, "Optimizer.step");
            cr_assert(g->have_seq, "seq 0 is a seq (written + 1)");
            cr_assert_eq(g->seq, 0);
            break;
        }
        case CMT_REC_END: cr_assert_eq(rec.u.end.events, FIXTURE_EVENTS); break;
        }
    }
    cr_assert_eq(rc, 0, "clean end expected, got %d (%s)", rc, cmt_reader_damage(r));
    for (int t = 1; t < CMT_REC_MAX; t++) /* blocks arrive as EVENTs and ALLOC_EVENTs */
        cr_assert(t == CMT_REC_EVENTS || t == CMT_REC_ALLOC_EVENTS || seen[t] > 0,
                  "record type %s not seen", cmt_record_name(t));
    cr_assert_eq(events, FIXTURE_EVENTS);
    cr_assert(cmt_reader_clean_exit(r));
    cr_assert_eq(cmt_reader_seq_gaps(r), 0);
    cr_assert_str_eq(cmt_reader_api(r, 2)->name, "cuMemFree_v2");
    cr_assert_str_eq(cmt_reader_thread_name(r, 77), "worker");
    struct cmt_stack_node n;
    cr_assert_eq(cmt_reader_stack_node(r, 2, &n), 0);
    cr_assert_eq(n.parent, 1);
    char frame[128];
    cmt_reader_format_frame(r, 2, frame, sizeof frame);
    cr_assert_str_eq(frame, "main prog.c:42");
    cmt_reader_format_frame(r, 1, frame, sizeof frame);
    cr_assert_str_eq(frame, "prog+0x1000");
    cmt_reader_close(r);
    cmt_membuf_free(&buf);
}

Test(writer_reader, small_chunks_keep_deltas_correct)
{
    struct cmt_membuf one = {0}, many = {0};
    fixture_write(&one, 0);
    fixture_write(&many, 256);
    cr_assert(many.len > one.len); /* more chunk headers and frames */
    cmt_reader *a, *b;
    cr_assert_eq(cmt_reader_open_memory(&a, one.data, one.len), 0);
    cr_assert_eq(cmt_reader_open_memory(&b, many.data, many.len), 0);
    struct cmt_record ra, rb;
    int rca, rcb;
    while ((rca = cmt_reader_next(a, &ra)) > 0) {
        rcb = cmt_reader_next(b, &rb);
        cr_assert_eq(rcb, 1);
        cr_assert_eq(ra.type, rb.type);
        if (ra.type == CMT_REC_EVENT) {
            cr_assert_eq(ra.u.event.seq, rb.u.event.seq);
            cr_assert_eq(ra.u.event.t_ns, rb.u.event.t_ns);
        }
    }
    cr_assert_eq(rca, 0);
    cr_assert_eq(cmt_reader_next(b, &rb), 0);
    cmt_reader_close(a);
    cmt_reader_close(b);
    cmt_membuf_free(&one);
    cmt_membuf_free(&many);
}

Test(writer_reader, skips_unknown_record_types)
{
    struct cmt_membuf buf = {0};
    /* a chunk holding an unknown type 99 followed by a NOTE */
    uint8_t raw[] = {99, 3, 1, 2, 3, CMT_REC_NOTE, 7, 0, 5, 'a', 'f', 't', 'e', 'r'};
    cmt_reader *r = open_hand_chunk(&buf, raw, sizeof raw, 2);
    expect_after_note_then_end(r);
    cmt_reader_close(r);
    cmt_membuf_free(&buf);
}

Test(writer_reader, alloc_events_skip_a_newer_writers_fields_and_trailing_bytes)
{
    struct cmt_membuf buf = {0};
    /* ALLOC_EVENT: allocator 1, action free_completed, t 9, tid 5, dev 0 (zigzag 0), stack 0,
     * fields = ADDR | bit 13 (unknown, 3-byte varint mask), addr 0x40, then the unknown field's
     * value 7 and one trailing byte; then a NOTE that must still be read */
    uint8_t raw[] = {CMT_REC_ALLOC_EVENT,
                     12,
                     1,
                     CMT_AA_FREE_COMPLETED,
                     9,
                     5,
                     0,
                     0,
                     0x81,
                     0x40,
                     0x40,
                     7,
                     0xee,
                     0,
                     CMT_REC_NOTE,
                     7,
                     0,
                     5,
                     'a',
                     'f',
                     't',
                     'e',
                     'r'};
    cmt_reader *r = open_hand_chunk(&buf, raw, sizeof raw, 2);
    struct cmt_record rec;
    cr_assert_eq(cmt_reader_next(r, &rec), 1);
    cr_assert_eq(rec.type, CMT_REC_ALLOC_EVENT);
    cr_assert_eq(rec.u.alloc_event.action, CMT_AA_FREE_COMPLETED);
    cr_assert_eq(rec.u.alloc_event.t_ns, 9);
    cr_assert_eq(rec.u.alloc_event.fields, CMT_AF(ADDR));
    cr_assert_eq(rec.u.alloc_event.v[CMT_AFIELD_ADDR], 0x40);
    expect_after_note_then_end(r);
    cmt_reader_close(r);
    cmt_membuf_free(&buf);
}

Test(writer_reader, a_3_0_process_record_has_no_rank)
{
    struct cmt_membuf buf = {0};
    /* PROCESS as 3.0 wrote it: pid 7, ppid 1, wall 0, mono 0, driver 0, "h", "e", argc 0 */
    uint8_t raw[] = {CMT_REC_PROCESS, 10, 7, 1, 0, 0, 0, 1, 'h', 1, 'e', 0};
    cmt_reader *r = open_hand_chunk(&buf, raw, sizeof raw, 1);
    struct cmt_record rec;
    cr_assert_eq(cmt_reader_next(r, &rec), 1);
    cr_assert_eq(rec.type, CMT_REC_PROCESS);
    cr_assert_eq(rec.u.process.pid, 7);
    cr_assert_eq(rec.u.process.rank, -1);
    cr_assert_eq(rec.u.process.local_rank, -1);
    cr_assert_eq(rec.u.process.world_size, -1);
    cr_assert_null(rec.u.process.job_id);
    cmt_reader_close(r);
    cmt_membuf_free(&buf);
}

Test(writer_reader, unknown_rank_round_trips_as_unknown_and_rank_0_as_0)
{
    for (int rank = -1; rank <= 0; rank++) {
        struct cmt_membuf buf = {0};
        cmt_writer *w;
        cr_assert_eq(cmt_writer_create(&w, cmt_membuf_sink, &buf, NULL), 0);
        struct cmt_process p = {.pid = 9, .rank = rank, .local_rank = rank, .world_size = -1};
        cr_assert_eq(cmt_writer_process(w, &p), 0);
        cr_assert_eq(cmt_writer_flush(w), 0);
        cmt_writer_destroy(w);
        cmt_reader *r;
        cr_assert_eq(cmt_reader_open_memory(&r, buf.data, buf.len), 0);
        struct cmt_record rec;
        cr_assert_eq(cmt_reader_next(r, &rec), 1);
        cr_assert_eq(rec.u.process.rank, rank);
        cr_assert_eq(rec.u.process.local_rank, rank);
        cr_assert_eq(rec.u.process.world_size, -1);
        cr_assert_eq(cmt_reader_process(r)->rank, rank);
        cmt_reader_close(r);
        cmt_membuf_free(&buf);
    }
}

Test(writer_reader, compresses_repetitive_events_below_four_bytes_each)
{
    struct cmt_membuf buf = {0};
    cmt_writer *w;
    cr_assert_eq(cmt_writer_create(&w, cmt_membuf_sink, &buf, NULL), 0);
    uint64_t t = 0;
    for (uint64_t i = 0; i < 100000; i++) {
        struct cmt_event e = {.seq = i,
                              .t_ns = t += 40 + (i * 7919) % 23,
                              .tid = 1000,
                              .api = 1 + (i & 1),
                              .dev = 0,
                              .stack = 9,
                              .fields = CMT_F(PTR) | ((i & 1) ? 0 : CMT_F(SIZE))};
        e.v[CMT_FIELD_PTR] = 0x7f0000000000ull;
        e.v[CMT_FIELD_SIZE] = 1 << 20;
        cr_assert_eq(cmt_writer_event(w, &e), 0);
    }
    cr_assert_eq(cmt_writer_flush(w), 0);
    cmt_writer_destroy(w);
    cr_assert_lt((double)buf.len / 100000, 4.0, "%.2f bytes/event", (double)buf.len / 100000);
    cmt_membuf_free(&buf);
}

/* Random events (threads, devices, results, stacks, handles and sizes changing at random) come
 * back exactly, whether the chunks hold one event or thousands: every optional part and every
 * delta base restarts correctly at a chunk boundary. */
Test(writer_reader, every_event_part_round_trips_across_chunk_boundaries)
{
    enum { N = 5000 };
    static struct cmt_event in[N];
    uint64_t rng = 12345, t = 0;
    for (int i = 0; i < N; i++) {
        uint64_t r = rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        struct cmt_event *e = &in[i];
        e->seq = i + 1 + (r >> 60 == 0 ? 5 : 0); /* now and then a gap */
        e->seq = i ? in[i - 1].seq + (e->seq - (uint64_t)i) : e->seq;
        e->t_ns = t += (r >> 8) % 5000;
        e->tid = 100 + (uint32_t)((r >> 20) % 3);
        e->api = 1 + (uint32_t)((r >> 24) % 5);
        e->result = (r >> 28) % 9 == 0 ? 2 : 0;
        e->dev = (int32_t)((r >> 32) % 4) - 1;
        e->stack = (r >> 36) % 3 ? (uint32_t)((r >> 40) % 50) : 0;
        e->fields = (uint32_t)(r >> 46) & ((1u << CMT_NFIELDS) - 1);
        for (int f = 0; f < CMT_NFIELDS; f++)
            if (e->fields & (1u << f))
                e->v[f] = (f % 2 ? 0x7f0000000000ull : 0) + ((r * (f + 3)) >> (f + 8));
    }
    size_t chunks[] = {0, 64, 1000};
    for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
        struct cmt_membuf buf = {0};
        cmt_writer *w;
        struct cmt_writer_options opt = {.chunk_bytes = chunks[c]};
        cr_assert_eq(cmt_writer_create(&w, cmt_membuf_sink, &buf, &opt), 0);
        for (int i = 0; i < N; i++)
            cr_assert_eq(cmt_writer_event(w, &in[i]), 0);
        cr_assert_eq(cmt_writer_flush(w), 0);
        cmt_writer_destroy(w);
        cmt_reader *r;
        cr_assert_eq(cmt_reader_open_memory(&r, buf.data, buf.len), 0);
        struct cmt_record rec;
        int n = 0;
        while (cmt_reader_next(r, &rec) > 0) {
            const struct cmt_event *a = &in[n], *b = &rec.u.event;
            cr_assert_eq(rec.type, CMT_REC_EVENT);
            cr_assert(a->seq == b->seq && a->t_ns == b->t_ns && a->tid == b->tid &&
                          a->api == b->api && a->result == b->result && a->dev == b->dev &&
                          a->stack == b->stack && a->fields == b->fields,
                      "event %d, chunks of %zu bytes", n, chunks[c]);
            for (int f = 0; f < CMT_NFIELDS; f++)
                if (a->fields & (1u << f))
                    cr_assert_eq(a->v[f], b->v[f], "event %d field %d", n, f);
            n++;
        }
        cr_assert_eq(n, N);
        cr_assert_eq(cmt_reader_seq_gaps(r), in[N - 1].seq - in[0].seq + 1 - N);
        cmt_reader_close(r);
        cmt_membuf_free(&buf);
    }
}

/* A stream-ordered allocator's events: the same thread, device, stack and stream handle every
 * time (the handle a pointer), success, sizes that vary. Before compression each takes at
 * most 14 bytes (format 1 wrote 22: every part in full, the handle as 7 bytes). */
Test(writer_reader, stream_ordered_events_are_compact_before_compression)
{
    struct cmt_membuf buf = {0};
    cmt_writer *w;
    cr_assert_eq(cmt_writer_create(&w, cmt_membuf_sink, &buf, NULL), 0);
    uint64_t ptr = 0x7f3a00000000ull;
    for (uint64_t i = 0; i < 10000; i++) {
        struct cmt_event e = {.seq = i + 1,
                              .t_ns = 1000 * i,
                              .tid = 4242,
                              .api = 7 + (i & 1),
                              .dev = 0,
                              .stack = 77,
                              .fields = CMT_F(PTR) | CMT_F(STREAM) | ((i & 1) ? 0 : CMT_F(SIZE))};
        e.v[CMT_FIELD_PTR] = ptr += (i % 5) * 0x10000;
        e.v[CMT_FIELD_SIZE] = (uint64_t)512 << (i % 15);
        e.v[CMT_FIELD_STREAM] = 0x55d0c0a0b0c0ull;
        cr_assert_eq(cmt_writer_event(w, &e), 0);
    }
    cr_assert_eq(cmt_writer_flush(w), 0);
    cmt_writer_destroy(w);
    uint64_t raw = 0;
    for (size_t at = CMT_FILE_HEADER_SIZE; at + CMT_CHUNK_HEADER_SIZE <= buf.len;) {
        uint32_t h[4];
        memcpy(h, buf.data + at, sizeof h); /* little-endian host */
        raw += h[2];
        at += CMT_CHUNK_HEADER_SIZE + h[1];
    }
    cr_assert_leq(raw, 14 * 10000, "%.2f raw bytes/event", raw / 10000.0);
    cmt_membuf_free(&buf);
}

/* Events of a newer writer: one with a trailing part this reader does not know, one with an
 * unknown field. The fast decoder refuses both after it has applied their deltas and hands
 * them to the checked decoder, which must start again from the previous values: every
 * address below is exact only if no delta is applied twice. */
Test(writer_reader, newer_writers_events_keep_the_delta_bases)
{
    struct cmt_membuf buf = {0};
    /* flags 0, time +10, api 1, then fields and zigzag deltas (ptr bit 0, stream bit 2) */
    uint8_t raw[] = {
        CMT_REC_EVENT, 7, 0, 20, 1, 5,    0x80, 0x40, 14,         /* ptr 0x1000, stream 7 */
        CMT_REC_EVENT, 8, 0, 20, 1, 5,    0x80, 0x04, 0,    0x33, /* +0x100, trailing */
        CMT_REC_EVENT, 8, 0, 20, 1, 0x81, 0x80, 0x40, 0x20, 5,    /* +0x10, field 20 */
        CMT_REC_EVENT, 6, 0, 20, 1, 5,    2,    2};               /* +1, stream +1 */
    cmt_reader *r = open_hand_chunk(&buf, raw, sizeof raw, 4);
    const uint64_t ptr[] = {0x1000, 0x1100, 0x1110, 0x1111}, stream[] = {7, 7, 0, 8};
    struct cmt_record rec;
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(cmt_reader_next(r, &rec), 1, "event %d", i);
        const struct cmt_event *e = &rec.u.event;
        cr_assert_eq(rec.type, CMT_REC_EVENT);
        cr_assert_eq(e->seq, (uint64_t)i + 1);
        cr_assert_eq(e->t_ns, 10 * ((uint64_t)i + 1));
        cr_assert_eq(e->v[CMT_FIELD_PTR], ptr[i], "event %d: ptr %#" PRIx64, i,
                     e->v[CMT_FIELD_PTR]);
        if (i == 2)
            cr_assert_eq(e->fields, CMT_F(PTR)); /* the unknown field is skipped */
        else
            cr_assert_eq(e->v[CMT_FIELD_STREAM], stream[i], "event %d", i);
    }
    cr_assert_eq(cmt_reader_next(r, &rec), 0, "%s", cmt_reader_damage(r));
    cmt_reader_close(r);
    cmt_membuf_free(&buf);
}

/* The shim's setting: literals left uncompressed. The events read back the same, and the file
 * is larger (random addresses and sizes are mostly literals), which shows zstd took the
 * option. */
Test(writer_reader, raw_literals_read_back_the_same_events)
{
    struct cmt_membuf buf[2] = {{0}};
    for (int raw = 0; raw < 2; raw++) {
        cmt_writer *w;
        struct cmt_writer_options opt = {.level = 1, .raw_literals = raw};
        cr_assert_eq(cmt_writer_create(&w, cmt_membuf_sink, &buf[raw], &opt), 0);
        uint64_t rng = 99;
        for (uint64_t i = 0; i < 20000; i++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            struct cmt_event e = {.seq = i + 1,
                                  .t_ns = 100 * i,
                                  .tid = 7,
                                  .api = 1 + (i & 1),
                                  .stack = 3,
                                  .fields = CMT_F(PTR) | CMT_F(SIZE)};
            e.v[CMT_FIELD_PTR] = 0x7f0000000000ull + (rng >> 30);
            e.v[CMT_FIELD_SIZE] = (uint64_t)512 << (rng >> 60);
            cr_assert_eq(cmt_writer_event(w, &e), 0);
        }
        cr_assert_eq(cmt_writer_flush(w), 0);
        cmt_writer_destroy(w);
    }
    uint64_t digest[2];
    for (int raw = 0; raw < 2; raw++) {
        cmt_reader *r;
        cr_assert_eq(cmt_reader_open_memory(&r, buf[raw].data, buf[raw].len), 0);
        digest[raw] = fixture_event_digest(r);
        cr_assert_eq(cmt_reader_event_count(r), 20000);
        cmt_reader_close(r);
    }
    cr_assert_eq(digest[0], digest[1]);
    cr_assert_gt(buf[1].len, buf[0].len, "raw literals %zu bytes, compressed %zu", buf[1].len,
                 buf[0].len);
    cmt_membuf_free(&buf[0]);
    cmt_membuf_free(&buf[1]);
}

/* An EVENTS block by hand: 3 events (flags 0, api 1, t +10 each, ptr 0x1000 then +1, +1),
 * with `count` declared, the time column `time_len` bytes long (3 is right) and, with `extra`,
 * a column of an unknown field 38 (column 40) that every event names. */
static size_t events_block(uint8_t *out, uint64_t count, size_t time_len, int extra)
{
    uint64_t fields = CMT_F(PTR) | (extra ? UINT64_C(1) << 38 : 0);
    uint8_t head[64], *h = head;
    for (int i = 0; i < 3; i++) {
        *h++ = 0;
        *h++ = 1;
        h = cmt__put_varint(h, fields);
    }
    static const uint8_t time[] = {20, 20, 20}, ptr[] = {0x80, 0x40, 2, 2}, unknown[] = {5, 5, 5};
    const uint8_t *cols[] = {head, time, ptr, unknown};
    size_t lens[] = {(size_t)(h - head), time_len, sizeof ptr, sizeof unknown};
    return fixture_block(out, CMT_REC_EVENTS, count, 7 | (extra ? UINT64_C(1) << 40 : 0), cols,
                         lens);
}

/* Reads a trace of one hand-built EVENTS block. @return the events read; *rc the final code. */
static int read_block(uint64_t count, size_t time_len, int extra, int *rc)
{
    uint8_t raw[256];
    size_t n = events_block(raw, count, time_len, extra);
    struct cmt_membuf buf = {0};
    cmt_reader *r = open_hand_chunk(&buf, raw, n, 1);
    struct cmt_record rec;
    int events = 0;
    while ((*rc = cmt_reader_next(r, &rec)) > 0) {
        cr_assert_eq(rec.type, CMT_REC_EVENT);
        cr_assert_eq(rec.u.event.t_ns, 10 * ((uint64_t)events + 1));
        cr_assert_eq(rec.u.event.v[CMT_FIELD_PTR], 0x1000 + (uint64_t)events);
        cr_assert_eq(rec.u.event.fields, CMT_F(PTR));
        events++;
    }
    if (*rc < 0)
        cr_assert(strstr(cmt_reader_damage(r), "at byte 16"), "%s", cmt_reader_damage(r));
    cmt_reader_close(r);
    cmt_membuf_free(&buf);
    return events;
}

Test(writer_reader, events_blocks_read_exactly_or_report_damage)
{
    int rc;
    cr_assert_eq(read_block(3, 3, 0, &rc), 3);
    cr_assert_eq(rc, 0);
    /* a newer writer's field: its column and its values are skipped */
    cr_assert_eq(read_block(3, 3, 1, &rc), 3);
    cr_assert_eq(rc, 0);
    /* the time column a byte short: the third event reads past it */
    cr_assert_eq(read_block(3, 2, 0, &rc), 2);
    cr_assert_eq(rc, CMT_ECORRUPT);
    /* fewer events than the columns hold: the first two, then damage */
    cr_assert_eq(read_block(2, 3, 0, &rc), 2);
    cr_assert_eq(rc, CMT_ECORRUPT);
    /* more events than the columns hold */
    cr_assert_eq(read_block(1000, 3, 0, &rc), 3);
    cr_assert_eq(rc, CMT_ECORRUPT);
}

/* An id past 32 bits is a malformed record, never the reader's own "out of memory" (the record
 * functions once returned -1, which is CMT_ENOMEM's value). */
Test(writer_reader, an_id_past_32_bits_is_a_malformed_record_not_out_of_memory)
{
    const uint8_t types[] = {CMT_REC_STRING, CMT_REC_THREAD, CMT_REC_STACK_NODE, CMT_REC_API};
    for (size_t t = 0; t < sizeof types; t++) {
        /* type, length, the id 2^32 as a varint (five bytes), then a zero for each field left */
        uint8_t raw[] = {types[t], 8, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0, 0};
        struct cmt_membuf buf = {0};
        cmt_reader *r = open_hand_chunk(&buf, raw, sizeof raw, 1);
        struct cmt_record rec;
        int rc = cmt_reader_next(r, &rec);
        cr_expect_eq(rc, CMT_ECORRUPT, "record type %u: %d (%s)", types[t], rc,
                     cmt_reader_damage(r));
        cmt_reader_close(r);
        cmt_membuf_free(&buf);
    }
}

/* Every event of a full pass of r: seq, time and values, in order. @return their count. */
static size_t pass_events(cmt_reader *r, struct cmt_event *out, size_t cap)
{
    struct cmt_record rec;
    size_t n = 0;
    int rc;
    while ((rc = cmt_reader_next(r, &rec)) > 0)
        if (rec.type == CMT_REC_EVENT && n < cap)
            out[n++] = rec.u.event;
    cr_assert_eq(rc, 0);
    return n;
}

/* A rewind after reading part of the first chunk (which the reader then does not decode
 * again), after a chunk boundary and at the end reads what a fresh reader reads. */
Test(writer_reader, a_rewind_anywhere_reads_the_same_events_again)
{
    static struct cmt_event want[FIXTURE_EVENTS], got[FIXTURE_EVENTS];
    const size_t chunk_sizes[] = {1 << 20, 4096};
    for (size_t c = 0; c < 2; c++) {
        struct cmt_membuf buf = {0};
        fixture_write(&buf, chunk_sizes[c]);
        cmt_reader *r;
        cr_assert_eq(cmt_reader_open_memory(&r, buf.data, buf.len), 0);
        size_t n = pass_events(r, want, FIXTURE_EVENTS);
        cr_assert_eq(n, FIXTURE_EVENTS);
        cmt_reader_close(r);
        const size_t stops[] = {1, 2, 17, FIXTURE_EVENTS / 2, FIXTURE_EVENTS + 100};
        for (size_t k = 0; k < sizeof stops / sizeof *stops; k++) {
            cr_assert_eq(cmt_reader_open_memory(&r, buf.data, buf.len), 0);
            struct cmt_record rec;
            for (size_t i = 0; i < stops[k] && cmt_reader_next(r, &rec) > 0; i++)
                ;
            cmt_reader_rewind(r);
            cr_assert_eq(pass_events(r, got, FIXTURE_EVENTS), n, "chunks %zu, stop %zu",
                         chunk_sizes[c], stops[k]);
            for (size_t i = 0; i < n; i++) {
                cr_assert(got[i].seq == want[i].seq && got[i].t_ns == want[i].t_ns &&
                              got[i].api == want[i].api && got[i].fields == want[i].fields,
                          "chunks %zu, stop %zu: event %zu", chunk_sizes[c], stops[k], i);
                for (uint32_t m = got[i].fields; m; m &= m - 1) /* the values it has */
                    cr_assert_eq(got[i].v[__builtin_ctz(m)], want[i].v[__builtin_ctz(m)],
                                 "chunks %zu, stop %zu: event %zu", chunk_sizes[c], stops[k], i);
            }
            cmt_reader_close(r);
        }
        cmt_membuf_free(&buf);
    }
}

/* cmt_reader_stop ends the pass at once, mid-chunk (the fast path included), as a sound end;
 * a rewind reads the whole trace again. */
Test(writer_reader, stop_ends_the_pass_until_a_rewind)
{
    struct cmt_membuf buf = {0};
    fixture_write(&buf, 1 << 20);
    cmt_reader *r;
    cr_assert_eq(cmt_reader_open_memory(&r, buf.data, buf.len), 0);
    struct cmt_record rec;
    uint64_t events = 0;
    int rc = 1;
    while (events < FIXTURE_EVENTS / 2 && (rc = cmt_reader_next(r, &rec)) > 0)
        events += rec.type == CMT_REC_EVENT;
    cr_assert_eq(rc, 1);
    cmt_reader_stop(r);
    cr_assert_eq(cmt_reader_next(r, &rec), 0);
    cr_assert_eq(cmt_reader_next(r, &rec), 0);
    cr_assert_eq(cmt_reader_event_count(r), FIXTURE_EVENTS / 2);
    cmt_reader_rewind(r);
    while ((rc = cmt_reader_next(r, &rec)) > 0)
        ;
    cr_assert_eq(rc, 0);
    cr_assert_eq(cmt_reader_event_count(r), FIXTURE_EVENTS);
    cr_assert(cmt_reader_clean_exit(r));
    cmt_reader_close(r);
    cmt_membuf_free(&buf);
}

/* Pages of the mapping of `path` (the reader's) that are in this process's page tables, at
 * file offsets from `from` (/proc/self/pagemap, bit 63: present; mincore() would say what the
 * page cache holds, which a handed-back page stays in). */
static size_t mapped_pages(const char *path, uint64_t from)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    cr_assert_not_null(maps);
    char line[4096];
    unsigned long start = 0, end = 0, offset = 0;
    while (fgets(line, sizeof line, maps))
        if (strstr(line, path) && sscanf(line, "%lx-%lx %*s %lx", &start, &end, &offset) == 3)
            break;
    fclose(maps);
    cr_assert_neq(end, 0, "the reader maps %s", path);
    cr_assert_eq(offset, 0);
    int fd = open("/proc/self/pagemap", O_RDONLY);
    cr_assert_geq(fd, 0);
    size_t page = (size_t)sysconf(_SC_PAGESIZE), present = 0;
    for (unsigned long a = start + (from & ~(uint64_t)(page - 1)); a < end; a += page) {
        uint64_t entry;
        cr_assert_eq(pread(fd, &entry, sizeof entry, (off_t)(a / page * sizeof entry)), 8);
        present += entry >> 63;
    }
    close(fd);
    return present;
}

#define PAGES_EVENTS 1200000

/* Writes PAGES_EVENTS barely compressible events (xorshift addresses and sizes, 1 MiB raw
 * chunks) to a new file at path (a mkstemp template); `swap`: the second and third chunks
 * change places in the file. @return the file's length (about 14 MiB). */
static uint64_t write_pages_trace(char *path, int swap)
{
    struct cmt_membuf buf = {0};
    cmt_writer *w;
    cr_assert_eq(cmt_writer_create(&w, cmt_membuf_sink, &buf, NULL), 0);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (uint64_t i = 0; i < PAGES_EVENTS; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        struct cmt_event e = {
            .seq = i, .t_ns = i * 100, .api = 1, .fields = CMT_F(PTR) | CMT_F(SIZE)};
        e.v[CMT_FIELD_PTR] = x >> 16;
        e.v[CMT_FIELD_SIZE] = x & 0xffffffffu;
        cr_assert_eq(cmt_writer_event(w, &e), 0);
    }
    cr_assert_eq(cmt_writer_end(w, &(struct cmt_end){0}), 0);
    cr_assert_eq(cmt_writer_flush(w), 0);
    cmt_writer_destroy(w);
    cr_assert_geq(buf.len, 12 << 20, "a trace of %zu bytes is too small to show it", buf.len);
    if (swap) { /* chunks at a (the second), b and c: [a, b) and [b, c) trade places */
        size_t at[4] = {CMT_FILE_HEADER_SIZE};
        for (int k = 1; k < 4; k++)
            at[k] = at[k - 1] + CMT_CHUNK_HEADER_SIZE + cmt__get_le32(buf.data + at[k - 1] + 4);
        size_t first = at[2] - at[1], second = at[3] - at[2];
        uint8_t *copy = malloc(first);
        cr_assert_not_null(copy);
        memcpy(copy, buf.data + at[1], first);
        memmove(buf.data + at[1], buf.data + at[2], second);
        memcpy(buf.data + at[1] + second, copy, first);
        free(copy);
    }
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(cmt_fd_sink(&fd, buf.data, buf.len), 0);
    close(fd);
    uint64_t len = buf.len;
    cmt_membuf_free(&buf);
    return len;
}

/* A preload, then a pass over the trace at path (len bytes), sampling the mapped pages: after
 * it no page before the last 2 MiB is mapped, and none stayed during it beyond two steps, a
 * chunk and `held` bytes (chunks kept for later). @return the reader (for the caller to close). */
static cmt_reader *expect_pass_hands_back(const char *path, uint64_t len, size_t held)
{
    cmt_reader *r;
    cr_assert_eq(cmt_reader_open_file(&r, path, NULL), 0);
    cr_assert_eq(cmt_reader_preload(r), 0);
    struct cmt_record rec;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), most = 0, events = 0;
    int rc;
    while ((rc = cmt_reader_next(r, &rec)) > 0)
        if (++events % 50000 == 0) {
            size_t now = mapped_pages(path, 0);
            most = now > most ? now : most;
        }
    cr_assert_eq(rc, 0);
    cr_assert_eq(cmt_reader_event_count(r), PAGES_EVENTS);
    cr_assert_eq(cmt_reader_seq_gaps(r), 0);
    size_t left = mapped_pages(path, 0), before_tail = mapped_pages(path, len - (2 << 20));
    cr_expect_eq(left, before_tail, "%zu pages stay mapped before the last 2 MiB of %llu bytes",
                 left - before_tail, (unsigned long long)len);
    cr_expect_leq(most, ((5u << 20) + held) / page, /* two steps, a chunk (1 MiB raw), held */
                  "%zu pages mapped during the pass", most);
    return r;
}

/* A pass hands back the mapped pages of what it has read, in 2 MiB steps (a huge page). */
Test(writer_reader, a_pass_hands_back_the_mapped_pages_it_has_read)
{
    char path[] = "/tmp/cmt-reader-pages.XXXXXX";
    uint64_t len = write_pages_trace(path, 0);
    cmt_reader_close(expect_pass_hands_back(path, len, 0));
    unlink(path);
}

/* Chunks read in seq order, not file order: the pages of a chunk that comes later in the pass
 * are not handed back before it is read (they would be mapped again, below the pages handed
 * back, and stay). */
Test(writer_reader, a_chunk_read_out_of_file_order_keeps_its_pages_until_read)
{
    char path[] = "/tmp/cmt-reader-pages.XXXXXX";
    uint64_t len = write_pages_trace(path, 1);
    cmt_reader *r = expect_pass_hands_back(path, len, 2u << 20); /* the chunk jumped over */
    char note[256];
    cmt_reader_sequence_note(r, note, sizeof note);
    cr_expect(strstr(note, "2 chunks out of seq order read in seq order"), "%s", note);
    cmt_reader_close(r);
    unlink(path);
}
