/* Tests of whatif's stream from allocator-level records and of the model's self-check
 * (tools/model/whatif_blocks.c, whatif_selfcheck.c). */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <string.h>

#include "alloc_fixture.h"
#include "alloc_run.h"
#include "caching_model.h"
#include "reader.h"
#include "whatif_blocks.h"

#define MIB(x) ((uint64_t)(x) << 20)

/* A run recorded from the model itself: its segments (device hooks) and blocks as an allocator
 * would write them, so the self-check must agree with every segment. */
struct gen {
    struct tb b;
};

static int gen_alloc(void *ctx, uint64_t address, uint64_t size)
{
    struct gen *g = ctx;
    uint64_t v[] = {address, size};
    tb_alloc_event(&g->b, CMT_AA_SEGMENT_ALLOC, 0, 0, CMT_AF(ADDR) | CMT_AF(SIZE), v);
    return 0;
}

static void gen_free(void *ctx, uint64_t address, uint64_t size)
{
    struct gen *g = ctx;
    uint64_t v[] = {address, size};
    tb_alloc_event(&g->b, CMT_AA_SEGMENT_FREE, 0, 0, CMT_AF(ADDR) | CMT_AF(SIZE), v);
}

/* ops: > 0 allocates that many MiB (tensor i = the i-th alloc), < 0 frees tensor -op-1. */
static void generate(struct gen *g, const char *conf, uint64_t capacity, const int *ops, size_t n)
{
    tb_begin(&g->b, capacity, capacity);
    tb_allocator(&g->b, 1, conf);
    struct cmt_model_config config;
    cmt_model_config_default(&config, capacity);
    struct cmt_err err = {0};
    if (*conf)
        cr_assert_eq(cmt_model_config_parse(&config, conf, &err), 0, "%s", err.text);
    struct cmt_model *m;
    cr_assert_eq(cmt_model_create(&config, &m), 0);
    struct cmt_model_device_hooks hooks = {gen_alloc, gen_free, g};
    cmt_model_set_device_hooks(m, &hooks);
    cmt_model_handle h[64] = {0};
    size_t tensors = 0;
    for (size_t i = 0; i < n; i++) {
        if (ops[i] < 0) {
            struct cmt_model_block blk;
            cr_assert_eq(cmt_model_block_info(m, h[-ops[i] - 1], &blk), 0);
            tb_block_free(&g->b, blk.address, blk.size);
            cmt_model_free(m, h[-ops[i] - 1]);
            continue;
        }
        uint64_t size = MIB(ops[i]) - 4096; /* a tensor that is not a whole number of MiB */
        int rc = cmt_model_alloc(m, size, 0, &h[tensors]);
        if (rc == CMT_EMODEL_OOM) {
            const struct cmt_model_oom *o = cmt_model_last_oom(m);
            uint64_t v[] = {o->rounded, o->device_free, o->device_total, o->allocated, o->reserved};
            tb_alloc_event(&g->b, CMT_AA_OOM, 0, 0,
                           CMT_AF(SIZE) | CMT_AF(DEVICE_FREE) | CMT_AF(DEVICE_TOTAL) |
                               CMT_AF(ALLOCATED) | CMT_AF(RESERVED),
                           v);
            tensors++;
            continue;
        }
        cr_assert_eq(rc, 0);
        struct cmt_model_block blk;
        cr_assert_eq(cmt_model_block_info(m, h[tensors], &blk), 0);
        tb_block(&g->b, blk.address, blk.size, size, 0, 0);
        tensors++;
    }
    cmt_model_destroy(m);
    tb_finish(&g->b, 1);
}

static void load(struct tb *b, struct cmt_whatif_stream *s, struct cmt_whatif_selfcheck *c)
{
    cmt_reader *r;
    cr_assert_eq(cmt_reader_open_memory(&r, b->buf.data, b->buf.len), 0);
    struct cmt_err err = {0};
    cr_assert_eq(cmt_whatif_blocks_load(r, s, c, &err), 0, "%s", err.text);
    cmt_reader_close(r);
}

