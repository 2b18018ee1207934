/* replay.c — applies a trace's events to a model of the process's memory (see replay.h). */
#include "replay.h"

#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "replay_books.h"
#include "cmt_grow.h"

#define CUDA_ERROR_OUT_OF_MEMORY 2

/* Kinds that are allocations of the program (device memory or pinned host memory): they have
 * call sites, object ids and take part in the temporary-allocation test. kind >= 0. */
static inline int is_allocation(int kind)
{
    return ((CMT_KIND_MASK(DEVICE_MEMORY) | 1u << CMT_KIND_HOST) >> kind) & 1u;
}

/* ---- tables (their slow paths are replay_tables.c's) ---- */

/* The call-site index of a stack (created on first use; 0 for no stack). */
static inline uint32_t site_index(cmt_replay *rp, uint32_t stack)
{
    uint32_t site;
    if (__builtin_expect(stack < rp->stack_site_cap && (site = rp->stack_sites[stack]) != 0, 1))
        return site;
    return cmt__site_index_slow(rp, stack);
}

static inline struct cmt_replay_thread *thread_of(cmt_replay *rp, uint32_t tid)
{
    uint32_t c = tid & 63;
    if (__builtin_expect(rp->thread_cache[c].key == (uint64_t)tid + 1, 1))
        return &rp->threads[rp->thread_cache[c].index];
    return cmt__thread_slow(rp, tid);
}

/* Before a site changes: keep its value at the last process peak (see cmt_replay_finish). */
static inline void site_touch(cmt_replay *rp, struct cmt_replay_site *s)
{
    if (s->last_mod_seq <= rp->peak_tick) {
        s->saved_bytes = s->live_bytes;
        s->saved_count = s->live_count;
    }
    s->last_mod_seq = rp->tick;
}

__attribute__((noinline)) void cmt__log_freed_slow(cmt_replay *rp, const struct cmt__entry *e)
{
    if (CMT_GROW(rp->log, rp->log_cap, rp->log_count + 1, 256) != 0) {
        rp->failed = 1;
        return;
    }
    rp->log[rp->log_count++] = (struct cmt__logged){e->key, e->size, e->aux, e->dev, e->kind};
}

static void new_peak(cmt_replay *rp, uint64_t t_ns, uint64_t seq)
{
    rp->totals.peak_live_bytes = rp->totals.live_bytes;
    rp->totals.peak_t_ns = t_ns;
    rp->totals.peak_seq = seq;
    rp->peak_tick = rp->tick;
    rp->log_count = 0;
    if (rp->peak_device_count < rp->device_count) {
        struct cmt_replay_device *d = realloc(rp->peak_devices, rp->device_count * sizeof *d);
        if (!d) {
            rp->failed = 1;
            return;
        }
        rp->peak_devices = d;
    }
    memcpy(rp->peak_devices, rp->devices, rp->device_count * sizeof *rp->devices);
    rp->peak_device_count = rp->device_count;
}

/* ---- accounting of one object ---- */

/* A fresh object id for a device or host allocation: the last one freed, else the next.
 * The free stack always has room for every id issued, so a free never grows it. */
static __attribute__((noinline)) uint32_t new_object_slow(cmt_replay *rp)
{
    if (rp->object_count + 1 >= rp->free_object_cap) {
        uint32_t cap = rp->free_object_cap ? rp->free_object_cap * 2 : 1024;
        uint32_t *f = realloc(rp->free_objects, (size_t)cap * sizeof *f);
        if (!f) {
            rp->failed = 1;
            return CMT_NO_OBJECT;
        }
        rp->free_objects = f;
        rp->free_object_cap = cap;
    }
    return ++rp->object_count;
}

static inline uint32_t new_object(cmt_replay *rp)
{
    if (__builtin_expect(rp->free_object_count > 0, 1))
        return rp->free_objects[--rp->free_object_count];
    return new_object_slow(rp);
}

static uint64_t waste_of(uint64_t size)
{
    uint64_t rounded = (size + CMT_GRANULARITY - 1) & ~(CMT_GRANULARITY - 1);
    return rounded >= size ? rounded - size : 0;
}

