/* html_ranks.c — the "Ranks" view's data: the fleet of traces, each replayed once more for its
 * device memory line and its OOM episodes, and the rank whose full page is drawn (html_ranks.h).
 * Nothing here draws: ranks_view.js does, from the `ranks` object written here. */
#include "html/html_ranks.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "allocator.h"
#include "cmt_error.h"
#include "oom.h"
#include "output.h"
#include "timeline.h"

/* The device a rank's line shows: the allocator's busiest (its allocated peak) when the trace
 * has allocator records, else the one with the highest driver-level peak. */
static int choose_device(const cmt_alloc *a, const cmt_replay *rp, int32_t *dev)
{
    struct cmt_alloc_summary h;
    if (cmt_alloc_summarize(a, &h)) {
        *dev = h.dev;
        return CMT__HTML_RANK_ALLOCATOR;
    }
    const struct cmt_replay_device *top = NULL;
    for (uint32_t s = 0; s < cmt_replay_device_count(rp); s++) {
        const struct cmt_replay_device *d = cmt_replay_device_slot(rp, s);
        if (d && d->dev >= 0 && (!top || d->peak_live_bytes > top->peak_live_bytes))
            top = d;
    }
    if (!top || !top->peak_live_bytes)
        return CMT__HTML_RANK_NONE;
    *dev = top->dev;
    return CMT__HTML_RANK_DRIVER;
}

/* The bucket's highest value of the line and when it drew it. */
static uint64_t point_value(const struct cmt__html_rank *rk, uint32_t i, uint64_t *t_ns)
{
    const struct cmt_timeline_point *p = &rk->points[i];
    if (rk->source == CMT__HTML_RANK_ALLOCATOR) {
        *t_ns = (uint64_t)i * rk->width_ns; /* the bucket's start: its maximum's time is not kept */
        return p->alloc_used ? p->alloc_reserved : 0;
    }
    *t_ns = p->t_ns;
    return p->used ? p->live_bytes : 0;
}

/* Keeps the chosen device's buckets and the peak they draw. @return 0 or CMT_ENOMEM. */
static int keep_line(struct cmt__html_rank *rk, const cmt_alloc *a, const cmt_replay *rp,
                     const struct cmt_timeline *tl)
{
    rk->source = choose_device(a, rp, &rk->dev);
    for (uint32_t i = 0; rk->source && i < tl->device_count; i++) {
        const struct cmt_timeline_device *d = &tl->devices[i];
        if (d->dev != rk->dev)
            continue;
        if (!(rk->points = malloc(tl->max_points * sizeof *rk->points)))
            return CMT_ENOMEM;
        memcpy(rk->points, d->points, tl->max_points * sizeof *rk->points);
        rk->point_count = tl->max_points;
        rk->width_ns = tl->width;
    }
    for (uint32_t i = 0; i < rk->point_count; i++) {
        uint64_t t, v = point_value(rk, i, &t);
        if (v > rk->peak_bytes) {
            rk->peak_bytes = v;
            rk->peak_t_ns = t;
        }
    }
    if (!rk->point_count)
        rk->source = CMT__HTML_RANK_NONE;
    return 0;
}

static int keep_ooms(struct cmt__html_rank *rk, const cmt_oom *oom)
{
    uint32_t n = cmt_oom_count(oom);
    if (!n)
        return 0;
    if (!(rk->ooms = calloc(n, sizeof *rk->ooms)))
        return CMT_ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        const struct cmt_oom_episode *e = cmt_oom_episode(oom, i);
        rk->ooms[i] = (struct cmt__html_rank_oom){.t_ns = e->t_ns,
                                                  .request_bytes = e->request_bytes,
                                                  .dev = e->dev,
                                                  .verdict = e->verdict};
    }
    rk->oom_count = n;
    return 0;
}

/* The second replay of one trace (over the fleet's kept reader, rewound, or the file opened
 * again): the allocator view, `oom`'s episodes with it, the timeline. A trace that cannot be
 * opened again keeps no line. @return 0 or CMT_ENOMEM. */
