/* test_phases.c — tools/analysis/phases.h on hand-built traces: pushes nest per thread and pop
 * by domain, a start/end range covers the threads without a push, figures per phase (bytes
 * allocated, peak, still live), the phase path at an OOM, ranges left open. */
#include <criterion/criterion.h>
#include <string.h>

#include "phases.h"
#include "replay.h"
#include "trace_builder.h"

static void range(struct tb *b, uint32_t action, uint32_t tid, uint32_t domain, uint64_t id,
                  const char *message)
{
    b->t_ns += 10;
    cr_assert_eq(cmt_writer_range(b->w, &(struct cmt_range){.action = action,
                                                            .t_ns = b->t_ns,
                                                            .tid = tid,
                                                            .domain = domain,
                                                            .id = id,
                                                            .message = message}),
                 0);
}

static cmt_reader *reader;
static cmt_replay *replay;

static void analyse(struct tb *b, struct cmt_phases *ph)
{
    cr_assert_eq(cmt_reader_open_memory(&reader, b->buf.data, b->buf.len), 0);
    cr_assert_eq(cmt_replay_create(&replay, reader), 0);
    struct cmt_observer o = cmt_phases_observer(ph);
    cr_assert_eq(cmt_replay_run(replay, &o, 1), 0);
}

static void done(struct tb *b, struct cmt_phases *ph)
{
    cmt_phases_free(ph);
    cmt_replay_destroy(replay);
    cmt_reader_close(reader);
    tb_free_builder(b);
}

static const struct cmt_phase_stats *of(const struct cmt_phases *ph, const char *name)
{
    uint32_t i = cmt_phases_find(ph, name);
    cr_assert(i, "phase %s", name);
    return cmt_phases_stats(ph, i);
}

/* The events of the builder are on thread 77. */
Test(phases, pushes_nest_on_their_thread_and_pop_by_domain)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t s = tb_stack(&b, "f", 2);
    range(&b, CMT_RA_DOMAIN, 77, 1, 0, "nccl");
    range(&b, CMT_RA_PUSH, 77, 0, 0, "outer");
    range(&b, CMT_RA_PUSH, 77, 1, 0, "allreduce");
    range(&b, CMT_RA_PUSH, 78, 0, 0, "elsewhere"); /* another thread's: covers nothing of 77 */
    tb_alloc(&b, 0x1000000, TB_MIB, s);
    range(&b, CMT_RA_POP, 77, 0, 0, NULL); /* closes "outer", under the domain's push */
    tb_alloc(&b, 0x2000000, 2 * TB_MIB, s);
    range(&b, CMT_RA_POP, 77, 1, 0, NULL);
    range(&b, CMT_RA_POP, 77, 1, 0, NULL); /* nothing open in the domain: unmatched */
    tb_alloc(&b, 0x3000000, 4 * TB_MIB, s);
    tb_free(&b, 0x1000000);
    tb_finish(&b, 1);
    struct cmt_phases ph;
    analyse(&b, &ph);
    const struct cmt_phase_stats *ar = of(&ph, "nccl:allreduce");
    cr_expect_eq(ar->alloc_count, 2);
    cr_expect_eq(ar->alloc_bytes, 3 * TB_MIB);
    cr_expect_eq(ar->free_count, 1);
    cr_expect_eq(ar->live_bytes, 2 * TB_MIB, "the 1 MiB was freed, the 2 MiB is still live");
    cr_expect_eq(ar->peak_bytes, 3 * TB_MIB);
    cr_expect_eq(of(&ph, "outer")->alloc_count, 0, "the domain's push is the innermost");
    cr_expect_eq(of(&ph, "outer")->peak_bytes, TB_MIB, "open while 1 MiB was live");
    cr_expect_eq(of(&ph, "elsewhere")->alloc_count, 0);
    cr_expect_eq(of(&ph, "elsewhere")->peak_bytes, 7 * TB_MIB, "open (never popped) to the end");
    cr_expect_eq(cmt_phases_stats(&ph, 0)->alloc_bytes, 4 * TB_MIB, "after the pops: no phase");
    cr_expect_eq(ph.unmatched, 1);
    cr_assert_eq(ph.range_count, 3);
    cr_expect_eq(ph.ranges[1].depth, 1);
    cr_expect_eq(ph.ranges[1].parent, 0, "its parent, closed under it, was spliced out");
    cr_expect(!ph.ranges[0].open && !ph.ranges[1].open);
    cr_expect(ph.ranges[2].open);
    cr_expect_eq(ph.ranges[2].end_ns, ph.end_ns, "an open range lasts to the trace's end");
    cr_expect(!ph.have_blocks);
    done(&b, &ph);
}

