/* Unit tests of the caching-allocator model (tools/model). Figures are hand
 * checked against PyTorch's algorithm; the comments give the working. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "caching_model.h"
#include "model_scenario.h"

#define MiB CMT_MODEL_MIB
#define GiB CMT_MODEL_GIB
#define UNLIMITED 0

static struct cmt_model *make(uint64_t capacity, uint64_t split, bool expandable)
{
    struct cmt_model_config c;
    cmt_model_config_default(&c, capacity);
    c.max_split_size = split;
    c.expandable_segments = expandable;
    struct cmt_model *m = NULL;
    cr_assert_eq(cmt_model_create(&c, &m), CMT_EOK);
    return m;
}

static cmt_model_handle alloc_ok(struct cmt_model *m, uint64_t size, uint64_t stream)
{
    cmt_model_handle h = 0;
    int rc = cmt_model_alloc(m, size, stream, &h);
    cr_assert_eq(rc, CMT_EOK, "alloc of %llu failed: %s", (unsigned long long)size,
                 cmt_strerror(rc));
    cr_assert_eq(cmt_model_check(m), CMT_EOK);
    return h;
}

static void free_ok(struct cmt_model *m, cmt_model_handle h)
{
    cr_assert_eq(cmt_model_free(m, h), CMT_EOK);
    cr_assert_eq(cmt_model_check(m), CMT_EOK);
}

static struct cmt_model_stats stats_of(const struct cmt_model *m)
{
    struct cmt_model_stats s;
    cmt_model_get_stats(m, &s);
    return s;
}

static uint64_t offset_of(const struct cmt_model *m, cmt_model_handle h)
{
    struct cmt_model_block b;
    cr_assert_eq(cmt_model_block_info(m, h, &b), CMT_EOK);
    return b.segment_offset;
}

/* ---- sizing ----------------------------------------------------------- */

Test(caching_model, round_size_without_divisions)
{
    struct cmt_model_config c;
    cmt_model_config_default(&c, GiB);
    cr_assert_eq(cmt_model_round_size(&c, 1), 512);
    cr_assert_eq(cmt_model_round_size(&c, 512), 512);
    cr_assert_eq(cmt_model_round_size(&c, 513), 1024);
    cr_assert_eq(cmt_model_round_size(&c, MiB + 1), MiB + 512);
    cr_assert_eq(cmt_model_round_size(&c, 1200 * MiB + 3), 1200 * MiB + 512);
}

Test(caching_model, round_size_with_power2_divisions)
{
    struct cmt_model_config c;
    cmt_model_config_default(&c, GiB);
    c.roundup_power2_divisions = 4;
    /* 1200 MiB lies in [1024, 2048) MiB, cut into steps of 256 MiB. */
    cr_assert_eq(cmt_model_round_size(&c, 1200 * MiB), 1280 * MiB);
    cr_assert_eq(cmt_model_round_size(&c, 1280 * MiB), 1280 * MiB);
    cr_assert_eq(cmt_model_round_size(&c, 1024 * MiB), 1024 * MiB); /* a power of 2 */
    /* Only sizes above 512 x divisions are rounded this way. */
    cr_assert_eq(cmt_model_round_size(&c, 1200), 1536);
    cr_assert_eq(cmt_model_round_size(&c, 2049), 2560); /* [2048,4096) by 512 */
    c.roundup_power2_divisions = 8;
    cr_assert_eq(cmt_model_round_size(&c, 5000), 5120);
    c.roundup_power2_divisions = 2;
    cr_assert_eq(cmt_model_round_size(&c, GiB + 1), GiB + GiB / 2);
    c.roundup_power2_divisions = 1; /* 1 is off */
    cr_assert_eq(cmt_model_round_size(&c, GiB + 1), GiB + 512);
}

Test(caching_model, segment_sizes)
{
    struct cmt_model_config c;
    cmt_model_config_default(&c, GiB);
    cr_assert_eq(cmt_model_segment_size(&c, 512), 2 * MiB);
    cr_assert_eq(cmt_model_segment_size(&c, MiB), 2 * MiB);
    cr_assert_eq(cmt_model_segment_size(&c, MiB + 512), 20 * MiB);
    cr_assert_eq(cmt_model_segment_size(&c, 10 * MiB - 512), 20 * MiB);
    cr_assert_eq(cmt_model_segment_size(&c, 10 * MiB), 10 * MiB);
    cr_assert_eq(cmt_model_segment_size(&c, 11 * MiB + 512), 12 * MiB);
}

Test(caching_model, small_and_large_pools)
{
    struct cmt_model *m = make(GiB, UNLIMITED, false);
    cmt_model_handle a = alloc_ok(m, 1000, 0);
    cmt_model_handle b = alloc_ok(m, 1000, 0);
    struct cmt_model_block info;
    cr_assert_eq(cmt_model_block_info(m, b, &info), CMT_EOK);
    cr_assert(info.small_pool);
    cr_assert_eq(info.size, 1024);
    cr_assert_eq(info.segment_offset, 1024); /* packed into a's 2 MiB segment */
    cr_assert_eq(stats_of(m).reserved_bytes, 2 * MiB);
    cr_assert_eq(stats_of(m).segment, 1);
    alloc_ok(m, 11 * MiB, 0); /* large pool, own 12 MiB segment (1 MiB kept) */
    alloc_ok(m, 2 * MiB, 0);  /* large pool, 20 MiB segment */
    alloc_ok(m, 9 * MiB, 0);  /* best fit: the 18 MiB tail of that segment */
    struct cmt_model_stats s = stats_of(m);
    cr_assert_eq(s.reserved_bytes, (2 + 20 + 12) * MiB);
    cr_assert_eq(s.segment, 3);
    cr_assert_eq(s.device_alloc_calls, 3);
    cr_assert_eq(s.allocated_bytes, 2048 + 12 * MiB + 2 * MiB + 9 * MiB);
    cr_assert_eq(s.requested_bytes, 2000 + 11 * MiB + 2 * MiB + 9 * MiB);
    cr_assert_eq(s.inactive_split_bytes, 2 * MiB - 2048 + 9 * MiB);
    (void)a;
    cmt_model_destroy(m);
}

/* ---- split and merge -------------------------------------------------- */

Test(caching_model, split_and_merge)
{
    struct cmt_model *m = make(GiB, UNLIMITED, false);
    cmt_model_handle a = alloc_ok(m, 5 * MiB, 0); /* 20 MiB segment: [a 5][15] */
    struct cmt_model_stats s = stats_of(m);
    cr_assert_eq(s.inactive_split, 1);
    cr_assert_eq(s.inactive_split_bytes, 15 * MiB);
    cmt_model_handle b = alloc_ok(m, 5 * MiB, 0); /* [a 5][b 5][10] */
    cr_assert_eq(offset_of(m, b), 5 * MiB);
    cr_assert_eq(stats_of(m).inactive_split_bytes, 10 * MiB);
    free_ok(m, a); /* [5][b 5][10]: two inactive split blocks */
    s = stats_of(m);
    cr_assert_eq(s.inactive_split, 2);
    cr_assert_eq(s.inactive_split_bytes, 15 * MiB);
    free_ok(m, b); /* everything merges into the whole segment again */
    s = stats_of(m);
    cr_assert_eq(s.inactive_split, 0);
    cr_assert_eq(s.inactive_split_bytes, 0);
    cr_assert_eq(s.allocated_bytes, 0);
    cr_assert_eq(s.reserved_bytes, 20 * MiB);
    cr_assert_eq(cmt_model_empty_cache(m), CMT_EOK);
    s = stats_of(m);
    cr_assert_eq(s.reserved_bytes, 0);
    cr_assert_eq(s.segment, 0);
    cr_assert_eq(s.device_free_calls, 1);
    cmt_model_destroy(m);
}