static inline __attribute__((always_inline)) void account(cmt_replay *rp,
                                                          struct cmt_replay_device *d, int kind,
                                                          uint64_t size, int sign)
{
    uint64_t waste = CMT_KIND_HAS(kind, WASTE) ? waste_of(size) : 0;
    if (sign > 0) {
        d->kind_bytes[kind] += size;
        d->kind_count[kind]++;
        if (CMT_KIND_IS_DEVICE_MEMORY(kind)) {
            d->live_bytes += size;
            d->allocations++;
            d->waste_bytes += waste;
            rp->totals.live_bytes += size;
        } else if (kind == CMT_KIND_HOST) {
            rp->totals.host_bytes += size;
            if (rp->totals.host_bytes > rp->totals.host_peak_bytes)
                rp->totals.host_peak_bytes = rp->totals.host_bytes;
        }
    } else {
        d->kind_bytes[kind] -= size;
        d->kind_count[kind]--;
        if (CMT_KIND_IS_DEVICE_MEMORY(kind)) {
            d->live_bytes -= size;
            d->allocations--;
            d->waste_bytes -= waste;
            rp->totals.live_bytes -= size;
        } else if (kind == CMT_KIND_HOST) {
            rp->totals.host_bytes -= size;
        }
    }
}

/* Pinned host memory of a site: figures of its own, never at the device peak. */
static __attribute__((noinline)) void site_add_host(struct cmt_replay_site *s, uint64_t size,
                                                    int sign)
{
    if (sign > 0) {
        s->host_live_bytes += size;
        s->host_live_count++;
        s->host_alloc_count++;
        s->host_alloc_bytes += size;
        if (s->host_live_bytes > s->host_peak_bytes)
            s->host_peak_bytes = s->host_live_bytes;
    } else {
        s->host_live_bytes -= size;
        s->host_live_count--;
        s->host_free_count++;
    }
}

/* An allocation (sign > 0) or free of kind `kind` (is_allocation) at a site. */
static inline __attribute__((always_inline)) void site_add(cmt_replay *rp, uint32_t site, int kind,
                                                           uint64_t size, int sign)
{
    struct cmt_replay_site *s = &rp->sites[site];
    if (__builtin_expect(kind == CMT_KIND_HOST, 0)) {
        site_add_host(s, size, sign);
        return;
    }
    site_touch(rp, s);
    if (sign > 0) {
        s->live_bytes += size;
        s->live_count++;
        s->alloc_count++;
        s->alloc_bytes += size;
        if (s->live_bytes > s->peak_bytes)
            s->peak_bytes = s->live_bytes;
    } else {
        s->live_bytes -= size;
        s->live_count--;
        s->free_count++;
    }
}

/* Removes a live object of device d (its own) from the books (the caller removes it from
 * its map). */
static inline __attribute__((always_inline)) void drop_on(cmt_replay *rp,
                                                          struct cmt_replay_device *d,
                                                          const struct cmt__entry *e)
{
    int kind = e->kind - 1;
    account(rp, d, kind, e->size, -1);
    if (is_allocation(kind))
        site_add(rp, e->site, kind, e->size, -1);
    if (e->object != CMT_NO_OBJECT)
        rp->free_objects[rp->free_object_count++] = e->object;
    cmt__log_freed(rp, e);
}

__attribute__((noinline)) void cmt__drop(cmt_replay *rp, const struct cmt__entry *e)
{
    drop_on(rp, cmt__device_slot(rp, e->dev), e);
}

/* ---- applying events ---- */

static inline __attribute__((always_inline)) void pool_reuse(cmt_replay *rp,
                                                             struct cmt_replay_device *d,
                                                             uint64_t key, uint64_t size)
{
    struct cmt__entry *p = cmt__pool_find(rp, key);
    if (!p || !p->size)
        return;
    uint64_t reuse = p->size < size ? p->size : size;
    p->size -= reuse;
    struct cmt_replay_device *pd = cmt__device_near(rp, d, p->dev);
    pd->kind_bytes[CMT_KIND_POOL] -= reuse;
    rp->totals.pool_retained_bytes -= reuse;
}