Test(whatif_blocks, a_run_of_the_model_itself_agrees_with_every_segment)
{
    static const int ops[] = {600, 30, -1, 100, 5, 400, -2, -4, 700, 8, 12, -3, 900, 1, -6, 300};
    static const char *const confs[] = {"", "max_split_size_mb:200", "max_split_size_mb:650"};
    for (size_t k = 0; k < 3; k++) {
        struct gen g;
        generate(&g, confs[k], MIB(3000), ops, sizeof ops / sizeof *ops);
        struct cmt_whatif_stream s;
        struct cmt_whatif_selfcheck c;
        load(&g.b, &s, &c);
        cr_expect(c.present);
        cr_expect_str_eq(c.conf, confs[k]);
        cr_expect_eq(s.allocs, 11);
        cr_expect_eq(s.frees, 5);
        cr_assert_eq(cmt_whatif_selfcheck_run(&s, MIB(3000), MIB(3000), &c), 0, "%s", c.error);
        cr_expect(c.ran);
        cr_expect_geq(c.recorded_segments, 4, "conf %s", confs[k]);
        cr_expect_eq(c.agreeing, c.recorded_segments, "conf %s: %lu of %lu", confs[k],
                     (unsigned long)c.agreeing, (unsigned long)c.recorded_segments);
        cr_expect_eq(c.model_segments, c.recorded_segments);
        cr_expect_eq(c.diff_count, 0);
        cr_expect_eq(c.model_peak_reserved, c.recorded_peak_reserved);
        cmt_whatif_stream_free(&s);
        cmt_whatif_selfcheck_free(&c);
        tb_free_builder(&g.b);
    }
}

/* The notes' scenario A (C = 1000 MiB): alloc 600, free it, alloc 100, alloc 600 fails. */
Test(whatif_blocks, failed_requests_are_requests_and_ooms_agree)
{
    static const int ops[] = {600, -1, 100, 600};
    struct gen g;
    generate(&g, "", MIB(1000), ops, 4);
    struct cmt_whatif_stream s;
    struct cmt_whatif_selfcheck c;
    load(&g.b, &s, &c);
    cr_expect_eq(s.failed_allocs, 1);
    cr_expect_eq(c.recorded_ooms, 1);
    cr_expect(s.has_capacity);
    cr_expect_eq(s.device_free, MIB(1000)); /* free at the failure + reserved */
    cr_assert_eq(s.event_count, 4);
    struct cmt_whatif_event last;
    cr_assert_eq(cmt_whatif_stream_event(&s, 3, &last), 0);
    cr_expect(last.failed);
    cr_assert_eq(cmt_whatif_selfcheck_run(&s, s.device_free, s.device_total, &c), 0);
    cr_expect_eq(c.model_ooms, 1);
    cr_expect_eq(c.agreeing, 1);
    cr_expect_eq(c.recorded_segments, 1);
    cmt_whatif_stream_free(&s);
    cmt_whatif_selfcheck_free(&c);
    tb_free_builder(&g.b);
}

/* A trace whose allocator holds one 600 MiB segment, taken whole by a block. @return it. */
static uint64_t one_segment(struct tb *b, uint64_t total, uint64_t free)
{
    tb_begin(b, total, free);
    tb_allocator(b, 1, "");
    const uint64_t seg = 0x7f0000000000;
    tb_segment(b, seg, MIB(600), 0);
    tb_block(b, seg, MIB(600), MIB(600), 0, 0);
    return seg;
}

Test(whatif_blocks, an_oom_without_the_device_total_takes_it_from_the_driver_records)
{
    /* A PyTorch snapshot's oom entry (merged by record --torch) has the device's free memory
     * but not its total; PyTorch's message calls the total "total capacity". */
    struct tb b;
    one_segment(&b, MIB(1024), MIB(768));
    uint64_t v[] = {MIB(300), MIB(168)};
    tb_alloc_event(&b, CMT_AA_OOM, 0, 0, CMT_AF(SIZE) | CMT_AF(DEVICE_FREE), v);
    tb_finish(&b, 1);
    struct cmt_whatif_stream s;
    struct cmt_whatif_selfcheck c;
    load(&b, &s, &c);
    cr_expect(s.has_capacity);
    cr_expect_eq(s.device_free, MIB(768)); /* free at the failure + reserved */
    cr_expect_eq(s.device_total, MIB(1024), "total %" PRIu64 " MiB", s.device_total >> 20);
    cmt_whatif_stream_free(&s);
    cmt_whatif_selfcheck_free(&c);
    tb_free_builder(&b);
}

/* A what-if is about the failure: an OOM on device 1 after events on device 0 replays
 * device 1, not the first device seen. */
Test(whatif_blocks, an_oom_on_another_device_is_the_device_replayed)
{
    struct tb b;
    tb_begin(&b, MIB(1024), MIB(768));
    tb_allocator(&b, 1, "");
    const uint32_t f = CMT_AF(ADDR) | CMT_AF(SIZE);
    uint64_t seg0[] = {0x7f0000000000, MIB(20)}, seg1[] = {0x7f1000000000, MIB(600)};
    uint64_t blk0[] = {0x7f0000000000, MIB(20)}, blk1[] = {0x7f1000000000, MIB(600)};
    tb_alloc_event(&b, CMT_AA_SEGMENT_ALLOC, 0, 0, f, seg0);
    tb_alloc_event(&b, CMT_AA_ALLOC, 0, 0, f, blk0);
    tb_alloc_event(&b, CMT_AA_SEGMENT_ALLOC, 1, 0, f, seg1);
    tb_alloc_event(&b, CMT_AA_ALLOC, 1, 0, f, blk1);
    uint64_t v[] = {MIB(300), MIB(168)};
    tb_alloc_event(&b, CMT_AA_OOM, 1, 0, CMT_AF(SIZE) | CMT_AF(DEVICE_FREE), v);
    tb_finish(&b, 1);
    struct cmt_whatif_stream s;
    struct cmt_whatif_selfcheck c;
    load(&b, &s, &c);
    cr_expect_eq(s.device, 1);
    cr_expect_eq(s.other_device_events, 2);
    cmt_whatif_stream_free(&s);
    cmt_whatif_selfcheck_free(&c);
    tb_free_builder(&b);
}

