/* oom.c — out-of-memory episodes from a replay (see oom.h). */
#include "oom.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "caching_model.h"
#include "cmt_error.h"
#include "cmt_free.h"
#include "sites.h"
#include "cmt_grow.h"

#define MAX_EPISODES 100000 /* a hostile trace must not make us keep unbounded state */
#define CANDIDATES 32       /* largest sites kept per episode, grouped into holders at the end */

const char *cmt_verdict_name(int verdict)
{
    static const char *const names[] = {
#define CMT__VERDICT_NAME(name, text) text,
        CMT_VERDICTS(CMT__VERDICT_NAME)
#undef CMT__VERDICT_NAME
    };
    return verdict >= 0 && verdict < (int)(sizeof names / sizeof *names) ? names[verdict] : "?";
}

struct cmt_oom {
    struct cmt_oom_episode *v;
    uint32_t count, cap;
    int open;                          /* the last episode still takes retries */
    uint64_t *site_bytes, *site_count; /* scratch for grouping holders */
    uint32_t scratch_cap;
    /* per episode, its largest sites at the failure: symbols come at the end of a trace, so
     * they are grouped by call site (sites.h) only in cmt_oom_finish */
    struct cmt_site_item *cands;
    size_t cand_count, cand_cap;
    size_t *cand_first; /* per episode (same capacity as v) */
    uint32_t *cand_n;
    const cmt_alloc *alloc; /* the allocator-level view, or NULL */
    int failed;             /* out of memory measuring an episode's fragmentation */
};

int cmt_oom_create(cmt_oom **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : CMT_ENOMEM;
}

void cmt_oom_destroy(cmt_oom *o)
{
    if (!o)
        return;
    for (uint32_t i = 0; i < o->count; i++)
        free(o->v[i].alloc);
    CMT_FREE_ALL(o->v, o->site_bytes, o->site_count, o->cands, o->cand_first, o->cand_n, o);
}

uint32_t cmt_oom_count(const cmt_oom *o)
{
    return o->count;
}

const struct cmt_oom_episode *cmt_oom_episode(const cmt_oom *o, uint32_t i)
{
    return i < o->count ? &o->v[i] : NULL;
}

uint64_t cmt_oom_device_bytes_needed(const struct cmt_oom_episode *e)
{
    uint64_t r = e->request_bytes,
             page = r <= CMT_MODEL_MIB ? 2 * CMT_MODEL_MIB : 20 * CMT_MODEL_MIB;
    if (e->alloc && e->alloc->expandable)
        return r > UINT64_MAX - page ? r : (r + page - 1) / page * page;
    struct cmt_model_config config; /* the run's settings where the trace names them */
    cmt_model_config_default(&config, 0);
    if (e->alloc && e->alloc->conf && *e->alloc->conf) /* unreadable: parse keeps the defaults */
        (void)cmt_model_config_parse(&config, e->alloc->conf, NULL);
    return cmt_model_segment_size(&config, (size_t)r);
}

