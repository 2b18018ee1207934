/* Tests of the finer levels around chosen moments (tools/analysis/site_levels.c). */
#include <criterion/criterion.h>

#include "reader.h"
#include "replay.h"
#include "site_levels.h"
#include "site_timeline.h"
#include "trace_builder.h"

struct passes {
    cmt_reader *reader;
    cmt_replay *first;
    struct cmt_site_groups groups;
    struct cmt_site_timeline tl;
    struct cmt_site_levels lv;
};

/* The command's two passes: groups and the peak from the first; the series and the levels
 * around the device's peak (and `extra`, when not UINT64_MAX) from the second. */
static void run(struct passes *p, const struct tb *b, uint32_t points, uint32_t level_points,
                uint64_t extra)
{
    cr_assert_eq(cmt_reader_open_memory(&p->reader, b->buf.data, b->buf.len), 0);
    cr_assert_eq(cmt_replay_create(&p->first, p->reader), 0);
    cr_assert_eq(cmt_replay_run(p->first, NULL, 0), 0);
    cr_assert_eq(cmt_site_groups_choose(p->first, 4, &p->groups), 0);
    cmt_reader_rewind(p->reader);
    cmt_replay *second;
    cr_assert_eq(cmt_replay_create(&second, p->reader), 0);
    cr_assert_eq(cmt_site_timeline_init(&p->tl, points, &p->groups), 0);
    uint64_t t[2] = {cmt_replay_device(p->first, 0)->peak_t_ns, extra};
    int32_t dev[2] = {0, 0};
    cr_assert_eq(cmt_site_levels_init(&p->lv, &p->tl, t, dev, extra == UINT64_MAX ? 1 : 2,
                                      cmt_replay_totals(p->first)->last_t_ns, level_points),
                 0);
    struct cmt_observer o[2] = {cmt_site_timeline_observer(&p->tl),
                                cmt_site_levels_observer(&p->lv)};
    cr_assert_eq(cmt_replay_run(second, o, 2), 0);
    cmt_replay_destroy(second);
}

static void done(struct passes *p)
{
    cmt_site_levels_free(&p->lv);
    cmt_site_timeline_free(&p->tl);
    cmt_site_groups_free(&p->groups);
    cmt_replay_destroy(p->first);
    cmt_reader_close(p->reader);
}

/* A 4 GiB allocation held throughout, 3000 pairs of 1 MiB alloc/free (one event a
 * microsecond) and, in the middle, a 1 GiB spike freed at once: narrower than any coarse
 * bucket. */
static void spiky(struct tb *b)
{
    tb_begin(b, 80 * TB_GIB, 80 * TB_GIB);
    uint32_t base = tb_stack(b, "weights", 3), churn = tb_stack(b, "scratch", 3);
    uint32_t spike = tb_stack(b, "spike", 3);
    tb_alloc(b, 0x100000000, 4 * TB_GIB, base);
    for (int i = 0; i < 3000; i++) {
        tb_alloc(b, 0x900000000, TB_MIB, churn);
        tb_free(b, 0x900000000);
        if (i == 1500) {
            tb_alloc(b, 0x200000000, TB_GIB, spike);
            tb_free(b, 0x200000000);
        }
    }
    tb_finish(b, 1);
}

static uint32_t used(const struct cmt_site_timeline_point *p, uint32_t n, uint64_t lo, uint64_t hi)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        k += p[i].used && p[i].t_ns >= lo && p[i].t_ns < hi;
    return k;
}

Test(site_levels, a_narrow_peak_is_exact_at_every_level_down_to_single_events)
{
    struct tb b;
    struct passes p;
    spiky(&b);
    run(&p, &b, 16, 64, UINT64_MAX);
    uint64_t peak = cmt_replay_device(p.first, 0)->peak_live_bytes;
    cr_expect_eq(peak, 5 * TB_GIB, "the spike over the weights (the churn freed first)");
    cr_assert_gt(p.lv.count, 1);
    const struct cmt_site_level *finest = &p.lv.levels[p.lv.count - 1];
    cr_expect_eq(finest->width, 1, "the finest level's buckets are single nanoseconds");
    for (uint32_t i = 0; i < p.lv.count; i++) {
        const struct cmt_site_level *l = &p.lv.levels[i];
        if (i)
            cr_expect(l->width < p.lv.levels[i - 1].width, "each level finer than the last");
        uint64_t max = 0, groups_at_max = 0;
        for (uint32_t k = 0; k < l->points; k++)
            if (l->p[k].used && l->p[k].live_bytes > max) {
                max = l->p[k].live_bytes;
                const uint64_t *g = cmt_site_level_groups(&p.lv, l, k, 0);
                groups_at_max = 0;
                for (uint32_t q = 0; q < p.lv.group_count; q++)
                    groups_at_max += g[q];
            }
        cr_expect_eq(max, peak, "level %u (%lu ns buckets) keeps the peak", i,
                     (unsigned long)l->width);
        cr_expect_eq(groups_at_max, peak, "its groups sum to it");
        if (l->t_lo > 0)
            cr_expect_geq(l->entry_live_bytes, 4 * TB_GIB, "the state when the span opens");
    }
    /* over the first finer level's span the coarse series has a few buckets, the level one
     * per event or bucket */
    const struct cmt_site_level *first = &p.lv.levels[0];
    uint32_t fine = used(first->p, first->points, first->t_lo, first->t_hi);
    const struct cmt_site_timeline_device *d = cmt_site_timeline_device(&p.tl, 0);
    uint32_t coarse = used(d->points, p.tl.max_points, first->t_lo, first->t_hi);
    cr_expect_gt(fine, 4 * coarse, "finer: %u points where the series has %u", fine, coarse);
    done(&p);
    tb_free_builder(&b);
}

Test(site_levels, a_centre_inside_an_earlier_finest_span_adds_nothing)
{
    struct tb b;
    struct passes p;
    spiky(&b);
    run(&p, &b, 16, 64, UINT64_MAX);
    uint32_t one = p.lv.count;
    uint64_t peak_t = cmt_replay_device(p.first, 0)->peak_t_ns;
    done(&p);
    run(&p, &b, 16, 64, peak_t + 1);
    cr_expect_eq(p.lv.count, one, "the same moment twice: one window");
    done(&p);
    run(&p, &b, 16, 64, 1000);
    cr_expect_gt(p.lv.count, one, "a moment elsewhere: a second window");
    cr_expect_eq(p.lv.levels[p.lv.count - 1].window, 1);
    done(&p);
    tb_free_builder(&b);
}
