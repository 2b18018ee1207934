/* html_alloc.c — the allocator-level part of `cumemtrace html`: per device the allocated and
 * reserved bytes as step series (downsampled, each figure's maximum exact), and the
 * allocator's segments and blocks at each of its out-of-memory failures, at its reserved peak
 * when it had none, and at the end. Collected during the page's second pass from a fresh
 * allocator view; html_page.c writes them. */
#include <stdlib.h>
#include <string.h>

#include "html/html.h"
#include "oom.h"
#include "output.h"

#define SAMPLES_PER_BUCKET 3 /* at the allocated maximum, at the reserved maximum, the last */

int cmt__html_alloc_init(struct cmt__html_alloc *h, const cmt_alloc *first, uint32_t points,
                         uint64_t end_t_ns)
{
    memset(h, 0, sizeof *h);
    h->points = points;
    h->width = end_t_ns / points + 1;
    h->first = first;
    return cmt_alloc_create(&h->state);
}

static struct cmt__html_alloc_line *line_of(struct cmt__html_alloc *h, int32_t dev)
{
    for (size_t i = 0; i < h->line_count; i++)
        if (h->lines[i].dev == dev)
            return &h->lines[i];
    if (h->line_count == CMT__HTML_ALLOC_DEVICES)
        return NULL;
    struct cmt__html_alloc_line *l = &h->lines[h->line_count];
    l->samples = calloc((size_t)h->points * SAMPLES_PER_BUCKET, sizeof *l->samples);
    if (!l->samples) {
        h->failed = 1;
        return NULL;
    }
    l->dev = dev;
    h->line_count++;
    return l;
}

/* The device's figures (every allocator summed) after an event, into its bucket. */
static void sample(struct cmt__html_alloc *h, int32_t dev, uint64_t t)
{
    struct cmt__html_alloc_line *l = line_of(h, dev);
    if (!l)
        return; /* out of memory, or beyond the devices charted */
    struct cmt_alloc_figures f = cmt_alloc_device_figures(h->state, dev);
    uint64_t i = t / h->width;
    if (i >= h->points)
        i = h->points - 1;
    struct cmt__html_alloc_sample *b = &l->samples[i * SAMPLES_PER_BUCKET],
                                  now = {.t_ns = t,
                                         .allocated = f.allocated_bytes,
                                         .reserved = f.reserved_bytes,
                                         .used = 1};
    if (!b[0].used || now.allocated > b[0].allocated)
        b[0] = now;
    if (!b[1].used || now.reserved > b[1].reserved)
        b[1] = now;
    b[2] = now;
}

/* A copy of one allocator's segments and live blocks on one device. */
static void snapshot(struct cmt__html_alloc *h, const struct cmt_alloc_device *d, int at,
                     uint64_t t)
{
    if (h->snap_count == CMT__HTML_ALLOC_SNAPS)
        return;
    struct cmt__html_alloc_snap *s = &h->snaps[h->snap_count];
    *s = (struct cmt__html_alloc_snap){.allocator = d->allocator,
                                       .dev = d->dev,
                                       .at = at,
                                       .t_ns = t,
                                       .state_t_ns = d->last_t_ns,
                                       .fig = d->now};
    size_t n = cmt_alloc_blocks(d, &s->blocks);
    s->segments = d->segment_count ? malloc(d->segment_count * sizeof *s->segments) : NULL;
    if (n == (size_t)-1 || (d->segment_count && !s->segments)) {
        free(s->blocks);
        free(s->segments);
        h->failed = 1;
        return;
    }
    s->block_count = n;
    if (d->segment_count)
        memcpy(s->segments, d->segments, d->segment_count * sizeof *s->segments);
    s->segment_count = d->segment_count;
    h->snap_count++;
}

/* Whether allocator `allocator` on dev failed in the first pass (its OOM views are taken). */
static const struct cmt_alloc_device *first_pass(const struct cmt__html_alloc *h,
                                                 uint32_t allocator, int32_t dev)
{
    return h->first ? cmt_alloc_device(h->first, allocator, dev) : NULL;
}

static int taken(const struct cmt__html_alloc *h, uint32_t allocator, int32_t dev, int at)
{
    for (size_t i = 0; i < h->snap_count; i++)
        if (h->snaps[i].allocator == allocator && h->snaps[i].dev == dev && h->snaps[i].at == at)
            return 1;
    return 0;
}

