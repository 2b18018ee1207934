/* fleet.c — many traces as one run: listing them, replaying each (in parallel) into a
 * summary of its process, and the job's figures derived from those (fleet.h). */
#include "fleet.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmt_error.h"
#include "cmt_free.h"
#include "cmt_grow.h"
#include "cmt_search.h"
#include "fleet_internal.h"

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds dir's *.cmt files to the list. @return 0, CMT_EIO, CMT_ENOMEM. */
static int add_dir(const char *dir, char ***list, size_t *n, size_t *cap)
{
    DIR *d = opendir(dir);
    if (!d)
        return CMT_EIO;
    size_t first = *n;
    struct dirent *de;
    int rc = 0;
    while (!rc && (de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len <= 4 || strcmp(de->d_name + len - 4, ".cmt"))
            continue;
        char *path = malloc(strlen(dir) + len + 2);
        struct stat st;
        if (!path) {
            rc = CMT_ENOMEM;
            break;
        }
        if (strcmp(dir, ".")) /* "./x.cmt" would read as badly as it prints */
            sprintf(path, "%s/%s", dir, de->d_name);
        else
            strcpy(path, de->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
            free(path); /* a directory named *.cmt, a dangling link */
            continue;
        }
        if (CMT_GROW(*list, *cap, *n + 1, 64)) {
            free(path);
            rc = CMT_ENOMEM;
            break;
        }
        (*list)[(*n)++] = path;
    }
    closedir(d);
    if (*n > first) /* an empty folder: no list to sort (qsort wants a non-NULL base) */
        qsort(*list + first, *n - first, sizeof **list, by_name);
    return rc;
}

int cmt_fleet_paths(const char *const *inputs, size_t n, char ***paths, size_t *count,
                    const char **bad)
{
    char **list = NULL;
    size_t len = 0, cap = 0;
    int rc = 0;
    *bad = NULL;
    for (size_t i = 0; i < n && !rc; i++) {
        struct stat st;
        if (stat(inputs[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            rc = add_dir(inputs[i], &list, &len, &cap);
            if (rc == CMT_EIO)
                *bad = inputs[i];
        } else if (CMT_GROW(list, cap, len + 1, 64) || !(list[len] = strdup(inputs[i]))) {
            rc = CMT_ENOMEM;
        } else {
            len++;
        }
    }
    if (rc) {
        for (size_t i = 0; i < len; i++)
            free(list[i]);
        free(list);
        return rc;
    }
    *paths = list;
    *count = len;
    return 0;
}

/* ---- one trace ---- */

/* "argv[0] argv[1] ..." (at most 16 arguments). */
static char *join_command(const struct cmt_process *proc)
{
    size_t len = 1;
    uint32_t n = proc->argc < 16 ? proc->argc : 16;
    for (uint32_t i = 0; i < n; i++)
        len += strlen(proc->argv[i]) + 1;
    char *s = malloc(len);
    if (!s)
        return NULL;
    s[0] = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            strcat(s, " ");
        strcat(s, proc->argv[i]);
    }
    return s;
}

static int copy_process(struct cmt_fleet_process *p, const cmt_reader *r)
{
    const struct cmt_process *proc = cmt_reader_process(r);
    if (!proc)
        return 0;
    p->have_process = 1;
    p->pid = proc->pid;
    p->ppid = proc->ppid;
    p->rank = proc->rank;
    p->local_rank = proc->local_rank;
    p->world_size = proc->world_size;
    p->start_wall_ns = proc->start_wall_ns;
    p->start_mono_ns = proc->start_mono_ns;
    p->host = dup_or_null(proc->hostname && *proc->hostname ? proc->hostname : NULL);
    p->job_id = dup_or_null(proc->job_id);
    p->exe = dup_or_null(proc->exe);
    p->command = join_command(proc);
    for (size_t i = 0; i < cmt_reader_env_count(r); i++) {
        const struct cmt_env *env = cmt_reader_env(r, i);
        if (env && !strcmp(env->name, "CUDA_VISIBLE_DEVICES")) {
            free(p->visible_devices);
            p->visible_devices = dup_or_null(env->value);
        }
    }
    return p->command && (!proc->hostname || !*proc->hostname || p->host) ? 0 : CMT_ENOMEM;
}

static int copy_devices(struct cmt_fleet_process *p, const cmt_replay *rp)
{
    uint32_t slots = cmt_replay_device_count(rp);
    p->devices = calloc(slots ? slots : 1, sizeof *p->devices);
    if (!p->devices)
        return CMT_ENOMEM;
    uint64_t best = 0;
    for (uint32_t s = 0; s < slots; s++) {
        const struct cmt_replay_device *d = cmt_replay_device_slot(rp, s);
        if (!d || (!d->alloc_calls && !d->total_bytes) || (d->dev < 0 && !d->peak_live_bytes))
            continue;
        struct cmt_fleet_device *fd = &p->devices[p->device_count++];
        fd->dev = d->dev;
        fd->name = dup_or_null(d->name);
        fd->total_bytes = d->total_bytes;
        fd->peak_live_bytes = d->peak_live_bytes;
        fd->peak_t_ns = d->peak_t_ns;
        fd->alloc_calls = d->alloc_calls;
        fd->failures = d->failures;
        fd->oom_failures = d->oom_failures;
        if (d->dev >= 0 && (p->busiest_dev < 0 || d->peak_live_bytes > best)) {
            p->busiest_dev = d->dev;
            best = d->peak_live_bytes;
        }
        if (d->name && !fd->name)
            return CMT_ENOMEM;
    }
    return 0;
}

static int copy_episodes(struct cmt_fleet_process *p, const cmt_oom *oom)
{
    uint32_t n = cmt_oom_count(oom);
    p->episodes = calloc(n ? n : 1, sizeof *p->episodes);
    if (!p->episodes)
        return CMT_ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        struct cmt_fleet_episode *fe = &p->episodes[i];
        fe->e = *cmt_oom_episode(oom, i);
        fe->e.api = NULL; /* the reader's string: gone with it */
        fe->wall_ns = p->start_wall_ns + fe->e.t_ns;
        fe->mono_ns = p->start_mono_ns + fe->e.t_ns;
    }
    p->episode_count = n;
    return 0;
}

