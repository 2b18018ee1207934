/* timeline.c — bucketed memory-over-time with exact peaks (see timeline.h). */
#include "timeline.h"

#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "cmt_grow.h"
#include "cmt_search.h"

int cmt_timeline_init(struct cmt_timeline *tl, uint32_t max_points)
{
    memset(tl, 0, sizeof *tl);
    tl->max_points = max_points < 2 ? 2 : max_points;
    tl->width = 1024; /* ns; doubles as the trace grows */
    tl->width_shift = 10;
    return 0;
}

void cmt_timeline_free(struct cmt_timeline *tl)
{
    for (uint32_t i = 0; i < tl->device_count; i++)
        free(tl->devices[i].points);
    free(tl->devices);
    cmt__frag_scratch_free(&tl->frag);
    memset(tl, 0, sizeof *tl);
}

/* Where device dev's series is, or would go: devices are kept sorted by dev (a trace names
 * few), found by bisection behind the last one used. @return 1 when it is there. */
static int position(const struct cmt_timeline *tl, int32_t dev, uint32_t *at)
{
    if (tl->device_count && tl->devices[tl->hit].dev == dev) {
        *at = tl->hit;
        return 1;
    }
    CMT_LOWER_BOUND(*at, tl->devices, tl->device_count, .dev, dev);
    return *at < tl->device_count && tl->devices[*at].dev == dev;
}

/* The device's series, or NULL (never creates one). */
static struct cmt_timeline_device *find_device(struct cmt_timeline *tl, int32_t dev)
{
    uint32_t at;
    return position(tl, dev, &at) ? &tl->devices[at] : NULL;
}

/* The series of device dev, created on first use. */
static struct cmt_timeline_device *device(struct cmt_timeline *tl, int32_t dev)
{
    uint32_t lo;
    if (position(tl, dev, &lo)) {
        tl->hit = lo;
        return &tl->devices[lo];
    }
    if (CMT_GROW(tl->devices, tl->device_cap, (size_t)tl->device_count + 1, 4) != 0)
        return NULL;
    struct cmt_timeline_point *points = calloc(tl->max_points, sizeof *points);
    if (!points)
        return NULL;
    memmove(&tl->devices[lo + 1], &tl->devices[lo], (tl->device_count - lo) * sizeof *tl->devices);
    tl->devices[lo] = (struct cmt_timeline_device){.dev = dev, .points = points, .open = -1};
    tl->device_count++;
    tl->hit = lo;
    return &tl->devices[lo];
}

#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* The allocator figures of two neighbouring buckets: maxima of both, the later one's last. */
static void merge_alloc(struct cmt_timeline_point *into, const struct cmt_timeline_point *a,
                        const struct cmt_timeline_point *b)
{
    const struct cmt_timeline_point *later = b->alloc_used ? b : a;
    into->alloc_used = 1;
    into->alloc_allocated = MAX(a->alloc_allocated, b->alloc_allocated);
    into->alloc_reserved = MAX(a->alloc_reserved, b->alloc_reserved);
    into->alloc_inactive_split = MAX(a->alloc_inactive_split, b->alloc_inactive_split);
    into->last_alloc_allocated = later->last_alloc_allocated;
    into->last_alloc_reserved = later->last_alloc_reserved;
    into->last_alloc_inactive_split = later->last_alloc_inactive_split;
}

static void merge(struct cmt_timeline_point *into, const struct cmt_timeline_point *b)
{
    if (!b->used)
        return;
    uint32_t oom = into->oom + b->oom;
    struct cmt_timeline_point last = *b; /* b is the later bucket: its last value is the last */
    struct cmt_timeline_point first = *into;
    if (!into->used || b->live_bytes > into->live_bytes)
        *into = *b;
    into->last_t_ns = last.last_t_ns;
    into->last_live_bytes = last.last_live_bytes;
    memcpy(into->last_kind_bytes, last.last_kind_bytes, sizeof into->last_kind_bytes);
    into->oom = oom;
    if (first.alloc_used || last.alloc_used)
        merge_alloc(into, &first, &last);
}