Test(caching_model, large_remainder_of_one_mib_is_not_split)
{
    struct cmt_model *m = make(GiB, UNLIMITED, false);
    cmt_model_handle a = alloc_ok(m, 19 * MiB + MiB / 2, 0);
    struct cmt_model_block info;
    cmt_model_block_info(m, a, &info);
    cr_assert_eq(info.size, 20 * MiB); /* 0.5 MiB left: kept in the block */
    cr_assert_eq(stats_of(m).inactive_split, 0);
    cr_assert_eq(stats_of(m).requested_bytes, 19 * MiB + MiB / 2);
    /* Small pool: even a remainder of 512 bytes is split off. */
    alloc_ok(m, MiB, 0); /* 2 MiB segment: [1 MiB][1 MiB free] */
    cr_assert_eq(stats_of(m).inactive_split_bytes, MiB);
    cmt_model_handle s1 = alloc_ok(m, MiB - 512, 0);
    cmt_model_block_info(m, s1, &info);
    cr_assert_eq(info.size, MiB - 512);
    cr_assert_eq(info.segment_offset, MiB);
    cr_assert_eq(stats_of(m).inactive_split_bytes, 512);
    cmt_model_destroy(m);
}

Test(caching_model, best_fit_takes_smallest_block)
{
    struct cmt_model *m = make(GiB, UNLIMITED, false);
    cmt_model_handle a = alloc_ok(m, 40 * MiB, 0);
    cmt_model_handle keep = alloc_ok(m, 12 * MiB, 0);
    cmt_model_handle b = alloc_ok(m, 30 * MiB, 0);
    struct cmt_model_block ib;
    cmt_model_block_info(m, b, &ib);
    free_ok(m, a);
    free_ok(m, b);
    cmt_model_handle c = alloc_ok(m, 25 * MiB, 0); /* the 30 MiB block, not the 40 */
    struct cmt_model_block ic;
    cmt_model_block_info(m, c, &ic);
    cr_assert_eq(ic.address, ib.address);
    cr_assert_eq(stats_of(m).reserved_bytes, 82 * MiB);
    (void)keep;
    cmt_model_destroy(m);
}

Test(caching_model, streams_do_not_share_free_blocks)
{
    struct cmt_model *m = make(GiB, UNLIMITED, false);
    cmt_model_handle a = alloc_ok(m, 50 * MiB, 1);
    free_ok(m, a);
    cmt_model_handle b = alloc_ok(m, 50 * MiB, 2); /* stream 1's block is not used */
    cr_assert_eq(stats_of(m).reserved_bytes, 100 * MiB);
    cmt_model_handle c = alloc_ok(m, 50 * MiB, 1); /* stream 1 reuses its own */
    cr_assert_eq(stats_of(m).reserved_bytes, 100 * MiB);
    cr_assert_eq(stats_of(m).segment, 2);
    struct cmt_model_block info;
    cmt_model_block_info(m, c, &info);
    cr_assert_eq(info.stream, 1);
    (void)b;
    cmt_model_destroy(m);
}

Test(caching_model, handles)
{
    struct cmt_model *m = make(GiB, UNLIMITED, false);
    cmt_model_handle z = 1;
    cr_assert_eq(cmt_model_alloc(m, 0, 0, &z), CMT_EOK);
    cr_assert_eq(z, 0);
    cr_assert_eq(cmt_model_free(m, 0), CMT_EOK);
    cmt_model_handle a = alloc_ok(m, 4096, 0);
    free_ok(m, a);
    cr_assert_eq(cmt_model_free(m, a), CMT_EMODEL_BAD_HANDLE);
    cmt_model_handle b = alloc_ok(m, 4096, 0); /* may reuse a's slot */
    cr_assert_eq(cmt_model_free(m, a), CMT_EMODEL_BAD_HANDLE);
    cr_assert_eq(cmt_model_free(m, 12345), CMT_EMODEL_BAD_HANDLE);
    free_ok(m, b);
    cr_assert_eq(cmt_model_alloc(m, (size_t)1 << 60, 0, &z), CMT_EINVALID);
    cr_assert_eq(cmt_model_alloc(NULL, 1, 0, &z), CMT_EINVALID);
    cr_assert_str_eq(cmt_strerror(CMT_EMODEL_OOM), "CUDA out of memory in the model");
    cr_assert_str_eq(cmt_strerror(42), "unknown error");
    struct cmt_model_config c;
    cmt_model_config_default(&c, 0);
    struct cmt_model *bad = NULL;
    cr_assert_eq(cmt_model_create(&c, &bad), CMT_EINVALID);
    cmt_model_destroy(m);
}

/* ---- the hand-checked scenarios (MiB; one stream) --------------------- */

/* A. C=1000: a=alloc(600); free(a); b=alloc(100); c=alloc(600). */
static struct cmt_model *scenario_a(uint64_t split, bool expandable, int *rc, cmt_model_handle *b,
                                    cmt_model_handle *c)
{
    struct cmt_model *m = make(1000 * MiB, split, expandable);
    cmt_model_handle a = alloc_ok(m, 600 * MiB, 0);
    free_ok(m, a);
    *b = alloc_ok(m, 100 * MiB, 0);
    *rc = cmt_model_alloc(m, 600 * MiB, 0, c);
    cr_assert_eq(cmt_model_check(m), CMT_EOK);
    return m;
}

static void expect_a_oom(uint64_t split)
{
    int rc;
    cmt_model_handle b, c;
    struct cmt_model *m = scenario_a(split, false, &rc, &b, &c);
    cr_assert_eq(rc, CMT_EMODEL_OOM);
    struct cmt_model_stats s = stats_of(m);
    cr_assert_eq(s.allocated_bytes, 100 * MiB);
    cr_assert_eq(s.reserved_bytes, 600 * MiB);
    cr_assert_eq(s.inactive_split_bytes, 500 * MiB);
    cr_assert_eq(s.num_ooms, 1);
    cr_assert_eq(s.num_alloc_retries, 1);
    cr_assert_eq(s.device_alloc_calls, 3); /* a, c, c's retry */
    cr_assert_eq(s.device_free_calls, 0);
    const struct cmt_model_oom *o = cmt_model_last_oom(m);
    cr_assert_not_null(o);
    cr_assert_eq(o->device_free, 400 * MiB);
    cr_assert_eq(o->alloc_size, 600 * MiB);
    cr_assert_eq(o->requested, 600 * MiB);
    cr_assert_eq(o->capacity, 1000 * MiB);
    cr_assert_eq(o->reserved, 600 * MiB);
    cmt_model_destroy(m);
}

Test(scenarios, a_unlimited_oom)
{
    expect_a_oom(UNLIMITED);
}
Test(scenarios, a_split_700_oom)
{
    expect_a_oom(700 * MiB);
}

