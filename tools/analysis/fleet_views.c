/* fleet_views.c — the job's figures from the processes' summaries (fleet.h): ranks, GPUs,
 * the first failure, the imbalance, the common time grid, pairing two runs, and what other
 * processes held at an out-of-memory failure (an exact second replay). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "cmt_grow.h"
#include "cmt_search.h"
#include "fleet_internal.h"

/* The id of ordinal dev in CUDA_VISIBLE_DEVICES ("2,3" → dev 1 is "2"), or the ordinal. */
static void gpu_id(const char *visible, int32_t dev, char *out, size_t size)
{
    snprintf(out, size, "%d", (int)dev);
    if (!visible || !*visible)
        return;
    const char *s = visible;
    for (int32_t i = 0; i < dev && s; i++)
        if ((s = strchr(s, ',')))
            s++;
    if (!s || !*s || *s == ',')
        return;
    size_t len = strcspn(s, ",");
    snprintf(out, size, "%.*s", (int)(len < 64 ? len : 64), s);
}

static int name_gpus(struct cmt_fleet_process *p)
{
    for (uint32_t d = 0; d < p->device_count; d++) {
        struct cmt_fleet_device *fd = &p->devices[d];
        if (fd->dev < 0)
            continue;
        char id[80];
        gpu_id(p->visible_devices, fd->dev, id, sizeof id);
        const char *host = p->host ? p->host : "?";
        if (!(fd->gpu = malloc(strlen(host) + strlen(id) + 2)))
            return CMT_ENOMEM;
        sprintf(fd->gpu, "%s/%s", host, id);
    }
    return 0;
}

struct member {
    const char *key;
    uint32_t process, device;
};

static int by_key(const void *a, const void *b)
{
    const struct member *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : x->process < y->process ? -1 : x->process > y->process;
}

static int group_gpus(struct cmt_fleet *f)
{
    struct member *m = NULL;
    size_t n = 0, cap = 0;
    for (uint32_t p = 0; p < f->count; p++)
        for (uint32_t d = 0; d < f->processes[p].device_count; d++) {
            if (!f->processes[p].devices[d].gpu)
                continue;
            if (CMT_GROW(m, cap, n + 1, 64)) {
                free(m);
                return CMT_ENOMEM;
            }
            m[n++] = (struct member){f->processes[p].devices[d].gpu, p, d};
        }
    qsort(m, n, sizeof *m, by_key);
    f->gpus = calloc(n ? n : 1, sizeof *f->gpus);
    int rc = f->gpus ? 0 : CMT_ENOMEM;
    for (size_t i = 0; !rc && i < n;) {
        size_t j = i;
        while (j < n && !strcmp(m[j].key, m[i].key))
            j++;
        struct cmt_fleet_gpu *g = &f->gpus[f->gpu_count++];
        const struct cmt_fleet_process *first = &f->processes[m[i].process];
        g->key = strdup(m[i].key);
        g->members = malloc((j - i) * sizeof *g->members);
        if (!g->key || !g->members) {
            rc = CMT_ENOMEM;
            break;
        }
        g->host = first->host;
        g->name = first->devices[m[i].device].name;
        for (size_t k = i; k < j; k++) {
            const struct cmt_fleet_device *fd = &f->processes[m[k].process].devices[m[k].device];
            g->members[g->member_count++] = m[k].process;
            g->sum_of_peaks_bytes += fd->peak_live_bytes;
            g->oom_failures += fd->oom_failures;
            if (fd->total_bytes > g->total_bytes)
                g->total_bytes = fd->total_bytes;
        }
        i = j;
    }
    free(m);
    return rc;
}

