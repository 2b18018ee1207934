/* fleet_cli.c — the several-trace forms' arguments, loading and labels (fleet_cli.h). */
#include "fleet/fleet_cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cmt_error.h"
#include "options.h"
#include "output.h"

int cmt__fleet_wanted(int argc, char **argv, int alone, const struct cmt__option *options)
{
    int positional = 0, dir = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        struct stat st;
        if (!strcmp(a, "--jobs") || !strncmp(a, "--jobs=", 7))
            return 1;
        if (a[0] == '-' && a[1]) {
            i += cmt__opts_takes_value(options, a) && i + 1 < argc;
            continue;
        }
        positional++;
        dir |= stat(a, &st) == 0 && S_ISDIR(st.st_mode);
    }
    return positional > alone || dir;
}

static int number(const char *cmd, const char *name, const char *v, unsigned long min,
                  unsigned long max, unsigned long *out)
{
    char *end;
    errno = 0;
    unsigned long n = v && *v >= '0' && *v <= '9' ? strtoul(v, &end, 10) : 0;
    if (!v || *v < '0' || *v > '9' || *end || errno || n < min || n > max)
        return cmt__usage_error(cmd, "%s wants a number %lu..%lu, got '%s'", name, min, max,
                                v ? v : "");
    *out = n;
    return 0;
}

enum { OPT_HELP = 1, OPT_JSON, OPT_CSV, OPT_JOBS, OPT_POINTS, OPT_FAIL_PCT };

/* Every option of the several-trace forms; `allowed` says which a command takes. */
static const struct cmt__option fleet_options[] = {
    CMT__OPTION_HELP(OPT_HELP),
    {NULL, "--json", 0, OPT_JSON, NULL},
    {NULL, "--csv", 0, OPT_CSV, NULL},
    {NULL, "--jobs", 1, OPT_JOBS, NULL},
    {NULL, "--points", 1, OPT_POINTS, NULL},
    {NULL, "--fail-if-peak-grows", 1, OPT_FAIL_PCT, NULL},
    {0},
};

/* @return -1 when the option was one this form takes (handled), else the exit status. */
static int option(const struct cmt__opts *p, int opt, unsigned allowed, struct cmt__fleet_args *a)
{
    const char *cmd = p->cmd, *v = p->value;
    unsigned long n;
    if (opt == OPT_JOBS)
        return number(cmd, "--jobs", v, 1, 64, &n) ? 2 : (a->jobs = (unsigned)n, -1);
    if (opt == OPT_JSON && (allowed & CMT__FA_JSON))
        return a->json = 1, -1;
    if (opt == OPT_CSV && (allowed & CMT__FA_CSV))
        return a->csv = 1, -1;
    if (opt == OPT_POINTS && (allowed & CMT__FA_POINTS))
        return number(cmd, "--points", v, 2, 100000, &n) ? 2 : (a->points = (uint32_t)n, -1);
    if (opt == OPT_FAIL_PCT && (allowed & CMT__FA_FAIL_PCT)) {
        char *end;
        a->fail_pct = v ? strtod(v, &end) : 0;
        if (!v || !*v || *end || a->fail_pct < 0)
            return cmt__usage_error(cmd, "--fail-if-peak-grows wants a percentage, got '%s'",
                                    v ? v : "");
        return a->have_fail = 1, -1;
    }
    return cmt__usage_error(cmd, "unknown option '%s'", p->arg);
}

/* @return -1 to go on, or the exit status. */
static int parse(struct cmt__opts *p, const char *usage, unsigned allowed,
                 struct cmt__fleet_args *a)
{
    int opt;
    while ((opt = cmt__opts_next(p)) != CMT__OPT_END) {
        int rc = -1;
        if (opt == OPT_HELP) {
            fputs(usage, stdout);
            rc = 0;
        } else if (opt == CMT__OPT_ERROR) {
            rc = 2;
        } else if (opt == CMT__OPT_ARG) {
            a->inputs[a->ninputs++] = p->value;
        } else {
            rc = option(p, opt, allowed, a);
        }
        if (rc >= 0)
            return rc;
    }
    return -1;
}

int cmt__fleet_parse(int argc, char **argv, const char *cmd, const char *usage, unsigned allowed,
                     struct cmt__fleet_args *a)
{
    memset(a, 0, sizeof *a);
    a->inputs = calloc((size_t)argc, sizeof *a->inputs);
    if (!a->inputs) {
        fprintf(stderr, "cumemtrace %s: out of memory\n", cmd);
        return 1;
    }
    struct cmt__opts p;
    cmt__opts_init(&p, cmd, argc, argv, fleet_options, 0);
    int rc = parse(&p, usage, allowed, a);
    if (rc < 0 && a->ninputs)
        return -1;
    free(a->inputs);
    a->inputs = NULL;
    return rc >= 0 ? rc : cmt__usage_error(cmd, "missing trace FILE or DIRECTORY");
}

