/* export_partitioned.c — `export --partitioned DIR TRACES...`: Hive-style partitioned tables
 * (DIR/TABLE/run=ID/part-NAME.csv.zst or .jsonl.zst, zstd-compressed unless --compress none;
 * or part-NAME.parquet, its pages zstd-compressed) that DuckDB, Spark and Trino read as they are:
 * processes, episodes, sites and, with --events, events (a file per trace, named by the
 * trace's file name), and runs (a file per run, aggregated over this invocation's traces of
 * that run). A table with no rows for a trace gets no file (engines refuse header-only CSV
 * files of unknown types). The run id is --run, else the name of the trace's directory;
 * ids and file names keep [A-Za-z0-9._-] and turn every other byte into '_'. A symbolic link
 * under DIR is refused, never written through (struct out). Traces are converted --jobs at a
 * time, each by one thread into its own files; the runs table is summed afterwards in the
 * traces' order, so the output is the same whatever the number of jobs. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmt_grow.h"
#include "export/export.h"
#include "export/zstd_file.h"
#include "first_failure.h"
#include "oom.h"

/* Keeps what a file name may hold, at most size - 1 bytes. @return buf. */
static const char *sanitize(const char *s, char *buf, size_t size)
{
    size_t n = 0;
    for (; *s && n + 1 < size; s++) {
        unsigned char c = (unsigned char)*s;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '-' || c == '_';
        buf[n++] = ok ? (char)c : '_';
    }
    if (!n || (n <= 2 && buf[0] == '.')) /* never "", "." or ".." */
        buf[n++] = '_';
    buf[n] = 0;
    return buf;
}

/* The run id of a trace: the name of the directory that holds it. */
static const char *run_of(const char *path, char *buf, size_t size)
{
    char resolved[PATH_MAX], tmp[PATH_MAX];
    const char *dir = "run";
    if (realpath(path, resolved)) {
        char *slash = strrchr(resolved, '/');
        if (slash && slash != resolved) {
            *slash = 0;
            slash = strrchr(resolved, '/');
            dir = slash ? slash + 1 : resolved;
        }
    }
    snprintf(tmp, sizeof tmp, "%s", dir);
    return sanitize(tmp, buf, size);
}

/* The part's name: the trace's file name without ".cmt". */
static const char *part_of(const char *path, char *buf, size_t size)
{
    char tmp[PATH_MAX];
    const char *base = strrchr(path, '/');
    snprintf(tmp, sizeof tmp, "%s", base ? base + 1 : path);
    size_t n = strlen(tmp);
    if (n > 4 && strcmp(tmp + n - 4, ".cmt") == 0)
        tmp[n - 4] = 0;
    return sanitize(tmp, buf, size);
}

static int mkdirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        int bad = mkdir(path, 0777) != 0 && errno != EEXIST;
        *p = '/';
        if (bad)
            return -1;
    }
    return mkdir(path, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

/* Everything under DIR is created relative to DIR's descriptor, one component at a time, none
 * followed when it is a symbolic link (O_NOFOLLOW), so a link planted under DIR (at a table or
 * run directory, at a part file, dangling or not) is refused and nothing outside DIR is
 * touched. DIR itself is the user's path, followed as given. */
struct out {
    const char *dir, *ext;
    int dirfd;          /* DIR */
    int zstd;           /* the parts are zstd-compressed (ext ends in ".zst") */
    atomic_int refused; /* a link was found: nothing more is written (by any job) */
};

/* A part file being written: its stream and its path under DIR. */
struct part_file {
    FILE *f;
    char rel[PATH_MAX];
};

/* @return 1 when DIR/rel is a symbolic link, after printing so (and o->refused set). */
static int refuse_link(struct out *o, int at, const char *name, const char *rel)
{
    struct stat st;
    if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(st.st_mode))
        return 0;
    fprintf(stderr, "cumemtrace export: %s/%s: a symbolic link: refusing to write through it\n",
            o->dir, rel);
    atomic_store(&o->refused, 1);
    return 1;
}

/* Creates (when missing) and opens the directory `name` in `at`; rel: its path under DIR.
 * @return its descriptor, or -1 after printing why. */