static int group_ranks(struct cmt_fleet *f)
{
    f->ranks = calloc(f->count ? f->count : 1, sizeof *f->ranks);
    if (!f->ranks)
        return CMT_ENOMEM;
    for (uint32_t p = 0; p < f->count; p++) { /* sorted by rank, unknown last */
        const struct cmt_fleet_process *pr = &f->processes[p];
        if (pr->rank < 0 || pr->error)
            continue;
        struct cmt_fleet_rank *r = f->rank_count ? &f->ranks[f->rank_count - 1] : NULL;
        if (!r || r->rank != pr->rank) {
            r = &f->ranks[f->rank_count++];
            *r = (struct cmt_fleet_rank){.rank = pr->rank, .process = p};
            r->peak_live_bytes = pr->peak_live_bytes;
        } else if (pr->peak_live_bytes > r->peak_live_bytes) {
            r->peak_live_bytes = pr->peak_live_bytes;
            r->process = p;
        }
        r->process_count++;
    }
    return 0;
}

static int imbalance(struct cmt_fleet *f)
{
    uint64_t *v = malloc((f->count ? f->count : 1) * sizeof *v);
    size_t n = 0;
    if (!v)
        return CMT_ENOMEM;
    if (f->rank_count)
        for (uint32_t r = 0; r < f->rank_count; r++)
            v[n++] = f->ranks[r].peak_live_bytes;
    else
        for (uint32_t p = 0; p < f->count; p++)
            if (!f->processes[p].error)
                v[n++] = f->processes[p].peak_live_bytes;
    if (n) {
        qsort(v, n, sizeof *v, cmt_u64_ascending);
        f->peak_max_bytes = v[n - 1];
        f->peak_median_bytes = n % 2 ? v[n / 2]
                                     : v[n / 2 - 1] / 2 + v[n / 2] / 2 +
                                           (v[n / 2 - 1] % 2 + v[n / 2] % 2) / 2;
        f->imbalance = f->peak_median_bytes ? (double)f->peak_max_bytes / f->peak_median_bytes : 0;
    }
    free(v);
    return 0;
}

/* a + b, or UINT64_MAX when that overflows (a trace's times are untrusted) */
static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void first_failure_and_span(struct cmt_fleet *f)
{
    int any = 0;
    struct cmt_first_failure first;
    cmt_first_failure_init(&first);
    for (uint32_t p = 0; p < f->count; p++) {
        const struct cmt_fleet_process *pr = &f->processes[p];
        if (pr->error || !pr->have_process)
            continue;
        uint64_t end = add_sat(pr->start_wall_ns, pr->duration_ns);
        if (!any || pr->start_wall_ns < f->start_wall_ns)
            f->start_wall_ns = pr->start_wall_ns;
        if (!any || end > f->end_wall_ns)
            f->end_wall_ns = end;
        any = 1;
        struct cmt_failure_candidate c = {.have_start = 1,
                                          .start_wall_ns = pr->start_wall_ns,
                                          .rank = pr->rank,
                                          .pid = pr->pid,
                                          .failure = pr->failure,
                                          .t_ns = pr->failure_t_ns};
        cmt_first_failure_offer(&first, p, &c);
    }
    f->first_failure = first.index;
    f->first_failure_wall_ns = first.wall_ns;
}

/* The most process p held at once in [from, until) of the grid's clock, from its series. */
static void spread(const struct cmt_fleet_process *p, uint64_t origin, uint64_t width,
                   uint32_t count, uint64_t *row)
{
    if (!p->series_count || !p->series_width || p->start_wall_ns < origin)
        return;
    uint64_t s = p->start_wall_ns - origin, carry = 0;
    uint64_t life_end = add_sat(add_sat(s, p->duration_ns), 1);
    for (uint32_t k = 0; k < p->series_count; k++) {
        const struct cmt_timeline_point *pt = &p->series[k];
        uint64_t a = s + k * p->series_width, e = a + p->series_width;
        if (a >= life_end)
            break;
        uint64_t v = pt->used && pt->live_bytes > carry ? pt->live_bytes : carry;
        if (k + 1 == p->series_count || e > life_end)
            e = life_end; /* the last bucket lasts to the end of its life */
        for (uint64_t b = a / width; b < count && b * width < e; b++)
            if (v > row[b])
                row[b] = v;
        if (pt->used)
            carry = pt->last_live_bytes;
    }
}

