/* Tests of out-of-memory episodes (tools/analysis/oom.c). */
#include <criterion/criterion.h>

#include "oom.h"
#include "reader.h"
#include "replay.h"
#include "trace_builder.h"

static cmt_reader *reader;
static cmt_replay *rp;
static cmt_oom *oom;

static void analyse(struct tb *b)
{
    cr_assert_eq(cmt_reader_open_memory(&reader, b->buf.data, b->buf.len), 0);
    cr_assert_eq(cmt_replay_create(&rp, reader), 0);
    cr_assert_eq(cmt_oom_create(&oom), 0);
    struct cmt_replay_step st;
    int rc;
    while ((rc = cmt_replay_next(rp, &st)) > 0)
        cmt_oom_observe(oom, rp, &st);
    cr_assert_eq(rc, 0);
    cmt_replay_finish(rp);
    cmt_oom_finish(oom, rp);
}

static void done(struct tb *b)
{
    cmt_oom_destroy(oom);
    cmt_replay_destroy(rp);
    cmt_reader_close(reader);
    tb_free_builder(b);
}

/* PyTorch's pattern: segments fill the device, a large request fails, cached segments are
 * freed, the request fails again. */
Test(oom, fail_free_fail_is_one_episode_exhausted_by_process)
{
    struct tb b;
    const uint64_t total = 24 * TB_GIB, overhead = 300 * TB_MIB;
    tb_begin(&b, total, total - overhead);
    uint32_t segments = tb_stack(&b, "segment_alloc", 4), small = tb_stack(&b, "small_alloc", 4);
    uint64_t used = overhead;
    for (int i = 0; i < 20; i++, used += TB_GIB)
        tb_alloc(&b, 0x700000000000 + (uint64_t)i * 2 * TB_GIB, TB_GIB, segments);
    for (int i = 0; i < 3; i++, used += 100 * TB_MIB)
        tb_alloc(&b, 0x710000000000 + (uint64_t)i * TB_GIB, 100 * TB_MIB, small);
    const uint64_t request = 6ull * TB_GIB + 123456;
    uint64_t seq = tb_alloc_fail(&b, request, small);
    tb_meminfo(&b, CMT_MEMINFO_OOM, total - used, total, seq);
    tb_free(&b, 0x700000000000);
    tb_free(&b, 0x700000000000 + 2 * TB_GIB);
    seq = tb_alloc_fail(&b, request, small);
    tb_meminfo(&b, CMT_MEMINFO_OOM, total - used + 2 * TB_GIB, total, seq);
    tb_finish(&b, 0);
    analyse(&b);

    cr_assert_eq(cmt_oom_count(oom), 1);
    const struct cmt_oom_episode *e = cmt_oom_episode(oom, 0);
    cr_expect_eq(e->request_bytes, request);
    cr_expect_str_eq(e->api, "cuMemAlloc_v2");
    cr_expect_eq(e->attempts, 2);
    cr_expect_eq(e->frees_between, 2);
    cr_expect_eq(e->released_bytes, 2 * TB_GIB);
    cr_expect(e->fatal);
    cr_expect(e->have_meminfo);
    cr_expect_eq(e->free_bytes, total - used);
    cr_expect_eq(e->total_bytes, total);
    cr_expect_eq(e->process_bytes, 20 * TB_GIB + 300 * TB_MIB);
    cr_expect_eq(e->others_bytes, overhead);
    cr_expect_eq(e->verdict, CMT_VERDICT_EXHAUSTED_BY_PROCESS);
    cr_expect(e->hint_retention);
    cr_assert_geq(e->holder_count, 2);
    cr_expect_eq(e->holders[0].stack, segments);
    cr_expect_eq(e->holders[0].bytes, 20 * TB_GIB);
    cr_expect_eq(e->holders[0].count, 20);
    done(&b);
}

Test(oom, device_filled_by_others_is_held_by_others)
{
    struct tb b;
    const uint64_t total = 24 * TB_GIB, others = 20 * TB_GIB;
    tb_begin(&b, total, total - others);
    uint32_t s = tb_stack(&b, "fill", 2);
    tb_alloc(&b, 0x700000000000, 2 * TB_GIB, s);
    uint64_t seq = tb_alloc_fail(&b, 4 * TB_GIB, s);
    tb_meminfo(&b, CMT_MEMINFO_OOM, 2 * TB_GIB, total, seq);
    tb_finish(&b, 1);
    analyse(&b);
    cr_assert_eq(cmt_oom_count(oom), 1);
    const struct cmt_oom_episode *e = cmt_oom_episode(oom, 0);
    cr_expect_eq(e->verdict, CMT_VERDICT_HELD_BY_OTHERS);
    cr_expect_eq(e->others_bytes, others);
    cr_expect_eq(e->shortfall_bytes, 2 * TB_GIB);
    done(&b);
}

