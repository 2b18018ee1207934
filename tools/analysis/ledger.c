/* ledger.c — every byte of a device accounted for at a moment (see ledger.h).
 *
 * A moment is taken in two steps: during the replay, the live set is measured (the
 * allocator's segments per pool, every live driver object outside them summed by call site,
 * graph and pool memory, rounding, the last free/total sample); at finish, once symbols are
 * read, the call sites are named by owner and the rows built. */
#include "ledger.h"

#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "cmt_free.h"
#include "cmt_grow.h"
#include "cmt_search.h"
#include "frames.h"
#include "ledger_internal.h"

struct names {
    const char *key, *label;
};
static const struct names row_names[] = {
#define CMT__LEDGER_ROW_NAMES(name, key, label) {key, label},
    CMT_LEDGER_ROWS(CMT__LEDGER_ROW_NAMES)
#undef CMT__LEDGER_ROW_NAMES
};
static const struct names owner_names[] = {
#define CMT__LEDGER_OWNER_NAMES(name, key, label) {key, label},
    CMT_LEDGER_OWNERS(CMT__LEDGER_OWNER_NAMES)
#undef CMT__LEDGER_OWNER_NAMES
};
static const struct {
    int owner, what;
    const char *pattern;
} owner_frames[] = {
#define CMT__LEDGER_OWNER_FRAME(owner, what, pattern) \
    {CMT_OWNER_##owner, CMT_FRAME_##what, pattern},
    CMT_LEDGER_OWNER_FRAMES(CMT__LEDGER_OWNER_FRAME)
#undef CMT__LEDGER_OWNER_FRAME
};

const char *cmt_ledger_row_key(int t)
{
    return t >= 0 && t < CMT_LEDGER_ROW_TYPES ? row_names[t].key : "?";
}
const char *cmt_ledger_row_label(int t)
{
    return t >= 0 && t < CMT_LEDGER_ROW_TYPES ? row_names[t].label : "?";
}
const char *cmt_ledger_owner_key(int o)
{
    return o >= 0 && o < CMT_OWNER_COUNT ? owner_names[o].key : "?";
}
const char *cmt_ledger_owner_label(int o)
{
    return o >= 0 && o < CMT_OWNER_COUNT ? owner_names[o].label : "?";
}

int cmt_ledger_create(cmt_ledger **out, const cmt_alloc *a, const struct cmt_ledger_options *o)
{
    cmt_ledger *l = calloc(1, sizeof *l);
    if (!l)
        return CMT_ENOMEM;
    l->alloc = a;
    l->at = o ? o->at : CMT_LEDGER_AT_OOM | CMT_LEDGER_AT_END;
    if (o && o->time_count) {
        l->times = malloc(o->time_count * sizeof *l->times);
        if (!l->times) {
            free(l);
            return CMT_ENOMEM;
        }
        memcpy(l->times, o->times, o->time_count * sizeof *l->times);
        l->time_count = l->time_cap = o->time_count;
    }
    l->own_times = o && o->own_times;
    if ((l->at & CMT_LEDGER_AT_PEAK) && cmt__ledger_peak_create(l, o->peak_budget) != 0) {
        cmt_ledger_destroy(l);
        return CMT_ENOMEM;
    }
    *out = l;
    return 0;
}

void cmt_ledger_destroy(cmt_ledger *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->count; i++)
        CMT_FREE_ALL(l->raws[i].pools, l->raws[i].sites, l->raws[i].m.rows);
    cmt__ledger_peak_destroy(l);
    CMT_FREE_ALL(l->raws, l->times, l->site_bytes, l->site_count, l->touched, l->handles, l);
}

/* This process's device memory as the driver sees it (live, pool retention, rounding), or the
 * allocators' segments when they are more (a trace converted from a snapshot has no driver
 * calls). */
static uint64_t process_bytes(const cmt_ledger *l, const struct cmt_replay_device *d)
{
    uint64_t p = d->live_bytes + d->kind_bytes[CMT_KIND_POOL] + d->waste_bytes;
    uint64_t reserved = l->alloc ? cmt_alloc_device_figures(l->alloc, d->dev).reserved_bytes : 0;
    return reserved > p ? reserved : p;
}

