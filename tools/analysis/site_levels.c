/* site_levels.c — finer levels of a stacked series in windows around chosen moments (see
 * site_levels.h). */
#include "site_levels.h"

#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "cmt_free.h"

#define LEVEL_STEP 4 /* log2 of the factor between neighbouring levels' buckets */

/* The series' bucket shift once it has seen time end_t (site_timeline.c's doubling). */
static unsigned coarse_shift(uint64_t end_t, uint32_t max_points)
{
    unsigned shift = 10;
    while ((end_t >> shift) >= max_points && shift < 62)
        shift++;
    return shift;
}

/* @return whether time t of device dev lies inside an earlier window's finest level. */
static int covered(const struct cmt_site_levels *lv, int32_t dev, uint64_t t)
{
    for (uint32_t i = 0; i < lv->count; i++) {
        const struct cmt_site_level *l = &lv->levels[i];
        int finest = i + 1 == lv->count || lv->levels[i + 1].window != l->window;
        if (finest && l->dev == dev && t >= l->t_lo && t < l->t_hi)
            return 1;
    }
    return 0;
}

static int add_level(struct cmt_site_levels *lv, uint32_t window, int32_t dev, uint64_t t,
                     unsigned shift, uint32_t points)
{
    struct cmt_site_level *l = &lv->levels[lv->count];
    uint64_t width = UINT64_C(1) << shift, span = width * points;
    uint64_t lo = t > span / 2 ? ((t - span / 2) >> shift) << shift : 0;
    size_t values = (size_t)points * lv->group_count;
    *l = (struct cmt_site_level){.dev = dev,
                                 .window = window,
                                 .t_lo = lo,
                                 .t_hi = lo + span,
                                 .width = width,
                                 .width_shift = shift,
                                 .points = points,
                                 .p = calloc(points, sizeof *l->p),
                                 .group_bytes = calloc(values, sizeof *l->group_bytes),
                                 .last_group_bytes = calloc(values, sizeof *l->last_group_bytes),
                                 .entry_groups = calloc(lv->group_count, sizeof *l->entry_groups)};
    lv->count++; /* freed with the rest, even half made */
    if (!l->p || !l->group_bytes || !l->last_group_bytes || !l->entry_groups)
        return CMT_ENOMEM;
    for (uint32_t i = 0; i < lv->prev_count; i++)
        if (lv->prev[i].dev == dev)
            return 0;
    struct cmt__site_levels_prev *v = &lv->prev[lv->prev_count++];
    *v = (struct cmt__site_levels_prev){dev, 0, calloc(lv->group_count, sizeof *v->groups)};
    return v->groups ? 0 : CMT_ENOMEM;
}

int cmt_site_levels_init(struct cmt_site_levels *lv, const struct cmt_site_timeline *series,
                         const uint64_t *centre_t_ns, const int32_t *centre_dev, size_t centres,
                         uint64_t end_t_ns, uint32_t points)
{
    memset(lv, 0, sizeof *lv);
    lv->series = series;
    lv->group_count = series->group_count;
    points = points < 2 ? 2 : points;
    unsigned top = coarse_shift(end_t_ns, series->max_points);
    for (size_t c = 0; c < centres; c++) {
        if (covered(lv, centre_dev[c], centre_t_ns[c]))
            continue;
        for (unsigned shift = top; shift > 0 && lv->count < CMT_SITE_LEVELS_MAX;) {
            shift = shift > LEVEL_STEP ? shift - LEVEL_STEP : 0;
            if (add_level(lv, (uint32_t)c, centre_dev[c], centre_t_ns[c], shift, points) != 0) {
                lv->failed = 1;
                return CMT_ENOMEM;
            }
        }
    }
    return 0;
}

void cmt_site_levels_free(struct cmt_site_levels *lv)
{
    for (uint32_t i = 0; i < lv->count; i++) {
        struct cmt_site_level *l = &lv->levels[i];
        CMT_FREE_ALL(l->p, l->group_bytes, l->last_group_bytes, l->entry_groups);
    }
    for (uint32_t i = 0; i < lv->prev_count; i++)
        free(lv->prev[i].groups);
    memset(lv, 0, sizeof *lv);
}

const uint64_t *cmt_site_level_groups(const struct cmt_site_levels *lv,
                                      const struct cmt_site_level *l, uint32_t i, int last)
{
    return (last ? l->last_group_bytes : l->group_bytes) + (size_t)i * lv->group_count;
}

/* One event's state of level l (prev: the device's state before it): the first at or after
 * the span's start takes prev as the entry state; inside the span it is the bucket's end and,
 * when higher, its maximum. */
static void record(const struct cmt_site_levels *lv, struct cmt_site_level *l,
                   const struct cmt__site_levels_prev *prev, uint64_t t, uint64_t live,
                   const uint64_t *groups, int oom)
{
    size_t g = lv->group_count;
    if (t < l->t_lo)
        return;
    if (!l->entered) { /* also when this event lies past the span: then the span held none */
        l->entered = 1;
        l->entry_live_bytes = prev->live_bytes;
        memcpy(l->entry_groups, prev->groups, g * sizeof *groups);
    }
    if (t >= l->t_hi)
        return;
    uint32_t k = (uint32_t)((t - l->t_lo) >> l->width_shift);
    struct cmt_site_timeline_point *p = &l->p[k];
    p->oom += oom ? 1 : 0;
    p->last_t_ns = t;
    p->last_live_bytes = live;
    memcpy(l->last_group_bytes + k * g, groups, g * sizeof *groups);
    if (p->used && live <= p->live_bytes)
        return;
    p->used = 1;
    p->t_ns = t;
    p->live_bytes = live;
    memcpy(l->group_bytes + k * g, groups, g * sizeof *groups);
}

static void device_changed(struct cmt_site_levels *lv, const struct cmt_replay_device *rd,
                           uint64_t t, int oom)
{
    const struct cmt_site_timeline_device *d = cmt_site_timeline_device(lv->series, rd->dev);
    if (!d)
        return;
    struct cmt__site_levels_prev *prev = NULL;
    for (uint32_t i = 0; i < lv->prev_count && !prev; i++)
        if (lv->prev[i].dev == rd->dev)
            prev = &lv->prev[i];
    if (!prev)
        return; /* no level of this device */
    for (uint32_t i = 0; i < lv->count; i++)
        if (lv->levels[i].dev == rd->dev)
            record(lv, &lv->levels[i], prev, t, rd->live_bytes, d->live, oom);
    prev->live_bytes = rd->live_bytes;
    memcpy(prev->groups, d->live, lv->group_count * sizeof *d->live);
}

static unsigned site_levels_step(struct cmt_observer *self, const cmt_replay *rp,
                                 const struct cmt_replay_step *st)
{
    (void)rp;
    struct cmt_site_levels *lv = self->ctx;
    if (lv->failed || st->rec.type != CMT_REC_EVENT || !st->device)
        return CMT_OBSERVE_ALL;
    uint64_t t = st->rec.u.event.t_ns;
    device_changed(lv, st->device, t, st->oom);
    if (st->owner && st->owner != st->device)
        device_changed(lv, st->owner, t, 0);
    return CMT_OBSERVE_ALL;
}

struct cmt_observer cmt_site_levels_observer(struct cmt_site_levels *lv)
{
    return (struct cmt_observer){.wants = CMT_OBSERVE_ALL, .step = site_levels_step, .ctx = lv};
}
