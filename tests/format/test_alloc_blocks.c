/* ALLOC_EVENTS blocks (format 3.3): allocator reports written column by column come back
 * exactly, in file order among driver events and other records, across groups and chunks;
 * a block whose columns do not match its count is damage; a same-shape report stream costs
 * little on disk. */
#include "trace_fixture.h"
#include "varint.h"

#include <stdlib.h>

/* Report i of a deterministic mixed stream: every action, negative devices, addresses that
 * go up and down, fields that come and go, a value near 2^64. */
static void report(uint32_t i, struct cmt_alloc_event *e)
{
    memset(e, 0, sizeof *e);
    e->allocator = 1 + i % 3;
    e->action = 1 + i % (CMT_AA_MAX - 1);
    e->t_ns = 1000 + (uint64_t)i * 37 - (i % 5 == 0 ? 20 : 0); /* not monotonic */
    e->tid = 100 + i % 4;
    e->dev = (int32_t)(i % 7) - 1;
    e->stack = i % 11;
    e->fields = (uint32_t)(i * 2654435761u) & ((UINT32_C(1) << CMT_NAFIELDS) - 1);
    for (unsigned f = 0; f < CMT_NAFIELDS; f++)
        if (e->fields >> f & 1)
            e->v[f] = f == CMT_AFIELD_ADDR ? (i % 2 ? 0x7f0000000000u - i * 4096u : 0x1000u * i)
                      : f == CMT_AFIELD_RESERVED ? UINT64_MAX - i
                                                 : (uint64_t)i * (f + 1);
}

static void expect_report(uint32_t i, const struct cmt_alloc_event *got)
{
    struct cmt_alloc_event want;
    report(i, &want);
    cr_assert_eq(got->allocator, want.allocator, "report %u", i);
    cr_assert_eq(got->action, want.action, "report %u", i);
    cr_assert_eq(got->t_ns, want.t_ns, "report %u", i);
    cr_assert_eq(got->tid, want.tid, "report %u", i);
    cr_assert_eq(got->dev, want.dev, "report %u", i);
    cr_assert_eq(got->stack, want.stack, "report %u", i);
    cr_assert_eq(got->fields, want.fields, "report %u", i);
    for (unsigned f = 0; f < CMT_NAFIELDS; f++)
        cr_assert_eq(got->v[f], want.v[f], "report %u field %u", i, f);
}

Test(alloc_blocks, reports_round_trip_in_order_among_events_across_groups_and_chunks)
{
    struct cmt_membuf buf = {0};
    cmt_writer *w;
    struct cmt_writer_options o = {.chunk_bytes = 16384}; /* many chunks: bases reset */
    cr_assert_eq(cmt_writer_create(&w, cmt_membuf_sink, &buf, &o), 0);
    uint32_t n = 3 * CMT_GROUP_EVENTS_MAX + 17, seq = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct cmt_alloc_event e;
        report(i, &e);
        cr_assert_eq(cmt_writer_alloc_event(w, &e), 0);
        if (i % 97 == 5) { /* a driver event between reports */
            struct cmt_event ev = {.seq = ++seq, .t_ns = i, .api = 1, .fields = CMT_F(SIZE)};
            ev.v[CMT_FIELD_SIZE] = i;
            cr_assert_eq(cmt_writer_event(w, &ev), 0);
        }
        if (i % 1001 == 9) { /* and another record */
            struct cmt_note note = {.level = 1, .text = "between"};
            cr_assert_eq(cmt_writer_note(w, &note), 0);
        }
    }
    cr_assert_eq(cmt_writer_flush(w), 0);
    cmt_writer_destroy(w);

    cmt_reader *r;
    cr_assert_eq(cmt_reader_open_memory(&r, buf.data, buf.len), 0);
    struct cmt_record rec;
    uint32_t i = 0, events = 0, notes = 0;
    int rc;
    while ((rc = cmt_reader_next(r, &rec)) > 0) {
        if (rec.type == CMT_REC_ALLOC_EVENT) {
            expect_report(i++, &rec.u.alloc_event);
        } else if (rec.type == CMT_REC_EVENT) {
            cr_assert_eq(i % 97, 6, "the driver event after report %u comes right after it", i);
            cr_assert_eq(rec.u.event.v[CMT_FIELD_SIZE], i - 1);
            events++;
        } else if (rec.type == CMT_REC_NOTE) {
            cr_assert_eq(i % 1001, 10, "the note after report %u comes right after it", i);
            notes++;
        }
    }
    cr_assert_eq(rc, 0, "%s", cmt_reader_damage(r));
    cr_assert_eq(i, n);
    cr_assert_eq(events, seq);
    cr_assert_gt(notes, 0);
    cmt_reader_rewind(r); /* a second pass reads the same: bases reset with the chunk */
    for (i = 0; (rc = cmt_reader_next(r, &rec)) > 0;)
        if (rec.type == CMT_REC_ALLOC_EVENT)
            expect_report(i++, &rec.u.alloc_event);
    cr_assert_eq(i, n);
    cmt_reader_close(r);
    cmt_membuf_free(&buf);
}