/* Halves the resolution of every device: bucket k takes buckets 2k and 2k+1. */
static void coarsen(struct cmt_timeline *tl)
{
    for (uint32_t s = 0; s < tl->device_count; s++) {
        struct cmt_timeline_device *d = &tl->devices[s];
        for (uint32_t k = 0; k < tl->max_points; k++) {
            struct cmt_timeline_point p = {0};
            if (2 * k < tl->max_points)
                merge(&p, &d->points[2 * k]);
            if (2 * k + 1 < tl->max_points)
                merge(&p, &d->points[2 * k + 1]);
            d->points[k] = p;
        }
        if (d->open >= 0)
            d->open /= 2;
    }
    tl->width *= 2;
    tl->width_shift++;
}

static void sample_holes(struct cmt_timeline *tl, struct cmt_timeline_device *d,
                         const cmt_replay *rp, const struct cmt_replay_device *rd)
{
    /* hole measures sort the live set: sample them at most once per 2 x live + 1024 events,
     * which keeps their cost a small constant per event */
    uint64_t every = 2 * (rd->allocations + rd->kind_count[CMT_KIND_MAPPING]) + 1024;
    if (d->events_since_sample < every)
        return;
    d->events_since_sample = 0;
    struct cmt_fragmentation f;
    if (cmt__frag_measure(rp, d->dev, &tl->frag, &f) != 0)
        return;
    d->last_holes.hole_bytes = f.hole_bytes;
    d->last_holes.largest_hole = f.largest_hole;
    d->last_holes.hole_fragmentation = f.hole_fragmentation;
    d->last_holes.largest_unmapped = f.largest_unmapped;
}

/* One event's effect on one device's series (oom: it failed there with out-of-memory). */
static void observe_on(struct cmt_timeline *tl, const cmt_replay *rp,
                       const struct cmt_replay_device *rd, uint64_t t_ns, int oom)
{
    struct cmt_timeline_device *d = device(tl, rd->dev);
    if (!d) {
        tl->failed = 1;
        return;
    }
    while ((t_ns >> tl->width_shift) >= tl->max_points && tl->width < (UINT64_C(1) << 62))
        coarsen(tl);
    uint64_t k64 = t_ns >> tl->width_shift;
    uint32_t k = k64 < tl->max_points ? (uint32_t)k64 : tl->max_points - 1;
    d->events_since_sample++;
    if (d->open >= 0 && (uint32_t)d->open != k && !tl->no_holes)
        sample_holes(tl, d, rp, rd); /* the previous bucket closed: measure on the way out */
    d->open = (int32_t)k;
    struct cmt_timeline_point *p = &d->points[k];
    if (oom)
        p->oom++;
    cmt__timeline_last(p, t_ns, rd);
    if (p->used && rd->live_bytes <= p->live_bytes)
        return;
    p->t_ns = t_ns;
    p->live_bytes = rd->live_bytes;
    memcpy(p->kind_bytes, rd->kind_bytes, sizeof p->kind_bytes);
    p->allocations = rd->allocations;
    p->mapped_bytes = rd->mapped_bytes;
    p->waste_bytes = rd->waste_bytes;
    p->hole_bytes = d->last_holes.hole_bytes;
    p->largest_hole = d->last_holes.largest_hole;
    p->hole_fragmentation = d->last_holes.hole_fragmentation;
    p->largest_unmapped = d->last_holes.largest_unmapped;
    p->used = 1;
}

