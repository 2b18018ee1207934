/* alloc_history.c — the lives of the allocator's blocks and segments (alloc_history.h). */
#include "alloc_history.h"

#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "cmt_grow.h"
#include "replay_map.h"

#define MAX_BLOCK_LIVES (size_t)4000000 /* beyond: left out (truncated) */
#define MAX_SEGMENT_LIVES (size_t)1000000
#define MAX_TRACKS 256 /* (allocator, device) pairs followed */
#define MAX_DEVICES 64 /* devices with a series */
#define MAX_OOMS 4096

struct track { /* one (allocator, device): its open lives */
    uint32_t allocator;
    int32_t dev;
    struct cmt__map blocks; /* by address: aux = the life's index */
    size_t *open;           /* open segment lives, by address */
    size_t open_count, open_cap;
};

struct series {
    int32_t dev;
    struct cmt_alloc_history_point *p;
    size_t count;
    uint64_t width; /* ordinals per point */
};

struct cmt_alloc_history {
    const cmt_alloc *state;
    uint32_t points;
    uint64_t seq; /* the next event's ordinal */
    struct cmt_alloc_life *blocks;
    size_t block_count, block_cap;
    struct cmt_alloc_segment_life *segs;
    size_t seg_count, seg_cap;
    struct cmt_alloc_history_oom *ooms;
    size_t oom_count, oom_cap;
    struct track tracks[MAX_TRACKS];
    size_t track_count;
    struct series series[MAX_DEVICES];
    size_t series_count;
    int truncated;
};

int cmt_alloc_history_create(cmt_alloc_history **out, const cmt_alloc *state, uint32_t points)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return CMT_ENOMEM;
    (*out)->state = state;
    (*out)->points = points < 2 ? 2 : points;
    return 0;
}

void cmt_alloc_history_destroy(cmt_alloc_history *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->track_count; i++) {
        cmt__map_free(&h->tracks[i].blocks);
        free(h->tracks[i].open);
    }
    for (size_t i = 0; i < h->series_count; i++)
        free(h->series[i].p);
    free(h->blocks);
    free(h->segs);
    free(h->ooms);
    free(h);
}

static struct track *track_of(cmt_alloc_history *h, uint32_t allocator, int32_t dev)
{
    for (size_t i = 0; i < h->track_count; i++)
        if (h->tracks[i].allocator == allocator && h->tracks[i].dev == dev)
            return &h->tracks[i];
    if (h->track_count == MAX_TRACKS)
        return NULL;
    struct track *t = &h->tracks[h->track_count++];
    memset(t, 0, sizeof *t);
    t->allocator = allocator;
    t->dev = dev;
    return t;
}

static void fail(cmt_alloc_history *h, int why)
{
    if (h->truncated < why)
        h->truncated = why;
}

static uint64_t field(const struct cmt_alloc_event *e, unsigned f)
{
    return e->fields & (UINT32_C(1) << f) ? e->v[f] : 0;
}

/* ---- blocks ---- */

static void block_end(struct cmt_alloc_life *l, uint64_t seq, uint64_t t, int completed)
{
    if (l->free_seq == CMT_ALLOC_NEVER) {
        l->free_seq = seq;
        l->free_t_ns = t;
    }
    if (completed) {
        l->done_seq = seq;
        l->done_t_ns = t;
    }
}