Test(scenarios, a_split_400_fits)
{
    int rc;
    cmt_model_handle b, c;
    struct cmt_model *m = scenario_a(400 * MiB, false, &rc, &b, &c);
    cr_assert_eq(rc, CMT_EOK);
    struct cmt_model_stats s = stats_of(m);
    cr_assert_eq(s.reserved_bytes, 700 * MiB);
    cr_assert_eq(s.oversize_segments, 1);    /* the 600 */
    cr_assert_eq(s.oversize_allocations, 1); /* c in it */
    cr_assert_eq(s.device_alloc_calls, 2);
    cr_assert_eq(s.num_ooms, 0);
    cmt_model_destroy(m);
}

/* B. C=850: a=alloc(500); free(a); b=alloc(300); c=alloc(400). */
Test(scenarios, b_unlimited_oom)
{
    struct cmt_model *m = make(850 * MiB, UNLIMITED, false);
    cmt_model_handle h;
    free_ok(m, alloc_ok(m, 500 * MiB, 0));
    alloc_ok(m, 300 * MiB, 0);
    cr_assert_eq(cmt_model_alloc(m, 400 * MiB, 0, &h), CMT_EMODEL_OOM);
    struct cmt_model_stats s = stats_of(m);
    cr_assert_eq(s.allocated_bytes, 300 * MiB);
    cr_assert_eq(s.reserved_bytes, 500 * MiB);
    cmt_model_destroy(m);
}

Test(scenarios, b_split_200_fits)
{
    struct cmt_model *m = make(850 * MiB, 200 * MiB, false);
    free_ok(m, alloc_ok(m, 500 * MiB, 0));
    alloc_ok(m, 300 * MiB, 0); /* 500 >= 300 + 20: refused, own segment */
    cr_assert_eq(stats_of(m).reserved_bytes, 800 * MiB);
    alloc_ok(m, 400 * MiB, 0); /* fails once, 500 released, retry fits */
    struct cmt_model_stats s = stats_of(m);
    cr_assert_eq(s.reserved_bytes, 700 * MiB);
    cr_assert_eq(s.oversize_segments, 2);
    cr_assert_eq(s.device_alloc_calls, 4);
    cr_assert_eq(s.device_free_calls, 1);
    cr_assert_eq(s.num_alloc_retries, 0); /* release_available is not a retry */
    cmt_model_destroy(m);
}

/* C. C=30: x=alloc(4); free(x); y=alloc(4). */
Test(scenarios, c_unlimited_reuses)
{
    struct cmt_model *m = make(30 * MiB, UNLIMITED, false);
    free_ok(m, alloc_ok(m, 4 * MiB, 0));
    alloc_ok(m, 4 * MiB, 0);
    struct cmt_model_stats s = stats_of(m);
    cr_assert_eq(s.reserved_bytes, 20 * MiB);
    cr_assert_eq(s.device_alloc_calls, 1);
    cr_assert_eq(s.device_free_calls, 0);
    cmt_model_destroy(m);
}

Test(scenarios, c_split_20_releases_and_reallocates)
{
    struct cmt_model *m = make(30 * MiB, 20 * MiB, false);
    free_ok(m, alloc_ok(m, 4 * MiB, 0));
    alloc_ok(m, 4 * MiB, 0);
    struct cmt_model_stats s = stats_of(m);
    cr_assert_eq(s.reserved_bytes, 20 * MiB);
    cr_assert_eq(s.device_alloc_calls, 3); /* ok, failed, ok */
    cr_assert_eq(s.device_free_calls, 1);
    cr_assert_eq(s.oversize_segments, 1);
    cr_assert_eq(s.oversize_allocations, 0); /* the 4 MiB block is split off */
    cmt_model_destroy(m);
}

/* D. Scenario A with expandable segments: b at [0,100), c at [100,700). */
static void expect_d(uint64_t split)
{
    int rc;
    cmt_model_handle b, c;
    struct cmt_model *m = scenario_a(split, true, &rc, &b, &c);
    cr_assert_eq(rc, CMT_EOK);
    cr_assert_eq(stats_of(m).reserved_bytes, 700 * MiB);
    struct cmt_model_block ib, ic;
    cmt_model_block_info(m, b, &ib);
    cmt_model_block_info(m, c, &ic);
    cr_assert(ib.expandable && ic.expandable);
    cr_assert_eq(ib.segment_offset, 0);
    cr_assert_eq(ib.size, 100 * MiB);
    cr_assert_eq(ic.segment_offset, 100 * MiB);
    cr_assert_eq(ic.size, 600 * MiB);
    cr_assert_eq(stats_of(m).device_alloc_calls, 2); /* map 600, map 100 more */
    cmt_model_destroy(m);
}

Test(scenarios, d_expandable_unlimited)
{
    expect_d(UNLIMITED);
}
Test(scenarios, d_expandable_split_400)
{
    expect_d(400 * MiB);
}
Test(scenarios, d_expandable_split_700)
{
    expect_d(700 * MiB);
}

/* ---- release paths ---------------------------------------------------- */

/* Found by tests/oracle against c10 2.6: release_available_cached_blocks passes over a free
 * block of an expandable segment (it neither unmaps it nor counts it), so the retry after
 * release_cached_blocks is what gets the memory. The real allocator's figures: no OOM, one
 * retry, four device allocations (three maps, one failed), peak reserved 700 MiB. */
Test(release, available_cached_blocks_pass_over_expandable_blocks)
{
    struct cmt_model *m = make(1000 * MiB, 100 * MiB, true);
    cmt_model_handle a = alloc_ok(m, 600 * MiB, 0);
    alloc_ok(m, 100 * MiB, 0);
    free_ok(m, a);
    alloc_ok(m, 500 * MiB, 0);
    struct cmt_model_stats st;
    cmt_model_get_stats(m, &st);
    cr_assert_eq(st.num_alloc_retries, 1);
    cr_assert_eq(st.num_ooms, 0);
    cr_assert_eq(st.device_alloc_calls, 4);
    cr_assert_eq(st.peak_reserved, 700 * MiB);
    cr_assert_eq(st.reserved_bytes, 600 * MiB);
    cmt_model_destroy(m);
}

Test(release, release_cached_then_retry_counts)
{
    struct cmt_model *m = make(100 * MiB, UNLIMITED, false);
    free_ok(m, alloc_ok(m, 60 * MiB, 0));
    alloc_ok(m, 70 * MiB, 0); /* fails, frees the cached 60, retries */
    struct cmt_model_stats s = stats_of(m);
    cr_assert_eq(s.reserved_bytes, 70 * MiB);
    cr_assert_eq(s.num_alloc_retries, 1);
    cr_assert_eq(s.device_alloc_calls, 3);
    cr_assert_eq(s.device_free_calls, 1);
    cr_assert_eq(s.num_ooms, 0);
    cmt_model_destroy(m);
}

Test(release, release_cached_frees_every_stream_and_pool)
{
    struct cmt_model *m = make(100 * MiB, UNLIMITED, false);
    free_ok(m, alloc_ok(m, 30 * MiB, 7));
    free_ok(m, alloc_ok(m, 4096, 8));                 /* small pool, 2 MiB */
    cmt_model_handle split = alloc_ok(m, 4 * MiB, 9); /* 20 MiB split segment */
    alloc_ok(m, 60 * MiB, 1); /* 52 + 60 > 100: releases 30 and 2, not the 20 */
    struct cmt_model_stats s = stats_of(m);
    cr_assert_eq(s.reserved_bytes, 80 * MiB);
    cr_assert_eq(s.device_free_calls, 2);
    cr_assert_eq(s.num_alloc_retries, 1);
    (void)split;
    cmt_model_destroy(m);
}

