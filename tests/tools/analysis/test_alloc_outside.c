/* Tests of device memory outside the allocator over the run (tools/analysis/alloc_outside.c):
 * which driver allocations no segment covers, their lives on the allocator's axis, their sites,
 * the bytes at the OOM (as `oom`'s view counts them), and a snapshot alone (not known). */
#include <criterion/criterion.h>
#include <string.h>

#include "alloc_fixture.h"
#include "alloc_history.h"
#include "alloc_outside.h"
#include "allocator.h"
#include "reader.h"
#include "replay.h"
#include "trace_builder.h"

#define MIB(x) ((uint64_t)(x) << 20)
#define SEG UINT64_C(0x7f0000000000)
#define NCCL UINT64_C(0x7e0000000000)
#define WORKSPACE UINT64_C(0x7e0100000000)

/* The page's pass: the allocator view, its history, and the analysis that reads the history. */
static struct {
    cmt_reader *reader;
    cmt_replay *rp;
    cmt_alloc *alloc;
    cmt_alloc_history *hist;
    cmt_alloc_outside *out;
} pass;

static void analyse(struct tb *b)
{
    cr_assert_eq(cmt_reader_open_memory(&pass.reader, b->buf.data, b->buf.len), 0);
    cr_assert_eq(cmt_alloc_create(&pass.alloc), 0);
    cr_assert_eq(cmt_alloc_history_create(&pass.hist, pass.alloc, 64), 0);
    cr_assert_eq(cmt_alloc_outside_create(&pass.out, pass.hist), 0);
    struct cmt_observer obs[] = {cmt_alloc_observer(pass.alloc),
                                 cmt_alloc_history_observer(pass.hist),
                                 cmt_alloc_outside_observer(pass.out)};
    cr_assert_eq(cmt_replay_create(&pass.rp, pass.reader), 0);
    cr_assert_eq(cmt_replay_run(pass.rp, obs, 3), 0);
}

static void done(struct tb *b)
{
    cmt_alloc_outside_destroy(pass.out);
    cmt_alloc_history_destroy(pass.hist);
    cmt_alloc_destroy(pass.alloc);
    cmt_replay_destroy(pass.rp);
    cmt_reader_close(pass.reader);
    tb_free_builder(b);
}

static const char *site_name(uint32_t node, char *buf, size_t size)
{
    buf[0] = 0;
    if (node)
        cmt_reader_format_frame(pass.reader, node, buf, size);
    return buf;
}

/* Allocator events: 0 segment (its cuMemAlloc before it), 1 block, 2 segment (cuMemAlloc
 * after it), 3 block, 4 OOM, 5 block. Driver: NCCL's 64 MiB before event 0 (live to the end),
 * a 16 MiB workspace after event 1 freed after event 3, an 8 MiB one allocated and freed
 * between events 3 and 4 (no ordinal shows it). */
static void run_with_outside(struct tb *b)
{
    tb_begin(b, 8 * TB_GIB, 8 * TB_GIB);
    uint32_t root = tb_source_frame(b, 0, "<module>", "train.py", 7);
    uint32_t nccl = tb_frame(b, tb_source_frame(b, root, "init", "dist.py", 12),
                             "ncclCommInitRank");
    uint32_t blas = tb_frame(b, tb_source_frame(b, root, "forward", "model.py", 42),
                             "cublasCreate_v2");
    tb_allocator(b, 1, "");
    tb_alloc(b, NCCL, MIB(64), nccl);
    tb_alloc(b, SEG, MIB(40), 0);
    tb_segment(b, SEG, MIB(40), 0);
    tb_block(b, SEG, MIB(4), MIB(4), 0, 0);
    tb_alloc(b, WORKSPACE, MIB(16), blas);
    tb_segment(b, SEG + MIB(40), MIB(20), 0);
    tb_alloc(b, SEG + MIB(40), MIB(20), 0);
    tb_block(b, SEG + MIB(40), MIB(2), MIB(2), 0, 0);
    tb_free(b, WORKSPACE);
    tb_alloc(b, WORKSPACE, MIB(8), blas);
    tb_free(b, WORKSPACE);
    uint64_t v[] = {MIB(100)};
    tb_alloc_event(b, CMT_AA_OOM, 0, 0, CMT_AF(SIZE), v);
    tb_block(b, SEG + MIB(4), MIB(4), MIB(4), 0, 0);
    tb_finish(b, 1);
}