static inline __attribute__((always_inline)) uint64_t pool_key(cmt_replay *rp,
                                                               const struct cmt_replay_device *d,
                                                               const struct cmt_event *e)
{
    if (e->fields & CMT_F(POOL))
        return cmt__pool_canon(rp, e->v[CMT_FIELD_POOL]);
    uint32_t slot = (uint32_t)(d - rp->devices);
    return rp->current_pool[slot] ? rp->current_pool[slot] : CMT__DEFAULT_POOL(slot);
}

/* A successful allocation of any kind on the event's device d (the caller picks the map). */
static inline __attribute__((always_inline)) void add_object_on(
    cmt_replay *rp, struct cmt_replay_device *d, struct cmt_replay_step *st, struct cmt__map *map,
    uint64_t key, int kind, uint64_t size, uint64_t aux)
{
    const struct cmt_event *e = &st->rec.u.event;
    struct cmt__entry *n = cmt__map_insert(map, key);
    if (!n) {
        rp->failed = 1;
        return;
    }
    if (n->kind) { /* still live: the free that ended the old one was not recorded */
        st->replaced = n->object;
        cmt__drop(rp, n);
    }
    uint32_t site = site_index(rp, e->stack);
    uint32_t object = CMT_NO_OBJECT;
    if (is_allocation(kind)) {
        object = rp->last_object = new_object(rp);
        site_add(rp, site, kind, size, +1);
    }
    *n = (struct cmt__entry){.key = key,
                             .size = size,
                             .aux = aux,
                             .seq = rp->tick,
                             .site = site,
                             .dev = e->dev,
                             .object = object,
                             .refs = 1,
                             .kind = (uint8_t)(kind + 1)};
    account(rp, d, kind, size, +1);
    st->kind = kind;
    st->site = site;
    st->key = key;
    st->bytes = size;
    st->object = object;
    st->delta = CMT_KIND_IS_DEVICE_MEMORY(kind) ? (int64_t)size : 0;
}

__attribute__((noinline)) void cmt__add_object(cmt_replay *rp, struct cmt_replay_step *st,
                                               struct cmt__map *map, uint64_t key, int kind,
                                               uint64_t size, uint64_t aux)
{
    if ((unsigned)kind >= CMT_KIND_COUNT) /* a table's kind column: NONE creates nothing */
        return;
    add_object_on(rp, cmt__device_slot(rp, st->rec.u.event.dev), st, map, key, kind, size, aux);
}

static inline __attribute__((always_inline)) void apply_alloc(cmt_replay *rp,
                                                              struct cmt_replay_device *d,
                                                              struct cmt_replay_step *st, int kind)
{
    const struct cmt_event *e = &st->rec.u.event;
    struct cmt_replay_thread *th = thread_of(rp, e->tid);
    st->is_alloc = 1;
    st->request = e->v[CMT_FIELD_SIZE];
    d->alloc_calls++;
    rp->totals.alloc_calls++;
    st->kind = kind; /* asked for, also when the call fails */
    if (e->result != 0) {
        st->failed = 1;
        st->oom = e->result == CUDA_ERROR_OUT_OF_MEMORY;
        d->failures++;
        rp->totals.failures++;
        th->failures++;
        if (st->oom) {
            d->oom_failures++;
            rp->totals.oom_failures++;
        }
        st->site = site_index(rp, e->stack);
        rp->sites[st->site].failures++;
        return;
    }
    uint64_t size = e->v[CMT_FIELD_SIZE];
    th->alloc_count++;
    th->alloc_bytes += size;
    rp->totals.size_histogram[size ? 64 - __builtin_clzll(size) : 0]++;
    if (kind == CMT_KIND_VMM) {
        if (e->fields & CMT_F(HANDLE))
            add_object_on(rp, d, st, &rp->handles, e->v[CMT_FIELD_HANDLE], kind, size, 0);
        return;
    }
    if (!(e->fields & CMT_F(PTR)))
        return;
    uint64_t aux = 0;
    if (kind == CMT_KIND_ASYNC) {
        aux = pool_key(rp, d, e);
        pool_reuse(rp, d, aux, size);
    }
    add_object_on(rp, d, st, &rp->allocs, e->v[CMT_FIELD_PTR], kind, size, aux);
}