/* d's sample is not the one kept. */
static int sample_differs(const struct cmt__sample *s, const struct cmt_replay_device *d)
{
    return d->have_sample && d->total_bytes &&
           !(s->have && s->t == d->sample_t_ns && s->free == d->free_bytes &&
             s->total == d->total_bytes);
}

/* The same, inline (every event asks): no sample taken since the last look is no change. */
static inline int sample_moved(cmt_ledger *l, const struct cmt_replay_device *d)
{
    struct cmt__sample *s = &l->samples[cmt__ledger_slot(d->dev)];
    if (__builtin_expect(s->looked == d->samples, 1))
        return 0;
    s->looked = d->samples;
    return sample_differs(s, d);
}

/* Keeps device d's sample in s when it is new (or `fresh`: a MEMINFO record just gave it,
 * even with the figures of the one before), `events` events applied. @return 1 when it was. */
static int keep_sample(const cmt_ledger *l, struct cmt__sample *s,
                       const struct cmt_replay_device *d, uint64_t events, int fresh)
{
    if (!d->have_sample || !d->total_bytes || (!fresh && !sample_differs(s, d)))
        return 0;
    *s = (struct cmt__sample){
        1, d->free_bytes, d->total_bytes, d->sample_t_ns, process_bytes(l, d), events, d->samples};
    return 1;
}

static int note_sample(cmt_ledger *l, const struct cmt_replay_device *d, int fresh)
{
    return keep_sample(l, &l->samples[cmt__ledger_slot(d->dev)], d, l->events, fresh);
}

static int in_segment(const cmt_ledger *l, int32_t dev, uint64_t addr)
{
    return l->alloc && cmt_alloc_holds(l->alloc, dev, addr);
}

static void collect_mapped(void *ctx, const struct cmt_replay_object *o)
{
    cmt_ledger *l = ctx;
    if (o->kind != CMT_KIND_MAPPING || o->dev != l->dev || !in_segment(l, o->dev, o->addr))
        return;
    if (CMT_GROW(l->handles, l->handle_cap, l->handle_count + 1, 16) != 0) {
        l->failed = 1;
        return;
    }
    l->handles[l->handle_count++] = o->aux;
}

static void measure_object(void *ctx, const struct cmt_replay_object *o)
{
    cmt_ledger *l = ctx;
    struct cmt__raw *w = l->cur;
    if (o->dev != l->dev)
        return;
    if (o->kind == CMT_KIND_GRAPH) {
        w->graph += o->size;
        return;
    }
    if (o->kind == CMT_KIND_POOL) {
        if (o->addr == CMT__GRAPH_POOL(cmt__ledger_slot(o->dev)))
            w->graph += o->size;
        else
            w->pools_retained += o->size;
        return;
    }
    if (!CMT_KIND_IS_DEVICE_MEMORY(o->kind))
        return;
    int inside = o->kind == CMT_KIND_VMM
                     ? l->handle_count && bsearch(&o->addr, l->handles, l->handle_count,
                                                  sizeof *l->handles, cmt_u64_ascending) != NULL
                     : in_segment(l, o->dev, o->addr);
    if (inside)
        return;
    if (o->site >= l->site_cap) {
        l->failed = 1;
        return;
    }
    if (!l->site_count[o->site]++)
        l->touched[l->touched_count++] = o->site;
    l->site_bytes[o->site] += o->size;
}

static int add_pool(struct cmt__raw *w, uint32_t allocator, uint64_t pool,
                    const struct cmt_alloc_segment *s)
{
    size_t i = 0;
    while (i < w->pool_count && (w->pools[i].allocator != allocator || w->pools[i].pool != pool))
        i++;
    if (i == w->pool_count) {
        if (CMT_GROW(w->pools, w->pool_cap, i + 1, 4) != 0)
            return CMT_ENOMEM;
        w->pools[w->pool_count++] = (struct cmt__raw_pool){.allocator = allocator, .pool = pool};
    }
    uint64_t live = s->live_bytes < s->size ? s->live_bytes : s->size;
    w->pools[i].tensors += live;
    w->pools[i].blocks += s->live_count;
    w->pools[i].cached += s->size - live;
    return 0;
}