static void verdict(struct cmt_oom_episode *e)
{
    uint64_t used = e->total_bytes > e->free_bytes ? e->total_bytes - e->free_bytes : 0;
    e->others_bytes = used > e->process_bytes ? used - e->process_bytes : 0;
    e->shortfall_bytes = e->request_bytes > e->free_bytes ? e->request_bytes - e->free_bytes : 0;
    const struct cmt_alloc_view *a = e->alloc;
    uint64_t asked = a && a->request_bytes ? a->request_bytes : e->request_bytes;
    if (e->total_bytes && e->request_bytes > e->total_bytes)
        e->verdict = CMT_VERDICT_OVER_CAPACITY;
    else if (a && a->unallocated_bytes >= asked && !a->servable_blocks &&
             (!a->expandable || a->largest_free_block >= asked))
        /* inside the allocator's cache; with expandable segments c10 maps what a request
         * needs and unmaps free pages before it fails, so scattered free bytes are no cache
         * fragmentation unless one place holds the request */
        e->verdict = CMT_VERDICT_FRAGMENTATION;
    else if (e->request_bytes <= e->free_bytes && !(a && e->op < 0))
        e->verdict = CMT_VERDICT_FRAGMENTATION;
    /* an allocator that refused what the device had free, with nothing cached to serve it,
     * asked the driver for nothing: a cap of its own (a memory fraction) stopped it */
    else if (!e->total_bytes) /* a snapshot: the rest differ only by the device's size, */
        e->verdict = a && e->op < 0 && cmt_oom_device_bytes_needed(e) <= e->free_bytes
                         ? CMT_VERDICT_EXHAUSTED_BY_PROCESS /* but a cap of its own is told */
                         : CMT_VERDICT_TOTAL_UNKNOWN;
    else if (e->others_bytes >= e->process_bytes)
        e->verdict = CMT_VERDICT_HELD_BY_OTHERS;
    else
        e->verdict = CMT_VERDICT_EXHAUSTED_BY_PROCESS;
}

void cmt_oom_set_capacity(cmt_oom *o, uint64_t total_bytes)
{
    for (uint32_t i = 0; i < o->count && total_bytes; i++)
        if (!o->v[i].total_bytes) {
            o->v[i].total_bytes = total_bytes;
            o->v[i].total_given = 1;
            verdict(&o->v[i]);
        }
}

struct group_ctx {
    cmt_oom *o;
    int32_t dev;
};

static void group(void *ctx, const struct cmt_replay_object *obj)
{
    struct group_ctx *g = ctx;
    if (obj->dev != g->dev || !CMT_KIND_IS_DEVICE_MEMORY(obj->kind) ||
        obj->site >= g->o->scratch_cap)
        return;
    g->o->site_bytes[obj->site] += obj->size;
    g->o->site_count[obj->site]++;
}

/* Keeps the episode's largest sites for cmt_oom_finish (without them, the holders stay
 * per site). */
static void keep_candidates(cmt_oom *o, const struct cmt_oom_holder *top, uint32_t count)
{
    uint32_t ep = o->count - 1;
    o->cand_n[ep] = 0;
    o->cand_first[ep] = o->cand_count;
    if (CMT_GROW(o->cands, o->cand_cap, o->cand_count + count, 256) != 0)
        return;
    for (uint32_t i = 0; i < count; i++)
        o->cands[o->cand_count++] = (struct cmt_site_item){top[i].site, top[i].stack, top[i].bytes,
                                                           top[i].count};
    o->cand_n[ep] = count;
}

/* Live allocations on the device by site, largest first (grouped at the end). */
static void holders(cmt_oom *o, const cmt_replay *rp, struct cmt_oom_episode *e)
{
    uint32_t n = cmt_replay_site_count(rp);
    if (n > o->scratch_cap) {
        uint64_t *b = realloc(o->site_bytes, n * sizeof *b);
        if (b)
            o->site_bytes = b;
        uint64_t *c = b ? realloc(o->site_count, n * sizeof *c) : NULL;
        if (!c)
            return;
        o->site_count = c;
        o->scratch_cap = n;
    }
    memset(o->site_bytes, 0, n * sizeof *o->site_bytes);
    memset(o->site_count, 0, n * sizeof *o->site_count);
    struct group_ctx g = {o, e->dev};
    cmt_replay_foreach_live(rp, group, &g);
    struct cmt_oom_holder top[CANDIDATES];
    uint32_t count = 0;
    for (uint32_t s = 0; s < n; s++) {
        if (!o->site_bytes[s])
            continue;
        struct cmt_oom_holder h = {cmt_replay_site(rp, s)->stack, s, o->site_bytes[s],
                                   o->site_count[s]};
        uint32_t i = count < CANDIDATES ? count++ : CANDIDATES;
        if (i == CANDIDATES && h.bytes <= top[i - 1].bytes)
            continue;
        if (i == CANDIDATES)
            i--;
        while (i > 0 && top[i - 1].bytes < h.bytes) { /* insertion, largest first */
            top[i] = top[i - 1];
            i--;
        }
        top[i] = h;
    }
    e->holder_count = count < CMT_OOM_HOLDERS ? count : CMT_OOM_HOLDERS;
    memcpy(e->holders, top, e->holder_count * sizeof *top);
    keep_candidates(o, top, count);
    /* leak hint: a site that allocated repeatedly, never freed, and holds >= 10% of it all */
    for (uint32_t i = 0; i < e->holder_count; i++) {
        const struct cmt_replay_site *s = cmt_replay_site(rp, e->holders[i].site);
        if (s->free_count == 0 && s->alloc_count >= 3 &&
            e->holders[i].bytes * 10 >= e->process_bytes && e->process_bytes) {
            e->hint_leak = (int)i + 1;
            break;
        }
    }
}

