/* Tests of memory_viz_state: the allocator's live segments, blocks and mapped ranges at the end,
 * from a long random stream of its actions, are those a plain model of the same actions gives
 * (the last action of each block and segment; a page map of the expandable range), while the
 * actions kept stay bounded by what is live, not by how many came (compaction). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "cmt_format.h"
#include "export/memory_viz_state.h"

#define KEYS 64
#define PAGES 64
#define BASE UINT64_C(0x7f0000000000)
#define PAGE (UINT64_C(2) << 20)
#define MAPPED (BASE + (UINT64_C(1) << 36)) /* the expandable range, apart from the rest */

struct model {
    int block[KEYS];   /* 0 free, 1 allocated, 2 free requested */
    int segment[KEYS]; /* live */
    int page[PAGES];   /* mapped */
};

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

/* One random action on keys (and pages) lo.. KEYS - 1, applied to the model and given to the
 * state. */
static void act(struct cmt__memviz_actions *a, struct model *m, uint64_t *seed, uint64_t t,
                unsigned lo)
{
    uint64_t r = next(seed);
    unsigned k = lo + (unsigned)(r >> 8) % (KEYS - lo), pick = (unsigned)r % 8;
    struct cmt__memviz_entry e = {.t_ns = t, .action = CMT__MEMVIZ_ALLOCATOR, .stack = k + 1};
    if (pick < 5) { /* a block's action: alloc, free request, free completed */
        static const uint8_t aa[] = {CMT_AA_ALLOC, CMT_AA_ALLOC, CMT_AA_FREE_REQUESTED,
                                     CMT_AA_FREE_COMPLETED, CMT_AA_FREE_COMPLETED};
        e.aa = aa[pick];
        e.addr = BASE + (uint64_t)k * 4 * PAGE;
        e.size = e.requested = PAGE;
        m->block[k] = e.aa == CMT_AA_ALLOC                           ? 1
                      : e.aa == CMT_AA_FREE_REQUESTED && m->block[k] ? 2
                                                                     : 0;
    } else if (pick < 7) { /* a segment's */
        e.aa = pick == 5 ? CMT_AA_SEGMENT_ALLOC : CMT_AA_SEGMENT_FREE;
        e.addr = BASE + (uint64_t)k * 4 * PAGE;
        e.size = 4 * PAGE;
        m->segment[k] = pick == 5;
    } else { /* a map or unmap of 1..4 pages of the expandable range */
        unsigned p = k % PAGES, n = 1 + (unsigned)(r >> 20) % 4;
        if (p + n > PAGES)
            n = PAGES - p;
        e.aa = (r >> 30) & 1 ? CMT_AA_SEGMENT_MAP : CMT_AA_SEGMENT_UNMAP;
        e.addr = MAPPED + (uint64_t)p * PAGE;
        e.size = (uint64_t)n * PAGE;
        for (unsigned i = p; i < p + n; i++)
            m->page[i] = e.aa == CMT_AA_SEGMENT_MAP;
    }
    cr_assert_eq(cmt__memviz_actions_add(a, &e), 0);
}

Test(memory_viz_state, the_end_state_of_a_long_stream_is_the_models_in_bounded_memory)
{
    struct cmt__memviz_actions a = {0};
    struct model m = {0};
    uint64_t seed = 0x9E3779B97F4A7C15u;
    size_t most = 0;
    /* every key, then only the upper half: the lower half's end is settled long before the
     * end, through many compactions */
    for (uint64_t t = 1; t <= 200000; t++) {
        act(&a, &m, &seed, t, t <= 100000 ? 0 : KEYS / 2);
        if (a.count > most)
            most = a.count;
    }
    /* 64 blocks, 64 segments and 64 pages live at most: the kept actions never grow with the
     * 200000 given (compaction at 4096 and at each doubling of what it leaves) */
    cr_expect_leq(most, 8192, "kept %zu actions", most);
    struct cmt__memviz_state s;
    cr_assert_eq(cmt__memviz_state(&s, &a), 0);
    size_t blocks = 0;
    for (unsigned k = 0; k < KEYS; k++)
        if (m.block[k]) {
            cr_assert_lt(blocks, s.nblocks);
            cr_expect_eq(s.blocks[blocks].e->addr, BASE + (uint64_t)k * 4 * PAGE);
            cr_expect_eq(s.blocks[blocks].pending, m.block[k] == 2, "block %u", k);
            blocks++;
        }
    cr_expect_eq(s.nblocks, blocks);
    /* segments: the plain ones, then (higher addresses) each mapped run of pages */
    size_t i = 0;
    for (unsigned k = 0; k < KEYS; k++)
        if (m.segment[k]) {
            cr_assert_lt(i, s.nsegs);
            cr_expect_eq(s.segs[i].addr, BASE + (uint64_t)k * 4 * PAGE);
            cr_expect_eq(s.segs[i].size, 4 * PAGE);
            i++;
        }
    for (unsigned p = 0; p < PAGES;) {
        if (!m.page[p]) {
            p++;
            continue;
        }
        unsigned q = p;
        while (q < PAGES && m.page[q])
            q++;
        cr_assert_lt(i, s.nsegs);
        cr_expect_eq(s.segs[i].addr, MAPPED + (uint64_t)p * PAGE, "run at page %u", p);
        cr_expect_eq(s.segs[i].size, (uint64_t)(q - p) * PAGE, "run at page %u", p);
        i++;
        p = q;
    }
    cr_expect_eq(s.nsegs, i);
    cmt__memviz_state_free(&s);
    cmt__memviz_actions_free(&a);
}