/* Segments released with no new segment after them, then a tensor event: empty_cache(). */
static void empty_cache_trace(struct tb *b, uint64_t next_segment)
{
    const uint64_t seg = one_segment(b, MIB(1024), MIB(1000));
    tb_block_free(b, seg, MIB(600));
    uint64_t v[] = {seg, MIB(600)};
    tb_alloc_event(b, CMT_AA_SEGMENT_FREE, 0, 0, CMT_AF(ADDR) | CMT_AF(SIZE), v);
    tb_segment(b, seg + MIB(600), next_segment, 0);
    tb_block(b, seg + MIB(600), next_segment, next_segment, 0, 0);
    tb_finish(b, 1);
}

Test(whatif_blocks, segments_released_outside_an_oom_retry_are_an_empty_cache)
{
    struct tb b;
    struct cmt_whatif_stream s;
    struct cmt_whatif_selfcheck c;
    struct cmt_whatif_event e;
    empty_cache_trace(&b, MIB(300)); /* 600 + 300 fit in 1000: no allocation had failed */
    load(&b, &s, &c);
    cr_expect_eq(s.empty_caches, 1);
    cr_assert_eq(s.event_count, 4); /* alloc, free, empty_cache(), alloc */
    cr_assert_eq(cmt_whatif_stream_event(&s, 2, &e), 0);
    cr_expect(cmt_whatif_event_empties_cache(&e));
    cr_assert_eq(cmt_whatif_selfcheck_run(&s, s.device_free, s.device_total, &c), 0);
    cr_expect_eq(c.agreeing, c.recorded_segments, "the model released the segment too");
    cmt_whatif_stream_free(&s);
    cmt_whatif_selfcheck_free(&c);
    tb_free_builder(&b);

    empty_cache_trace(&b, MIB(500)); /* 600 + 500 do not: an OOM retry released it */
    load(&b, &s, &c);
    cr_expect_eq(s.empty_caches, 0);
    cr_expect_eq(s.event_count, 3);
    cmt_whatif_stream_free(&s);
    cmt_whatif_selfcheck_free(&c);
    tb_free_builder(&b);
}

/* Real torch 2.6: an OOM retry's releases carry the stack of the request that needed them;
 * empty_cache()'s carry its own. Releases from another stack than the next segment's are an
 * empty_cache() even where that segment does not fit beside what was held before them. */
Test(whatif_blocks, releases_from_another_stack_than_the_next_segment_are_an_empty_cache)
{
    for (int same = 0; same < 2; same++) {
        struct tb b;
        const uint64_t seg = one_segment(&b, MIB(1024), MIB(1000));
        tb_block_free(&b, seg, MIB(600));
        uint64_t v[] = {seg, MIB(600)}, w[] = {seg + MIB(600), MIB(700)};
        tb_alloc_event(&b, CMT_AA_SEGMENT_FREE, 0, 7, CMT_AF(ADDR) | CMT_AF(SIZE), v);
        tb_alloc_event(&b, CMT_AA_SEGMENT_ALLOC, 0, same ? 7 : 9, CMT_AF(ADDR) | CMT_AF(SIZE), w);
        tb_block(&b, seg + MIB(600), MIB(700), MIB(700), 0, 0);
        tb_finish(&b, 1);
        struct cmt_whatif_stream s;
        struct cmt_whatif_selfcheck c;
        load(&b, &s, &c);
        cr_expect_eq(s.empty_caches, same ? 0 : 1, "same stack: %d", same);
        cr_expect_eq(c.recorded_frees, 1);
        cr_assert_eq(cmt_whatif_selfcheck_run(&s, MIB(1000), MIB(1024), &c), 0);
        /* the model frees the segment where the run did: at empty_cache(), or in its own
         * OOM retry for the 700 MiB request */
        cr_expect_eq(c.model_frees, 1, "same stack: %d", same);
        cr_expect_eq(c.agreeing_frees, 1, "same stack: %d", same);
        cmt_whatif_stream_free(&s);
        cmt_whatif_selfcheck_free(&c);
        tb_free_builder(&b);
    }
}