/* @return a new episode (zeroed), or NULL when none can be kept. */
static struct cmt_oom_episode *new_episode(cmt_oom *o)
{
    if (o->count == o->cap) {
        if (o->cap >= MAX_EPISODES)
            return NULL;
        /* three arrays of one capacity: each grows from o->cap (doubling, from 8) */
        size_t v_cap = o->cap, first_cap = o->cap, n_cap = o->cap;
        if (CMT_GROW(o->v, v_cap, o->count + 1, 8) ||
            CMT_GROW(o->cand_first, first_cap, o->count + 1, 8) ||
            CMT_GROW(o->cand_n, n_cap, o->count + 1, 8))
            return NULL;
        o->cap = (uint32_t)v_cap;
    }
    o->cand_n[o->count] = 0;
    return &o->v[o->count++];
}

/* A new episode's figures from its device (e->dev) at the failure: free and total bytes, what
 * the process holds, the holders and the fragmentation. */
static void measure(cmt_oom *o, const cmt_replay *rp, struct cmt_oom_episode *e)
{
    const struct cmt_replay_device *d = cmt_replay_device(rp, e->dev);
    if (d) {
        e->free_bytes = d->free_bytes;
        e->total_bytes = d->total_bytes;
        e->pool_retained_bytes = d->kind_bytes[CMT_KIND_POOL];
        e->process_bytes = d->live_bytes + e->pool_retained_bytes;
    }
    holders(o, rp, e);
    if (cmt_replay_fragmentation(rp, e->dev, &e->frag) != 0)
        o->failed = 1;
}

static void start(cmt_oom *o, const cmt_replay *rp, const struct cmt_replay_step *st)
{
    struct cmt_oom_episode *e = new_episode(o);
    if (!e)
        return;
    const struct cmt_event *ev = &st->rec.u.event;
    *e = (struct cmt_oom_episode){.request_bytes = st->request,
                                  .api = st->api,
                                  .op = st->op,
                                  .dev = ev->dev,
                                  .t_ns = ev->t_ns,
                                  .seq = ev->seq,
                                  .tid = ev->tid,
                                  .stack = ev->stack,
                                  .attempts = 1,
                                  .fatal = 1};
    measure(o, rp, e);
    verdict(e);
    o->open = 1;
}

