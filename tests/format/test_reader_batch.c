/* The events of an EVENTS block decoded a batch at a time (format/reader_batch.c): they read
 * back as written with either way of packing varints, and a malformed event anywhere in a
 * block, at a batch's edge or inside one, ends the read right before it; no block, however
 * it lies about its count or its varints, makes a batch read past the chunk's padding. */
#include <sys/mman.h>

#include "reader_internal.h"
#include "trace_fixture.h"

enum { BATCH_TEST_EVENTS = 5000 };

static uint64_t rng_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11 ^ *s << 29;
}

/* A value of a random bit length, 0 to 64 bits: varints of 1 to 10 bytes. */
static uint64_t random_width(uint64_t *s)
{
    unsigned bits = (unsigned)(rng_next(s) % 65);
    return bits ? rng_next(s) >> (64 - bits) : 0;
}

/* Events with every part changing at random: thread, api, result, device, stack, and a
 * random set of the fields (every one of them in some event) with values of every length. */
static void random_events(struct cmt_event *ev, size_t n)
{
    uint64_t s = 2026;
    uint64_t t = 1000;
    for (size_t i = 0; i < n; i++) {
        t += rng_next(&s) % 5 == 0 ? random_width(&s) >> 8 : rng_next(&s) % 300;
        struct cmt_event e = {.seq = i + 1,
                              .t_ns = t,
                              .tid = (uint32_t)(100 + rng_next(&s) % 4),
                              .api = (uint32_t)(1 + rng_next(&s) % 300),
                              .result = rng_next(&s) % 7 == 0 ? 2 : 0,
                              .dev = rng_next(&s) % 5 == 0 ? -1 : (int32_t)(rng_next(&s) % 3),
                              .stack = (uint32_t)(rng_next(&s) % 3000),
                              .fields = (uint32_t)(rng_next(&s) & ((1u << CMT_NFIELDS) - 1))};
        if (i % 3 == 0) /* the common shape: ptr, size and stream, nothing else */
            e.fields = CMT_F(PTR) | CMT_F(SIZE) | CMT_F(STREAM);
        for (int f = 0; f < CMT_NFIELDS; f++)
            if (e.fields >> f & 1)
                e.v[f] = random_width(&s);
        ev[i] = e;
    }
}

/* The parts of e but its values, in one array. */
static void event_parts(const struct cmt_event *e, uint64_t parts[8])
{
    const uint64_t p[8] = {e->seq,           e->t_ns,  e->tid,   e->api, (uint32_t)e->result,
                           (uint32_t)e->dev, e->stack, e->fields};
    memcpy(parts, p, sizeof p);
}

static void expect_same_event(const struct cmt_event *got, const struct cmt_event *want, size_t i)
{
    uint64_t g[8], w[8];
    event_parts(got, g);
    event_parts(want, w);
    for (int k = 0; k < 8; k++)
        cr_assert_eq(g[k], w[k], "event %zu part %d", i, k);
    for (int f = 0; f < CMT_NFIELDS; f++)
        if (want->fields >> f & 1)
            cr_assert_eq(got->v[f], want->v[f], "event %zu field %d", i, f);
}

Test(reader_batch, events_read_back_as_written_with_either_packing)
{
    static struct cmt_event ev[BATCH_TEST_EVENTS];
    random_events(ev, BATCH_TEST_EVENTS);
    struct cmt_membuf buf = {0};
    cmt_writer *w;
    cr_assert_eq(cmt_writer_create(&w, cmt_membuf_sink, &buf, NULL), 0);
    for (size_t i = 0; i < BATCH_TEST_EVENTS; i++)
        cr_assert_eq(cmt_writer_event(w, &ev[i]), 0);
    cr_assert_eq(cmt_writer_flush(w), 0);
    cmt_writer_destroy(w);
    /* the shift steps everywhere; pext where this CPU runs it (else the same run again) */
    for (int pext = 0; pext <= 1; pext++) {
        cmt_reader *r;
        cr_assert_eq(cmt_reader_open_memory(&r, buf.data, buf.len), 0);
        r->pext = pext && cmt__reader_cpu_pext();
        struct cmt_record rec;
        size_t n = 0;
        int rc;
        while ((rc = cmt_reader_next(r, &rec)) > 0) {
            cr_assert_eq(rec.type, CMT_REC_EVENT);
            cr_assert_lt(n, BATCH_TEST_EVENTS);
            expect_same_event(&rec.u.event, &ev[n], n);
            n++;
        }
        cr_assert_eq(rc, 0, "%s", cmt_reader_damage(r));
        cr_assert_eq(n, BATCH_TEST_EVENTS);
        cmt_reader_close(r);
    }
    cmt_membuf_free(&buf);
}

