/* test_snapshot_ranges.c — the set of mapped ranges the snapshot import keeps for expandable
 * segments (tools/snapshot/snapshot_ranges.c). */
#include <criterion/criterion.h>

#include "snapshot_ranges.h"

struct seen {
    uint64_t start[8], end[8];
    int n;
};

static int collect(void *ctx, uint64_t start, uint64_t end)
{
    struct seen *s = ctx;
    cr_assert_lt(s->n, 8);
    s->start[s->n] = start;
    s->end[s->n++] = end;
    return 0;
}

Test(snapshot_ranges, adding_joins_what_touches_or_overlaps)
{
    struct cmt__ranges r = {0};
    cr_assert_eq(cmt__ranges_add(&r, 100, 200), 0);
    cr_assert_eq(cmt__ranges_add(&r, 300, 400), 0);
    cr_assert_eq(r.n, 2);
    cr_assert_eq(cmt__ranges_add(&r, 200, 300), 0); /* closes the hole */
    cr_assert_eq(r.n, 1);
    cr_expect_eq(r.v[0].start, 100);
    cr_expect_eq(r.v[0].end, 400);
    cr_assert_eq(cmt__ranges_add(&r, 50, 120), 0);
    cr_expect_eq(r.v[0].start, 50);
    cmt__ranges_free(&r);
}

Test(snapshot_ranges, removing_a_middle_splits_and_names_what_was_not_there)
{
    struct cmt__ranges r = {0};
    struct seen s = {0};
    cmt__ranges_add(&r, 0, 100);
    cr_assert_eq(cmt__ranges_remove(&r, 20, 80, collect, &s), 0);
    cr_expect_eq(s.n, 0); /* all of it was mapped in the window */
    cr_assert_eq(r.n, 2);
    cr_expect_eq(r.v[0].end, 20);
    cr_expect_eq(r.v[1].start, 80);
    cr_assert_eq(cmt__ranges_remove(&r, 10, 90, collect, &s), 0); /* over the hole */
    cr_assert_eq(s.n, 1);
    cr_expect_eq(s.start[0], 20);
    cr_expect_eq(s.end[0], 80);
    cr_assert_eq(r.n, 2);
    cr_expect_eq(r.v[0].end, 10);
    cr_expect_eq(r.v[1].start, 90);
    cmt__ranges_free(&r);
}

Test(snapshot_ranges, gaps_are_the_parts_not_held)
{
    struct cmt__ranges r = {0};
    struct seen s = {0};
    cmt__ranges_add(&r, 100, 200);
    cmt__ranges_add(&r, 300, 400);
    cr_assert_eq(cmt__ranges_gaps(&r, 50, 450, collect, &s), 0);
    cr_assert_eq(s.n, 3);
    cr_expect_eq(s.start[0], 50);
    cr_expect_eq(s.end[0], 100);
    cr_expect_eq(s.start[1], 200);
    cr_expect_eq(s.end[1], 300);
    cr_expect_eq(s.start[2], 400);
    cr_expect_eq(s.end[2], 450);
    s.n = 0;
    cr_assert_eq(cmt__ranges_gaps(&r, 120, 180, collect, &s), 0);
    cr_expect_eq(s.n, 0);
    cmt__ranges_free(&r);
}