static int open_dir_at(struct out *o, int at, const char *name, const char *rel)
{
    if (refuse_link(o, at, name, rel))
        return -1;
    if (mkdirat(at, name, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "cumemtrace export: %s/%s: cannot create the directory: %s\n", o->dir, rel,
                strerror(errno));
        return -1;
    }
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && !refuse_link(o, at, name, rel)) /* planted since the look above */
        fprintf(stderr, "cumemtrace export: %s/%s: cannot open the directory: %s\n", o->dir, rel,
                strerror(errno));
    return fd;
}

/* Creates the file `name` in `at` afresh: an old regular file there is unlinked first, so a
 * hard link planted there keeps its target's bytes. @return its descriptor, or -1 after
 * printing why. */
static int create_file_at(struct out *o, int at, const char *name, const char *rel)
{
    struct stat st;
    if (refuse_link(o, at, name, rel))
        return -1;
    if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (!S_ISREG(st.st_mode)) {
            fprintf(stderr, "cumemtrace export: %s/%s: not a regular file\n", o->dir, rel);
            return -1;
        }
        if (unlinkat(at, name, 0) != 0 && errno != ENOENT) {
            fprintf(stderr, "cumemtrace export: %s/%s: cannot replace the file: %s\n", o->dir, rel,
                    strerror(errno));
            return -1;
        }
    }
    int fd = openat(at, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && !refuse_link(o, at, name, rel))
        fprintf(stderr, "cumemtrace export: %s/%s: cannot create the file: %s\n", o->dir, rel,
                strerror(errno));
    return fd;
}

/* The names of DIR/TABLE/run=RUN/part-PART.EXT's components, and their paths under DIR. */
struct part_path {
    char run[300], file[300], run_rel[PATH_MAX], file_rel[PATH_MAX];
};

/* @return 0, or -1 when a name is too long (ids and names are cut to 255 bytes: never). */
static int part_path(const struct out *o, const char *table, const char *run, const char *part,
                     struct part_path *pp)
{
    int bad = snprintf(pp->run, sizeof pp->run, "run=%s", run) >= (int)sizeof pp->run;
    bad |= snprintf(pp->file, sizeof pp->file, "part-%s.%s", part, o->ext) >= (int)sizeof pp->file;
    bad |= snprintf(pp->run_rel, sizeof pp->run_rel, "%s/%s", table, pp->run) >=
           (int)sizeof pp->run_rel;
    bad |= snprintf(pp->file_rel, sizeof pp->file_rel, "%s/%s", pp->run_rel, pp->file) >=
           (int)sizeof pp->file_rel;
    if (bad)
        fprintf(stderr, "cumemtrace export: %s/%s: the path is too long\n", o->dir, table);
    return bad ? -1 : 0;
}

/* Opens DIR/TABLE/run=RUN/part-PART.EXT into *pf, creating the directories.
 * @return pf->f, or NULL after printing why. */
static FILE *open_part(struct out *o, const char *table, const char *run, const char *part,
                       struct part_file *pf)
{
    struct part_path pp;
    pf->f = NULL;
    if (atomic_load(&o->refused) || part_path(o, table, run, part, &pp) != 0)
        return NULL;
    memcpy(pf->rel, pp.file_rel, sizeof pf->rel);
    int t = open_dir_at(o, o->dirfd, table, table);
    int r = t < 0 ? -1 : open_dir_at(o, t, pp.run, pp.run_rel);
    int fd = r < 0 ? -1 : create_file_at(o, r, pp.file, pp.file_rel);
    if (t >= 0)
        close(t);
    if (r >= 0)
        close(r);
    if (fd >= 0)
        pf->f = o->zstd ? cmt__zstd_fdopen(fd, CMT__ZSTD_FILE_LEVEL) : fdopen(fd, "w");
    if (fd >= 0 && !pf->f) {
        fprintf(stderr, "cumemtrace export: %s/%s: cannot create the file: %s\n", o->dir, pf->rel,
                strerror(errno));
        close(fd);
    }
    return pf->f;
}

/* Before anything is written: refuses a link at any table, run directory or part file this
 * export would write (the opens refuse one planted later). @return 1 after printing it. */