static void observe(cmt_oom *o, const cmt_replay *rp, const struct cmt_replay_step *st)
{
    struct cmt_oom_episode *e = o->open ? &o->v[o->count - 1] : NULL;
    if (st->rec.type == CMT_REC_MEMINFO) {
        const struct cmt_meminfo *m = &st->rec.u.meminfo;
        /* the shim's sample right after the first failure is the figure to trust */
        if (e && !e->have_meminfo && m->reason == CMT_MEMINFO_OOM && m->seq == e->seq &&
            m->dev == e->dev) {
            e->have_meminfo = 1;
            e->free_bytes = m->free_bytes;
            e->total_bytes = m->total_bytes;
            verdict(e);
        }
        return;
    }
    if (st->rec.type != CMT_REC_EVENT)
        return;
    const struct cmt_event *ev = &st->rec.u.event;
    if (st->is_alloc) {
        int retry = e && ev->dev == e->dev && st->request == e->request_bytes;
        if (retry) {
            e->attempts++;
            e->hint_retention = 1; /* retried at the same size: release-and-retry */
            if (!st->failed) {
                e->fatal = 0;
                o->open = 0;
            }
            return;
        }
        if (st->oom) {
            start(o, rp, st);
            return;
        }
        o->open = 0; /* the program moved on to other requests */
        return;
    }
    if (e && e->hint_leak && st->site == e->holders[e->hint_leak - 1].site && st->released)
        e->hint_leak = 0; /* it gave memory back when pressed: retention, not a leak */
    if (e && st->released && ev->dev == e->dev) {
        e->frees_between++;
        e->released_bytes += st->released;
        e->hint_retention = 1;
    }
}

/* Episode figures from the allocator's view: the process holds at least its reserved bytes
 * and what lies outside them (a converted snapshot has no driver-level objects). */
static void attach_view(cmt_oom *o, const cmt_replay *rp, struct cmt_oom_episode *e,
                        const struct cmt_alloc_event *ae)
{
    struct cmt_alloc_view *v = calloc(1, sizeof *v);
    if (!v)
        return;
    uint64_t request = ae->fields & CMT_AF(SIZE) ? ae->v[CMT_AFIELD_SIZE] : e->request_bytes;
    if (cmt_alloc_view(o->alloc, rp, ae->allocator, ae->dev, request, v) == CMT_ENOT_FOUND) {
        free(v); /* an allocator that never did anything on this device */
        return;
    }
    if ((ae->fields & CMT_AF(ALLOCATED)) && (ae->fields & CMT_AF(RESERVED))) {
        v->have_recorded = 1;
        v->recorded_allocated = ae->v[CMT_AFIELD_ALLOCATED];
        v->recorded_reserved = ae->v[CMT_AFIELD_RESERVED];
    }
    e->alloc = v;
    e->hint_leak = 0; /* the driver-level holders are the cache's segments, not tensors */
    if (!e->have_meminfo && (ae->fields & CMT_AF(DEVICE_FREE))) {
        /* the allocator's own figures at the failure (a snapshot's `oom` has free, no total) */
        e->have_meminfo = 1;
        e->free_bytes = ae->v[CMT_AFIELD_DEVICE_FREE];
        if (ae->fields & CMT_AF(DEVICE_TOTAL))
            e->total_bytes = ae->v[CMT_AFIELD_DEVICE_TOTAL];
    }
    uint64_t held = v->fig.reserved_bytes + v->outside_bytes;
    if (held > e->process_bytes)
        e->process_bytes = held;
    verdict(e);
}

/* An allocator's `oom` event: it joins the episode open on its device, or starts its own. */
static void alloc_oom(cmt_oom *o, const cmt_replay *rp, const struct cmt_replay_step *st)
{
    const struct cmt_alloc_event *ae = &st->rec.u.alloc_event;
    struct cmt_oom_episode *e = o->open ? &o->v[o->count - 1] : NULL;
    if (e && (e->dev != ae->dev || e->alloc))
        e = NULL;
    if (!e) {
        if (!(e = new_episode(o)))
            return;
        const struct cmt_alloc_settings *s = cmt_alloc_settings(o->alloc, ae->allocator);
        *e = (struct cmt_oom_episode){
            .request_bytes = ae->fields & CMT_AF(SIZE) ? ae->v[CMT_AFIELD_SIZE] : 0,
            .api = s && s->name && *s->name ? s->name : "allocator",
            .op = -1,
            .dev = ae->dev,
            .t_ns = ae->t_ns,
            .seq = ae->fields & CMT_AF(SEQ) ? ae->v[CMT_AFIELD_SEQ] : 0,
            .tid = ae->tid,
            .stack = ae->stack,
            .attempts = 1,
            .fatal = 1};
        measure(o, rp, e);
    }
    attach_view(o, rp, e, ae);
    o->open = 0; /* the allocator gave up: the program sees the error now */
}

