/* site_timeline.c — memory over time stacked by call-site groups, with free/total samples
 * (see site_timeline.h). The bucketing is timeline.c's: equal buckets whose width doubles when
 * the trace outgrows them, each keeping the state at its maximum and at its end. */
#include "site_timeline.h"

#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "cmt_free.h"
#include "cmt_grow.h"
#include "cmt_search.h"
#include "sites.h"

#define KEY_SIZE 1024

/* ---- choosing the groups ---------------------------------------------- */

static int by_stack(const void *a, const void *b)
{
    const struct cmt_site_member *x = a, *y = b;
    return (x->stack > y->stack) - (x->stack < y->stack);
}

/* Adds site r as a group unless its key is one already (keys[] holds the chosen groups'). */
static int add_group(const cmt_replay *rp, struct cmt_site_groups *g, char keys[][KEY_SIZE],
                     const struct cmt_ranked_site *r)
{
    const struct cmt_replay_site *s = cmt_replay_site(rp, r->site);
    char key[KEY_SIZE];
    cmt_site_key(cmt_replay_reader(rp), s->stack, key, sizeof key);
    for (uint32_t i = 0; i < g->count; i++)
        if (strcmp(keys[i], key) == 0)
            return 0;
    memcpy(keys[g->count], key, sizeof key);
    g->stack[g->count] = s->stack;
    g->count++;
    return 1;
}

/* The groups' figures, summed over their members. */
static void group_figures(const cmt_replay *rp, struct cmt_site_groups *g)
{
    uint64_t own[CMT_SITE_GROUPS_MAX + 1] = {0}, at[CMT_SITE_GROUPS_MAX + 1] = {0};
    for (uint32_t i = 0; i < cmt_replay_site_count(rp); i++) {
        const struct cmt_replay_site *s = cmt_replay_site(rp, i);
        uint32_t k = cmt_site_groups_of(g, s->stack);
        at[k] += s->at_peak_bytes;
        own[k] = s->peak_bytes > own[k] ? s->peak_bytes : own[k]; /* the largest member's */
    }
    memcpy(g->at_peak_bytes, at, sizeof g->at_peak_bytes);
    memcpy(g->own_peak_bytes, own, sizeof g->own_peak_bytes);
}

int cmt_site_groups_choose(const cmt_replay *rp, uint32_t max, struct cmt_site_groups *g)
{
    memset(g, 0, sizeof *g);
    if (max > CMT_SITE_GROUPS_MAX)
        max = CMT_SITE_GROUPS_MAX;
    struct cmt_ranked_site at[CMT_SITE_GROUPS_MAX], own[CMT_SITE_GROUPS_MAX];
    size_t nat = cmt_sites_rank(rp, CMT_RANK_AT_PEAK, at, max);
    size_t nown = cmt_sites_rank(rp, CMT_RANK_OWN_PEAK, own, max);
    char(*keys)[KEY_SIZE] = malloc(CMT_SITE_GROUPS_MAX * sizeof *keys);
    uint32_t sites = cmt_replay_site_count(rp);
    g->members = malloc(((size_t)sites + 1) * sizeof *g->members);
    if (!keys || !g->members) {
        free(keys);
        free(g->members);
        memset(g, 0, sizeof *g);
        return CMT_ENOMEM;
    }
    /* two thirds from the peak, then the largest own peaks, then the rest of the peak's */
    size_t first = (2 * max + 2) / 3, a = 0;
    for (; a < nat && a < first && g->count < max; a++)
        add_group(rp, g, keys, &at[a]);
    for (size_t i = 0; i < nown && g->count < max; i++)
        add_group(rp, g, keys, &own[i]);
    for (; a < nat && g->count < max; a++)
        add_group(rp, g, keys, &at[a]);
    /* every site whose key is a group's is a member */
    char key[KEY_SIZE];
    for (uint32_t i = 0; i < sites; i++) {
        uint32_t stack = cmt_replay_site(rp, i)->stack;
        cmt_site_key(cmt_replay_reader(rp), stack, key, sizeof key);
        for (uint32_t k = 0; k < g->count; k++)
            if (strcmp(keys[k], key) == 0) {
                g->members[g->member_count++] = (struct cmt_site_member){stack, k};
                break;
            }
    }
    free(keys);
    qsort(g->members, g->member_count, sizeof *g->members, by_stack);
    group_figures(rp, g);
    return 0;
}

void cmt_site_groups_free(struct cmt_site_groups *g)
{
    free(g->members);
    memset(g, 0, sizeof *g);
}

uint32_t cmt_site_groups_of(const struct cmt_site_groups *g, uint32_t stack)
{
    size_t lo;
    CMT_LOWER_BOUND(lo, g->members, g->member_count, .stack, stack);
    return lo < g->member_count && g->members[lo].stack == stack ? g->members[lo].group : g->count;
}