void cmt__timeline_observe(struct cmt_timeline *tl, const cmt_replay *rp,
                           const struct cmt_replay_step *st)
{
    if (st->rec.type != CMT_REC_EVENT || tl->failed)
        return;
    const struct cmt_replay_device *rd = st->device;
    if (!rd)
        return;
    uint64_t t = st->rec.u.event.t_ns;
    /* a call recorded without a device (dev -1: a release needs no context) gets a series
     * only when something is charged to dev -1 itself; what it releases lowers its owner's */
    if (rd->dev >= 0 || rd->alloc_calls || rd->live_bytes || find_device(tl, rd->dev))
        observe_on(tl, rp, rd, t, st->oom);
    if (st->owner && st->owner != rd && !tl->failed)
        observe_on(tl, rp, st->owner, t, 0);
    for (uint32_t i = 0; st->all_devices && i < tl->device_count && !tl->failed; i++) {
        const struct cmt_replay_device *od = cmt_replay_device(rp, tl->devices[i].dev);
        if (od && od != rd && od != st->owner)
            observe_on(tl, rp, od, t, 0);
    }
}

void cmt_timeline_finish(struct cmt_timeline *tl, const cmt_replay *rp)
{
    const struct cmt_replay_totals *t = cmt_replay_totals(rp);
    for (uint32_t s = 0; s < tl->device_count; s++) {
        struct cmt_timeline_device *d = &tl->devices[s];
        const struct cmt_replay_device *rd = cmt_replay_device(rp, d->dev);
        if (!rd || !rd->peak_live_bytes)
            continue;
        uint64_t k = rd->peak_t_ns / tl->width;
        if (k >= tl->max_points)
            continue;
        struct cmt_timeline_point *p = &d->points[k];
        p->peak = 1;
        /* the process peak's hole measures are exact (replay keeps what was alive then) */
        struct cmt_fragmentation f;
        if (!tl->no_holes && t->peak_t_ns == rd->peak_t_ns &&
            p->live_bytes == rd->peak_live_bytes &&
            cmt_replay_peak_fragmentation(rp, d->dev, &f) == 0) {
            p->hole_bytes = f.hole_bytes;
            p->largest_hole = f.largest_hole;
            p->hole_fragmentation = f.hole_fragmentation;
            p->largest_unmapped = f.largest_unmapped;
        }
    }
}

void cmt_timeline_set_allocator(struct cmt_timeline *tl, const cmt_alloc *a)
{
    tl->alloc = a;
}

void cmt_timeline_set_no_holes(struct cmt_timeline *tl, int no_holes)
{
    tl->no_holes = no_holes;
}

/* An allocator event: a point of its device with the driver-level state as it is now. */
static void observe_alloc(struct cmt_timeline *tl, const cmt_replay *rp,
                          const struct cmt_alloc_event *e)
{
    if (e->dev < -1 || e->dev >= CMT_MAX_DEVICES)
        return; /* no such device (a series per ordinal would be unbounded) */
    const struct cmt_replay_device *rd = cmt_replay_device(rp, e->dev);
    if (rd)
        observe_on(tl, rp, rd, e->t_ns, 0);
    struct cmt_timeline_device *d = tl->failed ? NULL : device(tl, e->dev);
    if (!d) {
        tl->failed = 1;
        return;
    }
    while ((e->t_ns >> tl->width_shift) >= tl->max_points && tl->width < (UINT64_C(1) << 62))
        coarsen(tl);
    uint64_t k64 = e->t_ns >> tl->width_shift;
    uint32_t k = k64 < tl->max_points ? (uint32_t)k64 : tl->max_points - 1;
    struct cmt_timeline_point *p = &d->points[k];
    if (!p->used) { /* no driver-level state of this device (a converted snapshot) */
        p->used = 1;
        p->t_ns = p->last_t_ns = e->t_ns;
        d->open = (int32_t)k;
    }
    struct cmt_alloc_figures f = cmt_alloc_device_figures(tl->alloc, e->dev);
    if (!p->alloc_used) {
        p->alloc_allocated = p->alloc_reserved = p->alloc_inactive_split = 0;
        p->alloc_used = 1;
    }
    p->alloc_allocated = MAX(p->alloc_allocated, f.allocated_bytes);
    p->alloc_reserved = MAX(p->alloc_reserved, f.reserved_bytes);
    p->alloc_inactive_split = MAX(p->alloc_inactive_split, f.inactive_split_bytes);
    p->last_alloc_allocated = f.allocated_bytes;
    p->last_alloc_reserved = f.reserved_bytes;
    p->last_alloc_inactive_split = f.inactive_split_bytes;
    tl->alloc_seen = 1;
}