static void block_alloc(cmt_alloc_history *h, struct track *tr, const struct cmt_alloc_event *e,
                        uint64_t seq)
{
    uint64_t addr = field(e, CMT_AFIELD_ADDR), size = field(e, CMT_AFIELD_SIZE);
    uint64_t requested = e->fields & CMT_AF(REQUESTED) ? e->v[CMT_AFIELD_REQUESTED] : size;
    if (!(e->fields & CMT_AF(SIZE)))
        size = requested; /* as allocator.c */
    struct cmt__entry *old = cmt__map_find(&tr->blocks, addr);
    if (old) { /* its free was not recorded */
        block_end(&h->blocks[old->aux], seq, e->t_ns, 1);
        cmt__map_remove(&tr->blocks, old);
    }
    if (h->block_count >= MAX_BLOCK_LIVES) {
        fail(h, 1);
        return;
    }
    if (CMT_GROW(h->blocks, h->block_cap, h->block_count + 1, 1024) != 0) {
        fail(h, 2);
        return;
    }
    struct cmt__entry *b = cmt__map_insert(&tr->blocks, addr);
    if (!b) {
        fail(h, 2);
        return;
    }
    b->kind = 1;
    b->aux = h->block_count;
    h->blocks[h->block_count++] = (struct cmt_alloc_life){
        .addr = addr,
        .size = size,
        .requested = requested,
        .alloc_seq = seq,
        .free_seq = CMT_ALLOC_NEVER,
        .done_seq = CMT_ALLOC_NEVER,
        .alloc_t_ns = e->t_ns,
        .free_t_ns = CMT_ALLOC_NEVER,
        .done_t_ns = CMT_ALLOC_NEVER,
        .stack = e->stack,
        .allocator = e->allocator,
        .dev = e->dev,
        .before = !!(field(e, CMT_AFIELD_FLAGS) & CMT_AFLAG_BEFORE)};
}

static void block_free(cmt_alloc_history *h, struct track *tr, const struct cmt_alloc_event *e,
                       uint64_t seq, int completed)
{
    struct cmt__entry *b = cmt__map_find(&tr->blocks, field(e, CMT_AFIELD_ADDR));
    if (!b)
        return; /* never seen (allocator.c counts it) */
    struct cmt_alloc_life *l = &h->blocks[b->aux];
    /* a block pending free before the window (its request flagged before too) was never
     * allocated in it: allocator.c takes back the peak it made */
    if (!completed && l->before && l->free_seq == CMT_ALLOC_NEVER &&
        (field(e, CMT_AFIELD_FLAGS) & CMT_AFLAG_BEFORE)) {
        l->free_seq = l->alloc_seq;
        l->free_t_ns = l->alloc_t_ns;
    }
    block_end(l, seq, e->t_ns, completed);
    if (completed)
        cmt__map_remove(&tr->blocks, b);
}

/* ---- segments: the state's list against the open lives, after a segment action ---- */

static int same_segment(const struct cmt_alloc_segment_life *l, const struct cmt_alloc_segment *s)
{
    return l->addr == s->addr && l->size == s->size && l->stream == s->stream &&
           l->expandable == s->expandable;
}

static void segments_diff(cmt_alloc_history *h, struct track *tr, const struct cmt_alloc_event *e,
                          uint64_t seq)
{
    const struct cmt_alloc_device *d = cmt_alloc_device(h->state, tr->allocator, tr->dev);
    size_t n = d ? d->segment_count : 0, k = 0, kept = 0;
    size_t *now = n ? malloc(n * sizeof *now) : NULL;
    if (n && !now) {
        fail(h, 2);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const struct cmt_alloc_segment *s = &d->segments[i];
        /* the open lives below this address are gone or changed */
        while (k < tr->open_count && h->segs[tr->open[k]].addr < s->addr) {
            h->segs[tr->open[k]].to_seq = seq;
            h->segs[tr->open[k++]].to_t_ns = e->t_ns;
        }
        if (k < tr->open_count && same_segment(&h->segs[tr->open[k]], s)) {
            now[kept++] = tr->open[k++];
            continue;
        }
        if (k < tr->open_count && h->segs[tr->open[k]].addr == s->addr) { /* it changed */
            h->segs[tr->open[k]].to_seq = seq;
            h->segs[tr->open[k++]].to_t_ns = e->t_ns;
        }
        if (h->seg_count >= MAX_SEGMENT_LIVES) {
            fail(h, 1);
            continue;
        }
        if (CMT_GROW(h->segs, h->seg_cap, h->seg_count + 1, 64) != 0) {
            fail(h, 2);
            continue;
        }
        now[kept++] = h->seg_count;
        h->segs[h->seg_count++] = (struct cmt_alloc_segment_life){.addr = s->addr,
                                                                  .size = s->size,
                                                                  .stream = s->stream,
                                                                  .from_seq = seq,
                                                                  .to_seq = CMT_ALLOC_NEVER,
                                                                  .from_t_ns = e->t_ns,
                                                                  .to_t_ns = CMT_ALLOC_NEVER,
                                                                  .allocator = tr->allocator,
                                                                  .dev = tr->dev,
                                                                  .expandable = s->expandable,
                                                                  .small = s->small,
                                                                  .before = s->before};
    }
    for (; k < tr->open_count; k++) {
        h->segs[tr->open[k]].to_seq = seq;
        h->segs[tr->open[k]].to_t_ns = e->t_ns;
    }
    free(tr->open);
    tr->open = now;
    tr->open_count = tr->open_cap = kept;
}

