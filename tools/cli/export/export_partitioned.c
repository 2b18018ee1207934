/* export_partitioned.c — `export --partitioned DIR TRACES...`: Hive-style partitioned tables
 * (DIR/TABLE/run=ID/part-NAME.csv or .jsonl) that DuckDB, Spark and Trino read as they are:
 * processes, episodes, sites and, with --events, events (a file per trace, named by the
 * trace's file name), and runs (a file per run, aggregated over this invocation's traces of
 * that run). A table with no rows for a trace gets no file (engines refuse header-only CSV
 * files of unknown types). The run id is --run, else the name of the trace's directory;
 * ids and file names keep [A-Za-z0-9._-] and turn every other byte into '_'. A symbolic link
 * under DIR is refused, never written through (struct out). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmt_grow.h"
#include "export/export.h"
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
    int refused;        /* a link was found: nothing more is written */
    char rel[PATH_MAX]; /* the part file being written, under DIR */
};

/* @return 1 when DIR/rel is a symbolic link, after printing so (and o->refused set). */
static int refuse_link(struct out *o, int at, const char *name, const char *rel)
{
    struct stat st;
    if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(st.st_mode))
        return 0;
    fprintf(stderr, "cumemtrace export: %s/%s: a symbolic link: refusing to write through it\n",
            o->dir, rel);
    o->refused = 1;
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

/* Opens DIR/TABLE/run=RUN/part-PART.EXT, creating the directories. @return the FILE or NULL
 * after printing why. */
static FILE *open_part(struct out *o, const char *table, const char *run, const char *part)
{
    struct part_path pp;
    if (o->refused || part_path(o, table, run, part, &pp) != 0)
        return NULL;
    memcpy(o->rel, pp.file_rel, sizeof o->rel);
    int t = open_dir_at(o, o->dirfd, table, table);
    int r = t < 0 ? -1 : open_dir_at(o, t, pp.run, pp.run_rel);
    int fd = r < 0 ? -1 : create_file_at(o, r, pp.file, pp.file_rel);
    if (t >= 0)
        close(t);
    if (r >= 0)
        close(r);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
    if (fd >= 0 && !f) {
        fprintf(stderr, "cumemtrace export: %s/%s: cannot create the file: %s\n", o->dir, o->rel,
                strerror(errno));
        close(fd);
    }
    return f;
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

/* @return 0, or 1 after printing why the file could not be written. */
static int close_part(struct out *o, FILE *f)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "cumemtrace export: %s/%s: cannot write the file\n", o->dir, o->rel);
        return 1;
    }
    return 0;
}

/* A table of `rows` rows (none: no file). */
static int table(struct out *o, const char *name, const char *run, const char *part,
                 const struct cmt__pass *p, int jsonl,
                 void (*write)(const struct cmt__pass *, FILE *, int), uint64_t rows)
{
    if (!rows)
        return 0;
    FILE *f = open_part(o, name, run, part);
    if (!f)
        return 1;
    write(p, f, jsonl);
    return close_part(o, f);
}