static int copy_series(struct cmt_fleet_process *p, const struct cmt_timeline *tl)
{
    for (uint32_t i = 0; i < tl->device_count; i++) {
        const struct cmt_timeline_device *d = &tl->devices[i];
        if (d->dev != p->busiest_dev || !tl->max_points)
            continue;
        p->series = malloc(tl->max_points * sizeof *p->series);
        if (!p->series)
            return CMT_ENOMEM;
        memcpy(p->series, d->points, tl->max_points * sizeof *p->series);
        p->series_count = tl->max_points;
        p->series_width = tl->width;
    }
    return 0;
}

static int summarise(struct cmt_fleet_process *p, const cmt_reader *r, const cmt_replay *rp,
                     const cmt_oom *oom, const struct cmt_timeline *tl, /* NULL: none */
                     const struct cmt_signal_seen *sig)
{
    const struct cmt_replay_totals *t = cmt_replay_totals(rp);
    p->events = t->events;
    p->duration_ns = t->last_t_ns;
    p->peak_live_bytes = t->peak_live_bytes;
    p->peak_t_ns = t->peak_t_ns;
    p->failures = t->failures;
    p->oom_failures = t->oom_failures;
    p->clean_exit = t->ended;
    p->signaled = t->signaled;
    p->signo = t->signo;
    p->signal_t_ns = sig->seen ? sig->t_ns : t->last_t_ns;
    int rc = copy_process(p, r);
    if (!rc)
        rc = copy_devices(p, rp);
    if (!rc)
        rc = copy_episodes(p, oom);
    if (!rc) /* the one definition, as export --partitioned's runs table */
        p->failure = cmt_process_failure(oom, t, sig, &p->failure_t_ns);
    return rc || !tl ? rc : copy_series(p, tl);
}

/* ---- the ledger's guessed moments (ledger_guess) ---- */

/* A time a GPU of a host may be looked at: a first out-of-memory failure, or an end. */
struct guess {
    const char *host; /* the process's host ("" unknown), owned by the fleet */
    uint64_t mono_ns;
};

struct guesses {
    pthread_mutex_t lock;
    struct guess *list;
    size_t count, cap;
};

static const char *host_of(const struct cmt_process *proc)
{
    return proc && proc->hostname ? proc->hostname : "";
}

/* The times (from p's start) of the guesses of p's host at or after its start, ascending and
 * distinct, into p->ledger_times. @return 0 or CMT_ENOMEM. */
