/* timeline.h — memory over time per device, downsampled to a bounded number of points.
 *
 * Time is cut into equal buckets; when the trace outgrows them, neighbours merge and the width
 * doubles, so memory stays O(points) whatever the trace's length. A bucket keeps the state at
 * the moment of its highest live_bytes, so the peak survives downsampling exactly, and its
 * last value (the state after its last event), so memory freed inside it is seen freed.
 * Series exist for the devices the trace uses, never for every possible ordinal. */
#ifndef CMT_TIMELINE_H
#define CMT_TIMELINE_H

#include <stdint.h>

#include "allocator.h"
#include "frag.h"
#include "replay.h"

struct cmt_timeline_point {
    uint64_t t_ns;
    uint64_t live_bytes;
    uint64_t kind_bytes[CMT_KIND_COUNT]; /* POOL: retained bytes, VA: reserved bytes */
    uint64_t allocations;
    uint64_t mapped_bytes, waste_bytes;
    /* hole measures: sampled (docs/analysis.md), exact on the peak point */
    uint64_t hole_bytes, largest_hole, largest_unmapped;
    double hole_fragmentation;
    /* the bucket's last value: the state after its last event */
    uint64_t last_t_ns, last_live_bytes;
    uint64_t last_kind_bytes[CMT_KIND_COUNT];
    uint32_t oom; /* out-of-memory failures inside the bucket */
    uint8_t peak; /* the device's peak */
    uint8_t used; /* the bucket saw an event */
    /* allocator level (cmt_timeline_set_allocator), every allocator of the device summed: each
     * figure's maximum inside the bucket, and its last value */
    uint8_t alloc_used; /* the bucket saw an allocator event */
    uint64_t alloc_allocated, alloc_reserved, alloc_inactive_split;
    uint64_t last_alloc_allocated, last_alloc_reserved, last_alloc_inactive_split;
};

struct cmt_timeline_device {
    int32_t dev;
    struct cmt_timeline_point *points; /* `count` buckets of `width` ns from t = 0 */
    uint32_t count;
    uint64_t events_since_sample, last_event_t;
    struct cmt_timeline_point last_holes; /* carried hole measures */
    int32_t open;                         /* bucket index of the last event, -1 none */
};

struct cmt_timeline {
    uint32_t max_points;
    uint64_t width;                      /* ns per bucket: a power of two */
    unsigned width_shift;                /* log2(width) */
    struct cmt_timeline_device *devices; /* the devices seen, in order of dev */
    uint32_t device_count;
    size_t device_cap;
    uint32_t hit; /* index of the device of the last event (when device_count > 0) */
    int failed;
    const cmt_alloc *alloc;        /* the allocator-level view, or NULL */
    int alloc_seen;                /* an allocator event was charted */
    int no_holes;                  /* cmt_timeline_set_no_holes: the hole measures are not taken */
    struct cmt__frag_scratch frag; /* the hole sampling's buffers, kept between samples */
};

/* @return 0 or CMT_ENOMEM. max_points >= 2. */
int cmt_timeline_init(struct cmt_timeline *tl, uint32_t max_points);
void cmt_timeline_free(struct cmt_timeline *tl);
void cmt__timeline_observe(struct cmt_timeline *tl, const cmt_replay *rp,
                           const struct cmt_replay_step *st);

/* Keeps the device's state as the bucket's last value. */
static inline void cmt__timeline_last(struct cmt_timeline_point *p, uint64_t t_ns,
                                      const struct cmt_replay_device *rd)
{
    p->last_t_ns = t_ns;
    p->last_live_bytes = rd->live_bytes;
    __builtin_memcpy(p->last_kind_bytes, rd->kind_bytes, sizeof p->last_kind_bytes);
}

/* Feeds one replay step. Inline: most events land in the open bucket of the last event's
 * device below its maximum and change its last value and a counter (the open bucket is always
 * a used one, inside the range). */
static inline void cmt_timeline_observe(struct cmt_timeline *tl, const cmt_replay *rp,
                                        const struct cmt_replay_step *st)
{
    const struct cmt_replay_device *rd = st->device; /* NULL but for events */
    if (!rd)
        return;
    if (__builtin_expect(tl->device_count && !st->oom && !st->owner && !st->all_devices, 1)) {
        struct cmt_timeline_device *d = &tl->devices[tl->hit];
        uint64_t t = st->rec.u.event.t_ns, k = t >> tl->width_shift;
        if (d->dev == rd->dev && (uint64_t)(int64_t)d->open == k &&
            rd->live_bytes <= d->points[k].live_bytes) {
            cmt__timeline_last(&d->points[k], t, rd);
            d->events_since_sample++; /* what the full path does for such an event */
            return;
        }
    }
    cmt__timeline_observe(tl, rp, st);
}
/* Marks the peaks and puts the exact peak-time measures on them. */
void cmt_timeline_finish(struct cmt_timeline *tl, const cmt_replay *rp);
/* The kinds a chart stacks (CMT_KA_CHARTED), in table order. @return how many. */
unsigned cmt_timeline_charted_kinds(int kinds[CMT_KIND_COUNT]);
/* Charts the allocator-level view too (not owned; its observer must come before the
 * timeline's): each ALLOC_EVENT record is a point of its device, with the allocator's
 * allocated, reserved and inactive split bytes beside the driver-level state. */
void cmt_timeline_set_allocator(struct cmt_timeline *tl, const cmt_alloc *a);
/* Leaves out the hole measures (hole_bytes, largest_hole, hole_fragmentation,
 * largest_unmapped stay 0 on every point, the peak's too) for a caller that never shows them:
 * the sampling sorts the live set, most of the timeline's cost. Everything else is as
 * without. Call before the replay. */
void cmt_timeline_set_no_holes(struct cmt_timeline *tl, int no_holes);
/* The timeline as a replay observer (cmt_replay_run). */
struct cmt_observer cmt_timeline_observer(struct cmt_timeline *tl);

#endif
