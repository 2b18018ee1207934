/* replay_tables.c — creating and destroying a replay, and the queries over its state
 * (see replay.h); the event handling is in replay.c. */
#include "replay.h"

#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "cmt_free.h"
#include "cmt_grow.h"
#include "replay_books.h"

const char *cmt_kind_name(int kind)
{
    static const char *const names[] = {
#define CMT__KIND_NAME(name, text, attrs) text,
        CMT_KINDS(CMT__KIND_NAME)
#undef CMT__KIND_NAME
    };
    return kind >= 0 && kind < CMT_KIND_COUNT ? names[kind] : "?";
}

int cmt_replay_create(cmt_replay **out, cmt_reader *r)
{
    *out = NULL;
    cmt_replay *rp = calloc(1, sizeof *rp);
    if (!rp)
        return CMT_ENOMEM;
    rp->reader = r;
    rp->owner_dev = INT32_MIN;                /* none */
    rp->allocs.near = CMT__MAP_NEAR_MIN_BITS; /* keyed by address */
    rp->sites = calloc(64, sizeof *rp->sites);
    if (!rp->sites) {
        cmt_replay_destroy(rp);
        return CMT_ENOMEM;
    }
    rp->site_cap = 64;
    rp->site_count = 1; /* index 0: allocations without a stack */
    *out = rp;
    return 0;
}

void cmt_replay_destroy(cmt_replay *rp)
{
    if (!rp)
        return;
    cmt__map_free(&rp->allocs);
    cmt__map_free(&rp->handles);
    cmt__map_free(&rp->vas);
    cmt__map_free(&rp->mappings);
    cmt__map_free(&rp->pools);
    cmt__map_free(&rp->site_ids);
    cmt__map_free(&rp->tids);
    CMT_FREE_ALL(rp->stack_sites, rp->apis, rp->devices, rp->current_pool, rp->sites, rp->threads,
                 rp->peak_devices, rp->log, rp->pool_keys, rp->thresholds, rp->graph_nodes,
                 rp->default_pools, rp->binds, rp->free_objects, rp);
}

/* ---- queries ---- */

cmt_reader *cmt_replay_reader(const cmt_replay *rp)
{
    return rp->reader;
}

uint32_t cmt_replay_device_count(const cmt_replay *rp)
{
    return rp->device_count;
}

const struct cmt_replay_device *cmt_replay_device_slot(const cmt_replay *rp, uint32_t slot)
{
    return slot < rp->device_count && rp->devices[slot].seen ? &rp->devices[slot] : NULL;
}

const struct cmt_replay_device *cmt_replay_device(const cmt_replay *rp, int32_t dev)
{
    if (dev < -1 || dev >= MAX_DEVICE_SLOTS - 1)
        return NULL;
    return cmt_replay_device_slot(rp, (uint32_t)(dev + 1));
}

const struct cmt_replay_totals *cmt_replay_totals(const cmt_replay *rp)
{
    return &rp->totals;
}

uint32_t cmt_replay_site_count(const cmt_replay *rp)
{
    return rp->site_count;
}

const struct cmt_replay_site *cmt_replay_site(const cmt_replay *rp, uint32_t index)
{
    return index < rp->site_count ? &rp->sites[index] : NULL;
}

uint64_t cmt_replay_api_calls(const cmt_replay *rp, uint32_t api)
{
    return api < rp->api_cap ? rp->apis[api].calls : 0;
}

uint32_t cmt_replay_thread_count(const cmt_replay *rp)
{
    return rp->thread_count;
}

const struct cmt_replay_thread *cmt_replay_thread(const cmt_replay *rp, uint32_t i)
{
    return i < rp->thread_count ? &rp->threads[i] : NULL;
}

static void visit_map(const struct cmt__map *m,
                      void (*fn)(void *ctx, const struct cmt_replay_object *o), void *ctx)
{
    for (size_t i = 0; i < m->count; i++) {
        const struct cmt__entry *e = &m->entries[i];
        struct cmt_replay_object o = {e->kind - 1, e->dev, e->key, e->size,
                                      e->aux,      e->seq, e->site};
        fn(ctx, &o);
    }
}

void cmt_replay_foreach_live(const cmt_replay *rp,
                             void (*fn)(void *ctx, const struct cmt_replay_object *o), void *ctx)
{
    visit_map(&rp->allocs, fn, ctx);
    visit_map(&rp->handles, fn, ctx);
    visit_map(&rp->vas, fn, ctx);
    visit_map(&rp->mappings, fn, ctx);
    visit_map(&rp->pools, fn, ctx);
}

void cmt_replay_foreach_mapping(const cmt_replay *rp,
                                void (*fn)(void *ctx, const struct cmt_replay_object *o), void *ctx)
{
    visit_map(&rp->mappings, fn, ctx);
}

/* ---- the tables' slow paths (the inline lookups are replay.c's) ---- */