static int find_link(struct out *o, const char *table, const char *run, const char *part)
{
    struct part_path pp;
    if (part_path(o, table, run, part, &pp) != 0)
        return 1;
    return refuse_link(o, o->dirfd, table, table) ||
           refuse_link(o, o->dirfd, pp.run_rel, pp.run_rel) ||
           refuse_link(o, o->dirfd, pp.file_rel, pp.file_rel);
}

/* failed: the table's writer failed. @return 0, or 1 after printing why the file could not
 * be written. */
static int close_part(struct out *o, struct part_file *pf, int failed)
{
    int bad = ferror(pf->f) || failed;
    if (fclose(pf->f) != 0 || bad) {
        fprintf(stderr, "cumemtrace export: %s/%s: cannot write the file\n", o->dir, pf->rel);
        return 1;
    }
    return 0;
}

/* A table of `rows` rows (none: no file). shape: enum cmt__rows_shape. */
static int table(struct out *o, const char *name, const char *run, const char *part,
                 const struct cmt__pass *p, int shape,
                 int (*write)(const struct cmt__pass *, FILE *, int), uint64_t rows)
{
    struct part_file pf;
    if (!rows)
        return 0;
    if (!open_part(o, name, run, part, &pf))
        return 1;
    int bad = write(p, pf.f, shape) != 0;
    return close_part(o, &pf, bad);
}

struct part_name {
    char run[256], part[256];
};

/* The rows' shape of the export's format and codec (parquet compresses its pages itself). */
static int shape_of(const struct cmt__export_options *opt)
{
    if (opt->format == CMT__EXPORT_PARQUET)
        return opt->codec == CMT__EXPORT_CODEC_ZSTD ? CMT__ROWS_PARQUET : CMT__ROWS_PARQUET_PLAIN;
    return opt->format == CMT__EXPORT_JSONL ? CMT__ROWS_JSONL : CMT__ROWS_CSV;
}

/* What the runs table takes from one trace, gathered by the job that converted it. */
struct trace_figures {
    int have; /* the trace was read */
    uint64_t events, peak, episodes, fatal;
    int have_alloc; /* allocator-level records */
    uint64_t alloc_peak;
    struct cmt_failure_candidate failure;
    char host[256];
};

struct run {
    char id[256];
    uint64_t traces, events, max_peak, sum_peak, episodes, fatal, failing;
    uint64_t alloc_traces, max_alloc_peak, sum_alloc_peak; /* allocator-level records */
    struct cmt_first_failure first; /* as `report` over the same traces chooses it */
    char first_host[256];
};

static const char *const run_columns[] = {"traces",
                                          "events",
                                          "max_peak_live_bytes",
                                          "sum_peak_live_bytes",
                                          "episodes",
                                          "fatal_episodes",
                                          "failing_processes",
                                          "first_failure_wall_ns",
                                          "first_failure",
                                          "first_failing_pid",
                                          "first_failing_host",
                                          "first_failing_rank",
                                          "max_allocator_peak_allocated_bytes",
                                          "sum_allocator_peak_allocated_bytes"};
/* Their parquet types (cmt__rows_begin). */
static const char run_types[] = "uuuuuuuususiuu";
CMT__ROWS_TYPES_MATCH(run_types, run_columns);

/* One trace's figures; whether and when it failed by the one definition (first_failure.h)
 * that `report` over several traces uses. */
static void gather(struct trace_figures *fig, const struct cmt__pass *p,
                   const struct cmt_signal_seen *sig)
{
    const struct cmt_replay_totals *t = cmt_replay_totals(p->replay);
    const struct cmt_process *proc = cmt_reader_process(p->reader);
    uint32_t n = p->oom ? cmt_oom_count(p->oom) : 0;
    fig->have = 1;
    fig->events = t->events;
    fig->peak = t->peak_live_bytes;
    struct cmt_alloc_summary as;
    if ((fig->have_alloc = cmt_alloc_summarize(p->alloc, &as) != 0))
        fig->alloc_peak = as.peak_allocated_bytes;
    fig->episodes = n;
    for (uint32_t i = 0; i < n; i++)
        fig->fatal += (uint64_t)cmt_oom_episode(p->oom, i)->fatal;
    struct cmt_failure_candidate *c = &fig->failure;
    *c = (struct cmt_failure_candidate){.have_start = proc != NULL,
                                        .start_wall_ns = proc ? proc->start_wall_ns : 0,
                                        .rank = proc ? proc->rank : -1,
                                        .pid = proc ? proc->pid : 0};
    c->failure = cmt_process_failure(p->oom, t, sig, &c->t_ns);
    snprintf(fig->host, sizeof fig->host, "%s", proc && proc->hostname ? proc->hostname : "");
}