static int guess_times(struct guesses *g, struct cmt_fleet_process *p, const cmt_reader *r)
{
    const struct cmt_process *proc = cmt_reader_process(r);
    const char *host = host_of(proc);
    uint64_t start = proc ? proc->start_mono_ns : 0;
    int rc = 0;
    pthread_mutex_lock(&g->lock);
    p->ledger_times = malloc((g->count ? g->count : 1) * sizeof *p->ledger_times);
    if (!p->ledger_times)
        rc = CMT_ENOMEM;
    for (size_t i = 0; !rc && i < g->count; i++)
        if (!strcmp(g->list[i].host, host) && g->list[i].mono_ns >= start)
            p->ledger_times[p->ledger_time_count++] = g->list[i].mono_ns - start;
    pthread_mutex_unlock(&g->lock);
    size_t n = p->ledger_time_count, k = 0;
    if (n)
        qsort(p->ledger_times, n, sizeof *p->ledger_times, cmt_u64_ascending);
    for (size_t i = 0; i < n; i++)
        if (!k || p->ledger_times[i] != p->ledger_times[k - 1])
            p->ledger_times[k++] = p->ledger_times[i];
    p->ledger_time_count = k;
    return rc;
}

static int guess_add(struct guesses *g, const char *host, uint64_t mono_ns)
{
    if (CMT_GROW(g->list, g->cap, g->count + 1, 64))
        return CMT_ENOMEM;
    g->list[g->count++] = (struct guess){host, mono_ns};
    return 0;
}

/* p's candidates for the moments of its GPUs (as cmt_fleet_gpu_moment takes them): the first
 * failure on each of its devices and its end. @return 0 or CMT_ENOMEM. */
static int guesses_of(struct guesses *g, const struct cmt_fleet_process *p)
{
    const char *host = p->host ? p->host : "";
    uint64_t end = p->start_mono_ns + p->duration_ns;
    pthread_mutex_lock(&g->lock);
    int rc = guess_add(g, host, end < p->start_mono_ns ? UINT64_MAX : end);
    for (uint32_t d = 0; !rc && d < p->device_count; d++)
        for (uint32_t e = 0; e < p->episode_count; e++)
            if (p->episodes[e].e.dev == p->devices[d].dev) {
                rc = guess_add(g, host, p->episodes[e].mono_ns);
                break;
            }
    pthread_mutex_unlock(&g->lock);
    return rc;
}

int cmt_fleet_ledger_at(const struct cmt_fleet_process *p, uint64_t t, int32_t dev,
                        const struct cmt_ledger_moment **m)
{
    size_t n = 0;
    const uint64_t *times = p->ledger ? cmt_ledger_times(p->ledger, &n) : NULL;
    *m = NULL;
    for (size_t i = 0; i < n; i++)
        if (times[i] == t) {
            *m = cmt_ledger_find(p->ledger, CMT_LEDGER_AT_TIME, dev, i);
            return 1;
        }
    return 0;
}

/* ---- one trace's replay ---- */

/* The analyses of one replay: the fleet's own, and the ledger when it has times to take. */
struct analyses {
    cmt_oom *oom;
    struct cmt_timeline tl;
    int have_tl;
    struct cmt_signal_seen sig;
    cmt_alloc *alloc;
    cmt_ledger *ledger;
};

/* guessing: the ledger is taken (at the guesses, its own first failures and end) */
static int analyses_create(struct analyses *a, struct cmt_fleet_process *p, uint32_t series_points,
                           int guessing)
{
    int rc = cmt_oom_create(&a->oom);
    if (!rc && series_points != CMT_FLEET_NO_SERIES &&
        !(rc = cmt_timeline_init(&a->tl, series_points))) {
        a->have_tl = 1;
        cmt_timeline_set_no_holes(&a->tl, 1); /* a process's series shows no hole measures */
    }
    if (!rc && guessing) {
        const struct cmt_ledger_options o = {
            .times = p->ledger_times, .time_count = p->ledger_time_count, .own_times = 1};
        rc = cmt_alloc_create(&a->alloc);
        if (!rc)
            rc = cmt_ledger_create(&a->ledger, a->alloc, &o);
    }
    return rc;
}

/* @return the replay's result (its damage code, or CMT_ENOMEM). */
static int analyses_run(struct analyses *a, struct cmt_fleet_process *p, cmt_replay *rp)
{
    struct cmt_observer obs[6] = {cmt_phases_observer(&p->phases), cmt_oom_observer(a->oom),
                                  cmt_signal_observer(&a->sig)};
    size_t n = 3;
    if (a->have_tl)
        obs[n++] = cmt_timeline_observer(&a->tl);
    if (a->ledger) { /* the allocator view before the ledger, which reads it */
        obs[n++] = cmt_alloc_observer(a->alloc);
        obs[n++] = cmt_ledger_observer(a->ledger);
    }
    return cmt_replay_run(rp, obs, n);
}