static int replay_rank(const struct cmt_fleet_process *p, struct cmt__html_rank *rk,
                       uint32_t points)
{
    cmt_reader *r = p->reader, *own = NULL;
    struct cmt_err err = {0};
    if (p->error)
        return 0;
    if (r)
        cmt_reader_rewind(r);
    else if (cmt_reader_open_file(&own, p->path, &err) != 0)
        return err.code == CMT_ENOMEM ? CMT_ENOMEM : 0;
    cmt_replay *rp = NULL;
    cmt_alloc *a = NULL;
    cmt_oom *oom = NULL;
    struct cmt_timeline tl;
    int have_tl = 0, rc = cmt_replay_create(&rp, r ? r : own);
    if (!rc)
        rc = cmt_alloc_create(&a);
    if (!rc)
        rc = cmt_oom_create(&oom);
    if (!rc && !(rc = cmt_timeline_init(&tl, points)))
        have_tl = 1;
    if (!rc) {
        cmt_oom_set_allocator(oom, a);
        cmt_timeline_set_allocator(&tl, a);
        cmt_timeline_set_no_holes(&tl, 1); /* a rank's line never shows them */
        struct cmt_observer obs[3] = {cmt_alloc_observer(a), cmt_oom_observer(oom),
                                      cmt_timeline_observer(&tl)};
        /* a damaged trace: what came before the damage, as the fleet's first replay */
        if (cmt_replay_run(rp, obs, 3) == CMT_ENOMEM || tl.failed)
            rc = CMT_ENOMEM;
        else if (!(rc = keep_line(rk, a, rp, &tl)))
            rc = keep_ooms(rk, oom);
    }
    if (have_tl)
        cmt_timeline_free(&tl);
    cmt_oom_destroy(oom);
    cmt_alloc_destroy(a);
    cmt_replay_destroy(rp);
    cmt_reader_close(own);
    return rc ? CMT_ENOMEM : 0;
}

/* The second replays, in parallel as the fleet's first ones (a trace per thread at a time). */
struct pool {
    struct cmt__html_ranks *rs;
    uint32_t points;
    atomic_uint next;
    atomic_int failed; /* CMT_ENOMEM somewhere */
};

static void *worker(void *arg)
{
    struct pool *pl = arg;
    for (unsigned i;
         (i = atomic_fetch_add(&pl->next, 1)) < pl->rs->fleet.count && !atomic_load(&pl->failed);)
        if (replay_rank(&pl->rs->fleet.processes[i], &pl->rs->ranks[i], pl->points))
            atomic_store(&pl->failed, CMT_ENOMEM);
    return NULL;
}