static int measure_segments(cmt_ledger *l, struct cmt__raw *w)
{
    size_t n = l->alloc ? cmt_alloc_device_count(l->alloc) : 0;
    for (size_t i = 0; i < n; i++) {
        const struct cmt_alloc_device *d = cmt_alloc_device_at(l->alloc, i);
        for (size_t s = 0; d->dev == w->m.dev && s < d->segment_count; s++)
            if (add_pool(w, d->allocator, d->segments[s].pool, &d->segments[s]) != 0)
                return CMT_ENOMEM;
    }
    return 0;
}

static int by_site(const void *a, const void *b)
{
    const struct cmt__raw_site *x = a, *y = b;
    return x->site < y->site ? -1 : x->site > y->site;
}

/* The driver objects outside segments, by site, into w (scratch reset after). */
static int measure_sites(cmt_ledger *l, const cmt_replay *rp, struct cmt__raw *w)
{
    size_t sites = cmt_replay_site_count(rp);
    if (sites > l->site_cap) {
        free(l->site_bytes);
        free(l->site_count);
        free(l->touched);
        l->site_bytes = calloc(sites, sizeof *l->site_bytes);
        l->site_count = calloc(sites, sizeof *l->site_count);
        l->touched = malloc(sites * sizeof *l->touched);
        l->site_cap = l->site_bytes && l->site_count && l->touched ? sites : 0;
        if (!l->site_cap)
            return CMT_ENOMEM;
    }
    l->dev = w->m.dev;
    l->cur = w;
    l->handle_count = 0;
    cmt_replay_foreach_mapping(rp, collect_mapped, l); /* mappings alone: a walk of them */
    if (l->handle_count > 1)
        qsort(l->handles, l->handle_count, sizeof *l->handles, cmt_u64_ascending);
    l->touched_count = 0;
    cmt_replay_foreach_live(rp, measure_object, l);
    w->sites = l->touched_count ? malloc(l->touched_count * sizeof *w->sites) : NULL;
    int rc = l->touched_count && !w->sites ? CMT_ENOMEM : 0;
    for (size_t i = 0; i < l->touched_count; i++) {
        uint32_t s = l->touched[i];
        if (w->sites)
            w->sites[w->site_count++] = (struct cmt__raw_site){s, l->site_bytes[s],
                                                               l->site_count[s]};
        l->site_bytes[s] = l->site_count[s] = 0;
    }
    if (w->site_count > 1) /* by index, as the peak's moment has them: rows tie alike */
        qsort(w->sites, w->site_count, sizeof *w->sites, by_site);
    return rc;
}

struct cmt__raw *cmt__ledger_new_raw(cmt_ledger *l, const struct cmt_replay_device *d, unsigned why,
                                     uint64_t t, uint64_t seq, size_t time_index)
{
    if (CMT_GROW(l->raws, l->cap, l->count + 1, 8) != 0) {
        l->failed = 1;
        return NULL;
    }
    struct cmt__raw *w = &l->raws[l->count];
    memset(w, 0, sizeof *w);
    w->m.why = why;
    w->m.t_ns = t;
    w->m.seq = seq;
    w->m.time_index = time_index;
    w->m.dev = d->dev;
    if (d->have_baseline && d->baseline_total_bytes >= d->baseline_free_bytes)
        w->m.context_bytes = d->baseline_total_bytes - d->baseline_free_bytes;
    w->rounding = d->waste_bytes;
    return w;
}

void cmt__ledger_sample_into(cmt_ledger *l, struct cmt__raw *w, struct cmt__sample *s,
                             const struct cmt_replay_device *d, uint64_t events)
{
    keep_sample(l, s, d, events, 0);
    if (s->have) {
        w->have_sample = 1;
        w->sample_free = s->free;
        w->sample_total = s->total;
        w->sample_process = s->process;
        w->m.free_measured = s->events == events;
    }
    w->m.total_bytes = s->have ? s->total : d->total_bytes;
}

/* Takes a moment of device d now. @return its index, or (size_t)-1 when out of memory. */
static size_t take(cmt_ledger *l, const cmt_replay *rp, const struct cmt_replay_device *d,
                   unsigned why, uint64_t t, size_t time_index)
{
    struct cmt__raw *w = cmt__ledger_new_raw(l, d, why, t, l->last_seq, time_index);
    if (!w)
        return (size_t)-1;
    cmt__ledger_sample_into(l, w, &l->samples[cmt__ledger_slot(d->dev)], d, l->events);
    if (measure_segments(l, w) != 0 || measure_sites(l, rp, w) != 0) {
        free(w->pools);
        free(w->sites);
        l->failed = 1;
        return (size_t)-1;
    }
    return l->count++;
}