/* What is wrong with the one malformed event of a hand-built block. */
enum damage { API_PAST_32_BITS, UNKNOWN_FLAG, DEV_PAST_INT32, TENTH_BYTE, PTR_COLUMN_SHORT };

enum { BLOCK_EVENTS = CMT__BATCH_EVENTS + 6 }; /* a batch and part of another */

/* An EVENTS block of BLOCK_EVENTS events (api 1, t +10 each, ptr 0x1000 + i) in which event
 * `bad` has `what` wrong. @return the record's bytes in out. */
static size_t damaged_block(uint8_t *out, int bad, enum damage what)
{
    uint8_t head[512], time[512], ptr[512], *h = head, *t = time, *p = ptr;
    for (int i = 0; i < BLOCK_EVENTS; i++) {
        uint64_t flags = 0, api = 1, tdelta = cmt__zigzag(10);
        if (i == bad && what == UNKNOWN_FLAG)
            flags = 0x20;
        if (i == bad && what == API_PAST_32_BITS)
            api = UINT64_C(1) << 32;
        if (i == bad && what == DEV_PAST_INT32)
            flags = CMT_EV_DEV;
        h = cmt__put_varint(h, flags);
        h = cmt__put_varint(h, api);
        if (flags == CMT_EV_DEV)
            h = cmt__put_varint(h, cmt__zigzag((int64_t)INT32_MAX + 1));
        h = cmt__put_varint(h, CMT_F(PTR));
        if (i == bad && what == TENTH_BYTE) { /* nine bytes of 0xff, then 2: past 64 bits */
            memset(t, 0xff, 9);
            t[9] = 2;
            t += 10;
        } else {
            t = cmt__put_varint(t, tdelta);
        }
        if (!(i >= bad && what == PTR_COLUMN_SHORT))
            p = cmt__put_varint(p, cmt__zigzag(i ? 1 : 0x1000));
    }
    const uint8_t *cols[] = {head, time, ptr};
    size_t lens[] = {(size_t)(h - head), (size_t)(t - time), (size_t)(p - ptr)};
    return fixture_block(out, CMT_REC_EVENTS, BLOCK_EVENTS, 7, cols, lens);
}

/* Reads the trace of one hand-built chunk of the record raw[0, n) until its damage, which
 * must name `damage`; each event read as damaged_block writes them (t +10, ptr 0x1000 + i).
 * @return how many were read. */
static int read_until_damage(const uint8_t *raw, size_t n, const char *damage)
{
    struct cmt_membuf buf = {0};
    fixture_hand_chunk(&buf, raw, n, 1);
    cmt_reader *r;
    cr_assert_eq(cmt_reader_open_memory(&r, buf.data, buf.len), 0);
    struct cmt_record rec;
    int events = 0, rc;
    while ((rc = cmt_reader_next(r, &rec)) > 0) {
        cr_assert_eq(rec.u.event.t_ns, 10 * ((uint64_t)events + 1), "event %d", events);
        cr_assert_eq(rec.u.event.v[CMT_FIELD_PTR], 0x1000 + (uint64_t)events);
        events++;
    }
    cr_assert_eq(rc, CMT_ECORRUPT, "after %d events", events);
    cr_assert(strstr(cmt_reader_damage(r), damage), "%s", cmt_reader_damage(r));
    cmt_reader_close(r);
    cmt_membuf_free(&buf);
    return events;
}

Test(reader_batch, a_malformed_event_anywhere_ends_the_read_right_before_it)
{
    const int at[] = {0,
                      1,
                      30,
                      CMT__BATCH_EVENTS - 1,
                      CMT__BATCH_EVENTS,
                      CMT__BATCH_EVENTS + 1,
                      BLOCK_EVENTS - 1};
    for (int what = API_PAST_32_BITS; what <= PTR_COLUMN_SHORT; what++) {
        for (size_t k = 0; k < sizeof at / sizeof *at; k++) {
            uint8_t raw[1024];
            size_t n = damaged_block(raw, at[k], (enum damage)what);
            int events = read_until_damage(raw, n, "malformed event block");
            cr_assert_eq(events, at[k], "damage %d at event %d: %d events read", what, at[k],
                         events);
        }
    }
}

/* ---- a batch reads no further than the chunk's padding ---- */

/* `data` bytes that end CMT__CHUNK_PAD zeroed bytes before a page no access is allowed to:
 * a read past the padding faults. @return the first of the data bytes. */
static uint8_t *guarded_column(size_t data, void **map, size_t *map_len)
{
    size_t page = 4096, len = (data + CMT__CHUNK_PAD + page - 1) / page * page + page;
    uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(m, MAP_FAILED);
    cr_assert_eq(mprotect(m + len - page, page, PROT_NONE), 0);
    *map = m;
    *map_len = len;
    return m + len - page - CMT__CHUNK_PAD - data;
}

