/* alloc_outside.c — device memory outside the allocator over the run (alloc_outside.h). */
#include "alloc_outside.h"

#include <stdlib.h>
#include <string.h>

#include "allocator.h"
#include "cmt_error.h"
#include "cmt_grow.h"
#include "cmt_search.h"
#include "replay.h"
#include "replay_map.h"

#define MAX_LIVES (size_t)1000000   /* beyond: left out (truncated) */
#define VMM_KEY (UINT64_C(1) << 63) /* handles and addresses apart in one map */

struct cmt_alloc_outside {
    const cmt_alloc_history *history; /* its count of allocator events: the next one's ordinal */
    int known, truncated;
    struct cmt_alloc_outside_life *lives; /* every driver allocation until finish, then outside */
    size_t count, cap;
    struct cmt__map open; /* live driver allocations: aux = index in lives */
    struct cmt_alloc_outside_site *sites;
    size_t site_count;
};

int cmt_alloc_outside_create(cmt_alloc_outside **out, const cmt_alloc_history *history)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return CMT_ENOMEM;
    (*out)->history = history;
    return 0;
}

void cmt_alloc_outside_destroy(cmt_alloc_outside *o)
{
    if (!o)
        return;
    cmt__map_free(&o->open);
    free(o->lives);
    free(o->sites);
    free(o);
}

static void fail(cmt_alloc_outside *o, int why)
{
    if (o->truncated < why)
        o->truncated = why;
}

/* The life open at key ends now: it is live until the next allocator event. */
static void end_life(cmt_alloc_outside *o, uint64_t key, uint64_t t_ns)
{
    struct cmt__entry *e = cmt__map_find(&o->open, key);
    if (!e)
        return;
    o->lives[e->aux].to_seq = cmt_alloc_history_events(o->history);
    o->lives[e->aux].to_t_ns = t_ns;
    cmt__map_remove(&o->open, e);
}

static void begin_life(cmt_alloc_outside *o, const cmt_replay *rp, const struct cmt_replay_step *st,
                       uint64_t key)
{
    const struct cmt_event *e = &st->rec.u.event;
    end_life(o, key, e->t_ns); /* its free was not recorded */
    if (o->count >= MAX_LIVES) {
        fail(o, 1);
        return;
    }
    struct cmt__entry *n;
    if (CMT_GROW(o->lives, o->cap, o->count + 1, 256) != 0 ||
        !(n = cmt__map_insert(&o->open, key))) {
        fail(o, 2);
        return;
    }
    n->kind = 1;
    n->aux = o->count;
    const struct cmt_replay_site *s = cmt_replay_site(rp, st->site);
    o->lives[o->count++] = (struct cmt_alloc_outside_life){
        .addr = st->key,
        .size = st->bytes,
        .from_seq = cmt_alloc_history_events(o->history),
        .to_seq = CMT_ALLOC_NEVER,
        .from_t_ns = e->t_ns,
        .to_t_ns = CMT_ALLOC_NEVER,
        .stack = s ? s->stack : 0,
        .dev = e->dev,
        .kind = st->kind};
}

static unsigned step(struct cmt_observer *self, const cmt_replay *rp,
                     const struct cmt_replay_step *st)
{
    cmt_alloc_outside *o = self->ctx;
    if (st->rec.type != CMT_REC_EVENT)
        return CMT_OBSERVE_ALL;
    o->known = 1;
    if (st->failed || !CMT_KIND_IS_DEVICE_MEMORY(st->kind))
        return CMT_OBSERVE_ALL;
    uint64_t key = st->kind == CMT_KIND_VMM ? st->key | VMM_KEY : st->key;
    if (st->released)
        end_life(o, key, st->rec.u.event.t_ns);
    else if (st->delta > 0)
        begin_life(o, rp, st, key);
    return CMT_OBSERVE_ALL;
}

/* ---- at the end: which lives no segment covers ---- */

/* Segments by address, then by start: at one address the lives follow one another. */
static int by_addr(const void *x, const void *y)
{
    const struct cmt_alloc_segment_life *a = *(const struct cmt_alloc_segment_life *const *)x,
                                        *b = *(const struct cmt_alloc_segment_life *const *)y;
    if (a->addr != b->addr)
        return (a->addr > b->addr) - (a->addr < b->addr);
    return (a->from_seq > b->from_seq) - (a->from_seq < b->from_seq);
}

