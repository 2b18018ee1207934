/* Tests of the block sizes of a snapshot's allocations (tools/snapshot/snapshot_blocks.c). */
#include <criterion/criterion.h>
#include <string.h>

#include "snapshot_blocks.h"

#define MIB(n) ((uint64_t)(n) << 20)
#define SEG 0x7f0000000000ull

static struct cmt_snapshot_entry entry(uint32_t action, uint64_t addr, uint64_t size)
{
    return (struct cmt_snapshot_entry){.action = action, .addr = addr, .size = size};
}

static void sizes(const struct cmt_snapshot_entry *e, size_t n, const char *conf, uint64_t *out)
{
    struct cmt_snapshot s;
    memset(&s, 0, sizeof s);
    s.entries = (struct cmt_snapshot_entry *)e;
    s.nentries = n;
    struct cmt_model_config config;
    cmt_model_config_default(&config, MIB(1) << 20);
    struct cmt_err err = {0};
    cr_assert_eq(cmt_model_config_parse(&config, conf, &err), 0, "%s", err.text);
    memset(out, 0, n * sizeof *out);
    cr_assert_eq(cmt__snapshot_block_sizes(&s, &config, NULL, 0, out), 0);
}

Test(snapshot_blocks, a_large_remainder_of_at_most_1_mib_stays_in_the_block)
{
    const struct cmt_snapshot_entry e[] = {
        entry(CMT_SNAPSHOT_SEGMENT_ALLOC, SEG, MIB(22)),
        entry(CMT_SNAPSHOT_ALLOC, SEG, MIB(21) + MIB(1) / 2), /* 0.5 MiB left: not split */
        entry(CMT_SNAPSHOT_SEGMENT_ALLOC, SEG + MIB(22), MIB(40)),
        entry(CMT_SNAPSHOT_ALLOC, SEG + MIB(22), MIB(20)), /* 20 MiB left: split */
        entry(CMT_SNAPSHOT_ALLOC, SEG + MIB(42), MIB(19)), /* 1 MiB left: not split */
        entry(CMT_SNAPSHOT_ALLOC, 0x10000, 1000),          /* small pool: rounded only */
    };
    uint64_t out[6];
    sizes(e, 6, "", out);
    cr_expect_eq(out[1], MIB(22));
    cr_expect_eq(out[3], MIB(20));
    cr_expect_eq(out[4], MIB(20));
    cr_expect_eq(out[5], 1024);
}

Test(snapshot_blocks, the_free_run_ends_at_the_next_block_in_use_and_merges_freed_ones)
{
    const struct cmt_snapshot_entry e[] = {
        entry(CMT_SNAPSHOT_SEGMENT_ALLOC, SEG, MIB(60)),
        entry(CMT_SNAPSHOT_ALLOC, SEG, MIB(20)),
        entry(CMT_SNAPSHOT_ALLOC, SEG + MIB(20), MIB(10)),
        entry(CMT_SNAPSHOT_ALLOC, SEG + MIB(30), MIB(30)),
        entry(CMT_SNAPSHOT_FREE_REQUESTED, SEG, MIB(20)),
        entry(CMT_SNAPSHOT_ALLOC, SEG, MIB(19) + 4096), /* pending: the run is still used */
        entry(CMT_SNAPSHOT_FREE_COMPLETED, SEG, MIB(20)),
        entry(CMT_SNAPSHOT_FREE_COMPLETED, SEG + MIB(20), MIB(10)),
        entry(CMT_SNAPSHOT_ALLOC, SEG, MIB(29) + 4096), /* the 30 MiB run: not split */
    };
    uint64_t out[9];
    sizes(e, 9, "", out);
    cr_expect_eq(out[3], MIB(30), "the segment's end");
    cr_expect_eq(out[8], MIB(30), "two freed blocks merged into one free run");
    sizes(e, 9, "max_split_size_mb:25", out);
    cr_expect_eq(out[8], MIB(30), "not split either way");
    sizes(e, 9, "expandable_segments:True", out);
    cr_expect_eq(out[8], MIB(29) + 4096, "expandable segments split down to 512 bytes");
}