static int replay_all(struct cmt__html_ranks *rs, uint32_t points)
{
    struct pool pl = {.rs = rs, .points = points};
    atomic_init(&pl.next, 0);
    atomic_init(&pl.failed, 0);
    pthread_t threads[64];
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned jobs = online < 1 ? 1 : online > 64 ? 64 : (unsigned)online, started = 0;
    if (jobs > rs->fleet.count)
        jobs = rs->fleet.count;
    for (unsigned i = 1; i < jobs; i++) /* the caller's thread is the first worker */
        if (pthread_create(&threads[started], NULL, worker, &pl) == 0)
            started++;
    worker(&pl);
    for (unsigned i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    return atomic_load(&pl.failed);
}

/* On the wall clock when every run's start is known and they all overlap (a job's ranks);
 * runs recorded one after another are drawn each from its own start. */
static int runs_overlap(const struct cmt_fleet *f)
{
    uint64_t latest_start = 0, earliest_end = UINT64_MAX;
    for (uint32_t i = 0; i < f->count; i++) {
        const struct cmt_fleet_process *p = &f->processes[i];
        if (p->error)
            continue;
        if (!p->have_process || !p->start_wall_ns)
            return 0;
        if (p->start_wall_ns > latest_start)
            latest_start = p->start_wall_ns;
        if (p->start_wall_ns + p->duration_ns < earliest_end)
            earliest_end = p->start_wall_ns + p->duration_ns;
    }
    return latest_start && latest_start <= earliest_end;
}

/* The rank the page is of: the first to fail (the fleet's choice), else the first with an
 * out-of-memory episode (a snapshot's OOM: its start may be unknown), else the highest peak. */
static void choose_shown(struct cmt__html_ranks *rs)
{
    const struct cmt_fleet *f = &rs->fleet;
    rs->shown = -1;
    if (f->first_failure >= 0) {
        rs->shown = f->first_failure;
        rs->shown_why = "first to fail";
        return;
    }
    for (uint32_t i = 0; i < f->count; i++)
        if (rs->ranks[i].oom_count) {
            rs->shown = i;
            rs->shown_why = "first with an out-of-memory failure";
            return;
        }
    for (uint32_t i = 0; i < f->count; i++)
        if (!f->processes[i].error &&
            (rs->shown < 0 || rs->ranks[i].peak_bytes > rs->ranks[rs->shown].peak_bytes))
            rs->shown = i;
    rs->shown_why = "highest peak";
}

/* The PyTorch snapshots among the paths, each converted into a memfd (fds[i], else -1) and read
 * as /proc/self/fd/N (use[i]; the others as given). @return 0 or CMT_ENOMEM. */
static int convert_snapshots(const char *const *paths, size_t n, const char **use, char **proc,
                             int *fds)
{
    for (size_t i = 0; i < n; i++) {
        use[i] = paths[i];
        fds[i] = -1;
        if (!cmt__is_snapshot(paths[i]))
            continue;
        int fd = memfd_create("cumemtrace-snapshot", MFD_CLOEXEC);
        if (fd >= 0 && cmt__snapshot_convert("html", paths[i], fd, NULL) != 0) {
            close(fd); /* it said why: the trace is a rank that cannot be read */
            continue;
        }
        if (fd < 0 || !(proc[i] = malloc(32))) {
            if (fd >= 0)
                close(fd);
            return CMT_ENOMEM;
        }
        snprintf(proc[i], 32, "/proc/self/fd/%d", fd);
        use[i] = proc[i];
        fds[i] = fd;
    }
    return 0;
}

/* The processes read from a converted snapshot get the snapshot's own path back. @return 0 or
 * CMT_ENOMEM. */
static int restore_paths(struct cmt_fleet *f, const char *const *paths, size_t n, char **proc)
{
    for (uint32_t p = 0; p < f->count; p++)
        for (size_t i = 0; i < n; i++)
            if (proc[i] && strcmp(f->processes[p].path, proc[i]) == 0) {
                char *path = strdup(paths[i]);
                if (!path)
                    return CMT_ENOMEM;
                free(f->processes[p].path);
                f->processes[p].path = path;
            }
    return 0;
}

/* The fleet of the traces (snapshots converted) and each one's line. @return 0 or CMT_ENOMEM. */
static int load(struct cmt__html_ranks *rs, const char *const *paths, size_t n, uint32_t points,
                const char **use, char **proc, int *fds)
{
    const struct cmt_fleet_options fo = {.keep_readers = 1, .series_points = 2};
    int rc = convert_snapshots(paths, n, use, proc, fds);
    if (!rc)
        rc = cmt_fleet_load(&rs->fleet, use, n, &fo);
    if (!rc && !(rs->ranks = calloc(rs->fleet.count ? rs->fleet.count : 1, sizeof *rs->ranks)))
        rc = CMT_ENOMEM;
    if (!rc)
        rc = replay_all(rs, points);
    return rc ? rc : restore_paths(&rs->fleet, paths, n, proc);
}

int cmt__html_ranks_load(struct cmt__html_ranks *rs, const char *const *paths, size_t n,
                         uint32_t points)
{
    memset(rs, 0, sizeof *rs);
    const char **use = calloc(n ? n : 1, sizeof *use);
    char **proc = calloc(n ? n : 1, sizeof *proc);
    int *fds = calloc(n ? n : 1, sizeof *fds);
    int rc = use && proc && fds ? load(rs, paths, n, points, use, proc, fds) : CMT_ENOMEM;
    for (size_t i = 0; fds && proc && i < n; i++)
        if (proc[i])
            close(fds[i]); /* the readers keep their mappings */
    for (size_t i = 0; proc && i < n; i++)
        free(proc[i]);
    free(proc);
    free(use);
    free(fds);
    if (rc) {
        cmt__html_ranks_free(rs);
        return rc;
    }
    rs->aligned = runs_overlap(&rs->fleet);
    choose_shown(rs);
    return 0;
}

void cmt__html_ranks_free(struct cmt__html_ranks *rs)
{
    for (uint32_t i = 0; rs->ranks && i < rs->fleet.count; i++) {
        free(rs->ranks[i].points);
        free(rs->ranks[i].ooms);
    }
    free(rs->ranks);
    cmt_fleet_free(&rs->fleet);
    memset(rs, 0, sizeof *rs);
}

const char *cmt__html_ranks_shown_path(const struct cmt__html_ranks *rs)
{
    return rs->shown >= 0 ? rs->fleet.processes[rs->shown].path : NULL;
}

/* One line as parallel arrays: each used bucket's highest value at its time, then its last
 * value where that differs (at the bucket's last event for the driver, at its end for the
 * allocator, whose events keep no time in the bucket). */
static void line_json(struct cmt__json *j, const struct cmt__html_rank *rk, const char *name,
                      int allocated, uint64_t end_ns)
{
    int alloc = rk->source == CMT__HTML_RANK_ALLOCATOR;
    cmt__json_object(j, NULL);
    cmt__json_string(j, "name", name);
    for (int col = 0; col < 2; col++) {
        cmt__json_array(j, col ? "v" : "t");
        for (uint32_t i = 0; i < rk->point_count; i++) {
            const struct cmt_timeline_point *p = &rk->points[i];
            if (!(alloc ? p->alloc_used : p->used))
                continue;
            uint64_t t0 = alloc ? (uint64_t)i * rk->width_ns : p->t_ns;
            uint64_t t1 = alloc ? (uint64_t)(i + 1) * rk->width_ns : p->last_t_ns;
            uint64_t hi = !alloc      ? p->live_bytes
                          : allocated ? p->alloc_allocated
                                      : p->alloc_reserved;
            uint64_t last = !alloc      ? p->last_live_bytes
                            : allocated ? p->last_alloc_allocated
                                        : p->last_alloc_reserved;
            if (t1 > end_ns)
                t1 = end_ns > t0 ? end_ns : t0;
            cmt__json_u64(j, NULL, col ? hi : t0);
            if (last != hi)
                cmt__json_u64(j, NULL, col ? last : t1);
        }
        cmt__json_end_array(j);
    }
    cmt__json_end_object(j);
}

static void oom_json(struct cmt__json *j, const struct cmt__html_rank *rk)
{
    cmt__json_array(j, "ooms");
    for (uint32_t i = 0; i < rk->oom_count; i++) {
        const struct cmt__html_rank_oom *o = &rk->ooms[i];
        cmt__json_object(j, NULL);
        cmt__json_u64(j, "t_ns", o->t_ns);
        cmt__json_i64(j, "dev", o->dev);
        cmt__json_string(j, "verdict", cmt_verdict_name(o->verdict));
        cmt__json_u64(j, "request_bytes", o->request_bytes);
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
}

/* "rank 3" ("rank 3 (pid 1234)" when several processes had it), or the trace's file name when
 * no rank is known. */
static const char *rank_label(const struct cmt_fleet *f, const struct cmt_fleet_process *p,
                              char *buf, size_t size)
{
    const char *slash = strrchr(p->path, '/');
    uint32_t same = 0; /* processes of this rank: a restart */
    for (uint32_t i = 0; p->rank >= 0 && i < f->rank_count; i++)
        if (f->ranks[i].rank == p->rank)
            same = f->ranks[i].process_count;
    if (p->rank >= 0 && same > 1)
        snprintf(buf, size, "rank %d (pid %" PRIu64 ")", (int)p->rank, p->pid);
    else if (p->rank >= 0)
        snprintf(buf, size, "rank %d", (int)p->rank);
    else
        snprintf(buf, size, "%s", slash ? slash + 1 : p->path);
    return buf;
}

static void rank_json(struct cmt__json *j, const struct cmt__html_ranks *rs, uint32_t i)
{
    static const char *const sources[] = {"none", "driver", "allocator"};
    const struct cmt_fleet_process *p = &rs->fleet.processes[i];
    const struct cmt__html_rank *rk = &rs->ranks[i];
    char label[512];
    cmt__json_object(j, NULL);
    cmt__json_string(j, "file", p->path);
    cmt__json_string(j, "label", rank_label(&rs->fleet, p, label, sizeof label));
    cmt__json_i64_or_null(j, "rank", p->rank);
    cmt__json_string_or_null(j, "host", p->host);
    cmt__json_u64(j, "pid", p->pid);
    if (p->error)
        cmt__json_string(j, "error", cmt_err_message(&p->open_err));
    cmt__json_bool(j, "damaged", p->damage < 0);
    cmt__json_string(j, "failure", cmt_fleet_failure_name(p->failure));
    uint64_t offset = rs->aligned && !p->error && p->start_wall_ns > rs->fleet.start_wall_ns
                          ? p->start_wall_ns - rs->fleet.start_wall_ns
                          : 0;
    CMT__JSON_U64S(j, {"offset_ns", offset}, {"duration_ns", p->duration_ns},
                   {"peak_bytes", rk->peak_bytes}, {"peak_t_ns", rk->peak_t_ns},
                   {"bucket_ns", rk->width_ns});
    cmt__json_string(j, "source", sources[rk->source]);
    cmt__json_i64(j, "dev", rk->source ? rk->dev : -1);
    cmt__json_array(j, "lines");
    if (rk->source == CMT__HTML_RANK_ALLOCATOR) {
        line_json(j, rk, "reserved", 0, p->duration_ns);
        line_json(j, rk, "allocated", 1, p->duration_ns);
    } else if (rk->source == CMT__HTML_RANK_DRIVER) {
        line_json(j, rk, "device", 0, p->duration_ns);
    }
    cmt__json_end_array(j);
    oom_json(j, rk);
    cmt__json_end_object(j);
}

void cmt__html_ranks_json(struct cmt__json *j, const struct cmt__html_ranks *rs)
{
    cmt__json_object(j, "ranks");
    cmt__json_bool(j, "aligned", rs->aligned);
    cmt__json_i64(j, "shown", rs->shown);
    cmt__json_string(j, "shown_why", rs->shown_why ? rs->shown_why : "");
    cmt__json_array(j, "ranks");
    for (uint32_t i = 0; i < rs->fleet.count; i++)
        rank_json(j, rs, i);
    cmt__json_end_array(j);
    cmt__json_end_object(j);
}