Test(release, available_frees_largest_oversize_blocks_first)
{
    struct cmt_model *m = make(100 * MiB, 20 * MiB, false);
    cmt_model_handle a = alloc_ok(m, 30 * MiB, 0);
    cmt_model_handle b = alloc_ok(m, 32 * MiB, 0);
    free_ok(m, a);
    free_ok(m, b);
    /* No cached block >= 50: free 32, then 30 (62 >= 50), then cudaMalloc. */
    alloc_ok(m, 50 * MiB, 0);
    struct cmt_model_stats s = stats_of(m);
    cr_assert_eq(s.reserved_bytes, 50 * MiB);
    cr_assert_eq(s.device_free_calls, 2);
    cr_assert_eq(s.num_alloc_retries, 0);
    cmt_model_destroy(m);
}

Test(release, available_keeps_what_it_freed_when_not_enough)
{
    struct cmt_model *m = make(100 * MiB, 20 * MiB, false);
    free_ok(m, alloc_ok(m, 30 * MiB, 0));
    alloc_ok(m, 40 * MiB, 0);
    /* 70 + 50 > 100; release_available frees the 30 (< 50: "failed"), then
   * release_cached has nothing, and the retry fits in 40 + 50. */
    alloc_ok(m, 50 * MiB, 0);
    struct cmt_model_stats s = stats_of(m);
    cr_assert_eq(s.reserved_bytes, 90 * MiB);
    cr_assert_eq(s.device_free_calls, 1);
    cr_assert_eq(s.num_alloc_retries, 1);
    cr_assert_eq(s.device_alloc_calls, 4);
    cmt_model_destroy(m);
}

Test(release, oversize_request_accepts_20_mib_of_slack_only)
{
    struct cmt_model *m = make(GiB, 100 * MiB, false);
    free_ok(m, alloc_ok(m, 220 * MiB, 0));
    cmt_model_handle a = alloc_ok(m, 201 * MiB, 0); /* 220 < 201 + 20: reused */
    cr_assert_eq(stats_of(m).reserved_bytes, 220 * MiB);
    free_ok(m, a);
    alloc_ok(m, 199 * MiB + 512, 0); /* 220 >= 199.5 + 20: refused */
    cr_assert_eq(stats_of(m).reserved_bytes, 420 * MiB);
    alloc_ok(m, 50 * MiB, 0); /* < S: the oversize 220 is refused too */
    cr_assert_eq(stats_of(m).reserved_bytes, 470 * MiB);
    cmt_model_destroy(m);
}

/* max_non_split_rounding_mb (PyTorch 2.x) widens that slack: a 150 MiB
 * cached oversize block serves a 120 MiB request when 150 < 120 + R. */
static uint64_t reserved_after_reuse(const char *conf)
{
    struct cmt_model_config c;
    struct cmt_err err = {0};
    cmt_model_config_default(&c, GiB);
    cr_assert_eq(cmt_model_config_parse(&c, conf, &err), CMT_EOK, "%s", err.text);
    struct cmt_model *m = NULL;
    cr_assert_eq(cmt_model_create(&c, &m), CMT_EOK);
    free_ok(m, alloc_ok(m, 150 * MiB, 0));
    alloc_ok(m, 120 * MiB, 0);
    struct cmt_model_stats s = stats_of(m);
    cmt_model_destroy(m);
    return s.reserved_bytes;
}

Test(release, max_non_split_rounding_widens_the_oversize_slack)
{
    /* R = 20 MiB (the default): 150 >= 140, refused, a new 120 MiB segment. */
    cr_assert_eq(reserved_after_reuse("max_split_size_mb:100"), 270 * MiB);
    /* R = 30 MiB: 150 >= 150, still refused (the bound is strict). */
    cr_assert_eq(reserved_after_reuse("max_split_size_mb:100,max_non_split_rounding_mb:30"),
                 270 * MiB);
    /* R = 64 MiB: 150 < 184, the cached block is reused whole. */
    cr_assert_eq(reserved_after_reuse("max_split_size_mb:100,max_non_split_rounding_mb:64"),
                 150 * MiB);
}

/* ---- expandable segments ---------------------------------------------- */

Test(expandable, pages_per_pool_and_release)
{
    struct cmt_model *m = make(GiB, UNLIMITED, true);
    cmt_model_handle s1 = alloc_ok(m, 1000, 0);
    cr_assert_eq(stats_of(m).reserved_bytes, 2 * MiB); /* one 2 MiB page */
    cmt_model_handle l1 = alloc_ok(m, 30 * MiB, 0);
    cr_assert_eq(stats_of(m).reserved_bytes, 42 * MiB); /* + two 20 MiB pages */
    cmt_model_handle l2 = alloc_ok(m, 5 * MiB, 0);      /* fits the 10 MiB left */
    cr_assert_eq(stats_of(m).reserved_bytes, 42 * MiB);
    cr_assert_eq(offset_of(m, l2), 30 * MiB);
    cr_assert_eq(stats_of(m).segment, 0); /* PyTorch counts no segment for maps */
    free_ok(m, l1);
    /* [free 30][l2 5][free 5]: only the first 20 MiB page is wholly free. */
    cr_assert_eq(cmt_model_empty_cache(m), CMT_EOK);
    cr_assert_eq(cmt_model_check(m), CMT_EOK);
    cr_assert_eq(stats_of(m).reserved_bytes, 22 * MiB);
    free_ok(m, l2);
    free_ok(m, s1);
    cr_assert_eq(cmt_model_empty_cache(m), CMT_EOK);
    cr_assert_eq(cmt_model_check(m), CMT_EOK);
    struct cmt_model_stats s = stats_of(m);
    cr_assert_eq(s.reserved_bytes, 0);
    cr_assert_eq(s.device_alloc_calls, 2);
    cr_assert_eq(s.device_free_calls, 3);
    /* The reservations were given back; a new one starts mapping at 0. */
    cmt_model_handle again = alloc_ok(m, 50 * MiB, 0);
    cr_assert_eq(stats_of(m).reserved_bytes, 60 * MiB);
    (void)again;
    cmt_model_destroy(m);
}

Test(expandable, one_reservation_per_stream)
{
    struct cmt_model *m = make(GiB, UNLIMITED, true);
    cmt_model_handle a = alloc_ok(m, 40 * MiB, 1);
    cmt_model_handle b = alloc_ok(m, 40 * MiB, 2);
    struct cmt_model_block ia, ib;
    cmt_model_block_info(m, a, &ia);
    cmt_model_block_info(m, b, &ib);
    cr_assert_eq(ia.segment_offset, 0);
    cr_assert_eq(ib.segment_offset, 0);
    cr_assert_neq(ia.address, ib.address);
    free_ok(m, a);
    alloc_ok(m, 40 * MiB, 2); /* not a's space */
    cr_assert_eq(stats_of(m).reserved_bytes, 120 * MiB);
    cmt_model_destroy(m);
}

