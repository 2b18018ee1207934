/* snapshot_blocks.c — the block sizes of a snapshot's allocations (snapshot_blocks.h). */
#include "snapshot_blocks.h"

#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "cmt_grow.h"
#include "cmt_search.h"

#define SMALL_SIZE CMT_MODEL_MIB /* c10's kSmallSize: the small pool's largest request */
#define MIN_BLOCK 512            /* c10's kMinBlockSize */

/* A sorted set of addresses (block starts), or of segments (start, end). */
struct ranges {
    uint64_t *start, *end;
    size_t n, cap, end_cap;
};

static size_t lower(const struct ranges *r, uint64_t addr)
{
    size_t at;
    CMT_LOWER_BOUND(at, r->start, r->n, , addr);
    return at;
}

static int insert(struct ranges *r, uint64_t start, uint64_t end, int with_end)
{
    size_t i = lower(r, start);
    if (i < r->n && r->start[i] == start) { /* its end was not recorded */
        if (with_end)
            r->end[i] = end;
        return 0;
    }
    if (CMT_GROW(r->start, r->cap, r->n + 1, 64) != 0 ||
        (with_end && CMT_GROW(r->end, r->end_cap, r->n + 1, 64) != 0))
        return CMT_ENOMEM;
    memmove(&r->start[i + 1], &r->start[i], (r->n - i) * sizeof *r->start);
    if (with_end) {
        memmove(&r->end[i + 1], &r->end[i], (r->n - i) * sizeof *r->end);
        r->end[i] = end;
    }
    r->start[i] = start;
    r->n++;
    return 0;
}

static void erase(struct ranges *r, uint64_t start, int with_end)
{
    size_t i = lower(r, start);
    if (i == r->n || r->start[i] != start)
        return;
    memmove(&r->start[i], &r->start[i + 1], (r->n - i - 1) * sizeof *r->start);
    if (with_end)
        memmove(&r->end[i], &r->end[i + 1], (r->n - i - 1) * sizeof *r->end);
    r->n--;
}

/* c10's should_split for a large-pool block of a non-expandable segment. */
static int splits(const struct cmt_model_config *config, uint64_t block, uint64_t size)
{
    uint64_t limit = config->max_split_size ? config->max_split_size : UINT64_MAX; /* 0: none */
    return size < limit && block - size > SMALL_SIZE;
}

/* The block an allocation of `size` (rounded) at addr takes, given the blocks in use and the
 * segments the window made. */
static uint64_t block_size(const struct cmt_model_config *config, const struct ranges *used,
                           const struct ranges *segments, uint64_t addr, uint64_t size)
{
    if (size <= SMALL_SIZE || config->expandable_segments)
        return size; /* the small pool and expandable segments split down to MIN_BLOCK */
    size_t s = lower(segments, addr + 1);
    if (s == 0 || segments->end[s - 1] <= addr)
        return size; /* a segment the window did not see made */
    uint64_t end = segments->end[s - 1];
    size_t next = lower(used, addr + 1);
    if (next < used->n && used->start[next] < end)
        end = used->start[next];
    if (end - addr <= size || splits(config, end - addr, size))
        return size;
    return end - addr;
}

