/* ledger_peak.c — the process peak's moment, kept during the ledger's one replay (see
 * ledger_internal.h, struct cmt__ledger_peak). */
#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "cmt_free.h"
#include "ledger_internal.h"

#define DEFAULT_BUDGET (UINT64_C(1) << 20) /* cells: 1M x 24 B */
#define MIN_CELLS 64
/* Peaks in a row whose copied moment went unused before the ledger stops copying it. */
#define LAZY_AFTER 64

int cmt__ledger_peak_create(cmt_ledger *l, size_t budget)
{
    l->peak = calloc(1, sizeof *l->peak);
    if (!l->peak)
        return CMT_ENOMEM;
    l->peak->budget = budget ? budget : DEFAULT_BUDGET;
    return 0;
}

void cmt__ledger_peak_destroy(cmt_ledger *l)
{
    struct cmt__ledger_peak *p = l->peak;
    if (!p)
        return;
    for (size_t i = 0; i < p->slot_cap; i++)
        free(p->slots[i].cells);
    CMT_FREE_ALL(p->slots, p->devices, p->samples, p->graph_pool, p);
    l->peak = NULL;
}

void cmt__ledger_peak_new(cmt_ledger *l, struct cmt_observer *self, const cmt_replay *rp)
{
    struct cmt__ledger_peak *p = l->peak;
    if (p->closed && ++p->streak >= LAZY_AFTER)
        p->lazy = 1;
    p->open = 1;
    p->closed = 0;
    p->t = cmt_replay_totals(rp)->peak_t_ns;
    if (++p->mark == 0) { /* 2^32 peaks: the marks would repeat */
        p->invalid = 1;
        return;
    }
    if (!p->lazy && p->t < self->before_t)
        self->before_t = p->t;
}

/* Records that change no device's figures nor its sample. */
#define QUIET_RECORDS                                                                              \
    ((1u << CMT_REC_ENV) | (1u << CMT_REC_API) | (1u << CMT_REC_STRING) | (1u << CMT_REC_MODULE) | \
     (1u << CMT_REC_STACK_NODE) | (1u << CMT_REC_THREAD) | (1u << CMT_REC_NOTE) |                  \
     (1u << CMT_REC_SYMBOL) | (1u << CMT_REC_RANGE))

/* Room for n devices' copies at the moment. @return 0, or -1 out of memory. */
static int reserve_devices(struct cmt__ledger_peak *p, uint32_t n)
{
    if (n <= p->device_cap)
        return 0;
    struct cmt_replay_device *d = realloc(p->devices, n * sizeof *d);
    if (d)
        p->devices = d;
    struct cmt__sample *s = d ? realloc(p->samples, n * sizeof *s) : NULL;
    if (s)
        p->samples = s;
    uint64_t *g = s ? realloc(p->graph_pool, n * sizeof *g) : NULL;
    if (!g)
        return -1;
    p->graph_pool = g;
    p->device_cap = n;
    return 0;
}

/* The moment from devs, the replay's n device figures at it, and the ledger's samples now.
 * @return 0, or -1 out of memory. */
static int keep_moment(cmt_ledger *l, const cmt_replay *rp, const struct cmt_replay_device *devs,
                       uint32_t n)
{
    struct cmt__ledger_peak *p = l->peak;
    if (reserve_devices(p, n) != 0)
        return -1;
    memcpy(p->devices, devs, n * sizeof *p->devices);
    memcpy(p->samples, l->samples, n * sizeof *p->samples);
    for (uint32_t slot = 0; slot < n; slot++) {
        const struct cmt__entry *g = devs[slot].kind_bytes[CMT_KIND_POOL]
                                         ? cmt__map_find(&rp->pools, CMT__GRAPH_POOL(slot))
                                         : NULL;
        p->graph_pool[slot] = g && cmt__ledger_slot(g->dev) == slot ? g->size : 0;
    }
    p->device_count = n;
    p->events = l->events;
    p->last_seq = l->last_seq;
    p->closed = 1;
    return 0;
}

/* The moment of a lazy peak, from the replay's copy at the peak's event: only when the step
 * being looked at is the one event applied since (the ledger's figures are still those after
 * the peak's event) and no graph pool is in it (the pools are as the step left them).
 * @return 0, or -1 when it cannot be taken. */
static int lazy_moment(cmt_ledger *l, const cmt_replay *rp)
{
    uint32_t n = cmt_replay_device_count(rp);
    if (rp->tick != rp->peak_tick + 1 || rp->peak_device_count != n)
        return -1;
    for (uint32_t slot = 0; slot < n; slot++)
        if (rp->peak_devices[slot].kind_bytes[CMT_KIND_POOL])
            return -1;
    return keep_moment(l, rp, rp->peak_devices, n);
}