Test(whatif_blocks, disagreements_are_listed_with_their_request)
{
    struct tb b;
    wu_fragmentation(&b, 1, "max_split_size_mb:8192"); /* segments no allocator would make */
    struct cmt_whatif_stream s;
    struct cmt_whatif_selfcheck c;
    load(&b, &s, &c);
    cr_expect_str_eq(c.conf, "max_split_size_mb:8192");
    cr_expect_eq(c.recorded_segments, 2);
    cr_expect(s.has_capacity);
    cr_expect_eq(s.device_free, MIB(WU_FREE_MIB + WU_RESERVED_MIB));
    cr_assert_eq(cmt_whatif_selfcheck_run(&s, s.device_free, s.device_total, &c), 0);
    cr_expect_lt(c.agreeing, c.recorded_segments);
    cr_assert_gt(c.diff_count, 0);
    cr_expect_eq(c.diffs[0].recorded.size, MIB(WU_SEG1_MIB));
    cr_expect_eq(c.diffs[0].model.size, MIB(WU_LIVE1_MIB)); /* the model's exact segment */
    cr_expect_eq(c.diffs[0].request_bytes, MIB(WU_LIVE1_MIB) - 1000);
    cr_expect_str_eq(s.sites[c.diffs[0].site], "forward unet.py:412");
    cmt_whatif_stream_free(&s);
    cmt_whatif_selfcheck_free(&c);
    tb_free_builder(&b);
}

Test(whatif_blocks, a_snapshot_starts_from_its_state_before_the_window)
{
    struct tb b;
    wu_fragmentation(&b, 0, "");
    struct cmt_whatif_stream s;
    struct cmt_whatif_selfcheck c;
    load(&b, &s, &c);
    cr_expect_eq(c.before_segments, 2);
    cr_expect_eq(c.recorded_segments, 0);
    cr_expect_eq(s.unmatched_frees, 1);
    /* each segment made and freed, then carved into its blocks and gaps (fillers freed) */
    cr_expect_eq(c.before_blocks, 3);
    cr_expect_eq(c.before_inexact, 0);
    cr_expect_geq(c.prelude_events, 7);
    cr_assert_eq(cmt_whatif_selfcheck_run(&s, s.device_free, s.device_total, &c), 0);
    cr_expect_eq(c.model_segments, 0); /* the request fits in neither: it fails */
    cr_expect_eq(c.model_ooms, 1);
    cmt_whatif_stream_free(&s);
    cmt_whatif_selfcheck_free(&c);
    tb_free_builder(&b);
}

Test(whatif_blocks, a_trace_without_allocator_records_is_not_found)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    tb_alloc(&b, 0x700000000000, MIB(10), 0);
    tb_finish(&b, 1);
    cmt_reader *r;
    cr_assert_eq(cmt_reader_open_memory(&r, b.buf.data, b.buf.len), 0);
    struct cmt_whatif_stream s;
    struct cmt_whatif_selfcheck c;
    struct cmt_err err = {0};
    cr_expect_eq(cmt_whatif_blocks_load(r, &s, &c, &err), CMT_ENOT_FOUND);
    cr_expect_eq(err.code, CMT_ENOT_FOUND, "the carrier holds the code");
    cmt_reader_close(r);
    cmt_whatif_selfcheck_free(&c);
    tb_free_builder(&b);
}

/* The write-up's failure (model_scenario.h) as PyTorch's allocator would have recorded it with
 * caching on: the run's own settings reproduce every segment and the failure. */
Test(whatif_blocks, the_writeup_run_recorded_with_caching_on_checks_out)
{
    const struct cmt_model_scenario *sc = cmt_model_scenario_writeup();
    for (int with_driver = 0; with_driver < 2; with_driver++) {
        struct tb b;
        alloc_run_record(&b, "", sc->capacity, sc->device_total, sc->events, sc->event_count,
                         sc->id_count, with_driver);
        struct cmt_whatif_stream s;
        struct cmt_whatif_selfcheck c;
        load(&b, &s, &c);
        cr_expect_eq(s.device_free, sc->capacity); /* free at the failure + reserved */
        cr_expect_eq(s.failed_allocs, 1);
        cr_assert_eq(cmt_whatif_selfcheck_run(&s, s.device_free, s.device_total, &c), 0);
        cr_expect_geq(c.recorded_segments, 7);
        cr_expect_eq(c.agreeing, c.recorded_segments);
        cr_expect_eq(c.model_segments, c.recorded_segments);
        cr_expect_eq(c.model_ooms, 1);
        cr_expect_eq(c.recorded_ooms, 1);
        cmt_whatif_stream_free(&s);
        cmt_whatif_selfcheck_free(&c);
        tb_free_builder(&b);
    }
}