Test(alloc_outside, only_driver_memory_no_segment_covers)
{
    struct tb b;
    run_with_outside(&b);
    analyse(&b);
    cr_expect_eq(cmt_alloc_outside_known(pass.out), 1);
    cr_expect_eq(cmt_alloc_outside_truncated(pass.out), 0);
    size_t n;
    const struct cmt_alloc_outside_life *l = cmt_alloc_outside_lives(pass.out, &n);
    cr_assert_eq(n, 2,
                 "the segments' own cuMemAllocs, in either order, are inside; the "
                 "8 MiB workspace lives at no ordinal");
    cr_expect_eq(l[0].addr, NCCL);
    cr_expect_eq(l[0].size, MIB(64));
    cr_expect_eq(l[0].from_seq, 0);
    cr_expect_eq(l[0].to_seq, CMT_ALLOC_NEVER);
    cr_expect_eq(l[1].addr, WORKSPACE);
    cr_expect_eq(l[1].size, MIB(16));
    cr_expect_eq(l[1].from_seq, 2, "allocated after event 1: live from event 2");
    cr_expect_eq(l[1].to_seq, 4, "freed after event 3: live until event 4");
    cr_expect_neq(l[1].to_t_ns, CMT_ALLOC_NEVER);
    cr_expect_eq(l[0].kind, CMT_KIND_DEVICE);
    done(&b);
}

Test(alloc_outside, bytes_at_a_moment)
{
    struct tb b;
    run_with_outside(&b);
    analyse(&b);
    cr_expect_eq(cmt_alloc_outside_at(pass.out, 0, 0), MIB(64));
    cr_expect_eq(cmt_alloc_outside_at(pass.out, 0, 2), MIB(80));
    cr_expect_eq(cmt_alloc_outside_at(pass.out, 0, 3), MIB(80));
    size_t n;
    const struct cmt_alloc_history_oom *o = cmt_alloc_history_ooms(pass.hist, &n);
    cr_assert_eq(n, 1);
    cr_expect_eq(o[0].seq, 4);
    cr_expect_eq(cmt_alloc_outside_at(pass.out, 0, o[0].seq), MIB(64), "at the OOM");
    cr_expect_eq(cmt_alloc_outside_at(pass.out, 1, 2), 0, "another device has none");
    done(&b);
}

Test(alloc_outside, sites_by_top_frame_most_bytes_first)
{
    struct tb b;
    run_with_outside(&b);
    analyse(&b);
    size_t n, nl;
    const struct cmt_alloc_outside_site *s = cmt_alloc_outside_sites(pass.out, &n);
    const struct cmt_alloc_outside_life *l = cmt_alloc_outside_lives(pass.out, &nl);
    cr_assert_eq(n, 2);
    char name[256];
    cr_expect(strstr(site_name(s[0].node, name, sizeof name), "init") != NULL, "%s", name);
    cr_expect(strstr(name, "dist.py") != NULL, "named by its Python frame: %s", name);
    cr_expect_eq(s[0].bytes, MIB(64));
    cr_expect_eq(s[0].lives, 1);
    cr_expect(strstr(site_name(s[1].node, name, sizeof name), "forward") != NULL, "%s", name);
    cr_expect_eq(s[1].bytes, MIB(16));
    cr_expect_eq(l[0].site, 0);
    cr_expect_eq(l[1].site, 1);
    done(&b);
}

/* The write-up's failure: NCCL's buffer is what `oom`'s view counts outside at the OOM. */
Test(alloc_outside, at_the_oom_as_the_oom_view_counts)
{
    struct tb b;
    wu_fragmentation(&b, 1, "");
    analyse(&b);
    size_t n;
    const struct cmt_alloc_history_oom *o = cmt_alloc_history_ooms(pass.hist, &n);
    cr_assert_eq(n, 1);
    struct cmt_alloc_view v;
    cr_assert_eq(cmt_alloc_view(pass.alloc, pass.rp, 0, 0, 0, &v), 0);
    cr_expect_eq(v.outside_bytes, MIB(WU_OUTSIDE_MIB));
    cr_expect_eq(cmt_alloc_outside_at(pass.out, 0, o[0].seq), v.outside_bytes);
    done(&b);
}

Test(alloc_outside, a_snapshot_alone_does_not_know)
{
    struct tb b;
    wu_fragmentation(&b, 0, "");
    analyse(&b);
    size_t n;
    cmt_alloc_outside_lives(pass.out, &n);
    cr_expect_eq(cmt_alloc_outside_known(pass.out), 0);
    cr_expect_eq(n, 0);
    cr_expect_eq(cmt_alloc_outside_at(pass.out, 0, 0), 0);
    done(&b);
}