static void analyses_free(struct analyses *a)
{
    if (a->have_tl)
        cmt_timeline_free(&a->tl);
    cmt_oom_destroy(a->oom);
    cmt_ledger_destroy(a->ledger);
    cmt_alloc_destroy(a->alloc);
}

/* @return 0 (also for a trace that cannot be read: p->error says why), or CMT_ENOMEM. */
static int load_one(struct cmt_fleet_process *p, uint32_t series_points, int keep_reader,
                    struct guesses *g)
{
    cmt_reader *r = p->reader; /* opened already when the ledger guesses */
    cmt_replay *rp = NULL;
    struct analyses a = {0};
    p->reader = NULL;
    p->rank = p->local_rank = p->world_size = -1;
    p->busiest_dev = -1;
    if (p->error)
        return p->error == CMT_ENOMEM ? CMT_ENOMEM : 0;
    if (!r && (p->error = cmt_reader_open_file(&r, p->path, &p->open_err)))
        return p->error == CMT_ENOMEM ? CMT_ENOMEM : 0;
    int rc = g ? guess_times(g, p, r) : 0;
    if (!rc)
        rc = cmt_replay_create(&rp, r);
    if (!rc)
        rc = analyses_create(&a, p, series_points, g != NULL);
    if (!rc) {
        int run = analyses_run(&a, p, rp);
        if (run == CMT_ENOMEM)
            rc = run;
        else {
            p->damage = run;
            rc = summarise(p, r, rp, a.oom, a.have_tl ? &a.tl : NULL, &a.sig);
        }
    }
    if (!rc && g)
        rc = guesses_of(g, p);
    if (!p->phases.range_count) /* nothing to show: keep nothing */
        cmt_phases_free(&p->phases);
    if (!rc && a.ledger) { /* kept for the printers: the ledger's rows name by them */
        p->ledger = a.ledger;
        p->alloc = a.alloc;
        p->replay = rp;
        a.ledger = NULL;
        a.alloc = NULL;
        rp = NULL;
    }
    analyses_free(&a);
    cmt_replay_destroy(rp);
    if (keep_reader && !rc)
        p->reader = r;
    else
        cmt_reader_close(r);
    return rc;
}

/* ---- in parallel ---- */

struct pool {
    struct cmt_fleet_process *processes;
    size_t n;
    uint32_t series_points;
    int keep_readers;
    struct guesses *guesses; /* NULL: no ledger guessed */
    size_t *order;           /* the order to read them in, NULL: as given */
    atomic_size_t next;
    atomic_int failed; /* CMT_ENOMEM somewhere */
};

static void *worker(void *arg)
{
    struct pool *pl = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&pl->next, 1);
        if (i >= pl->n || atomic_load(&pl->failed))
            break;
        struct cmt_fleet_process *p = &pl->processes[pl->order ? pl->order[i] : i];
        if (load_one(p, pl->series_points, pl->keep_readers, pl->guesses))
            atomic_store(&pl->failed, CMT_ENOMEM);
    }
    return NULL;
}

/* Opens the trace and reads its first records for its PROCESS record, then rewinds (the
 * tables are kept). @return its start on the host's clock (0 unknown). */
static uint64_t open_for_start(struct cmt_fleet_process *p)
{
    p->error = cmt_reader_open_file(&p->reader, p->path, &p->open_err);
    if (p->error)
        return 0;
    struct cmt_record rec;
    for (int i = 0; i < 16 && !cmt_reader_process(p->reader); i++)
        if (cmt_reader_next(p->reader, &rec) != 1)
            break;
    cmt_reader_rewind(p->reader);
    const struct cmt_process *proc = cmt_reader_process(p->reader);
    return proc ? proc->start_mono_ns : 0;
}

struct start {
    uint64_t mono_ns;
    size_t index;
};