/* ---- the series ---- */

static struct series *series_of(cmt_alloc_history *h, int32_t dev)
{
    for (size_t i = 0; i < h->series_count; i++)
        if (h->series[i].dev == dev)
            return &h->series[i];
    if (h->series_count == MAX_DEVICES)
        return NULL;
    struct series *s = &h->series[h->series_count];
    if (!(s->p = malloc(h->points * sizeof *s->p)))
        return NULL;
    s->dev = dev;
    s->count = 0;
    s->width = 1;
    h->series_count++;
    return s;
}

static void point_max(struct cmt_alloc_history_point *a, const struct cmt_alloc_history_point *b)
{
    a->allocated = b->allocated > a->allocated ? b->allocated : a->allocated;
    a->reserved = b->reserved > a->reserved ? b->reserved : a->reserved;
    a->inactive_split = b->inactive_split > a->inactive_split ? b->inactive_split
                                                              : a->inactive_split;
}

/* Adds a point to points p (count n, room for max): into the last when it is within width of
 * it, else a new one, halving the points (pairs merged, width doubled) when they are full. */
static void point_add(struct cmt_alloc_history_point *p, size_t *n, uint64_t *width, size_t max,
                      const struct cmt_alloc_history_point *now)
{
    if (*n && now->seq - p[*n - 1].seq < *width) {
        point_max(&p[*n - 1], now);
        return;
    }
    if (*n == max) {
        size_t m = 0;
        for (size_t i = 0; i < *n; i += 2) {
            p[m] = p[i];
            if (i + 1 < *n)
                point_max(&p[m], &p[i + 1]);
            m++;
        }
        *n = m;
        *width *= 2;
        if (now->seq - p[*n - 1].seq < *width) {
            point_max(&p[*n - 1], now);
            return;
        }
    }
    p[(*n)++] = *now;
}

static void sample(cmt_alloc_history *h, int32_t dev, uint64_t seq)
{
    struct series *s = series_of(h, dev);
    if (!s)
        return;
    struct cmt_alloc_figures f = cmt_alloc_device_figures(h->state, dev);
    struct cmt_alloc_history_point now = {seq, f.allocated_bytes, f.reserved_bytes,
                                          f.inactive_split_bytes};
    point_add(s->p, &s->count, &s->width, h->points, &now);
}