static inline __attribute__((always_inline)) void apply_free(cmt_replay *rp,
                                                             struct cmt_replay_device *d,
                                                             struct cmt_replay_step *st,
                                                             int kind_freed, int to_pool)
{
    const struct cmt_event *e = &st->rec.u.event;
    struct cmt_replay_thread *th = thread_of(rp, e->tid);
    d->free_calls++;
    rp->totals.free_calls++;
    if (e->result != 0) {
        st->failed = 1;
        return;
    }
    uint64_t ptr = e->v[CMT_FIELD_PTR];
    size_t at;
    struct cmt__entry *a = cmt__map_find_at(&rp->allocs, ptr, &at);
    if (!a) {
        st->kind = kind_freed; /* what the op frees, for observers of unknown frees */
        if (ptr) {
            st->unknown_free = 1;
            rp->totals.unknown_frees++;
        }
        return;
    }
    int kind = a->kind - 1;
    st->kind = kind;
    st->site = a->site;
    st->key = a->key;
    st->bytes = a->size;
    st->object = a->object;
    if (CMT_KIND_IS_DEVICE_MEMORY(kind)) {
        st->released = a->size;
        st->delta = -(int64_t)a->size;
    }
    th->free_count++;
    th->freed_bytes += a->size;
    if (a->object != CMT_NO_OBJECT && a->object == rp->last_object) { /* nothing allocated since */
        rp->totals.temporary_count++;
        rp->totals.temporary_bytes += a->size;
    }
    if ((kind == CMT_KIND_ASYNC && to_pool) || kind == CMT_KIND_GRAPH) /* graph: any free */
        cmt__pool_retain(rp, d, a->aux, a->dev, a->size);
    cmt__note_owner(rp, st, a->dev);
    drop_on(rp, a->dev == e->dev ? d : cmt__device_slot(rp, a->dev), a);
    cmt__map_remove_at(&rp->allocs, a, at);
}

/* The handlers of CMT_REPLAY_OPS for allocations and frees (replay_ops.h). An allocation
 * creates an object of the op's kind (a line without one creates nothing). */
static inline __attribute__((always_inline)) void alloc_of_kind(cmt_replay *rp,
                                                                struct cmt_replay_device *d,
                                                                struct cmt_replay_step *st,
                                                                int kind)
{
    if (__builtin_expect((unsigned)kind < CMT_KIND_COUNT, 1))
        apply_alloc(rp, d, st, kind);
}

void cmt__apply_alloc(cmt_replay *rp, struct cmt_replay_device *d, struct cmt_replay_step *st,
                      int kind)
{
    alloc_of_kind(rp, d, st, kind);
}

void cmt__apply_free(cmt_replay *rp, struct cmt_replay_device *d, struct cmt_replay_step *st,
                     int kind)
{
    apply_free(rp, d, st, kind, 0);
}

/* A stream-ordered allocation or free made on a capturing stream (its handle is the capture's
 * graph) is a node of that graph, as cuGraphAddMemAllocNode / cuGraphAddMemFreeNode make:
 * no memory until the graph is instantiated and launched (docs/analysis.md "Graph memory"). */
void cmt__apply_alloc_async(cmt_replay *rp, struct cmt_replay_device *d, struct cmt_replay_step *st,
                            int kind)
{
    (void)kind; /* ASYNC */
    if (__builtin_expect(st->rec.u.event.fields & CMT_F(HANDLE), 0))
        cmt__apply_graph_alloc_node(rp, d, st, CMT_KIND_GRAPH);
    else
        apply_alloc(rp, d, st, CMT_KIND_ASYNC);
}