/* A hand-built ALLOC_EVENTS record of `count` reports over 2 reports' columns: each report
 * allocator 1, action alloc, tid 5, dev 0, stack 0, fields ADDR; t deltas 10; addresses
 * 0x40 then 0x40 + 0x40; `extra` adds a newer writer's column (bit 2 + 20). `time_len` cuts
 * the time column. @return the bytes written to out. */
static size_t alloc_block(uint8_t *out, uint64_t count, size_t time_len, int extra)
{
    static const uint8_t head[] = {1, CMT_AA_ALLOC, 5, 0, 0, 1, 1, CMT_AA_ALLOC, 5, 0, 0, 1};
    static const uint8_t time[] = {20, 20}, addr[] = {0x80, 0x01, 0x80, 0x01}, unknown[] = {3, 3};
    const uint8_t *cols[] = {head, time, addr, unknown};
    size_t lens[] = {sizeof head, time_len, sizeof addr, sizeof unknown};
    return fixture_block(out, CMT_REC_ALLOC_EVENTS, count,
                         1 | 2 | 4 | (extra ? UINT64_C(1) << 22 : 0), cols, lens);
}

/* Reads one hand-built block. @return the reports read; *rc the final code. */
static int read_alloc_block(uint64_t count, size_t time_len, int extra, int *rc)
{
    uint8_t raw[256];
    size_t n = alloc_block(raw, count, time_len, extra);
    struct cmt_membuf buf = {0};
    fixture_hand_chunk(&buf, raw, n, 1);
    cmt_reader *r;
    cr_assert_eq(cmt_reader_open_memory(&r, buf.data, buf.len), 0);
    struct cmt_record rec;
    int reports = 0;
    while ((*rc = cmt_reader_next(r, &rec)) > 0) {
        cr_assert_eq(rec.type, CMT_REC_ALLOC_EVENT);
        cr_assert_eq(rec.u.alloc_event.t_ns, 10 * ((uint64_t)reports + 1));
        cr_assert_eq(rec.u.alloc_event.v[CMT_AFIELD_ADDR], 0x40 * ((uint64_t)reports + 1));
        cr_assert_eq(rec.u.alloc_event.fields, CMT_AF(ADDR));
        cr_assert_eq(rec.u.alloc_event.tid, 5);
        reports++;
    }
    if (*rc < 0)
        cr_assert(strstr(cmt_reader_damage(r), "allocator event block"), "%s",
                  cmt_reader_damage(r));
    cmt_reader_close(r);
    cmt_membuf_free(&buf);
    return reports;
}

Test(alloc_blocks, blocks_read_exactly_or_report_damage)
{
    int rc;
    cr_assert_eq(read_alloc_block(2, 2, 0, &rc), 2);
    cr_assert_eq(rc, 0);
    /* a newer writer's column is skipped whole */
    cr_assert_eq(read_alloc_block(2, 2, 1, &rc), 2);
    cr_assert_eq(rc, 0);
    /* the time column a byte short: the second report reads past it */
    cr_assert_eq(read_alloc_block(2, 1, 0, &rc), 1);
    cr_assert_eq(rc, CMT_ECORRUPT);
    /* fewer reports than the columns hold */
    cr_assert_eq(read_alloc_block(1, 2, 0, &rc), 0);
    cr_assert_eq(rc, CMT_ECORRUPT);
    /* more reports than the columns hold */
    cr_assert_eq(read_alloc_block(1000, 2, 0, &rc), 2);
    cr_assert_eq(rc, CMT_ECORRUPT);
    /* a count of 0 is malformed */
    cr_assert_eq(read_alloc_block(0, 2, 0, &rc), 0);
    cr_assert_eq(rc, CMT_ECORRUPT);
}

/* What a sub-allocator's alloc/free report pairs cost: the same shape each time, its blocks'
 * addresses stepping through a pool, times 50 to 150 ns apart (issue 26: at most 1.5 B each). */