/* ---- the series --------------------------------------------------------- */

int cmt_site_timeline_init(struct cmt_site_timeline *tl, uint32_t max_points,
                           const struct cmt_site_groups *groups)
{
    memset(tl, 0, sizeof *tl);
    tl->max_points = max_points < 2 ? 2 : max_points;
    tl->group_count = groups->count + 1;
    tl->groups = groups;
    tl->width = 1024;
    tl->width_shift = 10;
    return 0;
}

void cmt_site_timeline_free(struct cmt_site_timeline *tl)
{
    for (uint32_t i = 0; i < tl->device_count; i++) {
        struct cmt_site_timeline_device *d = &tl->devices[i];
        CMT_FREE_ALL(d->points, d->group_bytes, d->last_group_bytes, d->live);
    }
    CMT_FREE_ALL(tl->devices, tl->site_group, tl->objects);
    memset(tl, 0, sizeof *tl);
}

static uint32_t position(const struct cmt_site_timeline *tl, int32_t dev)
{
    uint32_t at;
    CMT_LOWER_BOUND(at, tl->devices, tl->device_count, .dev, dev);
    return at;
}

const struct cmt_site_timeline_device *cmt_site_timeline_device(const struct cmt_site_timeline *tl,
                                                                int32_t dev)
{
    uint32_t at = position(tl, dev);
    return at < tl->device_count && tl->devices[at].dev == dev ? &tl->devices[at] : NULL;
}

const uint64_t *cmt_site_timeline_groups(const struct cmt_site_timeline *tl,
                                         const struct cmt_site_timeline_device *d, uint32_t i,
                                         int last)
{
    return (last ? d->last_group_bytes : d->group_bytes) + (size_t)i * tl->group_count;
}

/* The series of device dev, created on first use (NULL when out of memory). */
static struct cmt_site_timeline_device *device(struct cmt_site_timeline *tl, int32_t dev)
{
    uint32_t at = position(tl, dev);
    if (at < tl->device_count && tl->devices[at].dev == dev)
        return &tl->devices[at];
    size_t values = (size_t)tl->max_points * tl->group_count;
    struct cmt_site_timeline_device d = {
        .dev = dev,
        .points = calloc(tl->max_points, sizeof *d.points),
        .group_bytes = calloc(values, sizeof *d.group_bytes),
        .last_group_bytes = calloc(values, sizeof *d.last_group_bytes),
        .live = calloc(tl->group_count, sizeof *d.live)};
    if (!d.points || !d.group_bytes || !d.last_group_bytes || !d.live ||
        CMT_GROW(tl->devices, tl->device_cap, (size_t)tl->device_count + 1, 4) != 0) {
        free(d.points);
        free(d.group_bytes);
        free(d.last_group_bytes);
        free(d.live);
        tl->failed = 1;
        return NULL;
    }
    memmove(&tl->devices[at + 1], &tl->devices[at], (tl->device_count - at) * sizeof d);
    tl->devices[at] = d;
    tl->device_count++;
    return &tl->devices[at];
}

/* Bucket k takes buckets 2k and 2k+1 (the later one's end is the end; the higher maximum
 * stays). */
static void coarsen(struct cmt_site_timeline *tl)
{
    uint32_t g = tl->group_count;
    for (uint32_t s = 0; s < tl->device_count; s++) {
        struct cmt_site_timeline_device *d = &tl->devices[s];
        for (uint32_t k = 0; k < tl->max_points; k++) {
            struct cmt_site_timeline_point p = {0};
            uint64_t *gb = d->group_bytes + (size_t)k * g,
                     *lb = d->last_group_bytes + (size_t)k * g;
            for (uint32_t half = 0; half < 2 && 2 * k + half < tl->max_points; half++) {
                uint32_t from = 2 * k + half;
                const struct cmt_site_timeline_point *b = &d->points[from];
                if (b->used) {
                    if (!p.used || b->live_bytes > p.live_bytes) {
                        p.t_ns = b->t_ns;
                        p.live_bytes = b->live_bytes;
                        memmove(gb, d->group_bytes + (size_t)from * g, g * sizeof *gb);
                    }
                    p.last_t_ns = b->last_t_ns;
                    p.last_live_bytes = b->last_live_bytes;
                    memmove(lb, d->last_group_bytes + (size_t)from * g, g * sizeof *lb);
                    p.used = 1;
                }
                if (b->sampled) {
                    if (!p.sampled || b->others_bytes > p.others_bytes)
                        p.others_bytes = b->others_bytes;
                    p.last_others_bytes = b->last_others_bytes;
                    p.total_bytes = b->total_bytes;
                    p.sampled = 1;
                }
                p.oom += b->oom;
            }
            if (!p.used) {
                memset(gb, 0, g * sizeof *gb);
                memset(lb, 0, g * sizeof *lb);
            }
            d->points[k] = p;
        }
    }
    tl->width *= 2;
    tl->width_shift++;
}