Test(expandable, oom_unmaps_free_pages_then_grows)
{
    struct cmt_model *m = make(100 * MiB, UNLIMITED, true);
    cmt_model_handle a = alloc_ok(m, 60 * MiB, 0);
    cmt_model_handle keep = alloc_ok(m, 20 * MiB, 0);
    free_ok(m, a); /* [free 60][keep 20] mapped 80 */
    cmt_model_handle h;
    /* 70 MiB: no free block and only 40 MiB of address space after keep, so
   * a second reservation is made, but mapping 80 MiB there fails (80 + 80 >
   * 100). release_cached unmaps the free 60, and the retry maps 80 MiB in
   * the second reservation. */
    cr_assert_eq(cmt_model_alloc(m, 70 * MiB, 0, &h), CMT_EOK);
    cr_assert_eq(cmt_model_check(m), CMT_EOK);
    struct cmt_model_stats s = stats_of(m);
    cr_assert_eq(s.reserved_bytes, 100 * MiB);
    cr_assert_eq(s.num_alloc_retries, 1);
    cr_assert_eq(s.device_free_calls, 1);
    cr_assert_eq(s.device_alloc_calls, 4);
    struct cmt_model_block info;
    cmt_model_block_info(m, h, &info);
    cr_assert_eq(info.segment_offset, 0);
    cr_assert_eq(info.size, 70 * MiB);
    (void)keep;
    cmt_model_destroy(m);
}

/* ---- garbage collection and the fraction cap -------------------------- */

static struct cmt_model *gc_model(double fraction, double threshold)
{
    struct cmt_model_config c;
    cmt_model_config_default(&c, 2000 * MiB);
    c.memory_fraction = fraction;
    c.garbage_collection_threshold = threshold;
    struct cmt_model *m = NULL;
    cr_assert_eq(cmt_model_create(&c, &m), CMT_EOK);
    return m;
}

/* Ages count get_free_block calls on the large pool since a block was
 * cached: a (100) is freed before c's call, b (110) after it. */
static void gc_story(struct cmt_model *m)
{
    cmt_model_handle a = alloc_ok(m, 100 * MiB, 0); /* call 1 */
    cmt_model_handle b = alloc_ok(m, 110 * MiB, 0); /* call 2 */
    free_ok(m, a);                                  /* a: base 2 */
    alloc_ok(m, 200 * MiB, 0);                      /* call 3 */
    free_ok(m, b);                                  /* b: base 3 */
    alloc_ok(m, 150 * MiB, 0);                      /* call 4; 410 <= 500: no GC */
    alloc_ok(m, 300 * MiB, 0);                      /* call 5; 560 > 500: ages a 3, b 2, mean 2.5 */
}

Test(gc, frees_blocks_older_than_average)
{
    struct cmt_model *m = gc_model(0.5, 0.5); /* cap 1000, GC above 500 */
    gc_story(m);
    struct cmt_model_stats s = stats_of(m);
    cr_assert_eq(s.device_free_calls, 1);              /* only a */
    cr_assert_eq(s.reserved_bytes, (460 + 300) * MiB); /* b stays cached */
    cmt_model_destroy(m);
}

Test(gc, needs_a_fraction_cap)
{
    struct cmt_model *m = gc_model(0.0, 0.5);
    gc_story(m);
    struct cmt_model_stats s = stats_of(m);
    cr_assert_eq(s.device_free_calls, 0);
    cr_assert_eq(s.reserved_bytes, 860 * MiB);
    cmt_model_destroy(m);
}

Test(gc, fraction_cap_bounds_reserved_and_reports_allowed)
{
    struct cmt_model *m = gc_model(0.25, 0.0); /* 500 MiB allowed of 2000 */
    alloc_ok(m, 400 * MiB, 0);
    cmt_model_handle h;
    cr_assert_eq(cmt_model_alloc(m, 200 * MiB, 0, &h), CMT_EMODEL_OOM);
    struct cmt_model_stats s = stats_of(m);
    cr_assert_eq(s.device_alloc_calls, 1); /* the cap refuses before cudaMalloc */
    char msg[512];
    cmt_model_format_oom_as(cmt_model_last_oom(m), CMT_MODEL_OOM_1X, msg, sizeof msg);
    cr_assert_str_eq(msg, "CUDA out of memory. Tried to allocate 200.00 MiB (GPU 0; 1.95 GiB total "
                          "capacity; 400.00 MiB already allocated; 1.56 GiB free; 500.00 MiB "
                          "allowed; 400.00 MiB reserved in total by PyTorch) If reserved memory "
                          "is >> allocated memory try setting max_split_size_mb to avoid "
                          "fragmentation.  See documentation for Memory Management and "
                          "PYTORCH_CUDA_ALLOC_CONF");
    cmt_model_destroy(m);
}

/* ---- messages ---------------------------------------------------------- */

Test(messages, format_size_like_pytorch)
{
    char buf[32];
    cmt_model_format_size(0, buf, sizeof buf);
    cr_assert_str_eq(buf, "0 bytes");
    cmt_model_format_size(1024, buf, sizeof buf);
    cr_assert_str_eq(buf, "1024 bytes");
    cmt_model_format_size(1025, buf, sizeof buf);
    cr_assert_str_eq(buf, "1.00 KiB");
    cmt_model_format_size(MiB, buf, sizeof buf);
    cr_assert_str_eq(buf, "1024.00 KiB");
    cmt_model_format_size(MiB + 1, buf, sizeof buf);
    cr_assert_str_eq(buf, "1.00 MiB");
    cmt_model_format_size(GiB, buf, sizeof buf);
    cr_assert_str_eq(buf, "1024.00 MiB");
    cmt_model_format_size(6330 * MiB, buf, sizeof buf);
    cr_assert_str_eq(buf, "6.18 GiB");
    int n = cmt_model_format_size(3 * GiB / 2, buf, 4); /* truncated like snprintf */
    cr_assert_eq(n, 8);
    cr_assert_str_eq(buf, "1.5");
}

Test(messages, oom_message_scenario_a)
{
    int rc;
    cmt_model_handle b, c;
    struct cmt_model *m = scenario_a(UNLIMITED, false, &rc, &b, &c);
    char msg[512];
    int n = cmt_model_format_oom_as(cmt_model_last_oom(m), CMT_MODEL_OOM_1X, msg, sizeof msg);
    const char *want =
        "CUDA out of memory. Tried to allocate 600.00 MiB (GPU 0; 1000.00 MiB total "
        "capacity; 100.00 MiB already allocated; 400.00 MiB free; 600.00 MiB reserved in "
        "total by PyTorch) If reserved memory is >> allocated memory try setting "
        "max_split_size_mb to avoid fragmentation.  See documentation for Memory "
        "Management and PYTORCH_CUDA_ALLOC_CONF";
    cr_assert_str_eq(msg, want);
    cr_assert_eq(n, (int)strlen(want));
    cr_assert_eq(cmt_model_format_oom_as(NULL, CMT_MODEL_OOM_1X, msg, sizeof msg), CMT_EINVALID);
    cr_assert_eq(cmt_model_format_oom(NULL, msg, sizeof msg), CMT_EINVALID);
    cmt_model_destroy(m);
}

/* ---- PYTORCH_CUDA_ALLOC_CONF ------------------------------------------ */