/* Every device seen (a known ordinal), now. */
static void take_all(cmt_ledger *l, const cmt_replay *rp, unsigned why, uint64_t t, size_t ti)
{
    for (uint32_t slot = 1; slot < cmt_replay_device_count(rp); slot++) {
        const struct cmt_replay_device *d = cmt_replay_device_slot(rp, slot);
        if (d && d->seen)
            take(l, rp, d, why, t, ti);
    }
}

static void completes_oom(cmt_ledger *l, const struct cmt_replay_device *d)
{
    struct cmt__raw *w = &l->raws[l->pending_oom - 1];
    const struct cmt__sample *s = &l->samples[cmt__ledger_slot(d->dev)];
    if (w->m.dev != d->dev)
        return;
    w->have_sample = 1;
    w->sample_free = s->free;
    w->sample_total = s->total;
    w->sample_process = s->process;
    w->m.total_bytes = s->total;
    w->m.free_measured = 1;
}

/* own_times: t joins the times not taken yet, in order, unless it is one already (a record's
 * time may pass times the next event's before() takes first). */
static void join_time(cmt_ledger *l, uint64_t t)
{
    size_t i = l->next_time;
    while (i < l->time_count && l->times[i] < t)
        i++;
    if (i < l->time_count && l->times[i] == t)
        return;
    if (CMT_GROW(l->times, l->time_cap, l->time_count + 1, 4)) {
        l->failed = 1;
        return;
    }
    memmove(&l->times[i + 1], &l->times[i], (l->time_count - i) * sizeof *l->times);
    l->times[i] = t;
    l->time_count++;
    l->times_moved = 1;
}

/* own_times: a failure of dev at t, its first one joins the times (devices past the slots fold
 * into slot 0: the first of them). */
static void own_failure(cmt_ledger *l, int32_t dev, uint64_t t)
{
    uint8_t *seen = &l->failed_slot[cmt__ledger_slot(dev)];
    if (l->own_times && !*seen) {
        *seen = 1;
        join_time(l, t);
    }
}

/* An allocator's own out-of-memory record (a snapshot's): a moment, with the figures it
 * carries, unless the driver's failure just took one. */
static void allocator_oom(cmt_ledger *l, const cmt_replay *rp, const struct cmt_alloc_event *e)
{
    const struct cmt_replay_device *d = cmt_replay_device(rp, e->dev);
    if (!d || l->pending_oom)
        return;
    size_t i = take(l, rp, d, CMT_LEDGER_AT_OOM, e->t_ns, 0);
    uint32_t both = CMT_AF(DEVICE_FREE) | CMT_AF(DEVICE_TOTAL);
    if (i == (size_t)-1 || (e->fields & both) != both || !e->v[CMT_AFIELD_DEVICE_TOTAL])
        return;
    struct cmt__raw *w = &l->raws[i];
    w->have_sample = w->m.free_measured = 1;
    w->sample_free = e->v[CMT_AFIELD_DEVICE_FREE];
    w->sample_total = w->m.total_bytes = e->v[CMT_AFIELD_DEVICE_TOTAL];
    w->sample_process = process_bytes(l, d);
}

/* An out-of-memory failure of the event's device: a moment. */
static __attribute__((noinline)) void oom_moment(cmt_ledger *l, const cmt_replay *rp,
                                                 const struct cmt_replay_step *st)
{
    size_t i = take(l, rp, st->device, CMT_LEDGER_AT_OOM, st->rec.u.event.t_ns, 0);
    l->pending_oom = i == (size_t)-1 ? 0 : i + 1;
}

/* A record other than an event: samples it carries, an allocator's OOM. */
static __attribute__((noinline)) void record_step(cmt_ledger *l, const cmt_replay *rp,
                                                  const struct cmt_replay_step *st)
{
    int32_t fresh = st->rec.type == CMT_REC_MEMINFO ? st->rec.u.meminfo.dev : INT32_MIN;
    for (uint32_t slot = 0; slot < cmt_replay_device_count(rp); slot++) {
        const struct cmt_replay_device *d = cmt_replay_device_slot(rp, slot);
        if (d && note_sample(l, d, d->dev == fresh) && l->pending_oom)
            completes_oom(l, d);
    }
    if (st->rec.type == CMT_REC_ALLOC_EVENT && st->rec.u.alloc_event.action == CMT_AA_OOM) {
        if (l->at & CMT_LEDGER_AT_OOM)
            allocator_oom(l, rp, &st->rec.u.alloc_event);
        own_failure(l, st->rec.u.alloc_event.dev, st->rec.u.alloc_event.t_ns);
    }
}

