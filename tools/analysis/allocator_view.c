/* allocator_view.c — the allocator's state at one moment: cached blocks, holders by
 * allocation site, memory outside the allocator (allocator.h, struct cmt_alloc_view). */
#include "allocator.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "cmt_search.h"
#include "frames.h"

/* Keeps the largest cached blocks, largest first. */
static void keep_free_block(struct cmt_alloc_view *v, const struct cmt_alloc_free_block *f)
{
    uint32_t i = v->free_shown < CMT_ALLOC_FREE_BLOCKS ? v->free_shown++ : CMT_ALLOC_FREE_BLOCKS;
    if (i == CMT_ALLOC_FREE_BLOCKS && f->size <= v->free_blocks[i - 1].size)
        return;
    if (i == CMT_ALLOC_FREE_BLOCKS)
        i--;
    while (i > 0 && v->free_blocks[i - 1].size < f->size) {
        v->free_blocks[i] = v->free_blocks[i - 1];
        i--;
    }
    v->free_blocks[i] = *f;
}

/* Whether PyTorch's best fit may take a cached block of `size` in segment s for the request
 * (docs/analysis.md: the pool, then max_split_size and max_non_split_rounding). */
static int servable(const struct cmt_alloc_view *v, const struct cmt_alloc_segment *s,
                    uint64_t size)
{
    uint64_t r = v->request_bytes, split = v->max_split_size;
    if (!r || size < r)
        return 0;
    if (v->pools_known && s->small != (r <= (UINT64_C(1) << 20)))
        return 0; /* the other pool */
    if (split && r < split && size >= split)
        return 0; /* oversize blocks are kept for oversize requests */
    if (split && r >= split && size - r >= v->non_split_rounding)
        return 0;
    return 1;
}

static void free_gap(struct cmt_alloc_view *v, const struct cmt_alloc_segment *s, uint64_t from,
                     uint64_t to)
{
    if (to <= from)
        return;
    struct cmt_alloc_free_block f = {from,      to - from,       s->addr, s->size,
                                     s->stream, !!s->live_count, 0};
    f.oversize = v->max_split_size && f.size >= v->max_split_size;
    v->free_block_count++;
    if (servable(v, s, f.size))
        v->servable_blocks++;
    if (f.size > v->largest_free_block)
        v->largest_free_block = f.size;
    if (f.split) {
        v->split_free_bytes += f.size;
        v->split_free_count++;
    }
    if (f.oversize) {
        v->oversize_free_bytes += f.size;
        v->oversize_free_count++;
    }
    keep_free_block(v, &f);
}

/* The gaps between live blocks (sorted by address) of every segment: the cached blocks. */
static void cached_blocks(const struct cmt_alloc_device *d, const struct cmt_alloc_block *blocks,
                          size_t n, struct cmt_alloc_view *v)
{
    size_t b = 0;
    for (size_t i = 0; i < d->segment_count; i++) {
        const struct cmt_alloc_segment *s = &d->segments[i];
        uint64_t end = s->addr + s->size, at = s->addr;
        while (b < n && blocks[b].addr < s->addr)
            b++;
        for (; b < n && blocks[b].addr < end; b++) {
            free_gap(v, s, at, blocks[b].addr);
            uint64_t bend = blocks[b].addr + blocks[b].size;
            at = bend > at ? bend : at;
        }
        free_gap(v, s, at, end);
    }
}

static int by_stack(const void *x, const void *y)
{
    const struct cmt_alloc_holder *a = x, *b = y;
    return (a->stack > b->stack) - (a->stack < b->stack);
}

static int by_bytes(const void *x, const void *y)
{
    const struct cmt_alloc_holder *a = x, *b = y;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1;
    return (a->stack > b->stack) - (a->stack < b->stack);
}

/* Sums items by stack and keeps the largest `max` in out. @return how many. */
static uint32_t top_stacks(struct cmt_alloc_holder *items, size_t n, struct cmt_alloc_holder *out,
                           uint32_t max)
{
    if (!n)
        return 0; /* items may be NULL */
    qsort(items, n, sizeof *items, by_stack);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && items[m - 1].stack == items[i].stack) {
            items[m - 1].bytes += items[i].bytes;
            items[m - 1].count += items[i].count;
        } else
            items[m++] = items[i];
    }
    qsort(items, m, sizeof *items, by_bytes);
    uint32_t k = m < max ? (uint32_t)m : max;
    memcpy(out, items, k * sizeof *out);
    return k;
}