int cmt_fleet_grid(const struct cmt_fleet *fleet, uint32_t count, uint64_t **values,
                   uint64_t *width_ns)
{
    if (!count)
        return CMT_EINVALID;
    uint64_t span = fleet->end_wall_ns - fleet->start_wall_ns;
    uint64_t width = span / count + 1; /* at least 1 ns, and the grid covers the end */
    uint64_t *v = calloc((size_t)count * (fleet->count ? fleet->count : 1), sizeof *v);
    if (!v)
        return CMT_ENOMEM;
    for (uint32_t p = 0; p < fleet->count; p++)
        spread(&fleet->processes[p], fleet->start_wall_ns, width, count, v + (size_t)p * count);
    *values = v;
    *width_ns = width;
    return 0;
}

#define COMBINED_BUCKETS 1024

/* Each GPU's combined peak: the members' timelines where it is their busiest device, their
 * peak on it over their whole life where it is not. */
static int combined_peaks(struct cmt_fleet *f)
{
    uint64_t *v, width;
    int rc = cmt_fleet_grid(f, COMBINED_BUCKETS, &v, &width);
    uint64_t *sum = calloc(COMBINED_BUCKETS, sizeof *sum);
    if (rc || !sum) {
        free(sum);
        if (!rc)
            free(v);
        return CMT_ENOMEM;
    }
    for (uint32_t g = 0; g < f->gpu_count; g++) {
        struct cmt_fleet_gpu *gpu = &f->gpus[g];
        memset(sum, 0, COMBINED_BUCKETS * sizeof *sum);
        for (uint32_t m = 0; m < gpu->member_count; m++) {
            uint32_t p = gpu->members[m];
            const struct cmt_fleet_process *pr = &f->processes[p];
            const struct cmt_fleet_gpu *busiest = cmt_fleet_gpu_of(f, p, pr->busiest_dev);
            uint64_t peak_here = 0;
            for (uint32_t d = 0; d < pr->device_count; d++)
                if (pr->devices[d].gpu && !strcmp(pr->devices[d].gpu, gpu->key))
                    peak_here += pr->devices[d].peak_live_bytes;
            uint64_t s = (pr->start_wall_ns - f->start_wall_ns) / width;
            uint64_t e = (pr->start_wall_ns + pr->duration_ns - f->start_wall_ns) / width;
            for (uint64_t b = s; b <= e && b < COMBINED_BUCKETS; b++)
                sum[b] += busiest == gpu && pr->series_count ? v[(size_t)p * COMBINED_BUCKETS + b]
                                                             : peak_here;
        }
        for (uint32_t b = 0; b < COMBINED_BUCKETS; b++)
            if (sum[b] > gpu->combined_peak_bytes)
                gpu->combined_peak_bytes = sum[b];
        if (gpu->combined_peak_bytes > gpu->sum_of_peaks_bytes) /* never above that bound */
            gpu->combined_peak_bytes = gpu->sum_of_peaks_bytes;
    }
    free(sum);
    free(v);
    return 0;
}

int cmt__fleet_derive(struct cmt_fleet *f)
{
    for (uint32_t p = 0; p < f->count; p++)
        if (name_gpus(&f->processes[p]))
            return CMT_ENOMEM;
    first_failure_and_span(f);
    int rc = group_ranks(f);
    if (!rc)
        rc = group_gpus(f);
    if (!rc)
        rc = imbalance(f);
    if (!rc)
        rc = combined_peaks(f);
    return rc;
}

int64_t cmt_fleet_find_rank(const struct cmt_fleet *fleet, int32_t rank)
{
    for (uint32_t r = 0; r < fleet->rank_count; r++)
        if (fleet->ranks[r].rank == rank)
            return fleet->ranks[r].process;
    return -1;
}

