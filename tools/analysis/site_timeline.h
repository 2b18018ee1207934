/* site_timeline.h — memory over time per device, stacked by groups of call sites, with the
 * device's free/total samples: what an interactive chart draws.
 *
 * The groups are chosen after a first pass (cmt_site_groups_choose: the call sites that held
 * the most at the process peak, then those with the largest own peaks), and a second pass fills
 * the series: every bucket keeps each group's bytes at the moment of the bucket's highest
 * live_bytes (so the peak and its breakdown survive downsampling exactly) and at its end, as
 * timeline.h does for kinds. Group `group_count - 1` is "other": everything not in a chosen
 * group, so the groups of a point always sum to its live_bytes.
 *
 * A group's bytes follow the steps' call site and delta on the device they changed (an
 * allocation at a still-live address also drops the old object from its group); a step that
 * changes several sites at once (a context reset, one cuMemUnmap over several handles) is caught
 * by the device's total and the groups are rebuilt from the live set, at most once per
 * live-set's size of events (between two rebuilds the difference is counted as "other").
 *
 * A sample (DEVICE or MEMINFO record, a program's cuMemGetInfo) gives the bucket it falls in
 * the device's total and the bytes held by others: total - free - this process's device memory
 * (live + pool retention) at that moment, 0 when negative; a bucket keeps the most others held
 * among its samples and the last sample's. */
#ifndef CMT_SITE_TIMELINE_H
#define CMT_SITE_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "replay.h"

#define CMT_SITE_GROUPS_MAX 16 /* chosen groups, "other" not counted */

/* The groups of a trace, from a finished replay: each a call site (sites.h grouping) named by
 * its largest member's stack, with the stacks of all its members. */
struct cmt_site_groups {
    uint32_t count;                      /* chosen groups (0..CMT_SITE_GROUPS_MAX) */
    uint32_t stack[CMT_SITE_GROUPS_MAX]; /* leaf STACK_NODE id of each group's largest member */
    /* bytes at the process peak and the largest member's own peak; [count] is "other"'s */
    uint64_t at_peak_bytes[CMT_SITE_GROUPS_MAX + 1], own_peak_bytes[CMT_SITE_GROUPS_MAX + 1];
    /* every member stack with its group, sorted by stack (for cmt_site_groups_of) */
    struct cmt_site_member {
        uint32_t stack, group;
    } * members;
    size_t member_count;
};

/* Chooses at most `max` groups (<= CMT_SITE_GROUPS_MAX) from a finished replay: first the call
 * sites with the most bytes at the process peak, then those with the largest own peaks.
 * @return 0 with *g filled (cmt_site_groups_free it), or CMT_ENOMEM. */
int cmt_site_groups_choose(const cmt_replay *rp, uint32_t max, struct cmt_site_groups *g);
void cmt_site_groups_free(struct cmt_site_groups *g);
/* @return the group of stack `stack` (a leaf STACK_NODE id), or g->count ("other"). */
uint32_t cmt_site_groups_of(const struct cmt_site_groups *g, uint32_t stack);

struct cmt_site_timeline_point {
    uint64_t t_ns, live_bytes;                /* the bucket's highest live_bytes and when */
    uint64_t last_t_ns, last_live_bytes;      /* the state after its last event */
    uint32_t oom;                             /* out-of-memory failures inside the bucket */
    uint8_t used;                             /* the bucket saw an event on the device */
    uint8_t sampled;                          /* ... a free/total sample */
    uint64_t total_bytes;                     /* the last sample's total */
    uint64_t others_bytes, last_others_bytes; /* held by others: most among samples, last */
};

struct cmt_site_timeline_device {
    int32_t dev;
    struct cmt_site_timeline_point *points; /* max_points buckets of `width` ns from t = 0 */
    /* per point, group_count values each: bytes at the bucket's maximum and at its end */
    uint64_t *group_bytes, *last_group_bytes;
    uint64_t *live;   /* group_count: the groups' bytes now */
    uint64_t tracked; /* their sum */
};

struct cmt_site_timeline {
    uint32_t max_points, group_count; /* group_count = chosen groups + 1 ("other") */
    uint64_t width;                   /* ns per bucket: a power of two */
    unsigned width_shift;
    struct cmt_site_timeline_device *devices; /* in order of dev */
    uint32_t device_count;
    size_t device_cap;
    const struct cmt_site_groups *groups; /* not owned */
    uint32_t *site_group;                 /* by replay site index: group + 1, 0 not yet known */
    size_t site_cap;
    struct cmt__site_object { /* live device allocations by replay object id */
        uint64_t bytes;
        int32_t dev;
        uint32_t group;
    } * objects;
    size_t object_cap;
    uint64_t events, last_rebuild; /* rebuilds from the live set: rate limit */
    uint64_t rebuilds;             /* how many (tests) */
    int failed;                    /* out of memory: the series stop growing */
};

/* @return 0 or CMT_ENOMEM. max_points >= 2; groups stays valid while tl is used. */
int cmt_site_timeline_init(struct cmt_site_timeline *tl, uint32_t max_points,
                           const struct cmt_site_groups *groups);
void cmt_site_timeline_free(struct cmt_site_timeline *tl);
/* @return device dev's series, or NULL. */
const struct cmt_site_timeline_device *cmt_site_timeline_device(const struct cmt_site_timeline *tl,
                                                                int32_t dev);
/* @return point i's group values (group_count of them); last: at the bucket's end. */
const uint64_t *cmt_site_timeline_groups(const struct cmt_site_timeline *tl,
                                         const struct cmt_site_timeline_device *d, uint32_t i,
                                         int last);
/* The series as a replay observer (every event and record). */
struct cmt_observer cmt_site_timeline_observer(struct cmt_site_timeline *tl);

#endif