struct outside_ctx {
    const cmt_alloc *a;
    int32_t dev;
    int expandable; /* VMM handles are keyed by handle: with expandable segments, inside */
    struct cmt_alloc_holder *items;
    size_t count, cap;
    int failed;
};

int cmt_alloc_holds(const cmt_alloc *a, int32_t dev, uint64_t addr)
{
    for (size_t i = 0; i < cmt_alloc_device_count(a); i++) {
        const struct cmt_alloc_device *d = cmt_alloc_device_at(a, i);
        if (d->dev != dev || !d->segment_count)
            continue;
        size_t lo; /* lo - 1: the last segment starting at or below addr */
        CMT_UPPER_BOUND(lo, d->segments, d->segment_count, .addr, addr);
        if (lo && addr - d->segments[lo - 1].addr < d->segments[lo - 1].size)
            return 1;
        /* an expandable segment's reservation may be larger than what is mapped */
        if (lo && d->segments[lo - 1].expandable && addr == d->segments[lo - 1].addr)
            return 1;
    }
    return 0;
}

static void outside_object(void *ctx, const struct cmt_replay_object *o)
{
    struct outside_ctx *c = ctx;
    if (o->dev != c->dev || !CMT_KIND_IS_DEVICE_MEMORY(o->kind) || c->failed)
        return;
    if ((o->kind == CMT_KIND_VMM && c->expandable) || cmt_alloc_holds(c->a, c->dev, o->addr))
        return;
    if (c->count == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        struct cmt_alloc_holder *v = realloc(c->items, cap * sizeof *v);
        if (!v) {
            c->failed = 1;
            return;
        }
        c->items = v;
        c->cap = cap;
    }
    c->items[c->count++] = (struct cmt_alloc_holder){o->site, 0, o->size, 1};
}

static int outside(const cmt_alloc *a, const cmt_replay *rp, struct cmt_alloc_view *v)
{
    const struct cmt_replay_device *rd = cmt_replay_device(rp, v->dev);
    v->driver_live_bytes = rd ? rd->live_bytes : 0;
    v->outside_bytes = v->driver_live_bytes > v->fig.reserved_bytes
                           ? v->driver_live_bytes - v->fig.reserved_bytes
                           : 0;
    struct outside_ctx c = {a, v->dev, 0, NULL, 0, 0, 0};
    for (size_t i = 0; i < cmt_alloc_device_count(a); i++) {
        const struct cmt_alloc_device *d = cmt_alloc_device_at(a, i);
        for (size_t s = 0; d->dev == v->dev && s < d->segment_count; s++)
            c.expandable |= d->segments[s].expandable;
    }
    cmt_replay_foreach_live(rp, outside_object, &c);
    /* items hold replay site indices in `stack` until here */
    for (size_t i = 0; i < c.count; i++) {
        const struct cmt_replay_site *s = cmt_replay_site(rp, c.items[i].stack);
        c.items[i].stack = s ? s->stack : 0;
    }
    v->outside_cand_count = top_stacks(c.items, c.count, v->outside_cand, CMT_ALLOC_CANDIDATES);
    free(c.items);
    return c.failed ? CMT_ENOMEM : 0;
}

static int holders(const struct cmt_alloc_block *blocks, size_t count, struct cmt_alloc_view *v)
{
    if (!count)
        return 0;
    struct cmt_alloc_holder *items = malloc(count * sizeof *items);
    if (!items)
        return CMT_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        if (blocks[i].state == CMT_BLOCK_ACTIVE)
            items[n++] = (struct cmt_alloc_holder){blocks[i].stack, 0, blocks[i].size, 1};
    v->cand_count = top_stacks(items, n, v->cand, CMT_ALLOC_CANDIDATES);
    free(items);
    return 0;
}