Test(phases, a_start_range_covers_threads_without_a_push_and_names_the_oom)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t s = tb_stack(&b, "f", 2);
    range(&b, CMT_RA_START, 78, 0, 5, "epoch"); /* started on another thread */
    tb_alloc(&b, 0x1000000, TB_MIB, s);
    range(&b, CMT_RA_PUSH, 77, 0, 0, "forward");
    tb_alloc(&b, 0x2000000, 2 * TB_MIB, s);
    uint64_t seq = tb_alloc_fail(&b, 30 * TB_GIB, s);
    tb_meminfo(&b, CMT_MEMINFO_OOM, 21 * TB_GIB, 24 * TB_GIB, seq);
    range(&b, CMT_RA_POP, 77, 0, 0, NULL);
    range(&b, CMT_RA_END, 77, 0, 5, NULL); /* ended on this one */
    range(&b, CMT_RA_END, 77, 0, 6, NULL); /* no such range */
    tb_alloc(&b, 0x3000000, 4 * TB_MIB, s);
    tb_finish(&b, 1);
    struct cmt_phases ph;
    analyse(&b, &ph);
    cr_expect_eq(of(&ph, "epoch")->alloc_bytes, TB_MIB);
    cr_expect_eq(of(&ph, "epoch")->peak_bytes, 3 * TB_MIB, "open while the 2 MiB was made");
    cr_expect_eq(of(&ph, "forward")->alloc_bytes, 2 * TB_MIB);
    cr_expect_eq(of(&ph, "forward")->failures, 1);
    cr_expect_eq(of(&ph, "forward")->live_bytes, 2 * TB_MIB);
    cr_expect_eq(cmt_phases_stats(&ph, 0)->alloc_bytes, 4 * TB_MIB);
    cr_assert_eq(ph.oom_count, 1);
    cr_expect_eq(ph.ooms[0].phase, cmt_phases_find(&ph, "forward"));
    cr_expect_str_eq(ph.ooms[0].path, "epoch > forward");
    cr_expect_eq(ph.ooms[0].request, 30 * TB_GIB);
    cr_expect_eq(ph.unmatched, 1);
    uint32_t order[4];
    cr_assert_eq(cmt_phases_ranked(&ph, order, 4), 2);
    cr_expect_eq(order[0], cmt_phases_find(&ph, "forward"), "peaks tie (3 MiB): more bytes first");
    done(&b, &ph);
}

Test(phases, allocator_blocks_are_the_level_shown_when_the_trace_has_them)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t s = tb_stack(&b, "f", 2);
    tb_allocator(&b, 1, "");
    tb_alloc(&b, 0x1000000, 20 * TB_MIB, s); /* the segment, outside every range */
    tb_segment(&b, 0x1000000, 20 * TB_MIB, 0);
    range(&b, CMT_RA_PUSH, 77, 0, 0, "step");
    tb_block(&b, 0x1000000, 4 * TB_MIB, 4 * TB_MIB, s, 0);
    tb_block(&b, 0x1400000, 2 * TB_MIB, 2 * TB_MIB, s, 0);
    tb_block_free(&b, 0x1000000, 4 * TB_MIB);
    range(&b, CMT_RA_POP, 77, 0, 0, NULL);
    tb_finish(&b, 1);
    struct cmt_phases ph;
    analyse(&b, &ph);
    cr_expect(ph.have_blocks);
    const struct cmt_phase_stats *st = of(&ph, "step");
    cr_expect_eq(st->alloc_count, 2);
    cr_expect_eq(st->alloc_bytes, 6 * TB_MIB);
    cr_expect_eq(st->peak_bytes, 6 * TB_MIB, "blocks live at once");
    cr_expect_eq(st->live_bytes, 2 * TB_MIB);
    cr_expect_eq(ph.phases[cmt_phases_find(&ph, "step")].driver.alloc_count, 0,
                 "the segment was got before the range opened");
    cr_expect_eq(ph.phases[0].driver.alloc_bytes, 0, "before the first range: not followed");
    done(&b, &ph);
}

/* A snapshot's blocks (merged by record --torch) carry no thread (tid 0): they fall in the
 * push ranges of the latest driver call's thread, or in a start range opened inside them. */
Test(phases, blocks_of_no_thread_follow_the_latest_driver_calls_thread)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t s = tb_stack(&b, "f", 2);
    tb_allocator(&b, 1, "");
    range(&b, CMT_RA_PUSH, 78, 0, 0, "other_thread"); /* open, but not the caller's */
    range(&b, CMT_RA_PUSH, 77, 0, 0, "load");
    tb_alloc(&b, 0x1000000, 20 * TB_MIB, s); /* on 77 */
    b.tid = 0;
    tb_segment(&b, 0x1000000, 20 * TB_MIB, 0);
    tb_block(&b, 0x1000000, 4 * TB_MIB, 4 * TB_MIB, s, 0);
    range(&b, CMT_RA_START, 0, 0, 1, "optimizer"); /* record_function: opened later */
    tb_block(&b, 0x1400000, 2 * TB_MIB, 2 * TB_MIB, s, 0);
    range(&b, CMT_RA_END, 0, 0, 1, NULL);
    tb_block(&b, 0x1600000, 1 * TB_MIB, 1 * TB_MIB, s, 0);
    b.tid = 77;
    range(&b, CMT_RA_POP, 77, 0, 0, NULL);
    b.tid = 0;
    tb_block(&b, 0x1700000, 1 * TB_MIB, 1 * TB_MIB, s, 0);
    b.tid = 77;
    tb_finish(&b, 1);
    struct cmt_phases ph;
    analyse(&b, &ph);
    cr_expect_eq(of(&ph, "load")->alloc_bytes, 5 * TB_MIB, "the 4 MiB and the 1 MiB");
    cr_expect_eq(of(&ph, "optimizer")->alloc_bytes, 2 * TB_MIB, "the start range, inside load");
    cr_expect_eq(of(&ph, "other_thread")->alloc_bytes, 0);
    cr_expect_eq(ph.phases[0].blocks.alloc_bytes, TB_MIB, "after the pop: no phase");
    done(&b, &ph);
}
