/* replay_books.h — internal: the replay engine's bookkeeping shared by the files of its
 * handlers (replay_ops.h): replay.c (allocations and frees, the hot path), replay_pools.c
 * (pools, contexts), replay_vmm.c (the VMM calls), replay_multicast.c, replay_graph.c and
 * replay_records.c: the inline fast paths and the out-of-line functions behind them. */
#ifndef CMT__REPLAY_BOOKS_H
#define CMT__REPLAY_BOOKS_H

#include "replay_internal.h"

struct cmt_replay_device *cmt__device_slot_slow(cmt_replay *rp, int32_t dev);
/* The call-site index of a stack not in the flat table yet (replay_tables.c). */
uint32_t cmt__site_index_slow(cmt_replay *rp, uint32_t stack);
/* A thread not in the cache: found or added (a spare when out of memory). */
struct cmt_replay_thread *cmt__thread_slow(cmt_replay *rp, uint32_t tid);
void cmt__log_freed_slow(cmt_replay *rp, const struct cmt__entry *e);
/* Removes a live object from the books (the caller removes it from its map). */
void cmt__drop(cmt_replay *rp, const struct cmt__entry *e);
/* A successful allocation of any kind on the event's device (the caller picks the map). */
void cmt__add_object(cmt_replay *rp, struct cmt_replay_step *st, struct cmt__map *map, uint64_t key,
                     int kind, uint64_t size, uint64_t aux);
struct cmt__entry *cmt__pool_add(cmt_replay *rp, uint64_t key, int32_t dev);
void cmt__pool_trim(cmt_replay *rp, struct cmt__entry *p, uint64_t keep);
/* A synchronisation on dev (-1: every device): each pool keeps at most its release threshold
 * when thresholds is nonzero (a sync), nothing otherwise (a context destroyed or reset). */
void cmt__sync_pools(cmt_replay *rp, int32_t dev, int thresholds);
void cmt__pool_forget(cmt_replay *rp, struct cmt__entry *p);
uint64_t cmt__pool_canon_slow(const cmt_replay *rp, uint64_t handle);
/* The replay's key for a pool handle: a handle a query returned for a device's default pool
 * is that device's default pool (CMT__DEFAULT_POOL), any other handle is itself. */
static inline uint64_t cmt__pool_canon(const cmt_replay *rp, uint64_t handle)
{
    return __builtin_expect(!rp->default_pool_count, 1) ? handle : cmt__pool_canon_slow(rp, handle);
}
/* Every record but an EVENT (replay_records.c; cmt_replay_next applies events itself). */
void cmt__apply_record(cmt_replay *rp, struct cmt_replay_step *st);
void cmt__reset_device(cmt_replay *rp, int32_t dev);
/* A VMM handle (physical or multicast) lost a reference or a mapping: it is dropped when it
 * has neither left (a multicast object's bindings with it). */
void cmt__handle_unref(cmt_replay *rp, struct cmt_replay_step *st, struct cmt__entry *h);
/* replay_multicast.c: a multicast object dropped lets its bindings go; a device reset forgets
 * the bindings of its memory or of objects it held. */
void cmt__multicast_forget(cmt_replay *rp, struct cmt_replay_step *st, uint64_t multicast);
void cmt__multicast_reset(cmt_replay *rp, struct cmt_replay_step *st, int32_t dev);

/* The device's state, marked seen. Almost every event names a device already seen. */
static inline struct cmt_replay_device *cmt__device_slot(cmt_replay *rp, int32_t dev)
{
    uint32_t slot = (uint32_t)dev + 1; /* dev -1 -> 0; out of range -> slow path */
    if (__builtin_expect(slot < rp->device_count && rp->devices[slot].seen, 1))
        return &rp->devices[slot];
    return cmt__device_slot_slow(rp, dev);
}

/* An object of device dev was released by the event (see cmt_replay_step.owner). */
static inline void cmt__note_owner(cmt_replay *rp, const struct cmt_replay_step *st, int32_t dev)
{
    if (dev != st->rec.u.event.dev)
        rp->owner_dev = dev;
}

/* Keeps an object freed after the process peak that was alive at it. */
static inline void cmt__log_freed(cmt_replay *rp, const struct cmt__entry *e)
{
    if (e->seq <= rp->peak_tick) /* else born after the peak: not part of it */
        cmt__log_freed_slow(rp, e);
}

/* The pool entry used last when it is key's, else NULL. A program allocates from one or two
 * pools; the entry stays valid while it holds the key (a removal shifts entries within the
 * table; pool_add forgets it before an insert that may move the table). */
static inline struct cmt__entry *cmt__pool_cached(const cmt_replay *rp, uint64_t key)
{
    struct cmt__entry *p = rp->pool_hit;
    return __builtin_expect(p && p->key == key && p->kind, 1) ? p : NULL;
}

/* A pool's entry, or NULL. */
static inline struct cmt__entry *cmt__pool_find(cmt_replay *rp, uint64_t key)
{
    struct cmt__entry *p = cmt__pool_cached(rp, key);
    if (!p && (p = cmt__map_find(&rp->pools, key)))
        rp->pool_hit = p;
    return p;
}

/* The state of device dev, which is near's when near (a device the caller holds, or NULL) is
 * dev's: a pool's device is nearly always the event's. */
static inline struct cmt_replay_device *cmt__device_near(cmt_replay *rp,
                                                         struct cmt_replay_device *near,
                                                         int32_t dev)
{
    return near && near->dev == dev ? near : cmt__device_slot(rp, dev);
}

/* A pool keeps `size` more bytes (a stream-ordered free, or 0 for a new pool); near as in
 * cmt__device_near. */
static inline __attribute__((always_inline)) void cmt__pool_retain(cmt_replay *rp,
                                                                   struct cmt_replay_device *near,
                                                                   uint64_t key, int32_t dev,
                                                                   uint64_t size)
{
    struct cmt__entry *p = cmt__pool_cached(rp, key);
    if (__builtin_expect(!p, 0) && !(p = cmt__pool_add(rp, key, dev)))
        return;
    p->size += size;
    cmt__device_near(rp, near, p->dev)->kind_bytes[CMT_KIND_POOL] += size;
    rp->totals.pool_retained_bytes += size;
}

#endif
