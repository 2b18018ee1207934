/* Tests of the series stacked by call-site groups (tools/analysis/site_timeline.c). */
#include <criterion/criterion.h>

#include "reader.h"
#include "replay.h"
#include "site_timeline.h"
#include "trace_builder.h"

struct two_passes {
    cmt_reader *reader;
    cmt_replay *first;
    struct cmt_site_groups groups;
    struct cmt_site_timeline tl;
};

/* The command's two passes: groups from the first, the series from the second. */
static void run(struct two_passes *p, const struct tb *b, uint32_t max_groups, uint32_t points)
{
    cr_assert_eq(cmt_reader_open_memory(&p->reader, b->buf.data, b->buf.len), 0);
    cr_assert_eq(cmt_replay_create(&p->first, p->reader), 0);
    cr_assert_eq(cmt_replay_run(p->first, NULL, 0), 0);
    cr_assert_eq(cmt_site_groups_choose(p->first, max_groups, &p->groups), 0);
    cmt_reader_rewind(p->reader);
    cmt_replay *second;
    cr_assert_eq(cmt_replay_create(&second, p->reader), 0);
    cr_assert_eq(cmt_site_timeline_init(&p->tl, points, &p->groups), 0);
    struct cmt_observer o = cmt_site_timeline_observer(&p->tl);
    cr_assert_eq(cmt_replay_run(second, &o, 1), 0);
    cmt_replay_destroy(second);
}

static void done(struct two_passes *p)
{
    cmt_site_timeline_free(&p->tl);
    cmt_site_groups_free(&p->groups);
    cmt_replay_destroy(p->first);
    cmt_reader_close(p->reader);
}

static uint64_t sum(const uint64_t *v, uint32_t n)
{
    uint64_t s = 0;
    for (uint32_t i = 0; i < n; i++)
        s += v[i];
    return s;
}

/* @return the group named by stack `stack` (the test's sites are their own groups). */
static uint32_t group(const struct two_passes *p, uint32_t stack)
{
    return cmt_site_groups_of(&p->groups, stack);
}

Test(site_timeline, groups_sum_to_live_bytes_and_the_peak_keeps_its_breakdown)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t big = tb_stack(&b, "weights", 3), mid = tb_stack(&b, "activations", 3),
             small = tb_stack(&b, "scratch", 3);
    tb_alloc(&b, 0x100000000, 4 * TB_GIB, big);
    for (int i = 0; i < 40; i++) { /* churn: many buckets, coarsened into few */
        tb_alloc(&b, 0x200000000 + (uint64_t)i * TB_GIB, TB_GIB, mid);
        tb_alloc(&b, 0x9000000000 + (uint64_t)i * TB_MIB, TB_MIB, small);
        tb_free(&b, 0x200000000 + (uint64_t)i * TB_GIB);
    }
    tb_alloc(&b, 0x200000000, 2 * TB_GIB, mid); /* the peak: 4 GiB + 2 GiB + 40 MiB */
    tb_free(&b, 0x100000000);
    tb_finish(&b, 1);
    struct two_passes p;
    run(&p, &b, 2, 8);
    cr_expect_eq(p.groups.count, 2);
    cr_expect_eq(group(&p, big), 0, "the most at the peak comes first");
    cr_expect_eq(group(&p, mid), 1);
    cr_expect_eq(group(&p, small), 2, "not chosen: other");
    const struct cmt_site_timeline_device *d = cmt_site_timeline_device(&p.tl, 0);
    cr_assert_not_null(d);
    uint64_t peak = cmt_replay_device(p.first, 0)->peak_live_bytes;
    cr_expect_eq(peak, 6 * TB_GIB + 40 * TB_MIB);
    int peaks = 0;
    for (uint32_t i = 0; i < p.tl.max_points; i++) {
        const struct cmt_site_timeline_point *pt = &d->points[i];
        if (!pt->used)
            continue;
        const uint64_t *g = cmt_site_timeline_groups(&p.tl, d, i, 0);
        const uint64_t *l = cmt_site_timeline_groups(&p.tl, d, i, 1);
        cr_expect_eq(sum(g, p.tl.group_count), pt->live_bytes, "point %u", i);
        cr_expect_eq(sum(l, p.tl.group_count), pt->last_live_bytes, "point %u", i);
        if (pt->live_bytes == peak) {
            peaks++;
            cr_expect_eq(g[0], 4 * TB_GIB);
            cr_expect_eq(g[1], 2 * TB_GIB);
            cr_expect_eq(g[2], 40 * TB_MIB);
        }
    }
    cr_expect_eq(peaks, 1, "the peak survives downsampling");
    cr_expect_gt(p.tl.width, 1024, "the series was coarsened");
    done(&p);
    tb_free_builder(&b);
}

Test(site_timeline, a_sample_gives_the_bytes_held_by_others_and_the_total)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t s = tb_stack(&b, "weights", 2);
    tb_alloc(&b, 0x100000000, 6 * TB_GIB, s);
    /* 10 GiB used on the device, 6 GiB of it this process's: others hold 4 GiB */
    tb_meminfo(&b, CMT_MEMINFO_OOM, 14 * TB_GIB, 24 * TB_GIB, b.seq);
    tb_finish(&b, 1);
    struct two_passes p;
    run(&p, &b, 4, 16);
    const struct cmt_site_timeline_device *d = cmt_site_timeline_device(&p.tl, 0);
    cr_assert_not_null(d);
    uint64_t most = 0;
    int sampled = 0;
    for (uint32_t i = 0; i < p.tl.max_points; i++)
        if (d->points[i].sampled) {
            sampled++;
            cr_expect_eq(d->points[i].total_bytes, 24 * TB_GIB);
            most = d->points[i].others_bytes > most ? d->points[i].others_bytes : most;
        }
    cr_expect_geq(sampled, 1);
    cr_expect_eq(most, 4 * TB_GIB);
    done(&p);
    tb_free_builder(&b);
}

Test(site_timeline, an_allocation_at_a_live_address_leaves_the_old_objects_group)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t a = tb_stack(&b, "first_owner", 2), c = tb_stack(&b, "second_owner", 2);
    tb_alloc(&b, 0x100000000, 3 * TB_GIB, a);
    tb_alloc(&b, 0x100000000, TB_GIB, c); /* its free was never recorded */
    tb_finish(&b, 1);
    struct two_passes p;
    run(&p, &b, 4, 16);
    const struct cmt_site_timeline_device *d = cmt_site_timeline_device(&p.tl, 0);
    cr_assert_not_null(d);
    cr_expect_eq(d->live[group(&p, a)], 0);
    cr_expect_eq(d->live[group(&p, c)], TB_GIB);
    cr_expect_eq(d->tracked, TB_GIB);
    done(&p);
    tb_free_builder(&b);
}

Test(site_timeline, a_reset_is_caught_by_the_device_total)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t a = tb_stack(&b, "kept", 2), c = tb_stack(&b, "also_kept", 2);
    tb_alloc(&b, 0x100000000, 3 * TB_GIB, a);
    tb_alloc(&b, 0x200000000, TB_GIB, c);
    tb_event(&b, TB_RESET, 0, 0, 0, 0, NULL); /* frees everything on device 0 */
    tb_finish(&b, 1);
    struct two_passes p;
    run(&p, &b, 4, 16);
    const struct cmt_site_timeline_device *d = cmt_site_timeline_device(&p.tl, 0);
    cr_assert_not_null(d);
    cr_expect_eq(cmt_replay_device(p.first, 0)->live_bytes, 0);
    cr_expect_eq(sum(d->live, p.tl.group_count), 0);
    done(&p);
    tb_free_builder(&b);
}