void cmt__ledger_peak_lazy_step(cmt_ledger *l, struct cmt_observer *self, const cmt_replay *rp,
                                const struct cmt_replay_step *st)
{
    struct cmt__ledger_peak *p = l->peak;
    if (st->rec.type != CMT_REC_EVENT) {
        if ((unsigned)st->rec.type >= 32 || !(QUIET_RECORDS >> st->rec.type & 1u))
            p->invalid = 1; /* it may have changed the moment's figures: not kept */
        return;
    }
    p->lazy = 0;
    p->streak = 0;
    if (st->rec.u.event.t_ns <= p->t) { /* part of the peak's moment: copied when it passes */
        if (p->t < self->before_t)
            self->before_t = p->t;
        return;
    }
    if (lazy_moment(l, rp) != 0)
        p->invalid = 1;
}

/* The cell of (slot, site), zeroed when it belongs to an older peak. @return NULL (the peak not
 * kept) past the budget or out of memory. */
static struct cmt__peak_cell *cell_at(struct cmt__ledger_peak *p, uint32_t slot, uint32_t site)
{
    if (slot >= p->slot_cap) {
        size_t cap = slot + 1 > 2 * p->slot_cap ? slot + 1 : 2 * p->slot_cap;
        struct cmt__peak_slot *slots = realloc(p->slots, cap * sizeof *slots);
        if (!slots)
            return NULL;
        memset(slots + p->slot_cap, 0, (cap - p->slot_cap) * sizeof *slots);
        p->slots = slots;
        p->slot_cap = cap;
    }
    struct cmt__peak_slot *sl = &p->slots[slot];
    if (site >= sl->cap) {
        size_t old = sl->cap, cap = old ? 2 * old : MIN_CELLS;
        while (cap <= site)
            cap *= 2;
        if (p->cells_used + (cap - old) > p->budget)
            return NULL;
        struct cmt__peak_cell *c = realloc(sl->cells, cap * sizeof *c);
        if (!c)
            return NULL;
        memset(c + old, 0, (cap - old) * sizeof *c);
        sl->cells = c;
        sl->cap = cap;
        p->cells_used += cap - old;
    }
    struct cmt__peak_cell *c = &sl->cells[site];
    if (c->mark != p->mark)
        *c = (struct cmt__peak_cell){.mark = p->mark};
    return c;
}

/* An event after the peak's moment changed the live set (one object: peak_event's fast path
 * did not take it). */
static void peak_change(struct cmt__ledger_peak *p, const struct cmt_replay_step *st)
{
    int kind = st->kind;
    if (kind == CMT_KIND_GRAPH) /* graph memory: the device's figures say it */
        return;
    if (!CMT_KIND_IS_DEVICE_MEMORY(kind)) {
        p->invalid = 1; /* an object the step does not name */
        return;
    }
    uint32_t slot = cmt__ledger_slot(st->owner ? st->owner->dev : st->rec.u.event.dev);
    if (slot >= p->device_count || !p->devices[slot].seen)
        return; /* a device the moment does not have */
    struct cmt__peak_cell *c = cell_at(p, slot, st->site);
    if (!c) {
        p->invalid = 1;
        return;
    }
    c->bytes += st->delta;
    c->count += st->delta > 0 ? 1 : -1;
}

void cmt__ledger_peak_close(cmt_ledger *l, const cmt_replay *rp)
{
    if (keep_moment(l, rp, rp->devices, cmt_replay_device_count(rp)) != 0)
        l->peak->invalid = 1;
}

/* Takes the live set off the cells: each then holds minus the moment's figures. */
static void subtract_live(void *ctx, const struct cmt_replay_object *o)
{
    struct cmt__ledger_peak *p = ctx;
    uint32_t slot = cmt__ledger_slot(o->dev);
    if (p->invalid || o->kind == CMT_KIND_GRAPH || !CMT_KIND_IS_DEVICE_MEMORY(o->kind) ||
        slot >= p->device_count || !p->devices[slot].seen)
        return;
    struct cmt__peak_cell *c = cell_at(p, slot, o->site);
    if (!c) {
        p->invalid = 1;
        return;
    }
    c->bytes -= (int64_t)o->size;
    c->count--;
}

/* The moment's call sites of a slot into *out (by index). @return their number, or -1 when
 * they do not add up to the device's figures (the peak is then not kept). */