/* The events applied since the ledger last looked (it is shown every event only when it keeps
 * the peak): their count and last seq; an OOM moment is no longer completed by a sample. */
static inline void catch_up(cmt_ledger *l, const cmt_replay *rp)
{
    const struct cmt_replay_totals *t = &rp->totals;
    if (t->events != l->events) {
        l->events = t->events;
        l->last_seq = t->last_seq;
        l->pending_oom = 0;
    }
}

/* The steps the ledger is shown: records, OOM failures and samples (every event with the peak). */
static unsigned ledger_wants(const cmt_ledger *l)
{
    return l->peak ? CMT_OBSERVE_ALL : CMT_OBSERVE_RECORD | CMT_OBSERVE_OOM | CMT_OBSERVE_SAMPLE;
}

/* An event step_slow is shown. */
static void event_step(cmt_ledger *l, struct cmt_observer *self, const cmt_replay *rp,
                       const struct cmt_replay_step *st)
{
    if (st->device && sample_moved(l, st->device))
        note_sample(l, st->device, 0);
    if (l->peak && !l->peak->invalid)
        cmt__ledger_peak_event(l, self, rp, st);
    if (__builtin_expect(st->oom, 0) && st->device) {
        if (l->at & CMT_LEDGER_AT_OOM)
            oom_moment(l, rp, st);
        own_failure(l, st->device->dev, st->rec.u.event.t_ns);
    }
}

static uint64_t next_moment(const cmt_ledger *l);

/* Any step (ledger_step takes most events itself). */
static __attribute__((noinline)) unsigned step_slow(struct cmt_observer *self, const cmt_replay *rp,
                                                    const struct cmt_replay_step *st)
{
    cmt_ledger *l = self->ctx;
    struct cmt__ledger_peak *p = l->peak;
    if (__builtin_expect(p && p->lazy, 0) && cmt__ledger_peak_waiting(p) &&
        !(st->delta > 0 && rp->peak_tick == rp->tick)) /* a new peak: peak_event takes it */
        cmt__ledger_peak_lazy_step(l, self, rp, st);   /* before the ledger's figures move on */
    catch_up(l, rp);
    if (__builtin_expect(st->rec.type != CMT_REC_EVENT, 0))
        record_step(l, rp, st);
    else
        event_step(l, self, rp, st);
    if (l->times_moved) { /* a time of its own joined: the next moment may be it */
        l->times_moved = 0;
        self->before_t = next_moment(l);
    }
    return ledger_wants(l);
}

static unsigned ledger_step(struct cmt_observer *self, const cmt_replay *rp,
                            const struct cmt_replay_step *st)
{
    cmt_ledger *l = self->ctx;
    /* most events, with the peak kept: no OOM, the peak's common change or a new peak, and no
     * sample: only an event of a sampling op (st->sample) or a record (step_slow sees them all)
     * takes one, so a look (sample_moved) would find none, or one that record_step found no
     * different. The common change does not catch up: every other step, moment and the finish
     * catch up before they read the counts, and a new peak (whose counts the lazy moment of
     * the event after it takes) catches up itself. */
    if (__builtin_expect(st->rec.type == CMT_REC_EVENT && !(st->oom | st->sample), 1)) {
        int fast = cmt__ledger_peak_fast(l->peak, rp, st);
        if (__builtin_expect(fast > 0, 1))
            return CMT_OBSERVE_ALL; /* ledger_wants with the peak */
        if (fast < 0) {
            catch_up(l, rp);
            cmt__ledger_peak_new(l, self, rp);
            return CMT_OBSERVE_ALL;
        }
    }
    return step_slow(self, rp, st);
}

/* The next time to take (a time asked, the open peak's), UINT64_MAX when none. */
static uint64_t next_moment(const cmt_ledger *l)
{
    uint64_t t = l->next_time < l->time_count ? l->times[l->next_time] : UINT64_MAX;
    const struct cmt__ledger_peak *p = l->peak;
    return cmt__ledger_peak_waiting(p) && !p->lazy && p->t < t ? p->t : t;
}