/* Takes the pending peak view of allocator on dev (every one when all), if any. */
static void take_pending(struct cmt__html_alloc *h, uint32_t allocator, int32_t dev, int all)
{
    for (size_t i = 0; i < h->pending_count;) {
        if (!all && (h->pending[i].allocator != allocator || h->pending[i].dev != dev)) {
            i++;
            continue;
        }
        const struct cmt_alloc_device *d = cmt_alloc_device(h->state, h->pending[i].allocator,
                                                            h->pending[i].dev);
        if (d)
            snapshot(h, d, CMT__HTML_AT_PEAK, h->pending[i].t_ns);
        h->pending[i] = h->pending[--h->pending_count];
    }
}

static int pending(const struct cmt__html_alloc *h, uint32_t allocator, int32_t dev)
{
    for (size_t i = 0; i < h->pending_count; i++)
        if (h->pending[i].allocator == allocator && h->pending[i].dev == dev)
            return 1;
    return 0;
}

static unsigned step(struct cmt_observer *self, const cmt_replay *rp,
                     const struct cmt_replay_step *st)
{
    (void)rp;
    struct cmt__html_alloc *h = self->ctx;
    if (st->rec.type != CMT_REC_ALLOC_EVENT && st->rec.type != CMT_REC_ALLOCATOR)
        return CMT_OBSERVE_RECORD;
    /* the reserved peak's view holds the blocks handed out after the segment that made it
     * (a snapshot's segments all come at its start, their blocks after them): taken before
     * the first event that is not such a block */
    if (h->pending_count && st->rec.type == CMT_REC_ALLOC_EVENT &&
        st->rec.u.alloc_event.action != CMT_AA_ALLOC)
        take_pending(h, st->rec.u.alloc_event.allocator, st->rec.u.alloc_event.dev, 0);
    if (cmt_alloc_observe(h->state, st) != 0)
        h->failed = 1;
    if (st->rec.type != CMT_REC_ALLOC_EVENT)
        return CMT_OBSERVE_RECORD;
    const struct cmt_alloc_event *ae = &st->rec.u.alloc_event;
    sample(h, ae->dev, ae->t_ns);
    const struct cmt_alloc_device *d = cmt_alloc_device(h->state, ae->allocator, ae->dev);
    if (!d)
        return CMT_OBSERVE_RECORD;
    const struct cmt_alloc_device *f = first_pass(h, d->allocator, d->dev);
    if (ae->action == CMT_AA_OOM)
        snapshot(h, d, CMT__HTML_AT_OOM, ae->t_ns);
    else if (f && !f->ooms && ae->t_ns == f->peak_reserved_t_ns &&
             d->now.reserved_bytes == f->peak.reserved_bytes &&
             !taken(h, d->allocator, d->dev, CMT__HTML_AT_PEAK) &&
             !pending(h, d->allocator, d->dev) && h->pending_count < CMT__HTML_ALLOC_DEVICES)
        h->pending[h->pending_count++] = (struct cmt__html_alloc_pending){
            .allocator = d->allocator, .dev = d->dev, .t_ns = ae->t_ns};
    return CMT_OBSERVE_RECORD;
}

static int finish(struct cmt_observer *self, const cmt_replay *rp)
{
    (void)rp;
    struct cmt__html_alloc *h = self->ctx;
    take_pending(h, 0, 0, 1);
    for (size_t i = 0; i < cmt_alloc_device_count(h->state); i++) {
        const struct cmt_alloc_device *d = cmt_alloc_device_at(h->state, i);
        int same = 0; /* the last view of it is already the end's state */
        for (size_t k = 0; k < h->snap_count; k++)
            if (h->snaps[k].allocator == d->allocator && h->snaps[k].dev == d->dev)
                same = h->snaps[k].state_t_ns == d->last_t_ns;
        if (d->segment_count && !same)
            snapshot(h, d, CMT__HTML_AT_END, d->last_t_ns);
    }
    return 0;
}

struct cmt_observer cmt__html_alloc_observer(struct cmt__html_alloc *h)
{
    return (struct cmt_observer){
        .wants = CMT_OBSERVE_RECORD, .step = step, .finish = finish, .ctx = h};
}

void cmt__html_alloc_free(struct cmt__html_alloc *h)
{
    for (size_t i = 0; i < h->line_count; i++)
        free(h->lines[i].samples);
    for (size_t i = 0; i < h->snap_count; i++) {
        free(h->snaps[i].segments);
        free(h->snaps[i].blocks);
    }
    cmt_alloc_destroy(h->state);
    memset(h, 0, sizeof *h);
}

/* ---- the page's data ---- */

#define VIEW_BLOCKS 20000 /* blocks (live and free) written per view; the rest are counted */