/* The bucket of time t (coarsening first when t lies beyond the last). */
static uint32_t bucket(struct cmt_site_timeline *tl, uint64_t t)
{
    while ((t >> tl->width_shift) >= tl->max_points && tl->width < (UINT64_C(1) << 62))
        coarsen(tl);
    uint64_t k = t >> tl->width_shift;
    return k < tl->max_points ? (uint32_t)k : tl->max_points - 1;
}

static void record_point(struct cmt_site_timeline *tl, struct cmt_site_timeline_device *d,
                         const struct cmt_replay_device *rd, uint64_t t, int oom)
{
    uint32_t k = bucket(tl, t), g = tl->group_count;
    struct cmt_site_timeline_point *p = &d->points[k];
    p->oom += oom ? 1 : 0;
    p->last_t_ns = t;
    p->last_live_bytes = rd->live_bytes;
    memcpy(d->last_group_bytes + (size_t)k * g, d->live, g * sizeof *d->live);
    if (p->used && rd->live_bytes <= p->live_bytes)
        return;
    p->used = 1;
    p->t_ns = t;
    p->live_bytes = rd->live_bytes;
    memcpy(d->group_bytes + (size_t)k * g, d->live, g * sizeof *d->live);
}

/* @return the group of replay site `site` (looked up once per site). */
static uint32_t group_of(struct cmt_site_timeline *tl, const cmt_replay *rp, uint32_t site)
{
    if (site < tl->site_cap && tl->site_group[site])
        return tl->site_group[site] - 1;
    uint32_t g = cmt_site_groups_of(tl->groups, cmt_replay_site(rp, site)->stack);
    size_t old = tl->site_cap;
    if (CMT_GROW(tl->site_group, tl->site_cap, (size_t)site + 1, 256) == 0) {
        memset(tl->site_group + old, 0, (tl->site_cap - old) * sizeof *tl->site_group);
        tl->site_group[site] = g + 1;
    }
    return g;
}

struct rebuild_ctx {
    struct cmt_site_timeline *tl;
    const cmt_replay *rp;
};

static void rebuild_one(void *ctx, const struct cmt_replay_object *o)
{
    struct rebuild_ctx *c = ctx;
    if (!CMT_KIND_IS_DEVICE_MEMORY(o->kind))
        return;
    struct cmt_site_timeline_device *d = device(c->tl, o->dev);
    if (!d)
        return;
    d->live[group_of(c->tl, c->rp, o->site)] += o->size;
    d->tracked += o->size;
}

/* The groups' bytes of every device from the live set. */
static void rebuild(struct cmt_site_timeline *tl, const cmt_replay *rp)
{
    for (uint32_t s = 0; s < tl->device_count; s++) {
        memset(tl->devices[s].live, 0, tl->group_count * sizeof *tl->devices[s].live);
        tl->devices[s].tracked = 0;
    }
    struct rebuild_ctx c = {tl, rp};
    cmt_replay_foreach_live(rp, rebuild_one, &c);
    tl->last_rebuild = tl->events;
    tl->rebuilds++;
}

/* Makes d's groups sum to the device's live bytes: a rebuild when one is due, else the
 * difference goes to (or comes from) "other", then the largest groups. */
static void settle(struct cmt_site_timeline *tl, const cmt_replay *rp,
                   struct cmt_site_timeline_device *d, const struct cmt_replay_device *rd)
{
    if (d->tracked == rd->live_bytes)
        return;
    if (tl->events - tl->last_rebuild > rd->allocations + 64) {
        rebuild(tl, rp);
        if (d->tracked == rd->live_bytes)
            return;
    }
    uint32_t other = tl->group_count - 1;
    if (d->tracked < rd->live_bytes) {
        d->live[other] += rd->live_bytes - d->tracked;
    } else {
        uint64_t excess = d->tracked - rd->live_bytes;
        for (uint32_t k = tl->group_count; k-- > 0 && excess;) {
            uint64_t take = d->live[k] < excess ? d->live[k] : excess;
            d->live[k] -= take;
            excess -= take;
        }
    }
    d->tracked = rd->live_bytes;
}

/* Takes bytes from group g of device d (never below zero). */
static void take(struct cmt_site_timeline_device *d, uint32_t g, uint64_t bytes)
{
    uint64_t n = d->live[g] < bytes ? d->live[g] : bytes;
    d->live[g] -= n;
    d->tracked -= n;
}

