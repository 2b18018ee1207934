/* interpose/emit.c: ring entries → records. The writer numbers the driver EVENTs 0, 1, 2...
 * whatever the entries' seqs (their times); a MEMINFO takes its event's number, an ALLOC_EVENT
 * or RANGE the last driver event's; `passed` (what the salvage state file says is written)
 * follows the entries' order and never goes back, even for an entry that came late. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <string.h>

#include "emit.h"
#include "reader.h"
#include "writer.h"

static struct cmt__queued entry(uint64_t seq, uint32_t tid, uint8_t kind)
{
    struct cmt__queued e;
    memset(&e, 0, sizeof e);
    e.seq = e.t_ns = seq;
    e.tid = tid;
    e.kind = kind;
    e.api = 1;
    e.dev = 0;
    return e;
}

static struct cmt__queued oom(uint64_t seq, uint32_t tid)
{
    struct cmt__queued e = entry(seq, tid, CMT__ENTRY_OOM);
    e.fields = CMT_F(FREE) | CMT_F(TOTAL);
    e.v[0] = 1 << 20; /* free, then total: in bit order */
    e.v[1] = 1 << 30;
    return e;
}

static struct cmt__queued alloc(uint64_t seq, uint32_t tid)
{
    struct cmt__queued e = entry(seq, tid, CMT__ENTRY_ALLOC);
    e.result = CMT_AA_ALLOC;
    e.fields = CMT_AF(SIZE);
    e.v[0] = 4096;
    return e;
}

static struct cmt__queued range(uint64_t seq, uint32_t tid)
{
    struct cmt__queued e = entry(seq, tid, CMT__ENTRY_RANGE);
    e.api = CMT_RA_MARK;
    e.result = 0;
    e.dev = 0;
    e.fields = 4;
    memcpy(e.v, "step", 4);
    return e;
}

Test(emit, numbers_driver_events_and_places_the_rest_by_them)
{
    struct cmt_membuf buf = {0};
    cmt_writer *w;
    cr_assert_eq(cmt_writer_create(&w, cmt_membuf_sink, &buf, &(struct cmt_writer_options){0}), 0);
    cr_assert_eq(cmt_writer_alloc_info(w, &(struct cmt_alloc_info){.id = 1, .name = "a"}), 0);
    static struct cmt__device_info devices[CMT_MAX_DEVICES];
    struct cmt__emitter em = {.w = w, .devices = devices};
    /* times far apart and out of step with any count; two threads, the same time on both */
    const struct cmt__queued in[] = {
        alloc(90, 3),   entry(1000, 7, CMT__ENTRY_EVENT), oom(1000, 7),
        alloc(1500, 3), entry(2000, 3, CMT__ENTRY_EVENT), entry(2000, 7, CMT__ENTRY_EVENT),
        range(2600, 7), entry(9000, 7, CMT__ENTRY_EVENT)};
    for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
        cmt__order before = em.passed;
        cr_assert_eq(cmt__emit_entry(&em, &in[i]), 0, "entry %zu", i);
        cr_assert(em.passed == cmt__queued_order(&in[i]) + 1 && em.passed > before, "entry %zu", i);
    }
    cr_assert_eq(em.events, 4);
    /* an entry that came late: written, counted, but what is passed does not go back */
    cmt__order passed = em.passed;
    const struct cmt__queued late = entry(2500, 3, CMT__ENTRY_EVENT);
    cr_assert_eq(cmt__emit_entry(&em, &late), 0);
    cr_assert(em.passed == passed);
    cr_assert_eq(em.events, 5);
    cr_assert_eq(cmt_writer_flush(w), 0);
    cmt_writer_destroy(w);

    cmt_reader *r;
    cr_assert_eq(cmt_reader_open_memory(&r, buf.data, buf.len), 0);
    struct cmt_record rec;
    uint64_t events = 0, allocs = 0;
    int rc, saw_oom = 0, saw_range = 0;
    const uint64_t want_t[] = {1000, 2000, 2000, 9000, 9000}; /* the late one's time is clamped */
    while ((rc = cmt_reader_next(r, &rec)) == 1) {
        switch (rec.type) {
        case CMT_REC_EVENT:
            cr_assert_lt(events, 5);
            cr_assert_eq(rec.u.event.seq, events, "event %" PRIu64, events);
            cr_assert_eq(rec.u.event.t_ns, want_t[events]);
            events++;
            break;
        case CMT_REC_MEMINFO: /* the OOM follows event 0 */
            cr_assert_eq(rec.u.meminfo.reason, CMT_MEMINFO_OOM);
            cr_assert_eq(rec.u.meminfo.seq, 0);
            cr_assert_eq(rec.u.meminfo.free_bytes, 1 << 20);
            cr_assert_eq(events, 1);
            saw_oom = 1;
            break;
        case CMT_REC_ALLOC_EVENT: /* before any driver event: no SEQ; after event 0: 0 */
            if (allocs++ == 0) {
                cr_assert_eq(rec.u.alloc_event.fields & CMT_AF(SEQ), 0);
            } else {
                cr_assert(rec.u.alloc_event.fields & CMT_AF(SEQ));
                cr_assert_eq(rec.u.alloc_event.v[CMT_AFIELD_SEQ], 0);
            }
            cr_assert_eq(rec.u.alloc_event.v[CMT_AFIELD_SIZE], 4096);
            break;
        case CMT_REC_RANGE: /* after events 0-2 */
            cr_assert(rec.u.range.have_seq);
            cr_assert_eq(rec.u.range.seq, 2);
            cr_assert_str_eq(rec.u.range.message, "step");
            saw_range = 1;
            break;
        default: break;
        }
    }
    cr_assert_eq(rc, 0);
    cr_assert_eq(events, 5);
    cr_assert_eq(allocs, 2);
    cr_assert(saw_oom && saw_range);
    cmt_reader_close(r);
    cmt_membuf_free(&buf);
}