static int open_fleet(const char *cmd, const char *const *inputs, int n, unsigned jobs,
                      unsigned flags, struct cmt_fleet *fleet);

int cmt__fleet_parse_open(int argc, char **argv, const char *cmd, const char *usage,
                          unsigned allowed, struct cmt__fleet_args *a, struct cmt_fleet *fleet)
{
    int rc = cmt__fleet_parse(argc, argv, cmd, usage, allowed, a);
    if (rc >= 0)
        return rc;
    rc = open_fleet(cmd, a->inputs, a->ninputs, a->jobs, allowed, fleet);
    free(a->inputs);
    a->inputs = NULL;
    return rc ? rc : -1;
}

int cmt__fleet_open(const char *cmd, const char *const *inputs, int n, unsigned jobs,
                    struct cmt_fleet *fleet)
{
    return open_fleet(cmd, inputs, n, jobs, 0, fleet);
}

/* flags: CMT__FA_KEEP_READERS and CMT__FA_NO_SERIES (the others are ignored) */
static int open_fleet(const char *cmd, const char *const *inputs, int n, unsigned jobs,
                      unsigned flags, struct cmt_fleet *fleet)
{
    char **paths;
    size_t count;
    const char *bad;
    int rc = cmt_fleet_paths(inputs, (size_t)n, &paths, &count, &bad);
    if (rc) {
        fprintf(stderr, "cumemtrace %s: %s: %s\n", cmd, bad ? bad : "traces",
                bad ? "cannot list the directory" : cmt_strerror(rc));
        return 1;
    }
    if (!count) {
        fprintf(stderr, "cumemtrace %s: no trace (*.cmt) in %s\n", cmd, inputs[0]);
        free(paths);
        return 1;
    }
    int keep = (flags & CMT__FA_KEEP_READERS) != 0;
    struct cmt_fleet_options o = {.jobs = jobs,
                                  .series_points = flags & CMT__FA_NO_SERIES ? CMT_FLEET_NO_SERIES
                                                                             : 0,
                                  .keep_readers = keep,
                                  .ledger_guess = keep};
    rc = cmt_fleet_load(fleet, (const char *const *)paths, count, &o);
    for (size_t i = 0; i < count; i++)
        free(paths[i]);
    free(paths);
    if (rc) {
        fprintf(stderr, "cumemtrace %s: %s\n", cmd, cmt_strerror(rc));
        return 1;
    }
    uint32_t readable = 0;
    for (uint32_t p = 0; p < fleet->count; p++) {
        const struct cmt_fleet_process *pr = &fleet->processes[p];
        if (pr->error)
            fprintf(stderr, "cumemtrace %s: %s: %s (left out)\n", cmd, pr->path,
                    cmt_err_message(&pr->open_err));
        else if (pr->damage)
            fprintf(stderr, "cumemtrace %s: warning: %s: %s; using what came before it\n", cmd,
                    pr->path, cmt_strerror(pr->damage));
        readable += !pr->error;
    }
    if (!readable) {
        fprintf(stderr, "cumemtrace %s: none of the %u traces could be read\n", cmd, fleet->count);
        cmt_fleet_free(fleet);
        return 1;
    }
    return 0;
}

const char *cmt__fleet_who(const struct cmt_fleet_process *p, char *buf, size_t size)
{
    char host[256];
    const char *h = p->host ? cmt__text(p->host, host, sizeof host) : "?";
    if (p->rank >= 0)
        snprintf(buf, size, "rank %d (pid %" PRIu64 " on %s)", (int)p->rank, p->pid, h);
    else
        snprintf(buf, size, "pid %" PRIu64 " on %s", p->pid, h);
    return buf;
}

const char *cmt__wall_time(uint64_t wall_ns, char buf[40])
{
    time_t s = (time_t)(wall_ns / 1000000000u);
    struct tm tm;
    char day[32] = "?";
    if (gmtime_r(&s, &tm))
        strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(buf, 40, "%s.%03u UTC", day, (unsigned)(wall_ns % 1000000000u / 1000000u));
    return buf;
}

void cmt__fleet_json_who(struct cmt__json *j, const struct cmt_fleet_process *p)
{
    cmt__json_string(j, "file", p->path);
    cmt__json_u64(j, "pid", p->pid);
    cmt__json_i64_or_null(j, "rank", p->rank);
    cmt__json_i64_or_null(j, "local_rank", p->local_rank);
    cmt__json_i64_or_null(j, "world_size", p->world_size);
    cmt__json_string_or_null(j, "host", p->host);
    cmt__json_string_or_null(j, "job_id", p->job_id);
    cmt__json_string(j, "command", p->command ? p->command : "");
}