static unsigned step(struct cmt_observer *self, const cmt_replay *rp,
                     const struct cmt_replay_step *st)
{
    (void)rp;
    cmt_alloc_history *h = self->ctx;
    if (st->rec.type != CMT_REC_ALLOC_EVENT)
        return CMT_OBSERVE_RECORD;
    const struct cmt_alloc_event *e = &st->rec.u.alloc_event;
    uint64_t seq = h->seq++;
    if (e->dev < -1 || e->dev >= CMT_MAX_DEVICES)
        return CMT_OBSERVE_RECORD; /* allocator.c ignores it too */
    struct track *tr = track_of(h, e->allocator, e->dev);
    if (!tr) {
        fail(h, 1);
        return CMT_OBSERVE_RECORD;
    }
    switch (e->action) {
    case CMT_AA_ALLOC: block_alloc(h, tr, e, seq); break;
    case CMT_AA_FREE_REQUESTED: block_free(h, tr, e, seq, 0); break;
    case CMT_AA_FREE_COMPLETED: block_free(h, tr, e, seq, 1); break;
    case CMT_AA_SEGMENT_ALLOC:
    case CMT_AA_SEGMENT_FREE:
    case CMT_AA_SEGMENT_MAP:
    case CMT_AA_SEGMENT_UNMAP: segments_diff(h, tr, e, seq); break;
    case CMT_AA_OOM:
        if (h->oom_count < MAX_OOMS && CMT_GROW(h->ooms, h->oom_cap, h->oom_count + 1, 8) == 0)
            h->ooms[h->oom_count++] = (struct cmt_alloc_history_oom){
                seq, e->t_ns, field(e, CMT_AFIELD_SIZE), e->allocator, e->dev};
        break;
    default: break;
    }
    sample(h, e->dev, seq);
    return CMT_OBSERVE_RECORD;
}

struct cmt_observer cmt_alloc_history_observer(cmt_alloc_history *h)
{
    return (struct cmt_observer){.wants = CMT_OBSERVE_RECORD, .step = step, .ctx = h};
}

/* ---- queries ---- */

uint64_t cmt_alloc_history_events(const cmt_alloc_history *h)
{
    return h->seq;
}

int cmt_alloc_history_truncated(const cmt_alloc_history *h)
{
    return h->truncated;
}

const struct cmt_alloc_life *cmt_alloc_history_blocks(const cmt_alloc_history *h, size_t *count)
{
    *count = h->block_count;
    return h->blocks;
}

const struct cmt_alloc_segment_life *cmt_alloc_history_segments(const cmt_alloc_history *h,
                                                                size_t *count)
{
    *count = h->seg_count;
    return h->segs;
}

const struct cmt_alloc_history_oom *cmt_alloc_history_ooms(const cmt_alloc_history *h,
                                                           size_t *count)
{
    *count = h->oom_count;
    return h->ooms;
}

size_t cmt_alloc_history_device_count(const cmt_alloc_history *h)
{
    return h->series_count;
}

int32_t cmt_alloc_history_device(const cmt_alloc_history *h, size_t i)
{
    return i < h->series_count ? h->series[i].dev : -1;
}

const struct cmt_alloc_history_point *cmt_alloc_history_series(const cmt_alloc_history *h,
                                                               int32_t dev, size_t *count)
{
    for (size_t i = 0; i < h->series_count; i++)
        if (h->series[i].dev == dev) {
            *count = h->series[i].count;
            return h->series[i].p;
        }
    *count = 0;
    return NULL;
}

/* A change of bytes at an ordinal (the moment's time with it), for the sweeps below. */
struct delta {
    uint64_t seq, t_ns;
    int64_t bytes;
};