/* The same for a free: a stream-ordered allocation's bytes stay in its pool. */
void cmt__apply_free_async(cmt_replay *rp, struct cmt_replay_device *d, struct cmt_replay_step *st,
                           int kind)
{
    if (__builtin_expect(st->rec.u.event.fields & CMT_F(HANDLE), 0))
        cmt__apply_graph_free_node(rp, d, st, CMT_KIND_GRAPH);
    else
        apply_free(rp, d, st, kind, 1);
}

/* Applies the event of step st with its API's handler (replay_ops.h); those of most events,
 * allocations and frees, inline. */
static inline __attribute__((always_inline)) void apply_handler(cmt_replay *rp,
                                                                struct cmt_replay_device *d,
                                                                struct cmt_replay_step *st,
                                                                const struct cmt__replay_api *a)
{
    const struct cmt_event *e = &st->rec.u.event;
    int kind = a->kind;
    int graph_node = (e->fields & CMT_F(HANDLE)) != 0; /* async on a capturing stream */
    switch (a->path) {
    case CMT__PATH_ALLOC: alloc_of_kind(rp, d, st, kind); break;
    case CMT__PATH_FREE: apply_free(rp, d, st, kind, 0); break;
    case CMT__PATH_ALLOC_ASYNC:
        if (__builtin_expect(graph_node, 0))
            a->apply(rp, d, st, kind);
        else
            apply_alloc(rp, d, st, CMT_KIND_ASYNC);
        break;
    case CMT__PATH_FREE_ASYNC:
        if (__builtin_expect(graph_node, 0))
            a->apply(rp, d, st, kind);
        else
            apply_free(rp, d, st, kind, 1);
        break;
    default: a->apply(rp, d, st, kind);
    }
}

/* An event on an ordinal the device table has no slot for: counted, and shown no device. */
static __attribute__((noinline)) void odd_device(cmt_replay *rp, struct cmt_replay_step *st)
{
    if (!rp->totals.odd_device_events++)
        rp->totals.odd_device_first = st->rec.u.event.dev;
    st->device = NULL;
}

static inline __attribute__((always_inline)) void apply_event(cmt_replay *rp,
                                                              struct cmt_replay_step *st)
{
    const struct cmt_event *e = &st->rec.u.event;
    rp->tick++;
    rp->totals.events++;
    rp->totals.last_t_ns = e->t_ns;
    rp->totals.last_seq = e->seq;
    static const struct cmt__replay_api unknown = {
        .op = CMT_OP_OTHER, .kind = CMT_KIND_NONE, .apply = cmt__apply_none};
    const struct cmt__replay_api *a = &unknown;
    if (__builtin_expect(e->api < rp->api_cap, 1)) {
        rp->apis[e->api].calls++;
        a = &rp->apis[e->api];
    }
    st->sample = a->sample;
    st->op = a->op;
    st->api = a->name;
    if (__builtin_expect(!a->name, 0)) { /* no API record replayed yet (the reader may know it) */
        const struct cmt_api *api = cmt_reader_api(rp->reader, e->api);
        st->api = api ? api->name : "?";
    }
    struct cmt_replay_device *d = cmt__device_slot(rp, e->dev);
    apply_handler(rp, d, st, a);
    if (__builtin_expect(rp->owner_dev != INT32_MIN, 0)) {
        uint32_t owner = (uint32_t)rp->owner_dev + 1;
        st->owner = owner < MAX_DEVICE_SLOTS ? cmt__device_slot(rp, rp->owner_dev) : NULL;
        rp->owner_dev = INT32_MIN;
        d = cmt__device_slot(rp, e->dev); /* the table may have moved */
    }
    if (st->delta > 0) {
        if (d->live_bytes > d->peak_live_bytes) {
            d->peak_live_bytes = d->live_bytes;
            d->peak_t_ns = e->t_ns;
            d->peak_seq = e->seq;
        }
        if (rp->totals.live_bytes > rp->totals.peak_live_bytes)
            new_peak(rp, e->t_ns, e->seq);
    }
    /* as cmt_replay_device(): an ordinal outside the table was folded into slot 0 */
    st->device = d;
    if (__builtin_expect((uint32_t)e->dev + 1 >= MAX_DEVICE_SLOTS, 0))
        odd_device(rp, st);
}

