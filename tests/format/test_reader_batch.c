/* The events of an EVENTS block decoded a batch at a time (format/reader_batch.c): they read
 * back as written with either way of packing varints, and a malformed event anywhere in a
 * block, at a batch's edge or inside one, ends the read right before it. */
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
            struct cmt_membuf buf = {0};
            fixture_hand_chunk(&buf, raw, n, 1);
            cmt_reader *r;
            cr_assert_eq(cmt_reader_open_memory(&r, buf.data, buf.len), 0);
            struct cmt_record rec;
            int events = 0, rc;
            while ((rc = cmt_reader_next(r, &rec)) > 0) {
                cr_assert_eq(rec.u.event.t_ns, 10 * ((uint64_t)events + 1));
                cr_assert_eq(rec.u.event.v[CMT_FIELD_PTR], 0x1000 + (uint64_t)events);
                events++;
            }
            cr_assert_eq(events, at[k], "damage %d at event %d: %d events read", what, at[k],
                         events);
            cr_assert_eq(rc, CMT_ECORRUPT, "damage %d at event %d", what, at[k]);
            cr_assert(strstr(cmt_reader_damage(r), "malformed event block"), "%s",
                      cmt_reader_damage(r));
            cmt_reader_close(r);
            cmt_membuf_free(&buf);
        }
    }
}