static int overlaps(uint64_t from, uint64_t to, uint64_t from2, uint64_t to2)
{
    return from < to2 && from2 < to;
}

/* Segments by address (pointers into the history's), the largest's size in *widest. */
static const struct cmt_alloc_segment_life **sorted_segments(const cmt_alloc_history *h,
                                                             size_t *count, uint64_t *widest)
{
    size_t n = 0;
    const struct cmt_alloc_segment_life *s = h ? cmt_alloc_history_segments(h, &n) : NULL;
    const struct cmt_alloc_segment_life **v = malloc((n + 1) * sizeof *v);
    if (!v)
        return NULL;
    *widest = 0;
    for (size_t i = 0; i < n; i++) {
        v[i] = &s[i];
        *widest = s[i].size > *widest ? s[i].size : *widest;
    }
    qsort(v, n, sizeof *v, by_addr);
    *count = n;
    return v;
}

/* Whether a segment covers l's address during its life. The segments at one address follow
 * one another in time, so of each address only the last to start before l ends (and the one
 * before it, when the size changed) can: a binary search per address within `widest` below. */
static int inside(const struct cmt_alloc_outside_life *l,
                  const struct cmt_alloc_segment_life *const *segs, size_t n, uint64_t widest)
{
    size_t end;
    CMT_UPPER_BOUND(end, segs, n, ->addr, l->addr); /* segs[0, end): at or below */
    while (end > 0 && l->addr - segs[end - 1]->addr < widest) {
        uint64_t at = segs[end - 1]->addr;
        size_t first, last;
        CMT_LOWER_BOUND(first, segs, end, ->addr, at); /* segs[first, end): at `at` */
        CMT_LOWER_BOUND(last, segs + first, end - first, ->from_seq, l->to_seq);
        last += first; /* segs[first, last): starting before l ends */
        for (size_t i = last; i > first && i + 2 > last; i--) {
            const struct cmt_alloc_segment_life *s = segs[i - 1];
            if (s->dev == l->dev && l->addr - s->addr < s->size &&
                overlaps(l->from_seq, l->to_seq, s->from_seq, s->to_seq))
                return 1;
        }
        end = first;
    }
    return 0;
}

/* The devices with an expandable segment, as a bit mask by device + 1. */
static uint64_t expandable_devices(const struct cmt_alloc_segment_life *const *segs, size_t n)
{
    uint64_t mask = 0;
    for (size_t i = 0; i < n; i++)
        if (segs[i]->expandable && segs[i]->dev + 1 >= 0 && segs[i]->dev + 1 < 64)
            mask |= UINT64_C(1) << (segs[i]->dev + 1);
    return mask;
}

static int classify(cmt_alloc_outside *o)
{
    size_t n;
    uint64_t widest;
    const struct cmt_alloc_segment_life **segs = sorted_segments(o->history, &n, &widest);
    if (!segs)
        return CMT_ENOMEM;
    uint64_t expandable = expandable_devices(segs, n);
    size_t kept = 0;
    for (size_t i = 0; i < o->count; i++) {
        const struct cmt_alloc_outside_life *l = &o->lives[i];
        int vmm_inside = l->kind == CMT_KIND_VMM && l->dev + 1 >= 0 && l->dev + 1 < 64 &&
                         ((expandable >> (l->dev + 1)) & 1);
        if (l->to_seq <= l->from_seq || vmm_inside || inside(l, segs, n, widest))
            continue;
        o->lives[kept++] = *l;
    }
    o->count = kept;
    free(segs);
    return 0;
}

/* ---- sites ---- */

static int by_node(const void *x, const void *y)
{
    const struct cmt_alloc_outside_site *a = x, *b = y;
    return (a->node > b->node) - (a->node < b->node);
}

static int by_bytes(const void *x, const void *y)
{
    const struct cmt_alloc_outside_site *a = x, *b = y;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1;
    return (a->node > b->node) - (a->node < b->node);
}

static size_t site_index(const struct cmt_alloc_outside_site *s, size_t n, uint32_t node)
{
    size_t at;
    CMT_LOWER_BOUND(at, s, n, .node, node);
    return at;
}