static int by_seq(const void *x, const void *y)
{
    const struct delta *a = x, *b = y;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

/* The deltas of dev's allocated blocks (chosen, when given, leaves out the blocks it marks) or
 * of its segments (reserved), sorted. @return how many, or (size_t)-1 when out of memory. */
static size_t deltas(const cmt_alloc_history *h, int32_t dev, int reserved,
                     const unsigned char *chosen, struct delta **out)
{
    size_t n = reserved ? h->seg_count : h->block_count, m = 0;
    struct delta *d = malloc((2 * n + 1) * sizeof *d);
    if (!d)
        return (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        uint64_t from, to, t0, t1, size;
        if (reserved) {
            const struct cmt_alloc_segment_life *s = &h->segs[i];
            if (s->dev != dev)
                continue;
            from = s->from_seq, to = s->to_seq, t0 = s->from_t_ns, t1 = s->to_t_ns, size = s->size;
        } else {
            const struct cmt_alloc_life *l = &h->blocks[i];
            if (l->dev != dev || (chosen && chosen[i]))
                continue;
            from = l->alloc_seq, to = l->free_seq, t0 = l->alloc_t_ns, t1 = l->free_t_ns;
            size = l->size;
        }
        if (to <= from || !size)
            continue;
        d[m++] = (struct delta){from, t0, (int64_t)size};
        if (to != CMT_ALLOC_NEVER)
            d[m++] = (struct delta){to, t1, -(int64_t)size};
    }
    qsort(d, m, sizeof *d, by_seq);
    *out = d;
    return m;
}

int cmt_alloc_history_peak(const cmt_alloc_history *h, int32_t dev, int reserved,
                           struct cmt_alloc_moment *out)
{
    struct delta *d;
    size_t n = deltas(h, dev, reserved, NULL, &d);
    if (n == (size_t)-1)
        return CMT_ENOMEM;
    *out = (struct cmt_alloc_moment){0};
    int64_t now = 0;
    for (size_t i = 0; i < n; i++) {
        now += d[i].bytes;
        if (i + 1 < n && d[i + 1].seq == d[i].seq)
            continue; /* the moment is after every change at this ordinal */
        if (now > 0 && (uint64_t)now > out->bytes)
            *out = (struct cmt_alloc_moment){d[i].seq, d[i].t_ns, (uint64_t)now};
    }
    free(d);
    return n ? 0 : CMT_ENOT_FOUND;
}

static const struct cmt_alloc_life *sort_blocks; /* qsort has no context */

static int by_size(const void *x, const void *y)
{
    const struct cmt_alloc_life *a = &sort_blocks[*(const size_t *)x],
                                *b = &sort_blocks[*(const size_t *)y];
    if (a->size != b->size)
        return a->size < b->size ? 1 : -1;
    return (a->alloc_seq > b->alloc_seq) - (a->alloc_seq < b->alloc_seq);
}

size_t cmt_alloc_history_largest(const cmt_alloc_history *h, int32_t dev, size_t max, size_t **out)
{
    size_t *v = malloc((h->block_count + 1) * sizeof *v), n = 0;
    if (!v)
        return (size_t)-1;
    for (size_t i = 0; i < h->block_count; i++)
        if (h->blocks[i].dev == dev)
            v[n++] = i;
    sort_blocks = h->blocks;
    qsort(v, n, sizeof *v, by_size);
    *out = v;
    return n < max ? n : max;
}

size_t cmt_alloc_history_rest(const cmt_alloc_history *h, int32_t dev, const unsigned char *chosen,
                              size_t points, struct cmt_alloc_history_point **out)
{
    struct delta *d;
    size_t n = deltas(h, dev, 0, chosen, &d), count = 0;
    if (n == (size_t)-1)
        return (size_t)-1;
    points = points < 2 ? 2 : points;
    struct cmt_alloc_history_point *p = malloc(points * sizeof *p);
    if (!p) {
        free(d);
        return (size_t)-1;
    }
    uint64_t width = 1;
    int64_t now = 0;
    for (size_t i = 0; i < n; i++) {
        now += d[i].bytes;
        if (i + 1 < n && d[i + 1].seq == d[i].seq)
            continue;
        struct cmt_alloc_history_point q = {.seq = d[i].seq, .allocated = (uint64_t)now};
        point_add(p, &count, &width, points, &q);
    }
    free(d);
    *out = p;
    return count;
}

/* ---- the tree of stacks at a moment ---- */

struct tree {
    struct cmt_alloc_tree_node *v;
    unsigned *depth;
    size_t count, cap;
    struct cmt__map index; /* node id -> aux: index in v */
};

#define MAX_DEPTH 512

/* @return the index of frame `node` under parent index `parent`, added when new, or -1. */
static long tree_node(struct tree *t, uint32_t node, long parent, unsigned depth)
{
    struct cmt__entry *e = cmt__map_find(&t->index, node);
    if (e)
        return (long)e->aux;
    if (CMT_GROW(t->v, t->cap, t->count + 1, 256) != 0 ||
        !(t->depth = realloc(t->depth, t->cap * sizeof *t->depth)) ||
        !(e = cmt__map_insert(&t->index, node)))
        return -1;
    e->kind = 1;
    e->aux = t->count;
    t->v[t->count] = (struct cmt_alloc_tree_node){.node = node, .parent = parent};
    t->depth[t->count] = depth;
    return (long)t->count++;
}

/* Adds a block's bytes to every frame of its stack, from the outermost. @return 0 or -1. */
static int tree_add(struct tree *t, const cmt_reader *r, uint32_t leaf, uint64_t bytes)
{
    uint32_t chain[MAX_DEPTH];
    int n = 0;
    struct cmt_stack_node sn;
    for (uint32_t id = leaf; id && n < MAX_DEPTH && cmt_reader_stack_node(r, id, &sn) == 0;) {
        chain[n++] = id;
        if (sn.parent == id)
            break;
        id = sn.parent;
    }
    t->v[0].bytes += bytes;
    t->v[0].blocks++;
    long parent = 0;
    for (int i = n - 1; i >= 0; i--) {
        long at = tree_node(t, chain[i], parent, (unsigned)(n - i));
        if (at < 0)
            return -1;
        t->v[at].bytes += bytes;
        t->v[at].blocks++;
        parent = at;
    }
    return 0;
}

static const struct tree *sort_tree;

static int by_bytes(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    const struct cmt_alloc_tree_node *p = &sort_tree->v[a], *q = &sort_tree->v[b];
    if (p->bytes != q->bytes)
        return p->bytes < q->bytes ? 1 : -1;
    if (sort_tree->depth[a] != sort_tree->depth[b])
        return sort_tree->depth[a] < sort_tree->depth[b] ? -1 : 1;
    return (a > b) - (a < b);
}

/* The largest max nodes of t, parents first, their parents renumbered. @return how many. */
static size_t tree_keep(struct tree *t, size_t max, struct cmt_alloc_tree_node **out)
{
    size_t *order = malloc(t->count * sizeof *order), *where = malloc(t->count * sizeof *where);
    struct cmt_alloc_tree_node *v = malloc(t->count * sizeof *v);
    if (!order || !where || !v) {
        free(order);
        free(where);
        free(v);
        return (size_t)-1;
    }
    for (size_t i = 0; i < t->count; i++)
        order[i] = i;
    sort_tree = t;
    qsort(order, t->count, sizeof *order, by_bytes);
    size_t n = t->count < max ? t->count : max;
    for (size_t i = 0; i < t->count; i++)
        where[order[i]] = i;
    for (size_t i = 0; i < n; i++) {
        v[i] = t->v[order[i]];
        v[i].parent = v[i].parent < 0 ? -1 : (long)where[v[i].parent];
    }
    free(order);
    free(where);
    *out = v;
    return n;
}

size_t cmt_alloc_history_tree(const cmt_alloc_history *h, const cmt_reader *r, int32_t dev,
                              uint64_t seq, size_t max, struct cmt_alloc_tree_node **out)
{
    struct tree t = {0};
    size_t n = (size_t)-1;
    *out = NULL;
    if (tree_node(&t, 0, -1, 0) != 0)
        goto done;
    for (size_t i = 0; i < h->block_count; i++) {
        const struct cmt_alloc_life *l = &h->blocks[i];
        if (l->dev == dev && l->alloc_seq <= seq && seq < l->free_seq &&
            tree_add(&t, r, l->stack, l->size) != 0)
            goto done;
    }
    n = tree_keep(&t, max < 1 ? 1 : max, out);
done:
    cmt__map_free(&t.index);
    free(t.v);
    free(t.depth);
    return n;
}