static int by_start(const void *a, const void *b)
{
    const struct start *x = a, *y = b;
    if (x->mono_ns != y->mono_ns)
        return x->mono_ns < y->mono_ns ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* For ledger_guess: opens every trace and orders them by their start, the first started first
 * (in a job whose processes do the same work, the first to fail). @return 0 with pl->order,
 * or CMT_ENOMEM. */
static int plan_order(struct pool *pl)
{
    struct start *starts = malloc((pl->n ? pl->n : 1) * sizeof *starts);
    pl->order = malloc((pl->n ? pl->n : 1) * sizeof *pl->order);
    int rc = starts && pl->order ? 0 : CMT_ENOMEM;
    for (size_t i = 0; !rc && i < pl->n; i++) {
        starts[i] = (struct start){open_for_start(&pl->processes[i]), i};
        if (pl->processes[i].error == CMT_ENOMEM)
            rc = CMT_ENOMEM;
    }
    if (!rc) {
        qsort(starts, pl->n, sizeof *starts, by_start);
        for (size_t i = 0; i < pl->n; i++)
            pl->order[i] = starts[i].index;
    }
    free(starts);
    return rc;
}

static int load_all(struct pool *pl, unsigned jobs)
{
    pthread_t threads[64];
    unsigned started = 0;
    if (jobs > 64)
        jobs = 64;
    if (jobs > pl->n)
        jobs = (unsigned)pl->n;
    for (unsigned i = 1; i < jobs; i++) /* the caller's thread is the first worker */
        if (pthread_create(&threads[started], NULL, worker, pl) == 0)
            started++;
    worker(pl);
    for (unsigned i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    return atomic_load(&pl->failed);
}

static int by_rank_host_pid(const void *a, const void *b)
{
    const struct cmt_fleet_process *x = a, *y = b;
    if ((x->rank < 0) != (y->rank < 0))
        return x->rank < 0 ? 1 : -1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    int h = strcmp(x->host ? x->host : "", y->host ? y->host : "");
    if (h)
        return h;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return strcmp(x->path, y->path);
}

int cmt_fleet_load(struct cmt_fleet *fleet, const char *const *paths, size_t n,
                   const struct cmt_fleet_options *options)
{
    memset(fleet, 0, sizeof *fleet);
    fleet->first_failure = -1;
    fleet->processes = calloc(n ? n : 1, sizeof *fleet->processes);
    if (!fleet->processes)
        return CMT_ENOMEM;
    fleet->count = (uint32_t)n;
    for (size_t i = 0; i < n; i++)
        if (!(fleet->processes[i].path = strdup(paths[i]))) {
            cmt_fleet_free(fleet);
            return CMT_ENOMEM;
        }
    unsigned jobs = options && options->jobs ? options->jobs
                                             : (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
    struct pool pl = {
        .processes = fleet->processes,
        .n = n,
        .series_points = options && options->series_points ? options->series_points : 512,
        .keep_readers = options && options->keep_readers && n <= CMT_FLEET_KEEP_READERS_MAX};
    atomic_init(&pl.next, 0);
    atomic_init(&pl.failed, 0);
    struct guesses g = {.list = NULL};
    int rc = 0;
    if (pl.keep_readers && options->ledger_guess) {
        pthread_mutex_init(&g.lock, NULL);
        pl.guesses = &g;
        rc = plan_order(&pl);
    }
    if (!rc)
        rc = load_all(&pl, jobs ? jobs : 1);
    if (pl.guesses)
        pthread_mutex_destroy(&g.lock);
    free(g.list);
    free(pl.order);
    if (!rc) {
        qsort(fleet->processes, n, sizeof *fleet->processes, by_rank_host_pid);
        rc = cmt__fleet_derive(fleet);
    }
    if (rc)
        cmt_fleet_free(fleet);
    return rc;
}

void cmt_fleet_free(struct cmt_fleet *fleet)
{
    for (uint32_t i = 0; fleet->processes && i < fleet->count; i++) {
        struct cmt_fleet_process *p = &fleet->processes[i];
        for (uint32_t d = 0; d < p->device_count; d++) {
            free(p->devices[d].name);
            free(p->devices[d].gpu);
        }
        CMT_FREE_ALL(p->devices, p->episodes, p->series, p->path, p->host, p->job_id, p->exe,
                     p->command, p->visible_devices);
        cmt_phases_free(&p->phases);
        cmt_ledger_destroy(p->ledger);
        cmt_alloc_destroy(p->alloc);
        cmt_replay_destroy(p->replay); /* before its reader */
        free(p->ledger_times);
        cmt_reader_close(p->reader);
    }
    for (uint32_t g = 0; fleet->gpus && g < fleet->gpu_count; g++) {
        free(fleet->gpus[g].key);
        free(fleet->gpus[g].members);
    }
    CMT_FREE_ALL(fleet->processes, fleet->ranks, fleet->gpus);
    memset(fleet, 0, sizeof *fleet);
}
