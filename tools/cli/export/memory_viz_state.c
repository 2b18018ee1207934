/* memory_viz_state.c — the allocator's live segments and blocks at the end of a trace, from
 * its actions (memory_viz_state.h). Each block and segment is settled by its own actions in file
 * order; the maps and unmaps of expandable segments by the mapped ranges they leave. While the
 * replay streams, the actions that can no longer change the end are dropped now and then (a
 * freed block's, a freed segment's; the maps become one map per mapped range), so the kept
 * actions stay within twice what is live. */
#include <stdlib.h>
#include <string.h>

#include "cmt_format.h"
#include "cmt_grow.h"
#include "export/memory_viz_state.h"

int cmt__memviz_block_action(unsigned aa)
{
    return aa == CMT_AA_ALLOC || aa == CMT_AA_FREE_REQUESTED || aa == CMT_AA_FREE_COMPLETED;
}

static int is_block_action(unsigned aa)
{
    return cmt__memviz_block_action(aa);
}

static int is_map_action(unsigned aa)
{
    return aa == CMT_AA_SEGMENT_MAP || aa == CMT_AA_SEGMENT_UNMAP;
}

struct keyed {
    int32_t dev;
    uint64_t key;
    size_t index; /* into the entries: file order */
};

static int by_key(const void *pa, const void *pb)
{
    const struct keyed *a = pa, *b = pb;
    if (a->dev != b->dev)
        return a->dev < b->dev ? -1 : 1;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

static int is_segment_action(unsigned aa)
{
    return aa == CMT_AA_SEGMENT_ALLOC || aa == CMT_AA_SEGMENT_FREE;
}

int cmt__memviz_state_action(unsigned aa)
{
    return is_block_action(aa) || is_segment_action(aa) || is_map_action(aa);
}

/* One segment's events, in file order: live at the end with its size, or not. */
static void settle_segment(struct cmt__memviz_state *s, const struct cmt__memviz_entry *all,
                           const struct keyed *k, size_t n)
{
    struct cmt__memviz_segment seg = {.dev = k[0].dev, .addr = k[0].key};
    int live = 0;
    for (size_t i = 0; i < n; i++) {
        const struct cmt__memviz_entry *e = &all[k[i].index];
        live = e->aa == CMT_AA_SEGMENT_ALLOC;
        if (live)
            seg.e = e, seg.size = e->size;
    }
    if (live && seg.size)
        s->segs[s->nsegs++] = seg;
}

/* ---- expandable segments: the mapped ranges ---- */

/* Disjoint mapped ranges, sorted by device and address; each keeps the map that made it. */
struct ranges {
    struct cmt__memviz_segment *r;
    size_t n, cap;
};

/* @return the index of the first range of dev (or of a later device) that ends above addr. */
static size_t range_lower(const struct ranges *m, int32_t dev, uint64_t addr)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct cmt__memviz_segment *g = &m->r[mid];
        if (g->dev < dev || (g->dev == dev && g->addr + g->size <= addr))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Takes [lo, hi) of dev out of the ranges: those inside go, those across an end are cut, one
 * across both is split in two. @return 0 or -1 (memory). */
static int ranges_remove(struct ranges *m, int32_t dev, uint64_t lo, uint64_t hi)
{
    for (size_t i = range_lower(m, dev, lo); i < m->n && m->r[i].dev == dev;) {
        struct cmt__memviz_segment *g = &m->r[i];
        uint64_t end = g->addr + g->size;
        if (g->addr >= hi)
            break;
        if (g->addr < lo && end > hi) { /* the middle goes: the part above becomes a range */
            if (CMT_GROW(m->r, m->cap, m->n + 1, 64) != 0)
                return -1;
            g = &m->r[i];
            memmove(g + 2, g + 1, (m->n - i - 1) * sizeof *g);
            m->n++;
            g[1] = *g;
            g[1].addr = hi;
            g[1].size = end - hi;
            g->size = lo - g->addr;
            break;
        }
        if (g->addr < lo) { /* its top goes */
            g->size = lo - g->addr;
            i++;
        } else if (end > hi) { /* its bottom goes */
            g->addr = hi;
            g->size = end - hi;
            break;
        } else { /* all of it */
            memmove(g, g + 1, (m->n - i - 1) * sizeof *g);
            m->n--;
        }
    }
    return 0;
}

/* A map or unmap, in file order. A map over what is mapped already (the import's state
 * before the window may overlap the window's own maps) maps it once. @return 0 or -1. */
static int ranges_apply(struct ranges *m, const struct cmt__memviz_entry *e)
{
    uint64_t end = e->addr + e->size < e->addr ? UINT64_MAX : e->addr + e->size;
    if (ranges_remove(m, e->dev, e->addr, end) != 0)
        return -1;
    if (e->aa == CMT_AA_SEGMENT_UNMAP || end == e->addr)
        return 0;
    if (CMT_GROW(m->r, m->cap, m->n + 1, 64) != 0)
        return -1;
    size_t i = range_lower(m, e->dev, e->addr);
    memmove(m->r + i + 1, m->r + i, (m->n - i) * sizeof *m->r);
    m->n++;
    m->r[i] = (struct cmt__memviz_segment){e, e->dev, e->addr, end - e->addr};
    return 0;
}

/* The expandable segments at the end, as c10 reports them: one per contiguous mapped range
 * of one stream (its expandable segment), named by the map at its start. @return 0 or -1. */
static int settle_mappings(struct cmt__memviz_state *s, const struct cmt__memviz_actions *x)
{
    struct ranges m = {0};
    int rc = 0;
    for (size_t i = 0; i < x->count && rc == 0; i++) {
        const struct cmt__memviz_entry *e = &x->e[i];
        if (e->action == CMT__MEMVIZ_ALLOCATOR &&
            (e->aa == CMT_AA_SEGMENT_MAP || e->aa == CMT_AA_SEGMENT_UNMAP))
            rc = ranges_apply(&m, e);
    }
    for (size_t i = 0; i < m.n && rc == 0; i++) {
        struct cmt__memviz_segment *last = s->nsegs ? &s->segs[s->nsegs - 1] : NULL;
        const struct cmt__memviz_segment *g = &m.r[i];
        if (i && last && last->dev == g->dev && last->addr + last->size == g->addr &&
            last->e->stream == g->e->stream)
            last->size += g->size;
        else
            s->segs[s->nsegs++] = *g;
    }
    free(m.r);
    return rc;
}

static void settle_block(struct cmt__memviz_state *s, const struct cmt__memviz_entry *all,
                         const struct keyed *k, size_t n)
{
    struct cmt__memviz_block b = {NULL, 0};
    for (size_t i = 0; i < n; i++) {
        const struct cmt__memviz_entry *e = &all[k[i].index];
        if (e->aa == CMT_AA_ALLOC)
            b.e = e, b.pending = 0;
        else if (e->aa == CMT_AA_FREE_REQUESTED)
            b.pending = 1;
        else
            b.e = NULL; /* FREE_COMPLETED */
    }
    if (b.e)
        s->blocks[s->nblocks++] = b;
}

static int by_address(const void *pa, const void *pb)
{
    const struct cmt__memviz_segment *a = pa, *b = pb;
    if (a->dev != b->dev)
        return a->dev < b->dev ? -1 : 1;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static int block_by_address(const void *pa, const void *pb)
{
    const struct cmt__memviz_block *a = pa, *b = pb;
    if (a->e->dev != b->e->dev)
        return a->e->dev < b->e->dev ? -1 : 1;
    return a->e->addr < b->e->addr ? -1 : a->e->addr > b->e->addr;
}

/* Groups the events of each key, in file order, and settles each. @return 0 or -1 (memory). */
static int settle(struct cmt__memviz_state *s, const struct cmt__memviz_actions *x, int segments)
{
    struct keyed *k = malloc((x->count ? x->count : 1) * sizeof *k);
    size_t n = 0;
    if (!k)
        return -1;
    for (size_t i = 0; i < x->count; i++) {
        const struct cmt__memviz_entry *e = &x->e[i];
        if (e->action != CMT__MEMVIZ_ALLOCATOR ||
            !(segments ? is_segment_action(e->aa) : is_block_action(e->aa)))
            continue;
        k[n++] = (struct keyed){e->dev, e->addr, i};
    }
    qsort(k, n, sizeof *k, by_key);
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && k[j].dev == k[i].dev && k[j].key == k[i].key; j++)
            ;
        if (segments)
            settle_segment(s, x->e, k + i, j - i);
        else
            settle_block(s, x->e, k + i, j - i);
    }
    free(k);
    return 0;
}