int cmt_alloc_view(const cmt_alloc *a, const cmt_replay *rp, uint32_t allocator, int32_t dev,
                   uint64_t request_bytes, struct cmt_alloc_view *v)
{
    const struct cmt_alloc_device *d = cmt_alloc_device(a, allocator, dev);
    memset(v, 0, sizeof *v);
    if (!d)
        return CMT_ENOT_FOUND;
    const struct cmt_alloc_settings *s = cmt_alloc_settings(a, d->allocator);
    v->allocator = d->allocator;
    v->dev = dev;
    v->name = s ? s->name : NULL;
    v->conf = s ? s->conf : NULL;
    v->request_bytes = request_bytes;
    v->fig = d->now;
    v->unallocated_bytes = d->now.reserved_bytes > d->now.allocated_bytes
                               ? d->now.reserved_bytes - d->now.allocated_bytes
                               : 0;
    v->max_split_size = cmt_alloc_conf_max_split(v->conf);
    v->non_split_rounding = cmt_alloc_conf_non_split_rounding(v->conf);
    v->expandable = v->conf && (strstr(v->conf, "expandable_segments:True") ||
                                strstr(v->conf, "expandable_segments:true"));
    for (size_t i = 0; i < d->segment_count; i++) {
        v->pools_known |= d->segments[i].small;
        v->expandable |= d->segments[i].expandable;
    }
    struct cmt_alloc_block *blocks;
    size_t n = cmt_alloc_blocks(d, &blocks);
    if (n == (size_t)-1)
        return CMT_ENOMEM;
    cached_blocks(d, blocks, n, v);
    int rc = holders(blocks, n, v);
    free(blocks);
    int orc = rp ? outside(a, rp, v) : 0;
    return rc ? rc : orc;
}

uint32_t cmt_alloc_site_node(const cmt_reader *r, uint32_t stack)
{
    struct cmt_stack_node n;
    uint32_t id = stack;
    for (int depth = 0; id && depth < 4096; depth++) {
        const struct cmt_symbol *sym = cmt_reader_symbol(r, id);
        const char *file = sym && sym->file ? cmt_reader_string(r, sym->file) : NULL;
        size_t len = file ? strlen(file) : 0;
        if (len > 3 && strcmp(file + len - 3, ".py") == 0)
            return id;
        if (cmt_reader_stack_node(r, id, &n) != 0 || n.parent == id)
            break;
        id = n.parent;
    }
    return cmt_call_site_node(r, stack);
}

struct keyed {
    char key[512];
    struct cmt_alloc_holder h;
};

static int by_key(const void *x, const void *y)
{
    const struct keyed *a = x, *b = y;
    int c = strcmp(a->key, b->key);
    return c ? c : by_bytes(&a->h, &b->h);
}

/* Groups candidates by the text of the frame they are named by, keeps the largest `max`. */
static uint32_t group(const cmt_reader *r, struct cmt_alloc_holder *cand, uint32_t n,
                      struct cmt_alloc_holder *out, uint32_t max, int python_first)
{
    struct keyed *k = calloc(n ? n : 1, sizeof *k);
    if (!k) { /* ungrouped */
        uint32_t m = n < max ? n : max;
        memcpy(out, cand, m * sizeof *out);
        return m;
    }
    for (uint32_t i = 0; i < n; i++) {
        k[i].h = cand[i];
        k[i].h.node = python_first ? cmt_alloc_site_node(r, cand[i].stack)
                                   : cmt_call_site_node(r, cand[i].stack);
        if (k[i].h.node)
            cmt_reader_format_frame(r, k[i].h.node, k[i].key, sizeof k[i].key);
    }
    qsort(k, n, sizeof *k, by_key);
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (m && strcmp(k[m - 1].key, k[i].key) == 0) { /* the first is the largest member */
            k[m - 1].h.bytes += k[i].h.bytes;
            k[m - 1].h.count += k[i].h.count;
        } else
            k[m++] = k[i];
    }
    for (uint32_t i = 0; i < m; i++)
        cand[i] = k[i].h;
    free(k);
    qsort(cand, m, sizeof *cand, by_bytes);
    uint32_t shown = m < max ? m : max;
    memcpy(out, cand, shown * sizeof *out);
    return shown;
}

void cmt_alloc_view_group(const cmt_reader *r, struct cmt_alloc_view *v)
{
    v->holder_count = group(r, v->cand, v->cand_count, v->holders, CMT_ALLOC_HOLDERS, 1);
    v->outside_count = group(r, v->outside_cand, v->outside_cand_count, v->outside,
                             CMT_ALLOC_HOLDERS, 0);
}
