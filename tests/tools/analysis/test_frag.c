/* Tests of the fragmentation measures (tools/analysis/frag.c): the sort's paths (insertion,
 * radix digits of 8 and of 11 bits, an odd number of passes), buffers kept between measures
 * (cmt__frag_measure), and reservations with and without mappings in them. */
#include <criterion/criterion.h>

#include "frag.h"
#include "reader.h"
#include "replay.h"
#include "trace_builder.h"

/* A trace built in memory and replayed to its end. */
struct held {
    struct tb b;
    cmt_reader *reader;
    cmt_replay *rp;
};

static cmt_replay *replay(struct held *h)
{
    cr_assert_eq(cmt_reader_open_memory(&h->reader, h->b.buf.data, h->b.buf.len), 0);
    cr_assert_eq(cmt_replay_create(&h->rp, h->reader), 0);
    cr_assert_eq(cmt_replay_run(h->rp, NULL, 0), 0);
    return h->rp;
}

static void release(struct held *h)
{
    cmt_replay_destroy(h->rp);
    cmt_reader_close(h->reader);
    tb_free_builder(&h->b);
}

/* n allocations of 1 MiB, slot k at k x 3 MiB (so each hole is 2 MiB), made out of address
 * order; the one at slot n / 3 is 512 KiB, so the hole after it is the largest (2.5 MiB).
 * With jump, the upper half sits 16 TiB higher: a jump between regions (wider than the
 * device's 24 GiB), not a hole. */
static void spread_trace(struct tb *b, uint64_t n, int jump)
{
    tb_begin(b, 24 * TB_GIB, 24 * TB_GIB);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t k = (i * 7919) % n; /* 7919 is prime: every slot once for the n used */
        uint64_t at = 0x7f0000000000 + k * 3 * TB_MIB + (jump && k >= n / 2 ? 1ull << 44 : 0);
        tb_alloc(b, at, k == n / 3 ? TB_MIB / 2 : TB_MIB, 0);
    }
    tb_finish(b, 1);
}

static void expect_spread(const struct cmt_fragmentation *f, uint64_t n, int jump)
{
    uint64_t holes = n - 1 - (jump ? 1 : 0);
    cr_expect_eq(f->hole_bytes, holes * 2 * TB_MIB + TB_MIB / 2, "n %lu jump %d: %lu", n, jump,
                 f->hole_bytes);
    cr_expect_eq(f->largest_hole, 2 * TB_MIB + TB_MIB / 2, "n %lu jump %d", n, jump);
}

static void expect_same(const struct cmt_fragmentation *a, const struct cmt_fragmentation *b)
{
    cr_expect_eq(a->hole_bytes, b->hole_bytes);
    cr_expect_eq(a->largest_hole, b->largest_hole);
    cr_expect_float_eq(a->hole_fragmentation, b->hole_fragmentation, 1e-12);
    cr_expect_eq(a->reserved_va_bytes, b->reserved_va_bytes);
    cr_expect_eq(a->mapped_in_va_bytes, b->mapped_in_va_bytes);
    cr_expect_eq(a->largest_unmapped, b->largest_unmapped);
    cr_expect_eq(a->waste_bytes, b->waste_bytes);
    cr_expect_eq(a->pool_retained_bytes, b->pool_retained_bytes);
}

/* 20: insertion sort; 1000: digits of up to 8 bits (bits 20..31 differ: 2 passes; with the
 * jump bits 20..44, 3 passes, a digit where nothing differs skipped); 5000: digits of up to 11
 * bits (2 passes; with the jump 3). After an odd number of passes the sorted ranges are in the
 * scratch buffer, which trades places. */
Test(frag, holes_in_address_order_on_every_sort_path)
{
    static const uint64_t sizes[] = {20, 1000, 5000};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        for (int jump = 0; jump < 2; jump++) {
            struct held h;
            spread_trace(&h.b, sizes[i], jump);
            struct cmt_fragmentation f;
            cr_assert_eq(cmt_replay_fragmentation(replay(&h), 0, &f), 0);
            expect_spread(&f, sizes[i], jump);
            release(&h);
        }
}

/* One scratch through measures of different live sets, large then small then large again,
 * and twice the same: each as cmt_replay_fragmentation measures with buffers of its own. */
Test(frag, kept_buffers_measure_as_fresh_ones)
{
    static const uint64_t sizes[] = {5000, 20, 1000, 5000};
    struct cmt__frag_scratch s = {0};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        struct held h;
        spread_trace(&h.b, sizes[i], (int)(i & 1) ^ 1);
        cmt_replay *rp = replay(&h);
        for (int again = 0; again < 2; again++) {
            struct cmt_fragmentation kept, fresh;
            cr_assert_eq(cmt__frag_measure(rp, 0, &s, &kept), 0);
            cr_assert_eq(cmt_replay_fragmentation(rp, 0, &fresh), 0);
            expect_same(&kept, &fresh);
            expect_spread(&kept, sizes[i], (int)(i & 1) ^ 1);
        }
        release(&h);
    }
    cmt__frag_scratch_free(&s);
    cr_expect_null(s.allocs.v);
    cr_expect_null(s.count);
}

/* Two handles mapped into one 64 MiB reservation out of address order (8 MiB at 40 MiB, then
 * 4 MiB at 0): the largest unmapped extent is 4..40 MiB. Without the reservation the same
 * mappings are outside any: nothing reserved, nothing unmapped. */
Test(frag, unmapped_extents_inside_reservations_only)
{
    for (int reserve = 1; reserve >= 0; reserve--) {
        struct held h;
        struct tb *b = &h.b;
        tb_begin(b, TB_GIB, TB_GIB);
        uint64_t base = 0x7000000000;
        uint64_t create8[] = {8 * TB_MIB, 0x78}, create4[] = {4 * TB_MIB, 0x77};
        tb_event(b, TB_CREATE, 0, 0, 0, CMT_F(HANDLE) | CMT_F(SIZE), create8);
        tb_event(b, TB_CREATE, 0, 0, 0, CMT_F(HANDLE) | CMT_F(SIZE), create4);
        uint64_t va[] = {base, 64 * TB_MIB, 0};
        if (reserve)
            tb_event(b, TB_RESERVE, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(ALIGN), va);
        uint64_t high[] = {base + 40 * TB_MIB, 8 * TB_MIB, 0x78, 0};
        uint64_t low[] = {base, 4 * TB_MIB, 0x77, 0};
        uint32_t fields = CMT_F(PTR) | CMT_F(SIZE) | CMT_F(OFFSET) | CMT_F(HANDLE);
        tb_event(b, TB_MAP, 0, 0, 0, fields, high);
        tb_event(b, TB_MAP, 0, 0, 0, fields, low);
        tb_finish(b, 0);
        struct cmt_fragmentation f;
        cr_assert_eq(cmt_replay_fragmentation(replay(&h), 0, &f), 0);
        cr_expect_eq(f.reserved_va_bytes, reserve ? 64 * TB_MIB : 0);
        cr_expect_eq(f.mapped_in_va_bytes, reserve ? 12 * TB_MIB : 0);
        cr_expect_eq(f.largest_unmapped, reserve ? 36 * TB_MIB : 0);
        release(&h);
    }
}