Test(alloc_blocks, same_shape_reports_cost_under_one_and_a_half_bytes_each)
{
    struct cmt_membuf buf = {0};
    cmt_writer *w;
    cr_assert_eq(cmt_writer_create(&w, cmt_membuf_sink, &buf, NULL), 0);
    uint64_t t = 1000000, rng = 42, size = 1 << 20, base = 0x7f0000000000u;
    uint32_t pairs = 200000;
    for (uint32_t i = 0; i < pairs; i++) {
        uint64_t addr = base + (i & 1023) * size;
        struct cmt_alloc_event a = {.allocator = 1,
                                    .action = CMT_AA_ALLOC,
                                    .tid = 4242,
                                    .fields = CMT_AF(ADDR) | CMT_AF(SIZE) | CMT_AF(REQUESTED) |
                                              CMT_AF(STREAM) | CMT_AF(POOL) | CMT_AF(SEGMENT)};
        rng = rng * 6364136223846793005u + 1442695040888963407u;
        a.t_ns = t += 50 + (rng >> 33) % 101;
        a.v[CMT_AFIELD_ADDR] = addr, a.v[CMT_AFIELD_SIZE] = size;
        a.v[CMT_AFIELD_REQUESTED] = size - 100, a.v[CMT_AFIELD_SEGMENT] = base;
        cr_assert_eq(cmt_writer_alloc_event(w, &a), 0);
        struct cmt_alloc_event f = {.allocator = 1,
                                    .action = CMT_AA_FREE_REQUESTED,
                                    .tid = 4242,
                                    .fields = CMT_AF(ADDR) | CMT_AF(SIZE) | CMT_AF(STREAM)};
        rng = rng * 6364136223846793005u + 1442695040888963407u;
        f.t_ns = t += 50 + (rng >> 33) % 101;
        f.v[CMT_AFIELD_ADDR] = addr, f.v[CMT_AFIELD_SIZE] = size;
        cr_assert_eq(cmt_writer_alloc_event(w, &f), 0);
    }
    cr_assert_eq(cmt_writer_flush(w), 0);
    cmt_writer_destroy(w);
    double per = (double)buf.len / (2.0 * pairs);
    cr_assert_lt(per, 1.5, "%.3f bytes per report", per);
    cmt_membuf_free(&buf);
}

/* The packed form (values in bit order, as the shim's rings hold them) writes the very bytes of
 * the unpacked one, reports of every field mask, mixed with driver events (one room check per
 * event serves both kinds: the columns never run out mid-record). */
Test(alloc_blocks, packed_values_write_the_same_bytes)
{
    struct cmt_membuf a = {0}, b = {0};
    cmt_writer *wa, *wb;
    struct cmt_writer_options o = {.chunk_bytes = 16384};
    cr_assert_eq(cmt_writer_create(&wa, cmt_membuf_sink, &a, &o), 0);
    cr_assert_eq(cmt_writer_create(&wb, cmt_membuf_sink, &b, &o), 0);
    for (uint32_t i = 0; i < 2 * CMT_GROUP_EVENTS_MAX + 5; i++) {
        struct cmt_alloc_event e;
        report(i, &e);
        uint64_t packed[CMT_NAFIELDS];
        unsigned n = 0;
        for (unsigned f = 0; f < CMT_NAFIELDS; f++)
            if (e.fields >> f & 1)
                packed[n++] = e.v[f];
        struct cmt_alloc_event bare = e;
        memset(bare.v, 0xa5, sizeof bare.v); /* never read */
        cr_assert_eq(cmt_writer_alloc_event(wa, &e), 0);
        cr_assert_eq(cmt_writer_alloc_event_packed(wb, &bare, packed), 0);
        if (i % 3 == 1) {
            struct cmt_event ev = {
                .seq = i, .t_ns = i, .api = 2, .fields = CMT_F(SIZE) | CMT_F(PTR)};
            ev.v[CMT_FIELD_SIZE] = (uint64_t)i << 40;
            ev.v[CMT_FIELD_PTR] = UINT64_MAX - i;
            cr_assert_eq(cmt_writer_event(wa, &ev), 0);
            cr_assert_eq(cmt_writer_event(wb, &ev), 0);
        }
    }
    cr_assert_eq(cmt_writer_flush(wa), 0);
    cr_assert_eq(cmt_writer_flush(wb), 0);
    cr_assert_eq(a.len, b.len);
    cr_assert_eq(memcmp(a.data, b.data, a.len), 0);
    cmt_writer_destroy(wa);
    cmt_writer_destroy(wb);
    cmt_membuf_free(&a);
    cmt_membuf_free(&b);
}