/* A 20 MiB cuMemCreate handle, then a segment (expandable or not) elsewhere. @return the
 * allocations outside. */
static size_t vmm_handle_beside(int expandable)
{
    struct tb b;
    tb_begin(&b, 8 * TB_GIB, 8 * TB_GIB);
    tb_allocator(&b, 1, expandable ? "expandable_segments:True" : "");
    uint64_t create[] = {MIB(20), 0x1234}; /* values in field-bit order */
    tb_event(&b, TB_CREATE, 0, 0, 0, CMT_F(HANDLE) | CMT_F(SIZE), create);
    tb_segment(&b, SEG, MIB(20), expandable ? CMT_AFLAG_EXPANDABLE : 0);
    tb_block(&b, SEG, MIB(4), MIB(4), 0, 0);
    tb_finish(&b, 1);
    analyse(&b);
    size_t n;
    cmt_alloc_outside_lives(pass.out, &n);
    done(&b);
    return n;
}

Test(alloc_outside, expandable_segments_hold_every_vmm_handle)
{
    cr_expect_eq(vmm_handle_beside(1), 0, "with expandable segments a handle is the allocator's");
    cr_expect_eq(vmm_handle_beside(0), 1, "without, a handle has no address in a segment");
}

/* A segment at SEG, given back; a library's cuMemAlloc then gets SEG, frees it; the allocator
 * takes SEG again: the library's allocation lies in no segment's life, the segments' own do. */
Test(alloc_outside, an_address_reused_between_segments_is_outside)
{
    struct tb b;
    tb_begin(&b, 8 * TB_GIB, 8 * TB_GIB);
    uint32_t lib = tb_frame(&b, tb_source_frame(&b, 0, "<module>", "train.py", 7), "libInit");
    tb_allocator(&b, 1, "");
    tb_alloc(&b, SEG, MIB(20), 0);
    tb_segment(&b, SEG, MIB(20), 0);
    tb_block(&b, SEG, MIB(4), MIB(4), 0, 0);
    tb_block_free(&b, SEG, MIB(4));
    uint64_t v[] = {SEG, MIB(20)};
    tb_alloc_event(&b, CMT_AA_SEGMENT_FREE, 0, 0, CMT_AF(ADDR) | CMT_AF(SIZE), v);
    tb_free(&b, SEG);
    tb_alloc(&b, SEG, MIB(8), lib);
    tb_alloc(&b, SEG + MIB(64), MIB(20), 0);
    tb_segment(&b, SEG + MIB(64), MIB(20), 0);
    tb_free(&b, SEG);
    tb_alloc(&b, SEG, MIB(20), 0);
    tb_segment(&b, SEG, MIB(20), 0);
    tb_block(&b, SEG, MIB(4), MIB(4), 0, 0);
    tb_finish(&b, 1);
    analyse(&b);
    size_t n;
    const struct cmt_alloc_outside_life *l = cmt_alloc_outside_lives(pass.out, &n);
    cr_assert_eq(n, 1);
    cr_expect_eq(l[0].addr, SEG);
    cr_expect_eq(l[0].size, MIB(8));
    cr_expect_eq(l[0].from_seq, 5);
    cr_expect_eq(l[0].to_seq, 6);
    cr_expect_eq(cmt_alloc_outside_at(pass.out, 0, 5), MIB(8));
    cr_expect_eq(cmt_alloc_outside_at(pass.out, 0, 6), 0);
    done(&b);
}

Test(alloc_outside, the_largest_lives_are_given_in_order_of_allocation)
{
    struct tb b;
    run_with_outside(&b); /* outside: NCCL's 64 MiB, then the 16 MiB workspace */
    analyse(&b);
    size_t total, *pick, n = cmt_alloc_outside_largest(pass.out, 0, 1, &total, &pick);
    cr_assert_eq(n, 1);
    cr_expect_eq(total, 2);
    size_t count;
    const struct cmt_alloc_outside_life *l = cmt_alloc_outside_lives(pass.out, &count);
    cr_expect_eq(l[pick[0]].size, MIB(64), "the largest");
    free(pick);
    n = cmt_alloc_outside_largest(pass.out, 0, 2, &total, &pick);
    cr_assert_eq(n, 2);
    cr_expect(pick[0] == 0 && pick[1] == 1, "in order of allocation");
    free(pick);
    n = cmt_alloc_outside_largest(pass.out, 1, 2, &total, &pick);
    cr_expect_eq(n, 0);
    cr_expect_eq(total, 0, "another device has none");
    free(pick);
    done(&b);
}