struct cmt_replay_device *cmt__device_slot_slow(cmt_replay *rp, int32_t dev)
{
    uint32_t slot = dev >= -1 && dev < MAX_DEVICE_SLOTS - 1 ? (uint32_t)(dev + 1) : 0;
    if (slot >= rp->device_cap) {
        uint32_t cap = rp->device_cap ? rp->device_cap : 4;
        while (cap <= slot)
            cap *= 2;
        struct cmt_replay_device *d = realloc(rp->devices, cap * sizeof *d);
        uint64_t *pools = d ? realloc(rp->current_pool, cap * sizeof *pools) : NULL;
        if (d)
            rp->devices = d;
        if (!pools) {
            static struct cmt_replay_device spare;
            rp->failed = 1;
            return &spare;
        }
        rp->current_pool = pools;
        memset(d + rp->device_cap, 0, (cap - rp->device_cap) * sizeof *d);
        memset(pools + rp->device_cap, 0, (cap - rp->device_cap) * sizeof *pools);
        for (uint32_t i = rp->device_cap; i < cap; i++)
            d[i].dev = (int32_t)i - 1;
        rp->device_cap = cap;
    }
    if (slot >= rp->device_count)
        rp->device_count = slot + 1;
    rp->devices[slot].seen = 1;
    return &rp->devices[slot];
}

static uint32_t new_site(cmt_replay *rp, uint32_t stack)
{
    if (rp->site_count == rp->site_cap) {
        struct cmt_replay_site *s = realloc(rp->sites, 2 * rp->site_cap * sizeof *s);
        if (!s) {
            rp->failed = 1;
            return 0;
        }
        rp->sites = s;
        rp->site_cap *= 2;
    }
    rp->sites[rp->site_count] = (struct cmt_replay_site){.stack = stack};
    return rp->site_count++;
}

/* Stack ids are dense node ids: a flat table covers every id up to the highest node read
 * (memory proportional to the reader's own node table); larger ids, which only a damaged or
 * hostile trace has, go through a hash map. */
static int grow_stack_sites(cmt_replay *rp, uint32_t stack)
{
    if (stack >= (UINT32_C(1) << 16) && stack > cmt_reader_stack_node_count(rp->reader))
        return -1;
    uint32_t cap = rp->stack_site_cap ? rp->stack_site_cap : 1024;
    while (cap <= stack && cap < (UINT32_C(1) << 31))
        cap *= 2;
    if (cap <= stack)
        return -1;
    uint32_t *t = calloc(cap, sizeof *t); /* untouched zero pages for ids never used */
    if (!t)
        return -1;
    if (rp->stack_sites)
        memcpy(t, rp->stack_sites, (size_t)rp->stack_site_cap * sizeof *t);
    free(rp->stack_sites);
    rp->stack_sites = t;
    rp->stack_site_cap = cap;
    return 0;
}

uint32_t cmt__site_index_slow(cmt_replay *rp, uint32_t stack)
{
    if (stack == 0)
        return 0;
    if (stack < rp->stack_site_cap || grow_stack_sites(rp, stack) == 0) {
        uint32_t site = rp->stack_sites[stack];
        if (!site && (site = new_site(rp, stack)) != 0)
            rp->stack_sites[stack] = site;
        return site;
    }
    struct cmt__entry *e = cmt__map_insert(&rp->site_ids, stack);
    if (!e) {
        rp->failed = 1;
        return 0;
    }
    if (e->kind)
        return (uint32_t)e->aux;
    uint32_t site = new_site(rp, stack);
    if (!site) {
        cmt__map_remove(&rp->site_ids, e);
        return 0;
    }
    e->kind = 1;
    e->aux = site;
    return site;
}

struct cmt_replay_thread *cmt__thread_slow(cmt_replay *rp, uint32_t tid)
{
    static struct cmt_replay_thread spare;
    struct cmt__entry *e = cmt__map_insert(&rp->tids, (uint64_t)tid + 1);
    if (!e)
        return &spare;
    if (!e->kind) {
        if (CMT_GROW(rp->threads, rp->thread_cap, (size_t)rp->thread_count + 1, 16) != 0) {
            cmt__map_remove(&rp->tids, e);
            return &spare;
        }
        e->kind = 1;
        e->aux = rp->thread_count;
        rp->threads[rp->thread_count++] = (struct cmt_replay_thread){.tid = tid};
    }
    uint32_t c = tid & 63;
    rp->thread_cache[c].key = (uint64_t)tid + 1;
    rp->thread_cache[c].index = (uint32_t)e->aux;
    return &rp->threads[e->aux];
}

void cmt_replay_finish(cmt_replay *rp)
{
    for (uint32_t i = 0; i < rp->site_count; i++) {
        struct cmt_replay_site *s = &rp->sites[i];
        int unchanged = s->last_mod_seq <= rp->peak_tick;
        s->at_peak_bytes = unchanged ? s->live_bytes : s->saved_bytes;
        s->at_peak_count = unchanged ? s->live_count : s->saved_count;
    }
}