static int by_time(const void *x, const void *y)
{
    const struct cmt__html_alloc_sample *a = x, *b = y;
    return (a->t_ns > b->t_ns) - (a->t_ns < b->t_ns);
}

void cmt__html_alloc_lines_json(struct cmt__json *j, const struct cmt__html_run *run, int32_t dev)
{
    const struct cmt__html_alloc *h = &run->alloc;
    const struct cmt__html_alloc_line *l = NULL;
    for (size_t i = 0; run->have_alloc && i < h->line_count; i++)
        if (h->lines[i].dev == dev)
            l = &h->lines[i];
    cmt__json_array(j, "lines");
    for (int which = 0; l && which < 2; which++) {
        cmt__json_object(j, NULL);
        cmt__json_string(j, "name", which ? "reserved" : "allocated");
        for (int col = 0; col < 2; col++) {
            cmt__json_array(j, col ? "v" : "t");
            for (uint32_t i = 0; i < h->points; i++) {
                struct cmt__html_alloc_sample b[3];
                memcpy(b, &l->samples[(size_t)i * 3], sizeof b);
                if (!b[0].used)
                    continue;
                qsort(b, 3, sizeof *b, by_time);
                for (int k = 0; k < 3; k++) {
                    if (k && b[k].t_ns == b[k - 1].t_ns)
                        continue; /* the same moment (the last sample was also a maximum) */
                    uint64_t v = which ? b[k].reserved : b[k].allocated;
                    cmt__json_u64(j, NULL, col ? v : b[k].t_ns);
                }
            }
            cmt__json_end_array(j);
        }
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
}

/* The distinct stacks of the views' blocks, sorted (a block names its stack by index). */
static int by_u32(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

static uint32_t *view_stacks(const struct cmt__html_alloc *h, size_t *count)
{
    size_t n = 0;
    for (size_t i = 0; i < h->snap_count; i++)
        n += h->snaps[i].block_count;
    uint32_t *s = malloc((n + 1) * sizeof *s);
    if (!s)
        return NULL;
    n = 0;
    for (size_t i = 0; i < h->snap_count; i++)
        for (size_t b = 0; b < h->snaps[i].block_count; b++)
            if (h->snaps[i].blocks[b].stack)
                s[n++] = h->snaps[i].blocks[b].stack;
    qsort(s, n, sizeof *s, by_u32);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!m || s[m - 1] != s[i])
            s[m++] = s[i];
    *count = m;
    return s;
}

static long stack_index(const uint32_t *stacks, size_t n, uint32_t stack)
{
    const uint32_t *at = stack ? bsearch(&stack, stacks, n, sizeof *stacks, by_u32) : NULL;
    return at ? (long)(at - stacks) : -1;
}

struct view_writer {
    struct cmt__json *j;
    const uint32_t *stacks;
    size_t nstacks;
    uint64_t max_split, written, left_out;
};

/* [offset, bytes, requested, kind, stack index] */
static void block_json(struct view_writer *w, uint64_t offset, uint64_t size, uint64_t requested,
                       const char *kind, long stack)
{
    if (w->written == VIEW_BLOCKS) {
        w->left_out++;
        return;
    }
    w->written++;
    cmt__json_array(w->j, NULL);
    cmt__json_u64(w->j, NULL, offset);
    cmt__json_u64(w->j, NULL, size);
    cmt__json_u64(w->j, NULL, requested);
    cmt__json_string(w->j, NULL, kind);
    cmt__json_i64(w->j, NULL, stack);
    cmt__json_end_array(w->j);
}

/* A free range of a segment: a cached block, split when its segment holds a live block
 * (as allocator_view.c classifies them). */
static void gap_json(struct view_writer *w, const struct cmt_alloc_segment *s, uint64_t from,
                     uint64_t to)
{
    if (to <= from)
        return;
    const char *kind = w->max_split && to - from >= w->max_split ? "oversize"
                       : s->live_count                           ? "split"
                                                                 : "free";
    block_json(w, from - s->addr, to - from, 0, kind, -1);
}

static void segments_json(struct view_writer *w, const struct cmt__html_alloc_snap *v)
{
    struct cmt__json *j = w->j;
    size_t b = 0;
    cmt__json_array(j, "segments");
    for (size_t i = 0; i < v->segment_count; i++) {
        const struct cmt_alloc_segment *s = &v->segments[i];
        uint64_t end = s->addr + s->size, at = s->addr;
        cmt__json_object(j, NULL);
        CMT__JSON_U64S(j, {"addr", s->addr}, {"bytes", s->size}, {"stream", s->stream},
                       {"pool", s->pool});
        cmt__json_bool(j, "expandable", s->expandable);
        cmt__json_bool(j, "small", s->small);
        cmt__json_bool(j, "before", s->before);
        cmt__json_array(j, "blocks");
        while (b < v->block_count && v->blocks[b].addr < s->addr)
            b++;
        for (; b < v->block_count && v->blocks[b].addr < end; b++) {
            const struct cmt_alloc_block *k = &v->blocks[b];
            gap_json(w, s, at, k->addr);
            block_json(w, k->addr - s->addr, k->size, k->requested,
                       k->state == CMT_BLOCK_PENDING_FREE ? "pending" : "active",
                       stack_index(w->stacks, w->nstacks, k->stack));
            at = k->addr + k->size > at ? k->addr + k->size : at;
        }
        gap_json(w, s, at, end);
        cmt__json_end_array(j);
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
}

/* The index of the OOM episode a view was taken at: the k-th allocator OOM on a device is the
 * k-th episode there that has an allocator view (oom.c attaches them in that order). */
static long episode_of(const struct cmt__html_run *run, size_t view)
{
    const struct cmt__html_alloc *h = &run->alloc;
    const struct cmt__html_alloc_snap *v = &h->snaps[view];
    size_t k = 0;
    for (size_t i = 0; i < view; i++)
        k += h->snaps[i].at == CMT__HTML_AT_OOM && h->snaps[i].dev == v->dev;
    const cmt_oom *o = run->pass.oom;
    for (uint32_t i = 0; o && i < cmt_oom_count(o); i++) {
        const struct cmt_oom_episode *e = cmt_oom_episode(o, i);
        if (e->alloc && e->dev == v->dev && k-- == 0)
            return i;
    }
    return -1;
}

static void view_json(struct view_writer *w, const struct cmt__html_run *run, size_t i)
{
    static const char *const at[] = {"oom", "peak", "end"};
    const struct cmt__html_alloc_snap *v = &run->alloc.snaps[i];
    const struct cmt_alloc_settings *set = cmt_alloc_settings(run->pass.alloc, v->allocator);
    struct cmt__json *j = w->j;
    char dev[160];
    w->max_split = cmt_alloc_conf_max_split(set ? set->conf : NULL);
    w->written = w->left_out = 0;
    cmt__json_object(j, NULL);
    cmt__json_u64(j, "allocator", v->allocator);
    cmt__json_string(j, "name", set && set->name ? set->name : "allocator");
    cmt__json_string(j, "conf", set && set->conf ? set->conf : "");
    cmt__json_i64(j, "dev", v->dev);
    cmt__json_string(j, "device", cmt__device_label(run->pass.replay, v->dev, dev, sizeof dev));
    cmt__json_string(j, "at", at[v->at]);
    cmt__json_u64(j, "t_ns", v->t_ns);
    cmt__json_i64(j, "oom", v->at == CMT__HTML_AT_OOM ? episode_of(run, i) : -1);
    CMT__JSON_U64S(j, {"max_split_size_bytes", w->max_split},
                   {"allocated_bytes", v->fig.allocated_bytes},
                   {"reserved_bytes", v->fig.reserved_bytes},
                   {"inactive_split_bytes", v->fig.inactive_split_bytes},
                   {"segment_count", v->segment_count}, {"block_count", v->block_count});
    segments_json(w, v);
    cmt__json_u64(j, "blocks_left_out", w->left_out);
    cmt__json_end_object(j);
}

int cmt__html_alloc_json(struct cmt__json *j, const struct cmt__html_run *run)
{
    const struct cmt__html_alloc *h = &run->alloc;
    if (!run->have_alloc) {
        cmt__json_null(j, "allocator");
        return 0;
    }
    size_t nstacks = 0;
    uint32_t *stacks = view_stacks(h, &nstacks);
    if (!stacks)
        return -1;
    struct view_writer w = {.j = j, .stacks = stacks, .nstacks = nstacks};
    cmt__json_object(j, "allocator");
    cmt__json_array(j, "stacks");
    for (size_t i = 0; i < nstacks; i++)
        cmt__json_stack(j, NULL, run->pass.reader, stacks[i]);
    cmt__json_end_array(j);
    cmt__json_array(j, "views");
    for (size_t i = 0; i < h->snap_count; i++)
        view_json(&w, run, i);
    cmt__json_end_array(j);
    cmt__json_end_object(j);
    free(stacks);
    return 0;
}