/* ---- driving ---- */

/* A step's record, read and not yet applied. @return as cmt_reader_next. */
static inline __attribute__((always_inline)) int read_step(cmt_replay *rp,
                                                           struct cmt_replay_step *step)
{
    int rc = cmt_reader_next(rp->reader, &step->rec);
    if (rc <= 0)
        return rc;
    step->op = -1;
    step->api = NULL;
    step->kind = -1;
    step->is_alloc = step->failed = step->oom = step->unknown_free = step->sample = 0;
    step->request = step->released = 0;
    step->delta = 0;
    step->site = 0;
    step->key = step->bytes = 0;
    step->object = step->replaced = CMT_NO_OBJECT;
    step->device = step->owner = NULL;
    step->all_devices = 0;
    return 1;
}

int cmt_replay_next(cmt_replay *rp, struct cmt_replay_step *step)
{
    int rc = read_step(rp, step);
    if (rc <= 0)
        return rc;
    rp->totals.records++;
    if (__builtin_expect(step->rec.type == CMT_REC_EVENT, 1))
        apply_event(rp, step);
    else
        cmt__apply_record(rp, step);
    return rp->failed ? CMT_ENOMEM : 1;
}

/* An event inside the observer's quiet window (see struct cmt_observer); not an OOM. */
static inline int quiet(const struct cmt_observe_quiet *q, const struct cmt_replay_step *st)
{
    const struct cmt_replay_device *d = st->device;
    uint64_t t = st->rec.u.event.t_ns;
    /* the time first: an observer without a window (until 0) is told at once */
    return t < q->until && t >= q->from && d && d->dev == q->dev && d->live_bytes <= q->live_max &&
           !((uintptr_t)st->owner | (unsigned)st->all_devices); /* one test for the rare two */
}

/* The span of time inside every window that skipped events and has a quiet_end: an event
 * outside it ends one of them. */
struct span {
    uint64_t from, until;
};

/* A window's first skipped event puts it in the span (later ones would change nothing: the
 * span is only widened again by end_windows, which takes every window that skipped). */
static void span_add(struct span *open, const struct cmt_observer *o)
{
    if (!o->quiet_end)
        return;
    open->from = o->quiet.from > open->from ? o->quiet.from : open->from;
    open->until = o->quiet.until < open->until ? o->quiet.until : open->until;
}

/* Before an event at t outside a window that skipped events is applied: that window's end.
 * @return the span of the windows still open. */
static __attribute__((noinline)) struct span end_windows(cmt_replay *rp, struct cmt_observer *obs,
                                                         struct cmt_observer *end, uint64_t t)
{
    struct span open = {0, UINT64_MAX};
    for (struct cmt_observer *o = obs; o < end; o++) {
        struct cmt_observe_quiet *q = &o->quiet;
        if (!q->skipped || !o->quiet_end)
            continue;
        if (t >= q->until || t < q->from) {
            o->quiet_end(o, rp);
            q->skipped = 0; /* taken: the window's next skip puts it in the span again */
            continue;
        }
        span_add(&open, o);
    }
    return open;
}

/* Before an event at t is applied: the moments it passes. @return the next moment. */
static __attribute__((noinline)) uint64_t pass_moments(cmt_replay *rp, struct cmt_observer *obs,
                                                       struct cmt_observer *end, uint64_t t)
{
    uint64_t next = UINT64_MAX;
    for (struct cmt_observer *o = obs; o < end; o++) {
        if (!o->before)
            continue;
        while (t > o->before_t) {
            uint64_t was = o->before_t;
            o->before(o, rp);
            if (o->before_t <= was) /* a moment must move on */
                o->before_t = UINT64_MAX;
        }
        next = o->before_t < next ? o->before_t : next;
    }
    return next;
}