/* Each life's site: the distinct frames, summed, the most bytes first. */
static int group(cmt_alloc_outside *o, const cmt_reader *r)
{
    struct cmt_alloc_outside_site *s = malloc((o->count + 1) * sizeof *s),
                                  *by = malloc((o->count + 1) * sizeof *by);
    uint32_t *rank = malloc((o->count + 1) * sizeof *rank);
    if (!s || !by || !rank) {
        free(s);
        free(by);
        free(rank);
        return CMT_ENOMEM;
    }
    for (size_t i = 0; i < o->count; i++) {
        o->lives[i].site = o->lives[i].stack ? cmt_alloc_site_node(r, o->lives[i].stack) : 0;
        s[i] = (struct cmt_alloc_outside_site){.node = o->lives[i].site};
    }
    qsort(s, o->count, sizeof *s, by_node);
    size_t u = 0;
    for (size_t i = 0; i < o->count; i++)
        if (!u || s[u - 1].node != s[i].node)
            s[u++] = s[i];
    for (size_t i = 0; i < o->count; i++) {
        struct cmt_alloc_outside_site *at = &s[site_index(s, u, o->lives[i].site)];
        at->lives++;
        at->bytes += o->lives[i].size;
    }
    memcpy(by, s, u * sizeof *s);
    qsort(by, u, sizeof *by, by_bytes);
    for (size_t k = 0; k < u; k++) /* rank[i]: where s[i] (by node) lies in by */
        rank[site_index(s, u, by[k].node)] = (uint32_t)k;
    for (size_t i = 0; i < o->count; i++)
        o->lives[i].site = rank[site_index(s, u, o->lives[i].site)];
    free(s);
    free(rank);
    o->sites = by;
    o->site_count = u;
    return 0;
}

static int finish(struct cmt_observer *self, const cmt_replay *rp)
{
    cmt_alloc_outside *o = self->ctx;
    cmt__map_free(&o->open);
    memset(&o->open, 0, sizeof o->open);
    int rc = classify(o);
    if (rc == 0)
        rc = group(o, cmt_replay_reader(rp));
    if (rc)
        fail(o, 2);
    return 0; /* the page says what is missing (truncated) */
}

struct cmt_observer cmt_alloc_outside_observer(cmt_alloc_outside *o)
{
    return (struct cmt_observer){
        .wants = CMT_OBSERVE_ALL, .step = step, .finish = finish, .ctx = o};
}

/* ---- queries ---- */

int cmt_alloc_outside_known(const cmt_alloc_outside *o)
{
    return o->known;
}

int cmt_alloc_outside_truncated(const cmt_alloc_outside *o)
{
    return o->truncated;
}

const struct cmt_alloc_outside_life *cmt_alloc_outside_lives(const cmt_alloc_outside *o,
                                                             size_t *count)
{
    *count = o->count;
    return o->lives;
}

static const struct cmt_alloc_outside_life *sort_lives; /* qsort has no context */

static int largest_first(const void *x, const void *y)
{
    const struct cmt_alloc_outside_life *a = &sort_lives[*(const size_t *)x],
                                        *b = &sort_lives[*(const size_t *)y];
    if (a->size != b->size)
        return a->size < b->size ? 1 : -1;
    return (a->from_seq > b->from_seq) - (a->from_seq < b->from_seq);
}

static int by_index(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    return (a > b) - (a < b);
}

size_t cmt_alloc_outside_largest(const cmt_alloc_outside *o, int32_t dev, size_t max, size_t *total,
                                 size_t **out)
{
    size_t m = 0, *v = malloc((o->count + 1) * sizeof *v);
    if (!v)
        return (size_t)-1;
    for (size_t i = 0; i < o->count; i++)
        if (o->lives[i].dev == dev)
            v[m++] = i;
    *total = m;
    if (m > max) {
        sort_lives = o->lives;
        qsort(v, m, sizeof *v, largest_first);
        m = max;
        qsort(v, m, sizeof *v, by_index);
    }
    *out = v;
    return m;
}

const struct cmt_alloc_outside_site *cmt_alloc_outside_sites(const cmt_alloc_outside *o,
                                                             size_t *count)
{
    *count = o->site_count;
    return o->sites;
}

uint64_t cmt_alloc_outside_at(const cmt_alloc_outside *o, int32_t dev, uint64_t seq)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < o->count; i++) {
        const struct cmt_alloc_outside_life *l = &o->lives[i];
        if (l->dev == dev && l->from_seq <= seq && seq < l->to_seq)
            bytes += l->size;
    }
    return bytes;
}