Test(config, parses_known_keys)
{
    struct cmt_model_config c;
    cmt_model_config_default(&c, GiB);
    struct cmt_err err = {0};
    cr_assert_eq(cmt_model_config_parse(&c,
                                        " max_split_size_mb : 6144 ,roundup_power2_divisions:4,"
                                        "garbage_collection_threshold:0.6,expandable_segments:True,"
                                        "backend:native,release_lock_on_cudamalloc:True,"
                                        "max_non_split_rounding_mb:64",
                                        &err),
                 CMT_EOK, "%s", err.text);
    cr_assert_eq(c.max_split_size, 6144 * MiB);
    cr_assert_eq(c.roundup_power2_divisions, 4);
    cr_assert_float_eq(c.garbage_collection_threshold, 0.6, 1e-12);
    cr_assert(c.expandable_segments);
    cr_assert_eq(c.max_non_split_rounding, 64 * MiB);
    cr_assert_eq(c.capacity, GiB);
    char out[256];
    cmt_model_config_format(&c, out, sizeof out);
    cr_assert_str_eq(out, "max_split_size_mb:6144,max_non_split_rounding_mb:64,"
                          "roundup_power2_divisions:4,garbage_collection_threshold:0.6,"
                          "expandable_segments:True");
    /* The printed string parses back to the same settings. */
    struct cmt_model_config d;
    cmt_model_config_default(&d, GiB);
    cr_assert_eq(cmt_model_config_parse(&d, out, &err), CMT_EOK);
    cr_assert_eq(memcmp(&c, &d, sizeof c), 0);
    cr_assert_eq(cmt_model_config_parse(&d, "", &err), CMT_EOK);
    cr_assert_eq(cmt_model_config_parse(&d, "max_split_size_mb:2147483647", &err), CMT_EOK);
    cr_assert_eq(d.max_split_size, 2147483647ull * MiB); /* finite, as in PyTorch */
}

Test(config, takes_what_c10_takes)
{
    struct cmt_model_config c;
    struct cmt_err err = {0};
    cmt_model_config_default(&c, GiB);
    /* std::stoi reads the digits and ignores the rest; a trailing comma is fine. */
    cr_assert_eq(cmt_model_config_parse(&c, "max_split_size_mb:64MB,", &err), CMT_EOK, "%s",
                 err.text);
    cr_assert_eq(c.max_split_size, 64 * MiB);
    cr_assert_eq(cmt_model_config_parse(&c,
                                        "max_split_size_mb:21,pinned_num_register_threads:8,"
                                        "pinned_use_cuda_host_register:True",
                                        &err),
                 CMT_EOK, "%s", err.text);
    cr_assert_eq(c.max_split_size, 21 * MiB);
    char out[64];
    c.max_split_size = 20 * MiB; /* c10 refuses 20: not printable */
    cr_assert_eq(cmt_model_config_format(&c, out, sizeof out), CMT_EINVALID);
}

/* c10 2.6 indexes the list by log2 of the number given (256 -> interval 8, sizes from 256 MiB)
 * and '>' fills from the last interval named, that one included. */
Test(config, roundup_per_interval_list_as_c10_reads_it)
{
    struct cmt_model_config c;
    struct cmt_err err = {0};
    cmt_model_config_default(&c, GiB);
    cr_assert_eq(
        cmt_model_config_parse(&c, "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", &err),
        CMT_EOK, "%s", err.text);
    cr_assert(c.roundup_power2_per_interval);
    cr_assert_eq(c.roundup_power2_divisions, 0);
    static const unsigned want[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 8, 8, 8, 8, 8, 8};
    cr_assert_arr_eq(c.roundup_power2_intervals, want, sizeof want);
    /* 3 MiB: interval 1, one division: 512-byte rounding. */
    cr_assert_eq(cmt_model_round_size(&c, 3 * MiB + 1), 3 * MiB + 512);
    /* 600 MiB: interval 9 (512 MiB..1 GiB), two divisions: 768 MiB. */
    cr_assert_eq(cmt_model_round_size(&c, 600 * MiB), 768 * MiB);
    /* 1.1 GiB: interval 10, eight divisions (the '>' overwrote 1024:4): 1.125 GiB. */
    cr_assert_eq(cmt_model_round_size(&c, 1100 * MiB), 1152 * MiB);
    char out[128];
    cmt_model_config_format(&c, out, sizeof out);
    cr_assert_str_eq(out, "roundup_power2_divisions:[256:1,512:2,1024:8,>:8]");
    struct cmt_model_config d;
    cmt_model_config_default(&d, GiB);
    cr_assert_eq(cmt_model_config_parse(&d, out, &err), CMT_EOK, "%s", err.text);
    cr_assert_eq(memcmp(&c, &d, sizeof c), 0);
    /* A list of one value for every interval is the single value. */
    cr_assert_eq(cmt_model_config_parse(&d, "roundup_power2_divisions:[>:4]", &err), CMT_EOK, "%s",
                 err.text);
    cr_assert(!d.roundup_power2_per_interval);
    cr_assert_eq(d.roundup_power2_divisions, 4);
    /* Unterminated but comma-ended, as c10 accepts; the single form replaces a list. */
    cmt_model_config_default(&d, GiB);
    cr_assert_eq(cmt_model_config_parse(&d, "roundup_power2_divisions:[2:4,", &err), CMT_EOK, "%s",
                 err.text);
    cr_assert(d.roundup_power2_per_interval);
    cr_assert_eq(d.roundup_power2_intervals[0], 4);
    cr_assert_eq(d.roundup_power2_intervals[1], 4);
    cr_assert_eq(d.roundup_power2_intervals[2], 0); /* the rest keep what they had */
    cr_assert_eq(cmt_model_config_parse(&d, "roundup_power2_divisions:2", &err), CMT_EOK);
    cr_assert(!d.roundup_power2_per_interval);
    cr_assert_eq(d.roundup_power2_divisions, 2);
}

Test(config, default_prints_empty)
{
    struct cmt_model_config c;
    cmt_model_config_default(&c, GiB);
    char out[8] = "x";
    cr_assert_eq(cmt_model_config_format(&c, out, sizeof out), 0);
    cr_assert_str_eq(out, "");
    c.max_split_size = 6144 * MiB + 1;
    cr_assert_eq(cmt_model_config_format(&c, out, sizeof out), CMT_EINVALID);
}

