/* replay_tables.c — creating and destroying a replay, and the queries over its state
 * (see replay.h); the event handling is in replay.c. */
#include "replay.h"

#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "cmt_free.h"
#include "replay_internal.h"

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