static long slot_sites(const struct cmt__ledger_peak *p, uint32_t slot, struct cmt__raw_site *out)
{
    const struct cmt_replay_device *d = &p->devices[slot];
    uint64_t bytes = 0, count = 0;
    long n = 0;
    for (size_t s = 0; slot < p->slot_cap && s < p->slots[slot].cap; s++) {
        const struct cmt__peak_cell *c = &p->slots[slot].cells[s];
        if (c->mark != p->mark || (!c->count && !c->bytes))
            continue;
        if (c->count >= 0 || c->bytes > 0)
            return -1;
        if (out)
            out[n] = (struct cmt__raw_site){(uint32_t)s, (uint64_t)-c->bytes, (uint64_t)-c->count};
        n++;
        bytes += (uint64_t)-c->bytes;
        count += (uint64_t)-c->count;
    }
    int adds_up = bytes == d->live_bytes - d->kind_bytes[CMT_KIND_GRAPH] &&
                  count == d->allocations - d->kind_count[CMT_KIND_GRAPH];
    return adds_up ? n : -1;
}

/* The moment of a slot that adds up. @return 0 or CMT_ENOMEM. */
static int add_moment(cmt_ledger *l, struct cmt__ledger_peak *p, uint32_t slot, long sites)
{
    const struct cmt_replay_device *d = &p->devices[slot];
    struct cmt__raw_site *list = sites ? malloc((size_t)sites * sizeof *list) : NULL;
    struct cmt__raw *w = sites && !list
                             ? NULL
                             : cmt__ledger_new_raw(l, d, CMT_LEDGER_AT_PEAK, p->t, p->last_seq, 0);
    if (!w) {
        free(list);
        return CMT_ENOMEM;
    }
    struct cmt__sample s = p->samples[slot];
    cmt__ledger_sample_into(l, w, &s, d, p->events);
    w->graph = d->kind_bytes[CMT_KIND_GRAPH] + p->graph_pool[slot];
    w->pools_retained = d->kind_bytes[CMT_KIND_POOL] - p->graph_pool[slot];
    w->sites = list;
    w->site_count = (size_t)slot_sites(p, slot, list);
    l->count++;
    return 0;
}

void cmt__ledger_peak_finish(cmt_ledger *l, const cmt_replay *rp)
{
    struct cmt__ledger_peak *p = l->peak;
    if (!p->open || p->invalid || (l->alloc && cmt_alloc_device_count(l->alloc)))
        return;     /* no peak, or a second replay must take it (allocator segments included) */
    if (!p->closed) /* no event after the peak's time: the end's state is its */
        cmt__ledger_peak_close(l, rp);
    cmt_replay_foreach_live(rp, subtract_live, p);
    for (uint32_t slot = 1; !p->invalid && slot < p->device_count; slot++)
        if (p->devices[slot].seen && slot_sites(p, slot, NULL) < 0)
            p->invalid = 1;
    for (uint32_t slot = 1; !p->invalid && slot < p->device_count; slot++)
        if (p->devices[slot].seen && add_moment(l, p, slot, slot_sites(p, slot, NULL)) != 0)
            l->failed = 1;
}

void cmt__ledger_peak_event(cmt_ledger *l, struct cmt_observer *self, const cmt_replay *rp,
                            const struct cmt_replay_step *st)
{
    struct cmt__ledger_peak *p = l->peak;
    uint64_t t = st->rec.u.event.t_ns;
    int64_t delta = st->delta;
    if (__builtin_expect(t < p->last_t, 0))
        p->invalid = 1;
    p->last_t = t;
    if (delta > 0 && rp->peak_tick == rp->tick) {
        cmt__ledger_peak_new(l, self, rp);
        return;
    }
    if (!p->closed)
        return;
    p->streak = 0; /* the moment copied is used */
    if (__builtin_expect(st->all_devices || st->replaced != CMT_NO_OBJECT, 0)) {
        p->invalid = 1; /* several objects at once, or one the step does not name */
        return;
    }
    if (!delta)
        return;
    /* most changes: one allocation or free of a slot and site that has its cell */
    uint32_t slot = (uint32_t)(st->owner ? st->owner->dev : st->rec.u.event.dev) + 1;
    uint32_t site = st->site;
    if (__builtin_expect((unsigned)st->kind < CMT_KIND_COUNT &&
                             (CMT__LEDGER_DRIVER_KINDS >> st->kind & 1u) && slot < p->slot_cap &&
                             site < p->slots[slot].cap,
                         1)) {
        cmt__peak_cell_add(p, &p->slots[slot].cells[site], delta); /* slot seen: it has cells */
        return;
    }
    peak_change(p, st);
}