int cmt__memviz_state(struct cmt__memviz_state *s, const struct cmt__memviz_actions *x)
{
    memset(s, 0, sizeof *s);
    s->segs = malloc((x->count ? x->count : 1) * sizeof *s->segs);
    s->blocks = malloc((x->count ? x->count : 1) * sizeof *s->blocks);
    if (!s->segs || !s->blocks || settle(s, x, 1) != 0 || settle_mappings(s, x) != 0 ||
        settle(s, x, 0) != 0)
        return -1;
    qsort(s->segs, s->nsegs, sizeof *s->segs, by_address);
    qsort(s->blocks, s->nblocks, sizeof *s->blocks, block_by_address);
    return 0;
}

void cmt__memviz_state_free(struct cmt__memviz_state *s)
{
    free(s->segs);
    free(s->blocks);
    memset(s, 0, sizeof *s);
}

/* ---- compaction: the actions that still matter ---- */

/* Marks in keep[] the actions of one key that can change the end: a block's last alloc and a
 * free request after it, when no free completed after it; a segment's last action, when it is
 * its alloc. */
static void keep_key(const struct cmt__memviz_entry *all, const struct keyed *k, size_t n,
                     uint8_t *keep)
{
    size_t last_alloc = n;
    for (size_t i = 0; i < n; i++)
        if (all[k[i].index].aa == CMT_AA_ALLOC || all[k[i].index].aa == CMT_AA_SEGMENT_ALLOC)
            last_alloc = i;
    if (last_alloc == n)
        return;
    int request = 0;
    for (size_t i = last_alloc + 1; i < n; i++) {
        unsigned aa = all[k[i].index].aa;
        if (aa == CMT_AA_FREE_COMPLETED || aa == CMT_AA_SEGMENT_FREE)
            return;
        if (aa == CMT_AA_FREE_REQUESTED && !request)
            request = 1, keep[k[i].index] = 1;
    }
    keep[k[last_alloc].index] = 1;
}