Test(snapshot_blocks, a_request_at_max_split_size_takes_the_whole_block)
{
    const struct cmt_snapshot_entry e[] = {
        entry(CMT_SNAPSHOT_SEGMENT_ALLOC, SEG, MIB(100)),
        entry(CMT_SNAPSHOT_ALLOC, SEG, MIB(64)),
    };
    uint64_t out[2];
    sizes(e, 2, "", out);
    cr_expect_eq(out[1], MIB(64));
    sizes(e, 2, "max_split_size_mb:64", out);
    cr_expect_eq(out[1], MIB(100));
}

static struct cmt_alloc_event before(uint32_t action, int32_t dev, uint64_t addr, uint64_t size)
{
    struct cmt_alloc_event e = {.action = action, .dev = dev};
    e.fields = CMT_AF(ADDR) | CMT_AF(SIZE) | CMT_AF(FLAGS);
    e.v[CMT_AFIELD_ADDR] = addr;
    e.v[CMT_AFIELD_SIZE] = size;
    e.v[CMT_AFIELD_FLAGS] = CMT_AFLAG_BEFORE;
    return e;
}

Test(snapshot_blocks, a_before_block_takes_a_gap_of_at_most_1_mib_after_it)
{
    struct cmt_alloc_event e[] = {
        before(CMT_AA_SEGMENT_ALLOC, 0, SEG, MIB(20)),
        before(CMT_AA_SEGMENT_ALLOC, 1, SEG, MIB(20)),
        before(CMT_AA_ALLOC, 0, SEG, MIB(5)),               /* 0.5 MiB to the next: widened */
        before(CMT_AA_ALLOC, 0, SEG + MIB(11) / 2, MIB(4)), /* 2.5 MiB to the next: kept */
        before(CMT_AA_ALLOC, 0, SEG + MIB(12), MIB(7)),     /* 1 MiB to the end: widened */
        before(CMT_AA_ALLOC, 1, SEG, MIB(19)),              /* its own device's segment: widened */
        before(CMT_AA_ALLOC, 0, SEG + MIB(30), MIB(4)),     /* in no segment: kept */
        before(CMT_AA_ALLOC, 1, 0x10000, MIB(1) / 2),       /* small pool: kept */
    };
    struct cmt_model_config config;
    cmt_model_config_default(&config, MIB(1) << 20);
    cr_assert_eq(cmt__snapshot_before_sizes(e, 8, &config), 0);
    const uint64_t want[] = {MIB(20), MIB(20), MIB(11) / 2, MIB(4),
                             MIB(8),  MIB(20), MIB(4),      MIB(1) / 2};
    for (size_t i = 0; i < 8; i++)
        cr_expect_eq(e[i].v[CMT_AFIELD_SIZE], want[i], "event %zu: %llu", i,
                     (unsigned long long)e[i].v[CMT_AFIELD_SIZE]);
}

Test(snapshot_blocks, an_allocation_in_a_segment_made_before_the_window_is_not_split_either)
{
    const struct cmt_alloc_event b[] = {
        before(CMT_AA_SEGMENT_ALLOC, 0, SEG, MIB(20)),
        before(CMT_AA_ALLOC, 0, SEG + MIB(10), MIB(10)), /* in use: ends the free run */
    };
    const struct cmt_snapshot_entry e[] = {
        entry(CMT_SNAPSHOT_ALLOC, SEG, MIB(9) + MIB(1) / 2), /* 0.5 MiB left: not split */
    };
    struct cmt_snapshot s;
    memset(&s, 0, sizeof s);
    s.entries = (struct cmt_snapshot_entry *)e;
    s.nentries = 1;
    struct cmt_model_config config;
    cmt_model_config_default(&config, MIB(1) << 20);
    uint64_t out[1] = {0};
    cr_assert_eq(cmt__snapshot_block_sizes(&s, &config, b, 2, out), 0);
    cr_expect_eq(out[0], MIB(10));
}
