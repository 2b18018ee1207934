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
    char err[128];
    cr_assert_eq(cmt_model_config_parse(&config, conf, err, sizeof err), 0, "%s", err);
    memset(out, 0, n * sizeof *out);
    cr_assert_eq(cmt__snapshot_block_sizes(&s, &config, out), 0);
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
