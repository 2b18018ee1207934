/* timeline.c — bucketed memory-over-time with exact peaks (see timeline.h). */
#include "timeline.h"

#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"

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
    memset(tl, 0, sizeof *tl);
}

static struct cmt_timeline_device *add_devices(struct cmt_timeline *tl, uint32_t slot)
{
    if (slot >= tl->device_count) {
        struct cmt_timeline_device *d = realloc(tl->devices, (slot + 1) * sizeof *d);
        if (!d)
            return NULL;
        for (uint32_t i = tl->device_count; i <= slot; i++) {
            d[i] = (struct cmt_timeline_device){.dev = (int32_t)i - 1, .open = -1};
            d[i].points = calloc(tl->max_points, sizeof *d[i].points);
            if (!d[i].points) {
                tl->devices = d;
                tl->device_count = i;
                return NULL;
            }
        }
        tl->devices = d;
        tl->device_count = slot + 1;
    }
    return &tl->devices[slot];
}

static inline struct cmt_timeline_device *device(struct cmt_timeline *tl, uint32_t slot)
{
    if (__builtin_expect(slot < tl->device_count, 1))
        return &tl->devices[slot];
    return add_devices(tl, slot);
}

static void merge(struct cmt_timeline_point *into, const struct cmt_timeline_point *b)
{
    uint32_t oom = into->oom + b->oom;
    if (b->used && (!into->used || b->live_bytes > into->live_bytes))
        *into = *b;
    into->oom = oom;
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

static void sample_holes(struct cmt_timeline_device *d, const cmt_replay *rp,
                         const struct cmt_replay_device *rd)
{
    /* hole measures sort the live set: sample them at most once per 2 x live + 1024 events,
     * which keeps their cost a small constant per event */
    uint64_t every = 2 * (rd->allocations + rd->kind_count[CMT_KIND_MAPPING]) + 1024;
    if (d->events_since_sample < every)
        return;
    d->events_since_sample = 0;
    struct cmt_fragmentation f;
    if (cmt_replay_fragmentation(rp, d->dev, &f) != 0)
        return;
    d->last_holes.hole_bytes = f.hole_bytes;
    d->last_holes.largest_hole = f.largest_hole;
    d->last_holes.hole_fragmentation = f.hole_fragmentation;
    d->last_holes.largest_unmapped = f.largest_unmapped;
}

void cmt__timeline_observe(struct cmt_timeline *tl, const cmt_replay *rp,
                           const struct cmt_replay_step *st)
{
    if (st->rec.type != CMT_REC_EVENT || tl->failed)
        return;
    const struct cmt_event *e = &st->rec.u.event;
    const struct cmt_replay_device *rd = st->device;
    if (!rd)
        return;
    struct cmt_timeline_device *d = device(tl, (uint32_t)(rd->dev + 1));
    if (!d) {
        tl->failed = 1;
        return;
    }
    while ((e->t_ns >> tl->width_shift) >= tl->max_points && tl->width < (UINT64_C(1) << 62))
        coarsen(tl);
    uint64_t k64 = e->t_ns >> tl->width_shift;
    uint32_t k = k64 < tl->max_points ? (uint32_t)k64 : tl->max_points - 1;
    d->events_since_sample++;
    if (d->open >= 0 && (uint32_t)d->open != k)
        sample_holes(d, rp, rd); /* the previous bucket closed: measure on the way out */
    d->open = (int32_t)k;
    struct cmt_timeline_point *p = &d->points[k];
    if (st->oom)
        p->oom++;
    if (p->used && rd->live_bytes <= p->live_bytes)
        return;
    uint32_t oom = p->oom;
    p->t_ns = e->t_ns;
    p->live_bytes = rd->live_bytes;
    memcpy(p->kind_bytes, rd->kind_bytes, sizeof p->kind_bytes);
    p->allocations = rd->allocations;
    p->mapped_bytes = rd->mapped_bytes;
    p->waste_bytes = rd->waste_bytes;
    p->hole_bytes = d->last_holes.hole_bytes;
    p->largest_hole = d->last_holes.largest_hole;
    p->hole_fragmentation = d->last_holes.hole_fragmentation;
    p->largest_unmapped = d->last_holes.largest_unmapped;
    p->oom = oom;
    p->used = 1;
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
        if (t->peak_t_ns == rd->peak_t_ns && p->live_bytes == rd->peak_live_bytes &&
            cmt_replay_peak_fragmentation(rp, d->dev, &f) == 0) {
            p->hole_bytes = f.hole_bytes;
            p->largest_hole = f.largest_hole;
            p->hole_fragmentation = f.hole_fragmentation;
            p->largest_unmapped = f.largest_unmapped;
        }
    }
}

/* The events still to come that cannot change the device's open bucket (inside it in time,
 * at or below its maximum, no OOM) only count for the hole sampling: the replay skips them
 * (the quiet window) and the count comes back here. */
static void take_skipped(struct cmt_timeline *tl, struct cmt_observe_quiet *q)
{
    uint32_t slot = (uint32_t)q->dev + 1;
    if (q->skipped && slot < tl->device_count)
        tl->devices[slot].events_since_sample += q->skipped;
    q->skipped = 0;
}

static unsigned timeline_step(struct cmt_observer *self, const cmt_replay *rp,
                              const struct cmt_replay_step *st)
{
    struct cmt_timeline *tl = self->ctx;
    take_skipped(tl, &self->quiet);
    cmt_timeline_observe(tl, rp, st);
    const struct cmt_replay_device *rd = st->device;
    uint32_t slot = rd ? (uint32_t)rd->dev + 1 : UINT32_MAX;
    self->quiet.until = 0;
    if (slot < tl->device_count && !tl->failed && tl->devices[slot].open >= 0) {
        const struct cmt_timeline_device *d = &tl->devices[slot];
        uint64_t k = (uint64_t)d->open;
        self->quiet = (struct cmt_observe_quiet){.dev = rd->dev,
                                                 .from = k << tl->width_shift,
                                                 .until = (k + 1) << tl->width_shift,
                                                 .live_max = d->points[k].live_bytes};
    }
    return CMT_OBSERVE_EVENT;
}

static int timeline_finish(struct cmt_observer *self, const cmt_replay *rp)
{
    take_skipped(self->ctx, &self->quiet);
    cmt_timeline_finish(self->ctx, rp);
    return 0;
}

struct cmt_observer cmt_timeline_observer(struct cmt_timeline *tl)
{
    return (struct cmt_observer){
        .wants = CMT_OBSERVE_EVENT, .step = timeline_step, .finish = timeline_finish, .ctx = tl};
}

unsigned cmt_timeline_charted_kinds(int kinds[CMT_KIND_COUNT])
{
    unsigned n = 0;
    for (int k = 0; k < CMT_KIND_COUNT; k++)
        if (CMT_KIND_HAS(k, CHARTED))
            kinds[n++] = k;
    return n;
}
