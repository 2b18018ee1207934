/* replay_pools.c — stream-ordered memory pools and context-wide events of the replay: pool
 * creation, trims, destruction, a synchronisation's release, the current pool, a primary
 * context's reset (see replay.h for the accounting rules). */
#include <stdlib.h>

#include "replay_books.h"
#include "cmt_grow.h"

/* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, as the driver numbers it (the FLAGS of a pool_attr event). */
#define CMT_POOL_ATTR_RELEASE_THRESHOLD 4

/* A pool's entry, created (empty, on device dev) when it is new. @return NULL when out of
 * memory (rp->failed set). */
__attribute__((noinline)) struct cmt__entry *cmt__pool_add(cmt_replay *rp, uint64_t key,
                                                           int32_t dev)
{
    struct cmt__entry *p = cmt__pool_find(rp, key);
    if (p)
        return p;
    rp->pool_hit = NULL;
    if (!(p = cmt__map_insert(&rp->pools, key))) {
        rp->failed = 1;
        return NULL;
    }
    if (CMT_GROW(rp->pool_keys, rp->pool_cap, rp->pool_count + 1, 8) != 0) {
        cmt__map_remove(&rp->pools, p);
        rp->failed = 1;
        return NULL;
    }
    rp->pool_keys[rp->pool_count++] = key;
    p->kind = CMT_KIND_POOL + 1;
    p->dev = dev;
    p->seq = rp->tick;
    return rp->pool_hit = p;
}

/* Pool memory kept after a trim to `keep` bytes (keep 0: a synchronisation releases all). */
void cmt__pool_trim(cmt_replay *rp, struct cmt__entry *p, uint64_t keep)
{
    if (p->size <= keep)
        return;
    uint64_t cut = p->size - keep;
    p->size = keep;
    cmt__device_slot(rp, p->dev)->kind_bytes[CMT_KIND_POOL] -= cut;
    rp->totals.pool_retained_bytes -= cut;
}

/* The release threshold set on pool (0, the driver's default, when none). */
static uint64_t pool_threshold(const cmt_replay *rp, uint64_t pool)
{
    for (size_t i = 0; i < rp->threshold_count; i++)
        if (rp->thresholds[i].pool == pool)
            return rp->thresholds[i].bytes;
    return 0;
}

/* Records pool's release threshold (bytes 0 forgets it). */
static void set_threshold(cmt_replay *rp, uint64_t pool, uint64_t bytes)
{
    size_t i = 0;
    while (i < rp->threshold_count && rp->thresholds[i].pool != pool)
        i++;
    if (i < rp->threshold_count) {
        if (bytes)
            rp->thresholds[i].bytes = bytes;
        else
            rp->thresholds[i] = rp->thresholds[--rp->threshold_count];
        return;
    }
    if (!bytes)
        return;
    if (CMT_GROW(rp->thresholds, rp->threshold_cap, rp->threshold_count + 1, 4) != 0) {
        rp->failed = 1;
        return;
    }
    rp->thresholds[rp->threshold_count++] = (struct cmt__threshold){pool, bytes};
}

void cmt__sync_pools(cmt_replay *rp, int32_t dev, int thresholds)
{
    if (!rp->totals.pool_retained_bytes)
        return;
    for (size_t i = 0; i < rp->pool_count; i++) {
        struct cmt__entry *p = cmt__map_find(&rp->pools, rp->pool_keys[i]);
        if (p && (dev < 0 || p->dev == dev) && (!CMT__IS_GRAPH_POOL(p->key) || !thresholds))
            cmt__pool_trim(rp, p,
                           thresholds && rp->threshold_count ? pool_threshold(rp, p->key) : 0);
    }
}

uint64_t cmt__pool_canon_slow(const cmt_replay *rp, uint64_t handle)
{
    for (size_t i = 0; i < rp->default_pool_count; i++)
        if (rp->default_pools[i].handle == handle)
            return CMT__DEFAULT_POOL(rp->default_pools[i].slot);
    return handle;
}

/* A query said that handle is the default pool of device slot `slot`. */
static void alias_default_pool(cmt_replay *rp, uint64_t handle, uint32_t slot)
{
    for (size_t i = 0; i < rp->default_pool_count; i++)
        if (rp->default_pools[i].handle == handle) {
            rp->default_pools[i].slot = slot;
            return;
        }
    if (CMT_GROW(rp->default_pools, rp->default_pool_cap, rp->default_pool_count + 1, 4) != 0) {
        rp->failed = 1;
        return;
    }
    rp->default_pools[rp->default_pool_count++] = (struct cmt__pool_alias){handle, slot};
}

/* cuDeviceGetDefaultMemPool and friends (POOL_DEFAULT) name the default pool's handle; the
 * current pool's query (POOL_CURRENT) does too while no other pool was made current. */