/* Adds one trace's figures, in the traces' order (which failed first, of equals, is the one
 * given first). */
static void add_to_run(struct run *run, const struct trace_figures *fig)
{
    run->traces++;
    run->events += fig->events;
    run->sum_peak += fig->peak;
    if (fig->peak > run->max_peak)
        run->max_peak = fig->peak;
    if (fig->have_alloc) {
        run->alloc_traces++;
        run->sum_alloc_peak += fig->alloc_peak;
        if (fig->alloc_peak > run->max_alloc_peak)
            run->max_alloc_peak = fig->alloc_peak;
    }
    run->episodes += fig->episodes;
    run->fatal += fig->fatal;
    run->failing += fig->failure.failure != CMT_FLEET_NO_FAILURE;
    if (cmt_first_failure_offer(&run->first, (int64_t)run->traces - 1, &fig->failure))
        memcpy(run->first_host, fig->host, sizeof run->first_host);
}

static int write_run(struct out *o, const struct run *run, int shape)
{
    struct part_file pf;
    if (!open_part(o, "runs", run->id, "0", &pf))
        return 1;
    static struct cmt__rows t;
    cmt__rows_begin(&t, pf.f, shape, run_columns, run_types,
                    sizeof run_columns / sizeof *run_columns);
    cmt__row_begin(&t);
    cmt__row_u64(&t, run->traces);
    cmt__row_u64(&t, run->events);
    cmt__row_u64(&t, run->max_peak);
    cmt__row_u64(&t, run->sum_peak);
    cmt__row_u64(&t, run->episodes);
    cmt__row_u64(&t, run->fatal);
    cmt__row_u64(&t, run->failing);
    const struct cmt_first_failure *first = &run->first;
    if (first->index >= 0) {
        cmt__row_u64(&t, first->wall_ns);
        cmt__row_str(&t, cmt_fleet_failure_name(first->failure));
        cmt__row_u64(&t, first->pid);
        cmt__row_text(&t, run->first_host);
    } else {
        cmt__row_null(&t);
        cmt__row_null(&t);
        cmt__row_null(&t);
        cmt__row_null(&t);
    }
    if (first->index >= 0 && first->rank >= 0) /* format 3.1 PROCESS */
        cmt__row_i64(&t, first->rank);
    else
        cmt__row_null(&t);
    if (run->alloc_traces) {
        cmt__row_u64(&t, run->max_alloc_peak);
        cmt__row_u64(&t, run->sum_alloc_peak);
    } else {
        cmt__row_null(&t);
        cmt__row_null(&t);
    }
    cmt__row_end(&t);
    int bad = cmt__rows_end(&t) != 0;
    return close_part(o, &pf, bad);
}

static uint64_t site_rows(const cmt_replay *rp)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < cmt_replay_site_count(rp); i++) {
        const struct cmt_replay_site *s = cmt_replay_site(rp, i);
        n += s->alloc_count || s->failures || s->host_alloc_count;
    }
    return n;
}

/* One trace: its pass, its tables, its figures for the runs table (any job's thread; quiet:
 * no progress line, several jobs share the terminal). @return 0, or 1 after printing why. */