Test(oom, verdicts_over_capacity_and_fragmentation)
{
    struct tb b;
    tb_begin(&b, 8 * TB_GIB, 8 * TB_GIB);
    uint64_t seq = tb_alloc_fail(&b, 9 * TB_GIB, 0);
    tb_meminfo(&b, CMT_MEMINFO_OOM, 8 * TB_GIB, 8 * TB_GIB, seq);
    tb_alloc(&b, 0x1000000, TB_MIB, 0); /* a different request ends the episode */
    seq = tb_alloc_fail(&b, TB_GIB, 0);
    tb_meminfo(&b, CMT_MEMINFO_OOM, 2 * TB_GIB, 8 * TB_GIB, seq);
    tb_alloc(&b, 0x9000000, TB_GIB, 0); /* the retry succeeds */
    tb_finish(&b, 1);
    analyse(&b);
    cr_assert_eq(cmt_oom_count(oom), 2);
    cr_expect_eq(cmt_oom_episode(oom, 0)->verdict, CMT_VERDICT_OVER_CAPACITY);
    cr_expect(cmt_oom_episode(oom, 0)->fatal);
    cr_expect_eq(cmt_oom_episode(oom, 1)->verdict, CMT_VERDICT_FRAGMENTATION);
    cr_expect_not(cmt_oom_episode(oom, 1)->fatal);
    cr_expect_eq(cmt_oom_episode(oom, 1)->attempts, 2);
    done(&b);
}

Test(oom, leak_hint_for_a_site_that_never_frees)
{
    struct tb b;
    tb_begin(&b, 4 * TB_GIB, 4 * TB_GIB);
    uint32_t leak = tb_stack(&b, "leaky", 2);
    for (int i = 0; i < 30; i++)
        tb_alloc(&b, 0x700000000000 + (uint64_t)i * 256 * TB_MIB, 128 * TB_MIB, leak);
    uint64_t seq = tb_alloc_fail(&b, 512 * TB_MIB, 0);
    tb_meminfo(&b, CMT_MEMINFO_OOM, 200 * TB_MIB, 4 * TB_GIB, seq);
    tb_finish(&b, 1);
    analyse(&b);
    cr_assert_eq(cmt_oom_count(oom), 1);
    cr_expect_eq(cmt_oom_episode(oom, 0)->hint_leak, 1);
    done(&b);
}

/* NCCL's NVLS buffer (physical memory bound into a multicast object and mapped through it)
 * holds its bytes once: the episode's process bytes and holders do not count them twice. */
Test(oom, memory_bound_into_a_multicast_object_is_held_once)
{
    struct tb b;
    const uint64_t total = 24 * TB_GIB;
    tb_begin(&b, total, total);
    uint32_t nvls = tb_stack(&b, "nvls_alloc", 3), user = tb_stack(&b, "user_alloc", 3);
    tb_event(&b, TB_CREATE, 0, 0, nvls, CMT_F(HANDLE) | CMT_F(SIZE),
             (uint64_t[]){8 * TB_GIB, 0x77});
    tb_event(&b, TB_MC_CREATE, 0, 0, nvls, CMT_F(SIZE) | CMT_F(HANDLE),
             (uint64_t[]){8 * TB_GIB, 0x99});
    tb_event(&b, TB_MC_BIND_MEM, 0, 0, nvls,
             CMT_F(PTR) | CMT_F(SIZE) | CMT_F(HANDLE) | CMT_F(OFFSET),
             (uint64_t[]){0x77, 8 * TB_GIB, 0x99, 0});
    tb_event(&b, TB_MAP, 0, 0, nvls, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(OFFSET) | CMT_F(HANDLE),
             (uint64_t[]){0x7000000000, 8 * TB_GIB, 0x99, 0});
    tb_alloc(&b, 0x7f0000000000, 4 * TB_GIB, user);
    uint64_t seq = tb_alloc_fail(&b, 16 * TB_GIB, user);
    tb_meminfo(&b, CMT_MEMINFO_OOM, total - 12 * TB_GIB, total, seq);
    tb_finish(&b, 0);
    analyse(&b);
    cr_assert_eq(cmt_oom_count(oom), 1);
    const struct cmt_oom_episode *e = cmt_oom_episode(oom, 0);
    cr_expect_eq(e->process_bytes, 12 * TB_GIB, "8 GiB bound + 4 GiB, the binding not again");
    cr_expect_eq(e->others_bytes, 0);
    cr_assert_eq(e->holder_count, 2);
    cr_expect_eq(e->holders[0].stack, nvls);
    cr_expect_eq(e->holders[0].bytes, 8 * TB_GIB);
    cr_expect_eq(e->holders[1].bytes, 4 * TB_GIB);
    done(&b);
}