struct part_name {
    char run[256], part[256];
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

/* Adds one trace's figures; whether and when it failed, and which failed first, by the one
 * definition (first_failure.h) that `report` over several traces uses. */
static void add_to_run(struct run *run, const struct cmt__pass *p,
                       const struct cmt_signal_seen *sig)
{
    const struct cmt_replay_totals *t = cmt_replay_totals(p->replay);
    const struct cmt_process *proc = cmt_reader_process(p->reader);
    uint32_t n = p->oom ? cmt_oom_count(p->oom) : 0;
    run->traces++;
    run->events += t->events;
    run->sum_peak += t->peak_live_bytes;
    if (t->peak_live_bytes > run->max_peak)
        run->max_peak = t->peak_live_bytes;
    struct cmt_alloc_summary as;
    if (cmt_alloc_summarize(p->alloc, &as)) {
        run->alloc_traces++;
        run->sum_alloc_peak += as.peak_allocated_bytes;
        if (as.peak_allocated_bytes > run->max_alloc_peak)
            run->max_alloc_peak = as.peak_allocated_bytes;
    }
    run->episodes += n;
    for (uint32_t i = 0; i < n; i++)
        run->fatal += (uint64_t)cmt_oom_episode(p->oom, i)->fatal;
    struct cmt_failure_candidate c = {.have_start = proc != NULL,
                                      .start_wall_ns = proc ? proc->start_wall_ns : 0,
                                      .rank = proc ? proc->rank : -1,
                                      .pid = proc ? proc->pid : 0};
    c.failure = cmt_process_failure(p->oom, t, sig, &c.t_ns);
    run->failing += c.failure != CMT_FLEET_NO_FAILURE;
    if (cmt_first_failure_offer(&run->first, (int64_t)run->traces - 1, &c))
        snprintf(run->first_host, sizeof run->first_host, "%s",
                 proc && proc->hostname ? proc->hostname : "");
}

static int write_run(struct out *o, const struct run *run, int jsonl)
{
    FILE *f = open_part(o, "runs", run->id, "0");
    if (!f)
        return 1;
    static struct cmt__rows t;
    cmt__rows_begin(&t, f, jsonl, run_columns, sizeof run_columns / sizeof *run_columns);
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
    cmt__rows_end(&t);
    return close_part(o, f);
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

/* One trace: its pass, its tables. @return 0, or 1 after printing why. */
static int one_trace(const struct cmt__export_options *opt, struct out *o, const char *path,
                     struct run *r, const char *part)
{
    int jsonl = opt->format == CMT__EXPORT_JSONL;
    struct cmt__pass p;
    if (cmt__pass_open(&p, "export", path) != 0)
        return 1;
    static struct cmt__export_events events;
    struct cmt_signal_seen sig = {0};
    struct cmt_observer extra[2] = {cmt_signal_observer(&sig)};
    FILE *ev = NULL;
    if (opt->with_events) {
        if (!(ev = open_part(o, "events", r->id, part))) {
            cmt__pass_close(&p);
            return 1;
        }
        extra[1] = cmt__export_events_observer(&events, ev, jsonl, p.reader);
        events.phases = &p.phases;
    }
    if (cmt__pass_replay(&p, CMT__PASS_OOM | CMT__PASS_REPORT, NULL, extra, ev ? 2 : 1) != 0) {
        if (ev)
            fclose(ev);
        return 1;
    }
    if (ev)
        cmt__rows_end(&events.rows);
    int rc = ev ? close_part(o, ev) : 0;
    rc |= table(o, "processes", r->id, part, &p, jsonl, cmt__export_processes, 1);
    rc |= table(o, "episodes", r->id, part, &p, jsonl, cmt__export_episodes,
                p.oom ? cmt_oom_count(p.oom) : 0);
    rc |= table(o, "sites", r->id, part, &p, jsonl, cmt__export_sites, site_rows(p.replay));
    rc |= cmt__pass_status(&p);
    add_to_run(r, &p, &sig);
    cmt__pass_close(&p);
    return rc;
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

int cmt__export_partitioned(const struct cmt__export_options *opt, const char *dir,
                            char *const *traces, int ntraces)
{
    struct out o = {dir, opt->format == CMT__EXPORT_JSONL ? "jsonl" : "csv", -1, 0, ""};
    struct run *runs = NULL;
    size_t nruns = 0, cap = 0;
    struct part_name *names = calloc((size_t)ntraces, sizeof *names);
    if (!names)
        return cmt__usage_error("export", "out of memory");
    int rc = name_parts(opt, traces, ntraces, names);
    if (!rc && open_top(&o) != 0)
        rc = 1;
    for (int i = 0; !rc && i < ntraces; i++)
        rc = find_links(opt, &o, &names[i]);
    if (rc) {
        if (o.dirfd >= 0)
            close(o.dirfd);
        free(names);
        return rc;
    }
    for (int i = 0; i < ntraces && !o.refused; i++) {
        size_t r = 0;
        while (r < nruns && strcmp(runs[r].id, names[i].run) != 0)
            r++;
        if (r == nruns) {
            if (CMT_GROW(runs, cap, nruns + 1, 8) != 0) {
                fprintf(stderr, "cumemtrace export: out of memory\n");
                rc = 1;
                break;
            }
            memset(&runs[nruns], 0, sizeof *runs);
            cmt_first_failure_init(&runs[nruns].first);
            snprintf(runs[nruns].id, sizeof runs[nruns].id, "%s", names[i].run);
            nruns++;
        }
        rc |= one_trace(opt, &o, traces[i], &runs[r], names[i].part);
    }
    for (size_t r = 0; r < nruns && !o.refused; r++)
        if (runs[r].traces)
            rc |= write_run(&o, &runs[r], opt->format == CMT__EXPORT_JSONL);
    close(o.dirfd);
    if (!rc)
        printf("wrote %d trace%s as %zu run%s under %s\n", ntraces, ntraces == 1 ? "" : "s", nruns,
               nruns == 1 ? "" : "s", dir);
    free(runs);
    free(names);
    return rc ? 1 : 0;
}