static int one_trace(const struct cmt__export_options *opt, struct out *o, const char *path,
                     const struct part_name *name, int quiet, struct trace_figures *fig)
{
    int shape = shape_of(opt);
    struct cmt__pass p;
    if (cmt__pass_open(&p, "export", path) != 0)
        return 1;
    p.quiet_progress = quiet;
    struct cmt__export_events *events = NULL;
    struct cmt_signal_seen sig = {0};
    struct cmt_observer extra[2] = {cmt_signal_observer(&sig)};
    struct part_file ev = {0};
    if (opt->with_events) {
        if (!(events = malloc(sizeof *events))) /* a 64 KiB buffer: not on the stack */
            fprintf(stderr, "cumemtrace export: %s: out of memory\n", path);
        if (!events || !open_part(o, "events", name->run, name->part, &ev)) {
            free(events);
            cmt__pass_close(&p);
            return 1;
        }
        extra[1] = cmt__export_events_observer(events, ev.f, shape, p.reader);
        events->phases = &p.phases;
    }
    if (cmt__pass_replay(&p, CMT__PASS_OOM | CMT__PASS_REPORT, NULL, extra, ev.f ? 2 : 1) != 0) {
        if (ev.f) {
            cmt__rows_end(&events->rows); /* frees a parquet writer */
            fclose(ev.f);
        }
        free(events);
        return 1;
    }
    int rc = 0;
    if (ev.f) {
        int bad = cmt__rows_end(&events->rows) != 0;
        rc = close_part(o, &ev, bad);
    }
    free(events);
    rc |= table(o, "processes", name->run, name->part, &p, shape, cmt__export_processes, 1);
    rc |= table(o, "episodes", name->run, name->part, &p, shape, cmt__export_episodes,
                p.oom ? cmt_oom_count(p.oom) : 0);
    rc |= table(o, "sites", name->run, name->part, &p, shape, cmt__export_sites,
                site_rows(p.replay));
    rc |= cmt__pass_status(&p);
    gather(fig, &p, &sig);
    cmt__pass_close(&p);
    return rc;
}

/* ---- the jobs: each takes the next trace until none is left ---- */
struct jobs {
    const struct cmt__export_options *opt;
    struct out *o;
    char *const *traces;
    const struct part_name *names;
    struct trace_figures *figures;
    int *status; /* per trace: one_trace's */
    int ntraces, quiet;
    atomic_int next;
};

static void *job(void *arg)
{
    struct jobs *js = arg;
    for (int i; (i = atomic_fetch_add(&js->next, 1)) < js->ntraces;)
        if (!atomic_load(&js->o->refused))
            js->status[i] = one_trace(js->opt, js->o, js->traces[i], &js->names[i], js->quiet,
                                      &js->figures[i]);
    return NULL;
}

/* Converts every trace, `jobs` at a time (the caller's thread is one of them). */
static void run_jobs(struct jobs *js, unsigned jobs)
{
    pthread_t threads[CMT__EXPORT_MAX_JOBS];
    unsigned started = 0;
    if (jobs > CMT__EXPORT_MAX_JOBS)
        jobs = CMT__EXPORT_MAX_JOBS;
    if (jobs > (unsigned)js->ntraces)
        jobs = (unsigned)js->ntraces;
    js->quiet = jobs > 1;
    for (unsigned i = 1; i < jobs; i++)
        if (pthread_create(&threads[started], NULL, job, js) == 0)
            started++;
    job(js);
    for (unsigned i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
}

/* Each trace's run id and part name; refuses two traces that would write the same files,
 * before anything is written. @return 0, or 2 after printing why. */
static int name_parts(const struct cmt__export_options *opt, char *const *traces, int ntraces,
                      struct part_name *names)
{
    for (int i = 0; i < ntraces; i++) {
        if (opt->run)
            sanitize(opt->run, names[i].run, sizeof names[i].run);
        else
            run_of(traces[i], names[i].run, sizeof names[i].run);
        part_of(traces[i], names[i].part, sizeof names[i].part);
        for (int k = 0; k < i; k++)
            if (strcmp(names[k].run, names[i].run) == 0 &&
                strcmp(names[k].part, names[i].part) == 0) {
                fprintf(stderr,
                        "cumemtrace export: %s and %s would both be run=%s/part-%s: "
                        "rename one, or export them with different --run ids\n",
                        traces[k], traces[i], names[i].run, names[i].part);
                return 2;
            }
    }
    return 0;
}

/* Creates DIR (and its parents) and opens it. @return 0, or 1 after printing why. */
static int open_top(struct out *o)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s", o->dir) >= (int)sizeof path) {
        fprintf(stderr, "cumemtrace export: %s: the path is too long\n", o->dir);
        return 1;
    }
    if (mkdirs(path) != 0 || (o->dirfd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        fprintf(stderr, "cumemtrace export: %s: cannot create the directory: %s\n", o->dir,
                strerror(errno));
        return 1;
    }
    return 0;
}