/* Keeps (bytes > 0) or forgets a live device allocation by its object id. */
static void remember(struct cmt_site_timeline *tl, uint32_t object, uint64_t bytes, int32_t dev,
                     uint32_t group)
{
    if (object == CMT_NO_OBJECT)
        return;
    size_t old = tl->object_cap;
    if (object >= old) {
        if (!bytes || CMT_GROW(tl->objects, tl->object_cap, (size_t)object + 1, 1024) != 0)
            return;
        memset(tl->objects + old, 0, (tl->object_cap - old) * sizeof *tl->objects);
    }
    tl->objects[object] = (struct cmt__site_object){bytes, dev, group};
}

/* An allocation at a live address dropped the old object (its free was never recorded). */
static void drop_replaced(struct cmt_site_timeline *tl, uint32_t object)
{
    if (object == CMT_NO_OBJECT || object >= tl->object_cap || !tl->objects[object].bytes)
        return;
    struct cmt__site_object *o = &tl->objects[object];
    uint32_t at = position(tl, o->dev);
    if (at < tl->device_count && tl->devices[at].dev == o->dev)
        take(&tl->devices[at], o->group, o->bytes);
    o->bytes = 0;
}

/* An event's change of one device's bytes, charged to the step's call site. */
static void apply_on(struct cmt_site_timeline *tl, const cmt_replay *rp,
                     const struct cmt_replay_step *st, const struct cmt_replay_device *rd,
                     int64_t delta, int oom)
{
    struct cmt_site_timeline_device *d = device(tl, rd->dev);
    if (!d)
        return;
    if (delta) {
        uint32_t g = group_of(tl, rp, st->site);
        if (delta < 0) {
            take(d, g, (uint64_t)-delta);
            remember(tl, st->object, 0, rd->dev, g);
        } else {
            d->live[g] += (uint64_t)delta;
            d->tracked += (uint64_t)delta;
            remember(tl, st->object, (uint64_t)delta, rd->dev, g);
        }
    }
    settle(tl, rp, d, rd);
    record_point(tl, d, rd, st->rec.u.event.t_ns, oom);
}

static void sample(struct cmt_site_timeline *tl, const struct cmt_replay_device *rd)
{
    if (!rd || !rd->have_sample)
        return;
    struct cmt_site_timeline_device *d = device(tl, rd->dev);
    if (!d)
        return;
    uint64_t mine = rd->live_bytes + rd->kind_bytes[CMT_KIND_POOL];
    uint64_t used = rd->total_bytes > rd->free_bytes ? rd->total_bytes - rd->free_bytes : 0;
    uint64_t others = used > mine ? used - mine : 0;
    struct cmt_site_timeline_point *p = &d->points[bucket(tl, rd->sample_t_ns)];
    if (!p->sampled || others > p->others_bytes)
        p->others_bytes = others;
    p->last_others_bytes = others;
    p->total_bytes = rd->total_bytes;
    p->sampled = 1;
}

static unsigned site_timeline_step(struct cmt_observer *self, const cmt_replay *rp,
                                   const struct cmt_replay_step *st)
{
    struct cmt_site_timeline *tl = self->ctx;
    if (tl->failed)
        return 0;
    if (st->rec.type == CMT_REC_DEVICE || st->rec.type == CMT_REC_MEMINFO) {
        sample(tl, cmt_replay_device(rp, st->rec.type == CMT_REC_DEVICE ? st->rec.u.device.dev
                                                                        : st->rec.u.meminfo.dev));
        return CMT_OBSERVE_ALL;
    }
    const struct cmt_replay_device *rd = st->device;
    if (st->rec.type != CMT_REC_EVENT || !rd)
        return CMT_OBSERVE_ALL;
    tl->events++;
    drop_replaced(tl, st->replaced);
    const struct cmt_replay_device *changed = st->owner ? st->owner : rd;
    /* a call without a device (dev -1) gets a series only when dev -1 holds memory itself */
    if (rd->dev >= 0 || rd->alloc_calls || rd->live_bytes || cmt_site_timeline_device(tl, rd->dev))
        apply_on(tl, rp, st, rd, changed == rd ? st->delta : 0, st->oom);
    if (changed != rd)
        apply_on(tl, rp, st, changed, st->delta, 0);
    if (cmt_op_attrs((uint32_t)st->op) & CMT_OPA_SAMPLE)
        sample(tl, rd);
    return CMT_OBSERVE_ALL;
}

static int site_timeline_finish(struct cmt_observer *self, const cmt_replay *rp)
{
    (void)rp;
    struct cmt_site_timeline *tl = self->ctx;
    return tl->failed ? CMT_ENOMEM : 0;
}

struct cmt_observer cmt_site_timeline_observer(struct cmt_site_timeline *tl)
{
    return (struct cmt_observer){.wants = CMT_OBSERVE_ALL,
                                 .step = site_timeline_step,
                                 .finish = site_timeline_finish,
                                 .ctx = tl};
}