/* A 10-byte varint (its tenth byte 1, or 2 when `bad`) whose low bits are v. */
static uint8_t *put_tenth(uint8_t *p, uint64_t v, int bad)
{
    p = cmt__put_varint(p, v | UINT64_C(1) << 63);
    p[-1] = (uint8_t)(bad ? 2 : 1);
    return p;
}

/* The worst a block can ask of a batch, every column ending where its chunk's padding starts:
 * `whole` events with every optional part, every field and every varint 10 bytes long (the
 * last one's tenth byte above 1 when `bad`), then nothing while the count says `count`. */
static int fill_worst(cmt_reader *r, int whole, uint32_t count, int bad, int pext)
{
    void *map[CMT_NCOLS];
    size_t len[CMT_NCOLS];
    for (int k = 0; k < CMT_NCOLS; k++) {
        size_t per = k == CMT_COL_HEAD ? 8 * CMT__VARINT_MAX : CMT__VARINT_MAX;
        uint8_t *c = guarded_column(per * (size_t)whole, &map[k], &len[k]), *p = c;
        for (int i = 0; i < whole; i++) {
            int last = bad && i == whole - 1;
            if (k == CMT_COL_HEAD) {
                for (int part = 0; part < 7; part++)
                    p = put_tenth(p, CMT_EV_ALL, 0);
                p = put_tenth(p, (UINT64_C(1) << CMT_NFIELDS) - 1, last);
            } else {
                p = put_tenth(p, 0x1234, last);
            }
        }
        r->col[k] = c;
        r->col_end[k] = p;
    }
    r->block_left = count;
    r->pext = pext;
    int rc = cmt__reader_fill_batch(r);
    for (int k = 0; k < CMT_NCOLS; k++)
        munmap(map[k], len[k]);
    return rc;
}

Test(reader_batch, reads_no_further_than_the_padding_whatever_the_block_says)
{
    struct cmt_membuf buf = {0};
    fixture_write(&buf, 4096);
    cmt_reader *r;
    cr_assert_eq(cmt_reader_open_memory(&r, buf.data, buf.len), 0);
    const int whole[] = {0, 1, CMT__BATCH_EVENTS / 2, CMT__BATCH_EVENTS - 1, CMT__BATCH_EVENTS};
    for (int pext = 0; pext <= cmt__reader_cpu_pext(); pext++)
        for (size_t k = 0; k < sizeof whole / sizeof *whole; k++)
            for (int bad = 0; bad <= 1; bad++) {
                /* a count above what the columns hold: the batch runs into the padding, and
                 * fails without moving the block on */
                cr_assert_eq(fill_worst(r, whole[k], 100000, bad, pext), -1);
                cr_assert_eq(r->block_left, 100000);
                /* the columns hold all the count says: out of range (every flag, api past 32
                 * bits), or a tenth byte above 1 */
                if (whole[k])
                    cr_assert_eq(fill_worst(r, whole[k], (uint32_t)whole[k], bad, pext), -1);
            }
    cmt_reader_close(r);
    cmt_membuf_free(&buf);
}

/* A block whose columns hold more than its count's events: every event it counts reads, then
 * the block's end says so, whether its last event ends a batch, sits in one or is alone. */
Test(reader_batch, a_column_longer_than_the_block_s_events_is_damage_after_them)
{
    const int counts[] = {1, CMT__BATCH_EVENTS - 1, CMT__BATCH_EVENTS, CMT__BATCH_EVENTS + 1};
    for (size_t k = 0; k < sizeof counts / sizeof *counts; k++)
        for (int longer = 0; longer < 3; longer++) { /* head, time or ptr: one byte more */
            uint8_t col[3][256], *end[3] = {col[0], col[1], col[2]};
            for (int i = 0; i < counts[k]; i++) {
                end[0] = cmt__put_varint(end[0], 0);
                end[0] = cmt__put_varint(end[0], 1);
                end[0] = cmt__put_varint(end[0], CMT_F(PTR));
                end[1] = cmt__put_varint(end[1], cmt__zigzag(10));
                end[2] = cmt__put_varint(end[2], cmt__zigzag(i ? 1 : 0x1000));
            }
            *end[longer]++ = 0;
            const uint8_t *cols[] = {col[0], col[1], col[2]};
            size_t lens[3];
            for (int c = 0; c < 3; c++)
                lens[c] = (size_t)(end[c] - col[c]);
            uint8_t raw[1024];
            size_t n = fixture_block(raw, CMT_REC_EVENTS, (uint64_t)counts[k], 7, cols, lens);
            int events = read_until_damage(raw, n, "event block longer than its events");
            cr_assert_eq(events, counts[k], "%d events, column %d longer", counts[k], longer);
        }
}