static void ledger_before(struct cmt_observer *self, const cmt_replay *rp)
{
    cmt_ledger *l = self->ctx;
    uint64_t was = self->before_t;
    catch_up(l, rp);
    const struct cmt__ledger_peak *p = l->peak;
    if (cmt__ledger_peak_waiting(p) && !p->lazy && p->t <= was)
        cmt__ledger_peak_close(l, rp);
    if (l->next_time < l->time_count && l->times[l->next_time] <= was) {
        take_all(l, rp, CMT_LEDGER_AT_TIME, l->times[l->next_time], l->next_time);
        l->pending_oom = 0;
        l->next_time++;
    }
    self->before_t = next_moment(l);
}

static int ledger_finish(struct cmt_observer *self, const cmt_replay *rp);

struct cmt_observer cmt_ledger_observer(cmt_ledger *l)
{
    return (struct cmt_observer){.wants = ledger_wants(l),
                                 .step = ledger_step,
                                 .finish = ledger_finish,
                                 .ctx = l,
                                 .before_t = next_moment(l),
                                 .before = l->time_count || l->peak || l->own_times ? ledger_before
                                                                                    : NULL};
}

/* --- finish: owners and rows --- */

static int frame_owner(const cmt_reader *r, uint32_t node)
{
    struct cmt_frame_texts t;
    cmt_frame_texts(r, node, &t);
    for (size_t i = 0; i < sizeof owner_frames / sizeof *owner_frames; i++) {
        const char *text = cmt_frame_text(&t, owner_frames[i].what);
        if (text && cmt_glob(owner_frames[i].pattern, text))
            return owner_frames[i].owner;
    }
    return -1;
}

int cmt_ledger_owner_of(const cmt_reader *r, uint32_t stack)
{
    if (!stack)
        return CMT_OWNER_NO_STACK;
    struct cmt_stack_node n;
    uint32_t id = stack;
    for (int depth = 0; id && depth < 256; depth++) {
        int owner = frame_owner(r, id);
        if (owner >= 0)
            return owner;
        if (cmt_reader_stack_node(r, id, &n) != 0 || n.parent == id)
            break;
        id = n.parent;
    }
    return CMT_OWNER_USER;
}

/* What finish knows of a site: its owner, and for user code the frame it is named by. */
struct site_name {
    int owner;     /* -1: not yet classified */
    uint64_t node; /* user code: the call site's frame address */
    uint32_t stack;
};

struct builder {
    struct cmt_ledger_row *rows;
    size_t count, cap;
    int failed;
};

static void add_row(struct builder *b, struct cmt_ledger_row row)
{
    if (!row.bytes && row.type != CMT_LEDGER_FREE)
        return;
    if (CMT_GROW(b->rows, b->cap, b->count + 1, 16) != 0) {
        b->failed = 1;
        return;
    }
    b->rows[b->count++] = row;
}

static int by_bytes_desc(const void *a, const void *b)
{
    const struct cmt_ledger_row *x = a, *y = b;
    return x->bytes > y->bytes ? -1 : x->bytes < y->bytes;
}