static void apply_pool_query(cmt_replay *rp, struct cmt_replay_device *d, const struct cmt_event *e,
                             int is_default)
{
    if (e->result != 0 || !(e->fields & CMT_F(POOL)) || e->dev < 0 || rp->failed)
        return;
    uint32_t slot = (uint32_t)(d - rp->devices);
    uint64_t handle = e->v[CMT_FIELD_POOL], current = rp->current_pool[slot];
    if (is_default ||
        ((!current || current == CMT__DEFAULT_POOL(slot)) && !cmt__map_find(&rp->pools, handle)))
        alias_default_pool(rp, handle, slot);
}

void cmt__pool_forget(cmt_replay *rp, struct cmt__entry *p)
{
    for (size_t i = 0; i < rp->pool_count; i++)
        if (rp->pool_keys[i] == p->key) {
            rp->pool_keys[i] = rp->pool_keys[--rp->pool_count];
            break;
        }
    cmt__map_remove(&rp->pools, p);
}

/* ---- the handlers of CMT_REPLAY_OPS for pools and contexts (replay_ops.h) ---- */

void cmt__apply_pool_create(cmt_replay *rp, struct cmt_replay_device *d, struct cmt_replay_step *st,
                            int kind)
{
    (void)d, (void)kind;
    const struct cmt_event *e = &st->rec.u.event;
    if (e->result == 0 && (e->fields & CMT_F(POOL)))
        cmt__pool_retain(rp, d, e->v[CMT_FIELD_POOL], e->dev, 0);
}

/* cuMemPoolTrimTo keeps at most its size; a destroyed pool keeps nothing and is forgotten. */
static void trim_or_destroy(cmt_replay *rp, const struct cmt_event *e, int destroy)
{
    struct cmt__entry *p = cmt__map_find(&rp->pools, cmt__pool_canon(rp, e->v[CMT_FIELD_POOL]));
    if (!p || e->result != 0)
        return;
    cmt__pool_trim(rp, p, destroy ? 0 : e->v[CMT_FIELD_SIZE]);
    if (destroy) {
        set_threshold(rp, p->key, 0);
        cmt__pool_forget(rp, p);
    }
}

void cmt__apply_pool_destroy(cmt_replay *rp, struct cmt_replay_device *d,
                             struct cmt_replay_step *st, int kind)
{
    (void)d, (void)kind;
    trim_or_destroy(rp, &st->rec.u.event, 1);
}

void cmt__apply_pool_trim(cmt_replay *rp, struct cmt_replay_device *d, struct cmt_replay_step *st,
                          int kind)
{
    (void)d, (void)kind;
    trim_or_destroy(rp, &st->rec.u.event, 0);
}

void cmt__apply_pool_set(cmt_replay *rp, struct cmt_replay_device *d, struct cmt_replay_step *st,
                         int kind)
{
    (void)kind;
    const struct cmt_event *e = &st->rec.u.event;
    if (e->result == 0) {
        uint32_t slot = (uint32_t)(d - rp->devices);
        if (!rp->failed)
            rp->current_pool[slot] = cmt__pool_canon(rp, e->v[CMT_FIELD_POOL]);
    }
}

void cmt__apply_pool_attr(cmt_replay *rp, struct cmt_replay_device *d, struct cmt_replay_step *st,
                          int kind)
{
    (void)d, (void)kind;
    const struct cmt_event *e = &st->rec.u.event;
    if (e->result == 0 && (e->fields & CMT_F(POOL)) && (e->fields & CMT_F(SIZE)) &&
        (e->fields & CMT_F(FLAGS)) && e->v[CMT_FIELD_FLAGS] == CMT_POOL_ATTR_RELEASE_THRESHOLD)
        set_threshold(rp, cmt__pool_canon(rp, e->v[CMT_FIELD_POOL]), e->v[CMT_FIELD_SIZE]);
}

void cmt__apply_pool_default(cmt_replay *rp, struct cmt_replay_device *d,
                             struct cmt_replay_step *st, int kind)
{
    (void)kind;
    apply_pool_query(rp, d, &st->rec.u.event, 1);
}

void cmt__apply_pool_current(cmt_replay *rp, struct cmt_replay_device *d,
                             struct cmt_replay_step *st, int kind)
{
    (void)kind;
    apply_pool_query(rp, d, &st->rec.u.event, 0);
}

/* A synchronisation: the pools of the event's device release what exceeds their threshold. */
void cmt__apply_sync(cmt_replay *rp, struct cmt_replay_device *d, struct cmt_replay_step *st,
                     int kind)
{
    (void)d, (void)kind;
    cmt__sync_pools(rp, st->rec.u.event.dev, 1);
}

/* A context destroyed: the pools of every device release what they retain. */
void cmt__apply_sync_all(cmt_replay *rp, struct cmt_replay_device *d, struct cmt_replay_step *st,
                         int kind)
{
    (void)d, (void)kind;
    cmt__sync_pools(rp, -1, 0);
    st->all_devices = 1;
}

/* The device's primary context reset: everything on it is freed. */
void cmt__apply_reset(cmt_replay *rp, struct cmt_replay_device *d, struct cmt_replay_step *st,
                      int kind)
{
    (void)d, (void)kind;
    if (st->rec.u.event.result == 0)
        cmt__reset_device(rp, st->rec.u.event.dev);
}