int cmt_oom_observe(cmt_oom *o, const cmt_replay *rp, const struct cmt_replay_step *st)
{
    if (o->alloc && st->rec.type == CMT_REC_ALLOC_EVENT &&
        st->rec.u.alloc_event.action == CMT_AA_OOM) {
        alloc_oom(o, rp, st);
        return o->open;
    }
    if (o->open || st->oom) /* between episodes only a new out-of-memory failure matters */
        observe(o, rp, st);
    return o->open;
}

/* The holders grouped by call site (sites.h), now that the symbols are known. */
static void group_holders(cmt_oom *o, const cmt_reader *r, uint32_t ep)
{
    struct cmt_oom_episode *e = &o->v[ep];
    uint32_t n = o->cand_n[ep];
    if (!n)
        return;
    const struct cmt_site_item *items = &o->cands[o->cand_first[ep]];
    uint32_t leak_site = e->hint_leak ? e->holders[e->hint_leak - 1].site : 0;
    struct cmt_ranked_site top[CMT_OOM_HOLDERS];
    size_t count = cmt_sites_group(r, items, n, top, CMT_OOM_HOLDERS);
    char key[1024], other[1024];
    uint32_t leak_stack = 0;
    for (uint32_t i = 0; i < n; i++)
        if (items[i].site == leak_site)
            leak_stack = items[i].stack;
    if (e->hint_leak)
        cmt_site_key(r, leak_stack, key, sizeof key);
    int hint = 0;
    for (size_t i = 0; i < count; i++) {
        uint32_t stack = 0;
        for (uint32_t k = 0; k < n; k++)
            if (items[k].site == top[i].site)
                stack = items[k].stack;
        e->holders[i] = (struct cmt_oom_holder){stack, top[i].site, top[i].bytes, top[i].count};
        if (e->hint_leak && !hint && strcmp(key, cmt_site_key(r, stack, other, sizeof other)) == 0)
            hint = (int)i + 1;
    }
    e->holder_count = (uint32_t)count;
    e->hint_leak = hint; /* the group of the growing site (0: it fell out of the top) */
}

void cmt_oom_finish(cmt_oom *o, const cmt_replay *rp)
{
    o->open = 0;
    for (uint32_t i = 0; i < o->count; i++) {
        group_holders(o, cmt_replay_reader(rp), i);
        if (o->v[i].alloc)
            cmt_alloc_view_group(cmt_replay_reader(rp), o->v[i].alloc);
    }
}

void cmt_oom_set_allocator(cmt_oom *o, const cmt_alloc *a)
{
    o->alloc = a;
}

static unsigned oom_step(struct cmt_observer *self, const cmt_replay *rp,
                         const struct cmt_replay_step *st)
{
    cmt_oom *o = self->ctx;
    return (cmt_oom_observe(o, rp, st) ? CMT_OBSERVE_ALL : CMT_OBSERVE_OOM) |
           (o->alloc ? CMT_OBSERVE_RECORD : 0u);
}

static int oom_finish(struct cmt_observer *self, const cmt_replay *rp)
{
    cmt_oom *o = self->ctx;
    cmt_oom_finish(o, rp);
    return o->failed ? CMT_ENOMEM : 0;
}

struct cmt_observer cmt_oom_observer(cmt_oom *o)
{
    return (struct cmt_observer){.wants = CMT_OBSERVE_OOM | (o->alloc ? CMT_OBSERVE_RECORD : 0u),
                                 .step = oom_step,
                                 .finish = oom_finish,
                                 .ctx = o};
}