const struct cmt_fleet_gpu *cmt_fleet_gpu_of(const struct cmt_fleet *fleet, uint32_t p, int32_t dev)
{
    const struct cmt_fleet_process *pr = &fleet->processes[p];
    for (uint32_t d = 0; d < pr->device_count; d++) {
        if (pr->devices[d].dev != dev || !pr->devices[d].gpu)
            continue;
        for (uint32_t g = 0; g < fleet->gpu_count; g++)
            if (!strcmp(fleet->gpus[g].key, pr->devices[d].gpu))
                return &fleet->gpus[g];
    }
    return NULL;
}

/* ---- held by others: a second, exact replay up to the moment ---- */

/* One question to a process's trace: what it held on dev just after its last event at or
 * before trace time t, for episode `episode` of process `process` (the answer: held). */
struct held_query {
    uint64_t t;
    int32_t dev;
    uint32_t process, episode;
    uint64_t held;
};

static int by_query_time(const void *a, const void *b)
{
    const struct held_query *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

/* The device's memory now: live device memory and what its pools retained. */
static uint64_t held_now(const cmt_replay *rp, int32_t dev)
{
    const struct cmt_replay_device *d = cmt_replay_device(rp, dev);
    return d ? d->live_bytes + d->kind_bytes[CMT_KIND_POOL] : 0;
}

/* The queries qs[k .. n) (ascending t) to one replay, answered at their moments: before the
 * first event after t (the state after the last at or before it), the rest at the end (after
 * its last event, or what came before damage). */
struct held_ask {
    struct held_query *qs;
    size_t k, n;
    int stop; /* the replay is this one's alone: it stops reading once all are answered */
};

/* Answers the queries at or before t with the replay's state now. */
static void answer_to(struct held_ask *a, const cmt_replay *rp, uint64_t t)
{
    for (; a->k < a->n && a->qs[a->k].t <= t; a->k++)
        a->qs[a->k].held = held_now(rp, a->qs[a->k].dev);
}

static void held_before(struct cmt_observer *o, const cmt_replay *rp)
{
    struct held_ask *a = o->ctx;
    answer_to(a, rp, o->before_t);
    o->before_t = a->k < a->n ? a->qs[a->k].t : UINT64_MAX;
    if (a->k == a->n && a->stop)
        cmt_reader_stop(cmt_replay_reader(rp));
}

static int held_finish(struct cmt_observer *o, const cmt_replay *rp)
{
    answer_to(o->ctx, rp, UINT64_MAX);
    return 0;
}

/* From the first query (a replay that failed may have answered some). */
static struct cmt_observer held_observer(struct held_ask *a)
{
    a->k = 0;
    return (struct cmt_observer){
        .finish = held_finish, .ctx = a, .before_t = a->qs[0].t, .before = held_before};
}

/* Answers a's queries to process q's trace in a replay of its own. @return 0 (damage: what
 * came before it); CMT_EIO; CMT_ENOMEM. */
static int held_at(const struct cmt_fleet_process *q, struct held_ask *a)
{
    cmt_reader *r;
    cmt_replay *rp;
    int rc = cmt_reader_open_file(&r, q->path, NULL);
    if (rc)
        return rc == CMT_ENOMEM ? rc : CMT_EIO;
    a->stop = 1;
    if (!(rc = cmt_replay_create(&rp, r))) {
        struct cmt_observer o = held_observer(a);
        rc = cmt_replay_run(rp, &o, 1);
        cmt_replay_destroy(rp);
    }
    cmt_reader_close(r);
    return rc == CMT_ENOMEM ? rc : 0;
}

static int by_held(const void *a, const void *b)
{
    const struct cmt_fleet_holder *x = a, *y = b;
    return x->held_bytes > y->held_bytes ? -1 : x->held_bytes < y->held_bytes;
}

/* The questions to process q about the other processes' episodes (one per episode on a GPU
 * q shares and at whose moment q was alive) into qs. @return their number. */
static size_t queries_to(const struct cmt_fleet *fleet, uint32_t q, struct held_query *qs)
{
    const struct cmt_fleet_process *qp = &fleet->processes[q];
    size_t n = 0;
    for (uint32_t p = 0; p < fleet->count; p++)
        for (uint32_t e = 0; p != q && e < fleet->processes[p].episode_count; e++) {
            const struct cmt_fleet_episode *ep = &fleet->processes[p].episodes[e];
            const struct cmt_fleet_gpu *gpu = cmt_fleet_gpu_of(fleet, p, ep->e.dev);
            int member = 0;
            for (uint32_t m = 0; gpu && m < gpu->member_count; m++)
                member |= gpu->members[m] == q;
            if (!member || qp->start_mono_ns > ep->mono_ns)
                continue; /* not on that GPU, or not started yet (one host: one monotonic clock) */
            uint64_t t = ep->mono_ns - qp->start_mono_ns;
            if (t > qp->duration_ns && (qp->clean_exit || qp->signaled))
                continue; /* it had exited */
            int32_t dev = -1;
            for (uint32_t d = 0; d < qp->device_count; d++)
                if (qp->devices[d].gpu && !strcmp(qp->devices[d].gpu, gpu->key))
                    dev = qp->devices[d].dev;
            qs[n++] = (struct held_query){t, dev, p, e, 0};
        }
    return n;
}

void cmt_fleet_holders_free(const struct cmt_fleet *fleet, struct cmt_fleet_holders **h)
{
    for (uint32_t p = 0; h && p < fleet->count; p++) {
        for (uint32_t e = 0; h[p] && e < fleet->processes[p].episode_count; e++)
            free(h[p][e].list);
        free(h[p]);
    }
    free(h);
}

int cmt_fleet_held_by_others(const struct cmt_fleet *fleet, struct cmt_fleet_holders ***out)
{
    return cmt_fleet_held_by_others_in(fleet, out, NULL, NULL);
}

int cmt_fleet_held_by_others_in(const struct cmt_fleet *fleet, struct cmt_fleet_holders ***out,
                                cmt_fleet_replay_fn replay, void *ctx)
{
    size_t episodes = 0;
    for (uint32_t p = 0; p < fleet->count; p++)
        episodes += fleet->processes[p].episode_count;
    struct cmt_fleet_holders **h = calloc(fleet->count ? fleet->count : 1, sizeof *h);
    struct held_query *qs = malloc((episodes ? episodes : 1) * sizeof *qs);
    int rc = h && qs ? 0 : CMT_ENOMEM;
    for (uint32_t p = 0; !rc && p < fleet->count; p++) { /* room for every member of each GPU */
        const struct cmt_fleet_process *pr = &fleet->processes[p];
        if (!(h[p] = calloc(pr->episode_count ? pr->episode_count : 1, sizeof *h[p])))
            rc = CMT_ENOMEM;
        for (uint32_t e = 0; !rc && e < pr->episode_count; e++) {
            const struct cmt_fleet_gpu *gpu = cmt_fleet_gpu_of(fleet, p, pr->episodes[e].e.dev);
            if (gpu && !(h[p][e].list = calloc(gpu->member_count, sizeof *h[p][e].list)))
                rc = CMT_ENOMEM;
        }
    }
    for (uint32_t q = 0; !rc && q < fleet->count; q++) { /* one replay per process at most */
        struct held_ask a = {qs, 0, queries_to(fleet, q, qs), 0};
        qsort(qs, a.n, sizeof *qs, by_query_time);
        struct cmt_observer o = a.n ? held_observer(&a) : (struct cmt_observer){0};
        int done = replay ? replay(ctx, q, a.n ? &o : NULL) : 0;
        if (done < 0)
            rc = done;
        else if (!done && a.n)
            rc = held_at(&fleet->processes[q], &a);
        for (size_t k = 0; !rc && k < a.n; k++) {
            struct cmt_fleet_holders *to = &h[qs[k].process][qs[k].episode];
            if (qs[k].held)
                to->list[to->count++] = (struct cmt_fleet_holder){q, qs[k].dev, qs[k].held};
        }
    }
    free(qs);
    if (rc) {
        cmt_fleet_holders_free(fleet, h);
        *out = NULL;
        return rc;
    }
    for (uint32_t p = 0; p < fleet->count; p++)
        for (uint32_t e = 0; e < fleet->processes[p].episode_count; e++)
            if (h[p][e].count)
                qsort(h[p][e].list, h[p][e].count, sizeof *h[p][e].list, by_held);
    *out = h;
    return 0;
}

/* ---- two runs ---- */

int cmt_fleet_pair(const struct cmt_fleet *a, const struct cmt_fleet *b, int64_t **pairs,
                   size_t *count)
{
    size_t cap = (size_t)a->count + b->count, n = 0;
    int64_t *v = malloc((cap ? cap : 1) * 2 * sizeof *v);
    if (!v)
        return CMT_ENOMEM;
    if (a->rank_count && b->rank_count) { /* both sorted by rank */
        uint32_t i = 0, j = 0;
        while (i < a->rank_count || j < b->rank_count) {
            int32_t ra = i < a->rank_count ? a->ranks[i].rank : INT32_MAX;
            int32_t rb = j < b->rank_count ? b->ranks[j].rank : INT32_MAX;
            v[2 * n] = ra <= rb ? (int64_t)a->ranks[i].process : -1;
            v[2 * n + 1] = rb <= ra ? (int64_t)b->ranks[j].process : -1;
            i += ra <= rb;
            j += rb <= ra;
            n++;
        }
    } else {
        for (uint32_t i = 0; i < a->count || i < b->count; i++, n++) {
            v[2 * n] = i < a->count ? (int64_t)i : -1;
            v[2 * n + 1] = i < b->count ? (int64_t)i : -1;
        }
    }
    *pairs = v;
    *count = n;
    return 0;
}

int32_t cmt_fleet_gpu_dev(const struct cmt_fleet *fleet, uint32_t g, uint32_t p)
{
    const struct cmt_fleet_process *pr = &fleet->processes[p];
    for (uint32_t d = 0; d < pr->device_count; d++)
        if (pr->devices[d].gpu && !strcmp(pr->devices[d].gpu, fleet->gpus[g].key))
            return pr->devices[d].dev;
    return -1;
}

int cmt_fleet_gpu_moment(const struct cmt_fleet *fleet, uint32_t g, uint64_t *mono_ns,
                         int64_t *oom_process)
{
    const struct cmt_fleet_gpu *gpu = &fleet->gpus[g];
    int have_oom = 0;
    *oom_process = -1;
    *mono_ns = UINT64_MAX;
    for (uint32_t m = 0; m < gpu->member_count; m++) {
        uint32_t p = gpu->members[m];
        const struct cmt_fleet_process *pr = &fleet->processes[p];
        int32_t dev = cmt_fleet_gpu_dev(fleet, g, p);
        for (uint32_t e = 0; e < pr->episode_count; e++) {
            const struct cmt_fleet_episode *ep = &pr->episodes[e];
            if (ep->e.dev == dev && (!have_oom || ep->mono_ns < *mono_ns)) {
                have_oom = 1;
                *mono_ns = ep->mono_ns;
                *oom_process = p;
            }
        }
        uint64_t end = add_sat(pr->start_mono_ns, pr->duration_ns);
        if (!have_oom && end < *mono_ns)
            *mono_ns = end;
    }
    return gpu->member_count > 0;
}