/* The events the replay skipped in the quiet window (inside the open bucket, at or below its
 * maximum): they count for the hole sampling, and the last of them gave the bucket its last
 * value, which is the device's state now (the runner calls this before anything changes it). */
static void end_quiet(struct cmt_observer *self, const cmt_replay *rp)
{
    struct cmt_timeline *tl = self->ctx;
    struct cmt_observe_quiet *q = &self->quiet;
    struct cmt_timeline_device *d = q->skipped ? find_device(tl, q->dev) : NULL;
    const struct cmt_replay_device *rd = d ? cmt_replay_device(rp, q->dev) : NULL;
    if (rd && d->open >= 0) {
        d->events_since_sample += q->skipped;
        cmt__timeline_last(&d->points[d->open], q->last_t, rd);
    }
    q->skipped = 0;
}

/* After each event the timeline sets the window of the event's device's open bucket: until
 * the bucket's time ends, while live bytes stay at or below its maximum, nothing but its last
 * value changes. A step that comes inside the window (another device's event, an OOM, a
 * release of another device's memory) leaves the window's device as it was, so its state is
 * its bucket's last value too. */
static unsigned timeline_step(struct cmt_observer *self, const cmt_replay *rp,
                              const struct cmt_replay_step *st)
{
    struct cmt_timeline *tl = self->ctx;
    if (st->rec.type != CMT_REC_EVENT) { /* shown only with an allocator view */
        if (st->rec.type == CMT_REC_ALLOC_EVENT && !tl->failed) {
            end_quiet(self, rp); /* the window's device is as its bucket's last value says */
            observe_alloc(tl, rp, &st->rec.u.alloc_event);
            self->quiet.until = 0;
        }
        return CMT_OBSERVE_EVENT | CMT_OBSERVE_RECORD;
    }
    end_quiet(self, rp);
    cmt_timeline_observe(tl, rp, st);
    const struct cmt_replay_device *rd = st->device;
    struct cmt_timeline_device *d = rd && !tl->failed ? find_device(tl, rd->dev) : NULL;
    self->quiet.until = 0;
    if (d && d->open >= 0) {
        uint64_t k = (uint64_t)d->open;
        self->quiet = (struct cmt_observe_quiet){.dev = d->dev,
                                                 .from = k << tl->width_shift,
                                                 .until = (k + 1) << tl->width_shift,
                                                 .live_max = d->points[k].live_bytes};
    }
    return CMT_OBSERVE_EVENT | (tl->alloc ? CMT_OBSERVE_RECORD : 0u);
}

static int timeline_finish(struct cmt_observer *self, const cmt_replay *rp)
{
    end_quiet(self, rp);
    cmt_timeline_finish(self->ctx, rp);
    return 0;
}

struct cmt_observer cmt_timeline_observer(struct cmt_timeline *tl)
{
    return (struct cmt_observer){.wants = CMT_OBSERVE_EVENT | (tl->alloc ? CMT_OBSERVE_RECORD : 0u),
                                 .step = timeline_step,
                                 .finish = timeline_finish,
                                 .ctx = tl,
                                 .quiet_end = end_quiet};
}

unsigned cmt_timeline_charted_kinds(int kinds[CMT_KIND_COUNT])
{
    unsigned n = 0;
    for (int k = 0; k < CMT_KIND_COUNT; k++)
        if (CMT_KIND_HAS(k, CHARTED))
            kinds[n++] = k;
    return n;
}