Test(config, rejects_bad_strings)
{
    static const struct {
        const char *conf, *message;
    } bad[] = {
        /* c10 2.6's texts, byte for byte (CUDAAllocatorConfig.cpp) */
        {"max_split_size_mb:20",
         "CachingAllocator option max_split_size_mb too small, must be > 20"},
        {"max_non_split_rounding_mb:20",
         "CachingAllocator option max_non_split_rounding_mb too small, must be > 20"},
        {"max_split_size_mb", "Error parsing CachingAllocator settings, expected :"},
        {"max_split_size_mb:", "Error, expecting max_split_size_mb value"},
        {"max_split_size_mb:128 expandable_segments:True",
         "Error parsing CachingAllocator settings, expected ,"},
        {"max_split_size_mb:128,,", "Unrecognized CachingAllocator option: ,"},
        {"foo:1", "Unrecognized CachingAllocator option: foo"},
        {"expandable_segments:true", "Expected a single True/False argument for "
                                     "expandable_segments"},
        {"roundup_power2_divisions:3", "For roundups, the divisons has to be power of 2 "},
        {"roundup_power2_divisions:0", "For roundups, the divisons has to be power of 2 "},
        {"roundup_power2_divisions:[256:3]",
         "For roundups, the divisons has to be power of 2 or 0 to disable roundup "},
        {"roundup_power2_divisions:[300:2]", "For roundups, the intervals have to be power of 2 "},
        {"roundup_power2_divisions:[256:", "Error parsing roundup_power2_divisions value"},
        {"roundup_power2_divisions:[256:2;512:4]",
         "Error parsing CachingAllocator settings, expected ,"},
        {"garbage_collection_threshold:1.0", "garbage_collect_threshold too big, set it 0.0~1.0"},
        {"garbage_collection_threshold:0", "garbage_collect_threshold too small, set it 0.0~1.0"},
        {"backend:cudaMalloc", "Unknown allocator backend, options are native and cudaMallocAsync"},
        {"release_lock_on_cudamalloc:1",
         "Expected a single True/False argument for release_lock_on_cudamalloc"},
        {"pinned_num_register_threads:3", "Number of register threads has to be power of 2 "},
        {"pinned_num_register_threads:256",
         "Number of register threads should be less than or equal to 128"},
        /* ours: where c10 throws std::stoi's bare exception, or does not model */
        {"max_split_size_mb:abc",
         "max_split_size_mb value 'abc' is not a number (PyTorch's std::stoi throws)"},
        {"max_split_size_mb:99999999999",
         "max_split_size_mb value '99999999999' is not a number (PyTorch's std::stoi throws)"},
        {"max_split_size_mb:-1", "max_split_size_mb value '-1' is negative"},
        {"backend:cudaMallocAsync",
         "backend:cudaMallocAsync is not the caching allocator; not modelled"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        struct cmt_model_config c;
        cmt_model_config_default(&c, GiB);
        struct cmt_model_config before = c;
        struct cmt_err err = {0};
        cr_assert_eq(cmt_model_config_parse(&c, bad[k].conf, &err), CMT_EMODEL_PARSE,
                     "accepted '%s'", bad[k].conf);
        cr_assert_str_eq(err.text, bad[k].message, "for '%s'", bad[k].conf);
        cr_assert_eq(memcmp(&c, &before, sizeof c), 0, "changed by '%s'", bad[k].conf);
    }
    cr_assert_eq(cmt_model_config_parse(NULL, "", NULL), CMT_EINVALID);
}

/* ---- the write-up's 6.18 GiB OOM -------------------------------------- */

static struct cmt_model *run_writeup(uint64_t split_mib, int *rc, size_t *stopped)
{
    const struct cmt_model_scenario *sc = cmt_model_scenario_writeup();
    struct cmt_model_config c;
    cmt_model_config_default(&c, sc->capacity);
    c.device_total = sc->device_total;
    char conf[64];
    snprintf(conf, sizeof conf, "max_split_size_mb:%llu", (unsigned long long)split_mib);
    if (split_mib)
        cr_assert_eq(cmt_model_config_parse(&c, conf, NULL), CMT_EOK);
    struct cmt_model *m = NULL;
    cr_assert_eq(cmt_model_create(&c, &m), CMT_EOK);
    cmt_model_handle handles[16];
    cr_assert_leq(sc->id_count, 16);
    *rc = cmt_model_replay(m, sc->events, sc->event_count, handles, sc->id_count, stopped);
    cr_assert_eq(cmt_model_check(m), CMT_EOK);
    return m;
}

static void expect_writeup_oom(uint64_t split_mib)
{
    int rc;
    size_t stopped;
    struct cmt_model *m = run_writeup(split_mib, &rc, &stopped);
    cr_assert_eq(rc, CMT_EMODEL_OOM, "S=%llu MiB", (unsigned long long)split_mib);
    cr_assert_eq(stopped, cmt_model_scenario_writeup()->event_count - 1);
    char msg[512];
    cmt_model_format_oom_as(cmt_model_last_oom(m), CMT_MODEL_OOM_1X, msg, sizeof msg);
    cr_assert_str_eq(msg, "CUDA out of memory. Tried to allocate 6.18 GiB (GPU 0; 24.00 GiB total "
                          "capacity; 11.39 GiB already allocated; 3.43 GiB free; 17.62 GiB "
                          "reserved in total by PyTorch) If reserved memory is >> allocated memory "
                          "try setting max_split_size_mb to avoid fragmentation.  See "
                          "documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF");
    /* The default: PyTorch 2.x's wording, the same figures (c10 2.6's text; the oracle). */
    int n = cmt_model_format_oom(cmt_model_last_oom(m), msg, sizeof msg);
    const char *want =
        "CUDA out of memory. Tried to allocate 6.18 GiB. GPU 0 has a total capacity of 24.00 GiB "
        "of which 3.43 GiB is free. Of the allocated memory 11.39 GiB is allocated by PyTorch, and "
        "6.23 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is "
        "large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
        "fragmentation.  See documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)";
    cr_assert_str_eq(msg, want);
    cr_assert_eq(n, (int)strlen(want));
    struct cmt_model_stats s = stats_of(m);
    cr_assert_eq(s.allocated_bytes, 11664 * MiB);
    cr_assert_eq(s.reserved_bytes, 18044 * MiB);
    cr_assert_eq(s.inactive_split_bytes, 6380 * MiB); /* 6230 + 3 x 50 */
    cr_assert_eq(s.num_alloc_retries, 1);
    cr_assert_eq(s.device_alloc_calls, 9);
    cr_assert_eq(s.device_free_calls, 0);
    cr_assert_eq(s.oversize_segments, 0);
    cmt_model_destroy(m);
}

static void expect_writeup_fits(uint64_t split_mib)
{
    int rc;
    size_t stopped;
    struct cmt_model *m = run_writeup(split_mib, &rc, &stopped);
    cr_assert_eq(rc, CMT_EOK, "S=%llu MiB", (unsigned long long)split_mib);
    struct cmt_model_stats s = stats_of(m);
    cr_assert_eq(s.reserved_bytes, 18144 * MiB); /* + t's own 100 MiB segment */
    cr_assert_eq(s.allocated_bytes, (11664 + 6330) * MiB);
    cr_assert_eq(s.oversize_segments, 1);
    cr_assert_eq(s.oversize_allocations, 1);
    cr_assert_eq(s.device_alloc_calls, 8);
    cr_assert_eq(s.num_ooms, 0);
    cmt_model_destroy(m);
}

Test(writeup, unlimited_oom)
{
    expect_writeup_oom(0);
}
Test(writeup, int_max_oom)
{
    expect_writeup_oom(2147483647);
}
Test(writeup, split_8192_oom)
{
    expect_writeup_oom(8192);
}
Test(writeup, split_7168_oom)
{
    expect_writeup_oom(7168);
}
Test(writeup, split_6144_fits)
{
    expect_writeup_fits(6144);
}
Test(writeup, split_5120_fits)
{
    expect_writeup_fits(5120);
}
Test(writeup, split_4096_fits)
{
    expect_writeup_fits(4096);
}

Test(writeup, expandable_segments_fit_too)
{
    const struct cmt_model_scenario *sc = cmt_model_scenario_writeup();
    struct cmt_model_config c;
    cmt_model_config_default(&c, sc->capacity);
    c.device_total = sc->device_total;
    c.expandable_segments = true;
    struct cmt_model *m = NULL;
    cr_assert_eq(cmt_model_create(&c, &m), CMT_EOK);
    cmt_model_handle handles[16];
    size_t stopped;
    cr_assert_eq(cmt_model_replay(m, sc->events, sc->event_count, handles, sc->id_count, &stopped),
                 CMT_EOK);
    cr_assert_eq(cmt_model_check(m), CMT_EOK);
    cmt_model_destroy(m);
}

/* ---- the address policy (issue 16 item 4) ------------------------------ */

static struct cmt_model *make_policy(uint64_t capacity, enum cmt_model_address_policy policy)
{
    struct cmt_model_config c;
    cmt_model_config_default(&c, capacity);
    c.address_policy = policy;
    struct cmt_model *m = NULL;
    cr_assert_eq(cmt_model_create(&c, &m), CMT_EOK);
    return m;
}

static uint64_t address_of(const struct cmt_model *m, cmt_model_handle h)
{
    struct cmt_model_block b;
    cr_assert_eq(cmt_model_block_info(m, h, &b), CMT_EOK);
    return b.address;
}

Test(address_policy, first_fit_reuses_a_released_range_never_reuse_goes_above)
{
    for (int p = 0; p < CMT_MODEL_ADDRESS_POLICY_COUNT; p++) {
        struct cmt_model *m = make_policy(GiB, (enum cmt_model_address_policy)p);
        cmt_model_handle a = alloc_ok(m, 100 * MiB, 0), b = alloc_ok(m, 100 * MiB, 0);
        uint64_t base = address_of(m, a);
        cr_assert_eq(address_of(m, b), base + 100 * MiB);
        cr_assert_not(cmt_model_addresses_diverged(m));
        free_ok(m, a);
        cr_assert_eq(cmt_model_empty_cache(m), CMT_EOK);
        cr_assert_not(cmt_model_addresses_diverged(m), "a release alone changes nothing");
        cmt_model_handle c = alloc_ok(m, 50 * MiB, 0);
        if (p == CMT_MODEL_ADDRESSES_FIRST_FIT)
            cr_assert_eq(address_of(m, c), base, "the lowest hole that holds it");
        else
            cr_assert_eq(address_of(m, c), base + 200 * MiB, "above everything");
        cr_assert(cmt_model_addresses_diverged(m));
        /* The rest of the hole, then the top (first fit), or the top again. */
        cmt_model_handle d = alloc_ok(m, 60 * MiB, 0);
        cr_assert_eq(address_of(m, d),
                     p == CMT_MODEL_ADDRESSES_FIRST_FIT ? base + 200 * MiB : base + 250 * MiB);
        cmt_model_handle e = alloc_ok(m, 50 * MiB, 0);
        cr_assert_eq(address_of(m, e),
                     p == CMT_MODEL_ADDRESSES_FIRST_FIT ? base + 50 * MiB : base + 310 * MiB);
        cmt_model_destroy(m);
    }
}

Test(address_policy, first_fit_gives_the_top_back)
{
    struct cmt_model *m = make_policy(GiB, CMT_MODEL_ADDRESSES_FIRST_FIT);
    cmt_model_handle a = alloc_ok(m, 100 * MiB, 0), b = alloc_ok(m, 100 * MiB, 0);
    uint64_t base = address_of(m, a);
    free_ok(m, b);
    cr_assert_eq(cmt_model_empty_cache(m), CMT_EOK);
    /* A range larger than the freed top one starts where it started, as in simcuda. */
    cmt_model_handle c = alloc_ok(m, 300 * MiB, 0);
    cr_assert_eq(address_of(m, c), base + 100 * MiB);
    cr_assert(cmt_model_addresses_diverged(m));
    cmt_model_destroy(m);
    /* Never reuse: the freed top is a hole that first fit would take: diverged. */
    m = make_policy(GiB, CMT_MODEL_ADDRESSES_NEVER_REUSE);
    a = alloc_ok(m, 100 * MiB, 0);
    b = alloc_ok(m, 100 * MiB, 0);
    free_ok(m, b);
    cr_assert_eq(cmt_model_empty_cache(m), CMT_EOK);
    c = alloc_ok(m, 300 * MiB, 0);
    cr_assert_eq(address_of(m, c), address_of(m, a) + 200 * MiB);
    cr_assert(cmt_model_addresses_diverged(m));
    cmt_model_destroy(m);
}

/* tests/oracle's "address-tie" case, whose figures c10 2.6 on simcuda gives under either
 * policy: the tie between two free 50 MiB blocks decides whether the last request fits. */
Test(address_policy, a_tie_between_equal_free_blocks_follows_the_addresses)
{
    for (int p = 0; p < CMT_MODEL_ADDRESS_POLICY_COUNT; p++) {
        struct cmt_model *m = make_policy(200 * MiB, (enum cmt_model_address_policy)p);
        cmt_model_handle t0 = alloc_ok(m, 100 * MiB, 0), t1 = alloc_ok(m, 100 * MiB, 0);
        free_ok(m, t0);
        cr_assert_eq(cmt_model_empty_cache(m), CMT_EOK);
        cmt_model_handle t2 = alloc_ok(m, 50 * MiB, 0);
        free_ok(m, t1);
        alloc_ok(m, 50 * MiB, 0);
        free_ok(m, t2);
        alloc_ok(m, 50 * MiB, 0);
        cmt_model_handle last = 0;
        int rc = cmt_model_alloc(m, 100 * MiB, 0, &last);
        cr_assert_eq(rc, p == CMT_MODEL_ADDRESSES_FIRST_FIT ? CMT_EMODEL_OOM : CMT_EOK, "policy %s",
                     cmt_model_address_policy_name((enum cmt_model_address_policy)p));
        cr_assert_eq(cmt_model_check(m), CMT_EOK);
        cmt_model_destroy(m);
    }
}

Test(address_policy, names_and_bad_values)
{
    enum cmt_model_address_policy p;
    cr_assert_eq(cmt_model_address_policy_parse("first-fit", &p), CMT_EOK);
    cr_assert_eq(p, CMT_MODEL_ADDRESSES_FIRST_FIT);
    cr_assert_eq(cmt_model_address_policy_parse("never-reuse", &p), CMT_EOK);
    cr_assert_eq(p, CMT_MODEL_ADDRESSES_NEVER_REUSE);
    cr_assert_eq(cmt_model_address_policy_parse("best-fit", &p), CMT_EINVALID);
    cr_assert_null(cmt_model_address_policy_name(CMT_MODEL_ADDRESS_POLICY_COUNT));
    struct cmt_model_config c;
    struct cmt_model *m = NULL;
    cmt_model_config_default(&c, GiB);
    c.address_policy = CMT_MODEL_ADDRESS_POLICY_COUNT;
    cr_assert_eq(cmt_model_create(&c, &m), CMT_EINVALID);
    cr_assert_null(m);
}

Test(address_policy, num_device_alloc_counts_successes_only)
{
    struct cmt_model *m = make_policy(100 * MiB, CMT_MODEL_ADDRESSES_NEVER_REUSE);
    alloc_ok(m, 60 * MiB, 0);
    cmt_model_handle h = 0;
    cr_assert_eq(cmt_model_alloc(m, 60 * MiB, 0, &h), CMT_EMODEL_OOM);
    struct cmt_model_stats st = stats_of(m);
    cr_assert_eq(st.num_device_alloc, 1);
    cr_assert_eq(st.device_alloc_calls, 3, "the first try, and the retry after releasing");
    cmt_model_destroy(m);
}