/* The observers shown each class of step (step_class: a record, an event, an OOM event, a
 * sample event), in their order: a step is shown by walking its list alone; a class of one
 * observer (solo) is shown without the walk. */
#define CLASSES 4
struct shown {
    struct cmt_observer **list[CLASSES];
    size_t count[CLASSES];
    struct cmt_observer *solo[CLASSES]; /* the list's one observer, else NULL */
};

/* What the runner tests before each event: the times from..until (both in) are inside every
 * window that skipped events and at or before the next moment; outside them it goes the slow
 * way (pass_moments, end_windows). */
struct watch {
    struct span open; /* inside every window that skipped events */
    uint64_t moment;  /* the next observer's before_t */
    uint64_t from, until;
};

static inline void watch_set(struct watch *w)
{
    w->from = w->open.from;
    w->until = w->open.until - 1 < w->moment ? w->open.until - 1 : w->moment;
}

/* After o's step(), which may set a moment too: the watch takes it when it is the next. */
static inline void watch_moment(struct watch *w, const struct cmt_observer *o)
{
    if (o->before && o->before_t < w->moment) {
        w->moment = o->before_t;
        watch_set(w);
    }
}

/* The class of an event, as an index into the lists (0 is a record's): 1 an event, 2 an OOM
 * failure, 3 a sample (never both); odd: an event a quiet window may spare. */
static inline unsigned event_class(const struct cmt_replay_step *st)
{
    return 1u + (unsigned)st->oom + 2u * (unsigned)st->sample; /* each 0 or 1 */
}

/* After an observer's wants changed (and at the start). */
static void list_observers(struct shown *sh, struct cmt_observer *obs, struct cmt_observer *end)
{
    static const unsigned classes[CLASSES] = {CMT_OBSERVE_RECORD, CMT_OBSERVE_EVENT,
                                              CMT_OBSERVE_EVENT | CMT_OBSERVE_OOM,
                                              CMT_OBSERVE_EVENT | CMT_OBSERVE_SAMPLE};
    for (unsigned k = 0; k < CLASSES; k++) {
        sh->count[k] = 0;
        for (struct cmt_observer *o = obs; o < end; o++)
            if (o->wants & classes[k])
                sh->list[k][sh->count[k]++] = o;
        sh->solo[k] = sh->count[k] == 1 ? sh->list[k][0] : NULL;
    }
}

/* Step st, an event of an odd class, inside o's quiet window: counted, not shown. */
static inline __attribute__((always_inline)) void skip(struct cmt_observer *o,
                                                       const struct cmt_replay_step *st,
                                                       struct watch *w)
{
    if (__builtin_expect(o->quiet.skipped++ == 0, 0)) {
        span_add(&w->open, o);
        watch_set(w);
    }
    o->quiet.last_t = st->rec.u.event.t_ns;
}

/* Shows step st of class k (0 or event_class) to its observers. @return whether one's wants
 * changed. */
static int show(const struct shown *sh, cmt_replay *rp, const struct cmt_replay_step *st,
                unsigned k, struct watch *w)
{
    int changed = 0;
    /* the list in locals: a step() may write any memory, so sh would be read again per call */
    struct cmt_observer *const *list = sh->list[k], *const *end = list + sh->count[k];
    for (; list < end; list++) {
        struct cmt_observer *o = *list;
        if ((k & 1u) && quiet(&o->quiet, st)) {
            skip(o, st, w);
            continue;
        }
        unsigned was = o->wants;
        o->wants = o->step(o, rp, st);
        changed |= o->wants != was;
        watch_moment(w, o);
    }
    return changed;
}

/* After a solo observer's step() changed its wants or set an earlier moment. */
static __attribute__((noinline)) void solo_changed(struct shown *sh, struct cmt_observer *obs,
                                                   struct cmt_observer *end, struct cmt_observer *o,
                                                   unsigned wants, struct watch *w)
{
    watch_moment(w, o);
    if (wants != o->wants) {
        o->wants = wants;
        list_observers(sh, obs, end);
    }
}

