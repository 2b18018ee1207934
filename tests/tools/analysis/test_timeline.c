/* Tests of the timeline analysis (tools/analysis/timeline.c). */
#include <criterion/criterion.h>

#include "reader.h"
#include "replay.h"
#include "timeline.h"
#include "trace_builder.h"

/* A trace whose live set has holes between its allocations: 256 slots of 2 MiB blocks 4 MiB
 * apart on device 0, each taken and given back in turn, with pauses that close buckets. */
static void holey_trace(struct tb *b)
{
    int live[256] = {0};
    tb_begin(b, 24 * TB_GIB, 23 * TB_GIB);
    for (uint64_t i = 0; i < 20000; i++) {
        uint64_t slot = i * 7919 % 256, ptr = 0x100000000ull + slot * 4 * TB_MIB;
        if (live[slot])
            tb_free(b, ptr);
        else
            tb_alloc(b, ptr, 2 * TB_MIB, 0);
        live[slot] = !live[slot];
        if (i % 40 == 0)
            b->t_ns += 200000; /* a pause: the next events fall in a later bucket */
    }
    tb_finish(b, 1);
}

/* Replays the trace into a timeline of 64 points (no_holes as given). */
static void chart(const struct tb *b, int no_holes, struct cmt_timeline *tl)
{
    cmt_reader *r;
    cmt_replay *rp;
    cr_assert_eq(cmt_reader_open_memory(&r, b->buf.data, b->buf.len), 0);
    cr_assert_eq(cmt_replay_create(&rp, r), 0);
    cr_assert_eq(cmt_timeline_init(tl, 64), 0);
    cmt_timeline_set_no_holes(tl, no_holes);
    struct cmt_observer o = cmt_timeline_observer(tl);
    cr_assert_eq(cmt_replay_run(rp, &o, 1), 0);
    cmt_replay_destroy(rp);
    cmt_reader_close(r);
}

/* no_holes leaves the hole measures at 0 (the sampled ones and the peak's exact ones) and
 * every other figure of every point as it is with them. */
Test(timeline, no_holes_leaves_out_only_the_hole_measures)
{
    struct tb b;
    holey_trace(&b);
    struct cmt_timeline with, without;
    chart(&b, 0, &with);
    chart(&b, 1, &without);
    cr_assert_eq(with.device_count, 1);
    cr_assert_eq(without.device_count, 1);
    cr_assert_eq(with.width, without.width);
    int sampled = 0, peaks = 0;
    for (uint32_t k = 0; k < with.max_points; k++) {
        const struct cmt_timeline_point *p = &with.devices[0].points[k];
        const struct cmt_timeline_point *q = &without.devices[0].points[k];
        sampled += p->hole_bytes > 0 && !p->peak;
        if (p->peak) {
            peaks++;
            cr_expect_gt(p->hole_bytes, 0, "the peak's exact measure");
            cr_expect_gt(p->largest_hole, 0);
        }
        cr_expect_eq(q->hole_bytes, 0, "bucket %u", k);
        cr_expect_eq(q->largest_hole, 0, "bucket %u", k);
        cr_expect_eq(q->largest_unmapped, 0, "bucket %u", k);
        cr_expect_eq(q->hole_fragmentation, 0.0, "bucket %u", k);
        cr_expect_eq(p->used, q->used, "bucket %u", k);
        cr_expect_eq(p->peak, q->peak, "bucket %u", k);
        cr_expect_eq(p->t_ns, q->t_ns, "bucket %u", k);
        cr_expect_eq(p->live_bytes, q->live_bytes, "bucket %u", k);
        cr_expect_eq(p->allocations, q->allocations, "bucket %u", k);
        cr_expect_eq(p->mapped_bytes, q->mapped_bytes, "bucket %u", k);
        cr_expect_eq(p->waste_bytes, q->waste_bytes, "bucket %u", k);
        cr_expect_eq(p->last_t_ns, q->last_t_ns, "bucket %u", k);
        cr_expect_eq(p->last_live_bytes, q->last_live_bytes, "bucket %u", k);
        cr_expect_eq(p->oom, q->oom, "bucket %u", k);
        for (int kind = 0; kind < CMT_KIND_COUNT; kind++) {
            cr_expect_eq(p->kind_bytes[kind], q->kind_bytes[kind], "bucket %u", k);
            cr_expect_eq(p->last_kind_bytes[kind], q->last_kind_bytes[kind], "bucket %u", k);
        }
    }
    cr_expect_eq(peaks, 1);
    cr_expect_gt(sampled, 0, "the trace has sampled holes to leave out");
    cmt_timeline_free(&with);
    cmt_timeline_free(&without);
    tb_free_builder(&b);
}