/* The DRIVER rows of one moment: one per owning library, user code by call site. */
static void driver_rows(struct builder *b, const struct cmt__raw *w, const struct site_name *names)
{
    struct cmt_ledger_row owners[CMT_OWNER_COUNT] = {{0}};
    uint64_t owner_top[CMT_OWNER_COUNT] = {0};
    size_t first_user = b->count;
    for (size_t i = 0; i < w->site_count; i++) {
        const struct cmt__raw_site *s = &w->sites[i];
        const struct site_name *nm = &names[s->site];
        if (nm->owner != CMT_OWNER_USER) {
            struct cmt_ledger_row *o = &owners[nm->owner];
            o->bytes += s->bytes;
            o->count += s->count;
            if (s->bytes > owner_top[nm->owner]) {
                owner_top[nm->owner] = s->bytes;
                o->stack = nm->stack;
            }
            continue;
        }
        /* user rows by the node they are named by; while grouping, allocator holds the
         * first member's site and pool the largest member's bytes */
        size_t j = first_user;
        while (j < b->count && names[b->rows[j].allocator].node != nm->node)
            j++;
        if (j == b->count) {
            add_row(b, (struct cmt_ledger_row){.type = CMT_LEDGER_DRIVER,
                                               .owner = CMT_OWNER_USER,
                                               .allocator = s->site,
                                               .pool = s->bytes,
                                               .stack = nm->stack,
                                               .bytes = s->bytes,
                                               .count = s->count});
            continue;
        }
        struct cmt_ledger_row *u = &b->rows[j];
        if (s->bytes > u->pool) {
            u->pool = s->bytes;
            u->stack = nm->stack;
        }
        u->bytes += s->bytes;
        u->count += s->count;
    }
    size_t users = b->count - first_user;
    if (users > 1)
        qsort(b->rows + first_user, users, sizeof *b->rows, by_bytes_desc);
    if (users > CMT_LEDGER_USER_SITES) { /* the rest as one row */
        struct cmt_ledger_row rest = {.type = CMT_LEDGER_DRIVER, .owner = CMT_OWNER_USER};
        for (size_t j = first_user + CMT_LEDGER_USER_SITES - 1; j < b->count; j++) {
            rest.bytes += b->rows[j].bytes;
            rest.count += b->rows[j].count;
        }
        b->count = first_user + CMT_LEDGER_USER_SITES - 1;
        add_row(b, rest);
    }
    for (size_t j = first_user; j < b->count; j++)
        b->rows[j].allocator = 0, b->rows[j].pool = 0;
    for (int o = 0; o < CMT_OWNER_COUNT; o++)
        if (o != CMT_OWNER_USER && owners[o].bytes) {
            owners[o].type = CMT_LEDGER_DRIVER;
            owners[o].owner = o;
            add_row(b, owners[o]);
        }
}

static int build(struct cmt__raw *w, const struct site_name *names)
{
    struct builder b = {0};
    for (size_t i = 0; i < w->pool_count; i++)
        add_row(&b, (struct cmt_ledger_row){.type = CMT_LEDGER_TENSORS,
                                            .allocator = w->pools[i].allocator,
                                            .pool = w->pools[i].pool,
                                            .bytes = w->pools[i].tensors,
                                            .count = w->pools[i].blocks});
    for (size_t i = 0; i < w->pool_count; i++)
        add_row(&b, (struct cmt_ledger_row){.type = CMT_LEDGER_CACHED,
                                            .allocator = w->pools[i].allocator,
                                            .pool = w->pools[i].pool,
                                            .bytes = w->pools[i].cached});
    driver_rows(&b, w, names);
    add_row(&b, (struct cmt_ledger_row){.type = CMT_LEDGER_GRAPH, .bytes = w->graph});
    add_row(&b, (struct cmt_ledger_row){.type = CMT_LEDGER_POOLS, .bytes = w->pools_retained});
    add_row(&b, (struct cmt_ledger_row){.type = CMT_LEDGER_ROUNDING, .bytes = w->rounding});
    struct cmt_ledger_moment *m = &w->m;
    m->process_bytes = 0;
    for (size_t i = 0; i < b.count; i++)
        m->process_bytes += b.rows[i].bytes;
    uint64_t used = w->have_sample && w->sample_total >= w->sample_free
                        ? w->sample_total - w->sample_free
                        : 0;
    uint64_t known = w->sample_process + m->context_bytes;
    m->others_bytes = w->have_sample && used > known ? used - known : 0;
    uint64_t held = m->process_bytes + m->context_bytes + m->others_bytes;
    if (!m->total_bytes) /* capacity never measured: this process's rows alone */
        m->others_bytes = m->free_bytes = 0, m->free_measured = 0;
    else if (m->free_measured)
        m->free_bytes = w->sample_free;
    else
        m->free_bytes = m->total_bytes > held ? m->total_bytes - held : 0;
    m->residual_bytes = m->total_bytes ? (int64_t)(m->total_bytes - held - m->free_bytes) : 0;
    add_row(&b, (struct cmt_ledger_row){.type = CMT_LEDGER_CONTEXT, .bytes = m->context_bytes});
    add_row(&b, (struct cmt_ledger_row){.type = CMT_LEDGER_OTHERS, .bytes = m->others_bytes});
    if (m->total_bytes)
        add_row(&b, (struct cmt_ledger_row){.type = CMT_LEDGER_FREE, .bytes = m->free_bytes});
    m->rows = b.rows;
    m->row_count = b.count;
    return b.failed ? CMT_ENOMEM : 0;
}