/* Shows step st of class k: its solo observer straight to step(), else show()'s walk. */
static inline __attribute__((always_inline)) void show_step(struct shown *sh, cmt_replay *rp,
                                                            struct cmt_observer *obs,
                                                            struct cmt_observer *end,
                                                            const struct cmt_replay_step *st,
                                                            unsigned k, struct watch *w)
{
    struct cmt_observer *o = sh->solo[k];
    if (__builtin_expect(o != NULL, 1)) {
        if ((k & 1u) && quiet(&o->quiet, st)) {
            skip(o, st, w);
            return;
        }
        unsigned wants = o->step(o, rp, st);
        /* before_t is UINT64_MAX without before (observe_all) */
        if (__builtin_expect(wants != o->wants || o->before_t < w->moment, 0))
            solo_changed(sh, obs, end, o, wants, w);
        return;
    }
    if (sh->count[k] && show(sh, rp, st, k, w))
        list_observers(sh, obs, end);
}

/* Before an event at t outside the watched times is applied: the moments it passes and the
 * windows it ends. */
static __attribute__((noinline)) void watch_pass(cmt_replay *rp, struct cmt_observer *obs,
                                                 struct cmt_observer *end, uint64_t t,
                                                 struct watch *w)
{
    if (t > w->moment)
        w->moment = pass_moments(rp, obs, end, t);
    if (t >= w->open.until || t < w->open.from)
        w->open = end_windows(rp, obs, end, t);
    watch_set(w);
}

static int observe_all(cmt_replay *rp, struct cmt_observer *obs, size_t n)
{
    struct cmt_replay_step st;
    struct cmt_observer *end = obs + n;
    struct shown sh;
    struct cmt_observer **lists = malloc(CLASSES * n * sizeof *lists);
    if (!lists)
        return CMT_ENOMEM;
    for (unsigned k = 0; k < CLASSES; k++)
        sh.list[k] = lists + k * n;
    list_observers(&sh, obs, end);
    int rc;
    struct watch w = {.open = {0, UINT64_MAX}, .moment = UINT64_MAX};
    for (struct cmt_observer *o = obs; o < end; o++) {
        if (!o->before)
            o->before_t = UINT64_MAX; /* so that show_step tests before_t alone */
        if (o->before_t < w.moment)
            w.moment = o->before_t;
    }
    watch_set(&w);
    /* an event's type tested once: its watch before it is applied, its class after */
    while ((rc = read_step(rp, &st)) > 0) {
        unsigned k = 0;
        if (__builtin_expect(st.rec.type == CMT_REC_EVENT, 1)) {
            uint64_t t = st.rec.u.event.t_ns;
            if (__builtin_expect(t < w.from || t > w.until, 0))
                watch_pass(rp, obs, end, t, &w);
            rp->totals.records++; /* after the moments and window ends: they see the state before */
            apply_event(rp, &st);
            k = event_class(&st);
        } else {
            rp->totals.records++;
            cmt__apply_record(rp, &st);
        }
        if (rp->failed) {
            rc = CMT_ENOMEM;
            break;
        }
        show_step(&sh, rp, obs, end, &st, k, &w);
    }
    free(lists);
    return rc;
}

int cmt_replay_run(cmt_replay *rp, struct cmt_observer *obs, size_t n)
{
    struct cmt_replay_step step;
    int rc;
    int shown = 0; /* observers that ever see a step: the others only finish */
    for (size_t i = 0; i < n; i++)
        shown |= obs[i].wants != 0 || obs[i].before != NULL; /* a moment is shown too */
    if (!shown) {
        while ((rc = cmt_replay_next(rp, &step)) > 0)
            ;
    } else {
        rc = observe_all(rp, obs, n);
    }
    cmt_replay_finish(rp);
    for (size_t i = 0; i < n; i++) {
        int frc = obs[i].finish ? obs[i].finish(&obs[i], rp) : 0;
        if (frc < 0 && rc >= 0)
            rc = frc;
    }
    return rc;
}
