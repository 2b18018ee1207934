/* Tests of the allocator's lives over the run (tools/analysis/alloc_history.c): each block's
 * alloc, free request and completion, segments' lives, the peaks, the largest blocks, the rest
 * and the tree of stacks at a moment. */
#include <criterion/criterion.h>

#include "alloc_history.h"
#include "allocator.h"
#include "reader.h"
#include "replay.h"
#include "trace_builder.h"

#define MIB(x) ((uint64_t)(x) << 20)
#define SEG UINT64_C(0x7f0000000000)

/* The pass the page makes: the allocator view, then the history that reads it. */
static struct {
    cmt_reader *reader;
    cmt_replay *rp;
    cmt_alloc *alloc;
    cmt_alloc_history *hist;
} pass;

static void analyse(struct tb *b, uint32_t points)
{
    cr_assert_eq(cmt_reader_open_memory(&pass.reader, b->buf.data, b->buf.len), 0);
    cr_assert_eq(cmt_alloc_create(&pass.alloc), 0);
    cr_assert_eq(cmt_alloc_history_create(&pass.hist, pass.alloc, points), 0);
    struct cmt_observer obs[] = {cmt_alloc_observer(pass.alloc),
                                 cmt_alloc_history_observer(pass.hist)};
    cr_assert_eq(cmt_replay_create(&pass.rp, pass.reader), 0);
    cr_assert_eq(cmt_replay_run(pass.rp, obs, 2), 0);
}

static void done(struct tb *b)
{
    cmt_alloc_history_destroy(pass.hist);
    cmt_alloc_destroy(pass.alloc);
    cmt_replay_destroy(pass.rp);
    cmt_reader_close(pass.reader);
    tb_free_builder(b);
}

/* events: 0 segment, 1 pass.alloc A (4), 2 pass.alloc B (6), 3 pass.alloc C (2), 4-5 free B, 6 pass.alloc D (8):
 * allocated 12 MiB at event 3 is the peak until D makes it 14 at 6. With stacks: A and D from
 * forward, B and C from step, both under <module>. */
static void four_blocks(struct tb *b, int stacks)
{
    tb_begin(b, 8 * TB_GIB, 8 * TB_GIB);
    uint32_t s1 = 0, s2 = 0;
    if (stacks) {
        uint32_t top = tb_source_frame(b, 0, "<module>", "train.py", 7);
        s1 = tb_source_frame(b, top, "forward", "model.py", 42);
        s2 = tb_source_frame(b, top, "step", "optim.py", 9);
    }
    tb_allocator(b, 1, "");
    tb_segment(b, SEG, MIB(40), 0);
    tb_block(b, SEG, MIB(4), MIB(3), s1, 0);
    tb_block(b, SEG + MIB(4), MIB(6), MIB(6), s2, 0);
    tb_block(b, SEG + MIB(10), MIB(2), MIB(2), s2, 0);
    tb_block_free(b, SEG + MIB(4), MIB(6));
    tb_block(b, SEG + MIB(12), MIB(8), MIB(8), s1, 0);
    tb_finish(b, 1);
}

Test(alloc_history, lives_follow_the_allocator_events)
{
    struct tb b;
    four_blocks(&b, 0);
    analyse(&b, 64);
    cr_expect_eq(cmt_alloc_history_events(pass.hist), 7);
    size_t n;
    const struct cmt_alloc_life *l = cmt_alloc_history_blocks(pass.hist, &n);
    cr_assert_eq(n, 4);
    cr_expect_eq(l[1].size, MIB(6));
    cr_expect_eq(l[1].alloc_seq, 2);
    cr_expect_eq(l[1].free_seq, 4);
    cr_expect_eq(l[1].done_seq, 5);
    cr_expect_eq(l[0].free_seq, CMT_ALLOC_NEVER);
    cr_expect_eq(l[0].requested, MIB(3));
    const struct cmt_alloc_segment_life *s = cmt_alloc_history_segments(pass.hist, &n);
    cr_assert_eq(n, 1);
    cr_expect_eq(s[0].from_seq, 0);
    cr_expect_eq(s[0].to_seq, CMT_ALLOC_NEVER);
    cr_expect_eq(s[0].size, MIB(40));
    struct cmt_alloc_moment m;
    cr_assert_eq(cmt_alloc_history_peak(pass.hist, 0, 0, &m), 0);
    cr_expect_eq(m.seq, 6);
    cr_expect_eq(m.bytes, MIB(14)); /* 4 + 2 + 8: the allocator's own peak */
    cr_expect_eq(m.bytes, cmt_alloc_device(pass.alloc, 0, 0)->peak.allocated_bytes);
    cr_assert_eq(cmt_alloc_history_peak(pass.hist, 0, 1, &m), 0);
    cr_expect_eq(m.bytes, MIB(40));
    cr_expect_eq(cmt_alloc_history_peak(pass.hist, 3, 0, &m), CMT_ENOT_FOUND);
    done(&b);
}

Test(alloc_history, largest_blocks_and_the_rest)
{
    struct tb b;
    four_blocks(&b, 0);
    analyse(&b, 64);
    size_t *order, n = cmt_alloc_history_largest(pass.hist, 0, 2, &order);
    cr_assert_eq(n, 2);
    cr_expect_eq(order[0], 3); /* D, 8 MiB */
    cr_expect_eq(order[1], 1); /* B, 6 MiB */
    unsigned char chosen[4] = {0, 1, 0, 1};
    struct cmt_alloc_history_point *p;
    size_t m = cmt_alloc_history_rest(pass.hist, 0, chosen, 64, &p);
    cr_assert_eq(m, 2); /* A at 1, C at 3 */
    cr_expect_eq(p[0].seq, 1);
    cr_expect_eq(p[0].allocated, MIB(4));
    cr_expect_eq(p[1].seq, 3);
    cr_expect_eq(p[1].allocated, MIB(6));
    free(p);
    free(order);
    done(&b);
}

Test(alloc_history, series_keep_the_peak_when_halved)
{
    struct tb b;
    four_blocks(&b, 0);
    analyse(&b, 2); /* 7 events into 2 points: pairs merged twice */
    size_t n;
    const struct cmt_alloc_history_point *p = cmt_alloc_history_series(pass.hist, 0, &n);
    cr_assert_leq(n, 2);
    uint64_t best = 0;
    for (size_t i = 0; i < n; i++)
        best = p[i].allocated > best ? p[i].allocated : best;
    cr_expect_eq(best, MIB(14));
    cr_expect_eq(p[0].reserved, MIB(40));
    done(&b);
}

Test(alloc_history, tree_at_the_peak_sums_by_frame)
{
    struct tb b;
    four_blocks(&b, 1);
    analyse(&b, 64);
    struct cmt_alloc_tree_node *t;
    size_t n = cmt_alloc_history_tree(pass.hist, pass.reader, 0, 6, 16, &t);
    cr_assert_eq(n, 4); /* root, <module>, forward, step */
    cr_expect_eq(t[0].node, 0);
    cr_expect_eq(t[0].parent, -1);
    cr_expect_eq(t[0].bytes, MIB(14));
    cr_expect_eq(t[1].bytes, MIB(14));
    cr_expect_eq(t[1].parent, 0);
    cr_expect_eq(t[2].bytes, MIB(12)); /* forward: A and D */
    cr_expect_eq(t[2].blocks, 2);
    cr_expect_eq(t[2].parent, 1);
    cr_expect_eq(t[3].bytes, MIB(2)); /* step: C (B was freed) */
    free(t);
    done(&b);
}