/* The links under DIR that one trace's files would be written through. @return 0, or 1. */
static int find_links(const struct cmt__export_options *opt, struct out *o,
                      const struct part_name *n)
{
    static const char *const tables[] = {
#define CMT__TABLE_NAME(id, name) name,
        CMT__EXPORT_TABLES(CMT__TABLE_NAME)
#undef CMT__TABLE_NAME
    };
    for (int t = 0; t < CMT__EXPORT_TABLE_COUNT; t++) {
        if (t == CMT__EXPORT_TABLE_EVENTS && !opt->with_events)
            continue;
        if (find_link(o, tables[t], n->run, t == CMT__EXPORT_TABLE_RUNS ? "0" : n->part))
            return 1;
    }
    return 0;
}

/* The runs of the traces converted, in order of first appearance, each summed in the traces'
 * order. @return 0, or 1 when out of memory. */
static int sum_runs(const struct part_name *names, const struct trace_figures *figures, int n,
                    struct run **runs, size_t *nruns)
{
    size_t cap = 0;
    for (int i = 0; i < n; i++) {
        size_t r = 0;
        while (r < *nruns && strcmp((*runs)[r].id, names[i].run) != 0)
            r++;
        if (r == *nruns) {
            if (CMT_GROW(*runs, cap, *nruns + 1, 8) != 0) {
                fprintf(stderr, "cumemtrace export: out of memory\n");
                return 1;
            }
            memset(&(*runs)[r], 0, sizeof **runs);
            cmt_first_failure_init(&(*runs)[r].first);
            snprintf((*runs)[r].id, sizeof(*runs)[r].id, "%s", names[i].run);
            (*nruns)++;
        }
        if (figures[i].have)
            add_to_run(&(*runs)[r], &figures[i]);
    }
    return 0;
}

int cmt__export_partitioned(const struct cmt__export_options *opt, const char *dir,
                            char *const *traces, int ntraces)
{
    static const char *const suffixes[] = {
#define CMT__CODEC_SUFFIX(id, name, suffix) suffix,
        CMT__EXPORT_CODECS(CMT__CODEC_SUFFIX)
#undef CMT__CODEC_SUFFIX
    };
    int shape = shape_of(opt), parquet = opt->format == CMT__EXPORT_PARQUET;
    char ext[16];
    snprintf(ext, sizeof ext, "%s%s",
             parquet ? "parquet"
             : shape ? "jsonl"
                     : "csv",
             parquet ? "" : suffixes[opt->codec]);
    struct out o = {.dir = dir,
                    .ext = ext,
                    .dirfd = -1,
                    .zstd = !parquet && opt->codec == CMT__EXPORT_CODEC_ZSTD};
    atomic_init(&o.refused, 0);
    struct run *runs = NULL;
    size_t nruns = 0;
    struct part_name *names = calloc((size_t)ntraces, sizeof *names);
    struct trace_figures *figures = calloc((size_t)ntraces, sizeof *figures);
    int *status = calloc((size_t)ntraces, sizeof *status);
    int rc = !names || !figures || !status ? cmt__usage_error("export", "out of memory") : 0;
    if (!rc)
        rc = name_parts(opt, traces, ntraces, names);
    if (!rc && open_top(&o) != 0)
        rc = 1;
    for (int i = 0; !rc && i < ntraces; i++)
        rc = find_links(opt, &o, &names[i]);
    if (!rc) {
        struct jobs js = {opt, &o, traces, names, figures, status, ntraces, 0, 0};
        unsigned jobs = opt->jobs ? opt->jobs : (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
        run_jobs(&js, jobs ? jobs : 1);
        for (int i = 0; i < ntraces; i++)
            rc |= status[i];
        rc |= sum_runs(names, figures, ntraces, &runs, &nruns);
        for (size_t r = 0; r < nruns && !atomic_load(&o.refused); r++)
            if (runs[r].traces)
                rc |= write_run(&o, &runs[r], shape);
        rc |= atomic_load(&o.refused);
        if (!rc)
            printf("wrote %d trace%s as %zu run%s under %s\n", ntraces, ntraces == 1 ? "" : "s",
                   nruns, nruns == 1 ? "" : "s", dir);
        rc = rc ? 1 : 0;
    }
    if (o.dirfd >= 0)
        close(o.dirfd);
    free(runs);
    free(names);
    free(figures);
    free(status);
    return rc;
}