/* User code is grouped by the frame its call site is named by (its address: the same line
 * called from different places is one row). */
static uint64_t call_site_ip(const cmt_reader *r, uint32_t stack)
{
    struct cmt_stack_node n;
    uint32_t node = cmt_call_site_node(r, stack);
    return node && cmt_reader_stack_node(r, node, &n) == 0 ? n.ip : node;
}

static int ledger_finish(struct cmt_observer *self, const cmt_replay *rp)
{
    cmt_ledger *l = self->ctx;
    catch_up(l, rp);
    uint64_t end_t = cmt_replay_totals(rp)->last_t_ns;
    if (l->own_times)
        join_time(l, end_t);
    for (; l->next_time < l->time_count; l->next_time++) /* times past the last event */
        take_all(l, rp, CMT_LEDGER_AT_TIME, l->times[l->next_time], l->next_time);
    if (l->at & CMT_LEDGER_AT_END)
        take_all(l, rp, CMT_LEDGER_AT_END, end_t, 0);
    if (l->peak)
        cmt__ledger_peak_finish(l, rp);
    const cmt_reader *r = cmt_replay_reader(rp);
    uint32_t sites = cmt_replay_site_count(rp);
    struct site_name *names = calloc(sites ? sites : 1, sizeof *names);
    if (!names)
        return CMT_ENOMEM;
    for (uint32_t s = 0; s < sites; s++)
        names[s].owner = -1;
    int rc = l->failed ? CMT_ENOMEM : 0;
    for (size_t i = 0; i < l->count; i++) {
        struct cmt__raw *w = &l->raws[i];
        for (size_t k = 0; k < w->site_count; k++) {
            struct site_name *nm = &names[w->sites[k].site];
            if (nm->owner >= 0)
                continue;
            nm->stack = cmt_replay_site(rp, w->sites[k].site)->stack;
            nm->owner = cmt_ledger_owner_of(r, nm->stack);
            nm->node = nm->owner == CMT_OWNER_USER ? call_site_ip(r, nm->stack) : 0;
        }
        if (build(w, names) != 0)
            rc = CMT_ENOMEM;
    }
    free(names);
    return rc;
}

size_t cmt_ledger_count(const cmt_ledger *l)
{
    return l->count;
}

const uint64_t *cmt_ledger_times(const cmt_ledger *l, size_t *count)
{
    *count = l->time_count;
    return l->times;
}

const struct cmt_ledger_moment *cmt_ledger_moment(const cmt_ledger *l, size_t i)
{
    return i < l->count ? &l->raws[i].m : NULL;
}

const struct cmt_ledger_moment *cmt_ledger_find(const cmt_ledger *l, unsigned why, int32_t dev,
                                                size_t time_index)
{
    for (size_t i = 0; i < l->count; i++) {
        const struct cmt_ledger_moment *m = &l->raws[i].m;
        if ((m->why & why) && m->dev == dev &&
            (!(why & CMT_LEDGER_AT_TIME) || m->time_index == time_index))
            return m;
    }
    return NULL;
}

void cmt_ledger_combine(const struct cmt_ledger_moment *const *m, size_t n,
                        struct cmt_ledger_combined *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < n; i++) {
        if (!m[i])
            continue;
        out->processes_bytes += m[i]->process_bytes;
        if (m[i]->total_bytes > out->total_bytes)
            out->total_bytes = m[i]->total_bytes;
        if (m[i]->free_measured && !out->free_measured) {
            out->free_bytes = m[i]->free_bytes;
            out->free_measured = 1;
        }
    }
    if (!out->free_measured) /* each member derived its free from its own rows alone: the
                                GPU's is what all of them leave (nothing else is known) */
        out->free_bytes = out->total_bytes > out->processes_bytes
                              ? out->total_bytes - out->processes_bytes
                              : 0;
    uint64_t used = out->total_bytes > out->free_bytes ? out->total_bytes - out->free_bytes : 0;
    out->shared_bytes = used > out->processes_bytes ? used - out->processes_bytes : 0;
    out->residual_bytes = (int64_t)(out->total_bytes - out->processes_bytes - out->shared_bytes -
                                    out->free_bytes);
}