int cmt__snapshot_block_sizes(const struct cmt_snapshot *s, const struct cmt_model_config *config,
                              const struct cmt_alloc_event *before, size_t nbefore,
                              uint64_t *entry_size)
{
    struct ranges used = {0}, segments = {0};
    int rc = 0;
    for (size_t i = 0; i < nbefore && !rc; i++) {
        const uint64_t *v = before[i].v;
        if (before[i].action == CMT_AA_SEGMENT_ALLOC)
            rc = insert(&segments, v[CMT_AFIELD_ADDR], v[CMT_AFIELD_ADDR] + v[CMT_AFIELD_SIZE], 1);
        else if (before[i].action == CMT_AA_ALLOC)
            rc = insert(&used, v[CMT_AFIELD_ADDR], 0, 0);
    }
    for (size_t i = 0; i < s->nentries && !rc; i++) {
        const struct cmt_snapshot_entry *e = &s->entries[i];
        switch (e->action) {
        case CMT_SNAPSHOT_ALLOC:
            entry_size[i] = block_size(config, &used, &segments, e->addr,
                                       cmt_model_round_size(config, (size_t)e->size));
            rc = insert(&used, e->addr, 0, 0);
            break;
        case CMT_SNAPSHOT_FREE_COMPLETED:
        case CMT_SNAPSHOT_FREE: erase(&used, e->addr, 0); break;
        case CMT_SNAPSHOT_SEGMENT_ALLOC:
            rc = insert(&segments, e->addr, e->addr + e->size, 1);
            break;
        case CMT_SNAPSHOT_SEGMENT_FREE: erase(&segments, e->addr, 1); break;
        }
    }
    free(used.start);
    free(segments.start);
    free(segments.end);
    return rc;
}

/* A before-state segment or block start of one device, sorted by (dev, start). */
struct place {
    int32_t dev;
    uint64_t start, end;
};

static int cmp_place(const void *a, const void *b)
{
    const struct place *x = a, *y = b;
    if (x->dev != y->dev)
        return (x->dev > y->dev) - (x->dev < y->dev);
    return (x->start > y->start) - (x->start < y->start);
}

/* The first of p[0 .. n-1] above (dev, addr). */
static size_t above(const struct place *p, size_t n, int32_t dev, uint64_t addr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p[mid].dev < dev || (p[mid].dev == dev && p[mid].start <= addr))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int cmt__snapshot_before_sizes(struct cmt_alloc_event *ev, size_t n,
                               const struct cmt_model_config *config)
{
    if (config->expandable_segments || !n)
        return 0;
    struct place *segs = malloc(n * sizeof *segs), *blocks = malloc(n * sizeof *blocks);
    if (!segs || !blocks) {
        free(segs);
        free(blocks);
        return CMT_ENOMEM;
    }
    size_t ns = 0, nb = 0;
    for (size_t i = 0; i < n; i++) {
        const uint64_t *v = ev[i].v;
        if (ev[i].action == CMT_AA_SEGMENT_ALLOC)
            segs[ns++] = (struct place){ev[i].dev, v[CMT_AFIELD_ADDR],
                                        v[CMT_AFIELD_ADDR] + v[CMT_AFIELD_SIZE]};
        else if (ev[i].action == CMT_AA_ALLOC)
            blocks[nb++] = (struct place){ev[i].dev, v[CMT_AFIELD_ADDR], 0};
    }
    qsort(segs, ns, sizeof *segs, cmp_place);
    qsort(blocks, nb, sizeof *blocks, cmp_place);
    for (size_t i = 0; i < n; i++) {
        uint64_t *v = ev[i].v, addr = v[CMT_AFIELD_ADDR];
        if (ev[i].action != CMT_AA_ALLOC || v[CMT_AFIELD_SIZE] <= SMALL_SIZE ||
            (v[CMT_AFIELD_FLAGS] & CMT_AFLAG_EXPANDABLE))
            continue;
        size_t s = above(segs, ns, ev[i].dev, addr);
        if (!s || segs[s - 1].dev != ev[i].dev || segs[s - 1].end <= addr)
            continue; /* in no segment known */
        uint64_t end = segs[s - 1].end;
        size_t next = above(blocks, nb, ev[i].dev, addr);
        if (next < nb && blocks[next].dev == ev[i].dev && blocks[next].start < end)
            end = blocks[next].start;
        if (end > addr + v[CMT_AFIELD_SIZE] && end - addr - v[CMT_AFIELD_SIZE] <= SMALL_SIZE)
            v[CMT_AFIELD_SIZE] = end - addr;
    }
    free(segs);
    free(blocks);
    return 0;
}