/* Marks the actions of one class (segments: 1, blocks: 0) that still matter. */
static void keep_class(const struct cmt__memviz_actions *a, struct keyed *k, int segments,
                       uint8_t *keep)
{
    size_t n = 0;
    for (size_t i = 0; i < a->count; i++)
        if (segments ? is_segment_action(a->e[i].aa) : is_block_action(a->e[i].aa))
            k[n++] = (struct keyed){a->e[i].dev, a->e[i].addr, i};
    qsort(k, n, sizeof *k, by_key);
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && k[j].dev == k[i].dev && k[j].key == k[i].key; j++)
            ;
        keep_key(a->e, k + i, j - i, keep);
    }
}

static int compact(struct cmt__memviz_actions *a)
{
    size_t size = a->count + 1;
    struct keyed *k = malloc(size * sizeof *k);
    uint8_t *keep = calloc(size, 1);
    struct ranges m = {0};
    int rc = k && keep ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < a->count; i++)
        if (is_map_action(a->e[i].aa))
            rc = ranges_apply(&m, &a->e[i]);
    struct cmt__memviz_entry *out = rc == 0 ? malloc((m.n + size) * sizeof *out) : NULL;
    if (out) {
        keep_class(a, k, 1, keep);
        keep_class(a, k, 0, keep);
        /* the ranges, each as one map of its extent, first: maps are settled apart from the
         * blocks and segments, so their order among those is free */
        size_t o = 0;
        for (size_t i = 0; i < m.n; i++, o++) {
            out[o] = *m.r[i].e;
            out[o].aa = CMT_AA_SEGMENT_MAP;
            out[o].addr = m.r[i].addr;
            out[o].size = m.r[i].size;
        }
        for (size_t i = 0; i < a->count; i++)
            if (keep[i])
                out[o++] = a->e[i];
        free(a->e);
        a->e = out;
        a->cap = m.n + size;
        a->count = a->settled = o;
    }
    free(m.r);
    free(k);
    free(keep);
    return out ? 0 : -1;
}

int cmt__memviz_actions_add(struct cmt__memviz_actions *a, const struct cmt__memviz_entry *e)
{
    if (a->count >= 4096 && a->count >= 2 * a->settled && compact(a) != 0)
        return -1;
    if (a->count == a->cap && CMT_GROW(a->e, a->cap, a->count + 1, 4096) != 0)
        return -1;
    a->e[a->count++] = *e;
    return 0;
}

void cmt__memviz_actions_free(struct cmt__memviz_actions *a)
{
    free(a->e);
    memset(a, 0, sizeof *a);
}
