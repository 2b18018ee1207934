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
#include "output.h"

static int takes_value(const char *arg, const char *const *value_options)
{
    for (int k = 0; value_options && value_options[k]; k++)
        if (!strcmp(arg, value_options[k]))
            return 1;
    return 0;
}

int cmt__fleet_wanted(int argc, char **argv, int alone, const char *const *value_options)
{
    int positional = 0, dir = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        struct stat st;
        if (!strcmp(a, "--jobs") || !strncmp(a, "--jobs=", 7))
            return 1;
        if (a[0] == '-' && a[1]) {
            i += takes_value(a, value_options) && i + 1 < argc;
            continue;
        }
        positional++;
        dir |= stat(a, &st) == 0 && S_ISDIR(st.st_mode);
    }
    return positional > alone || dir;
}

static int number(const char *cmd, const char *name, const char *v, unsigned long max,
                  unsigned long *out)
{
    char *end;
    errno = 0;
    unsigned long n = v && *v >= '0' && *v <= '9' ? strtoul(v, &end, 10) : 0;
    if (!v || *v < '0' || *v > '9' || *end || errno || n < 1 || n > max)
        return cmt__usage_error(cmd, "%s wants a number 1..%lu, got '%s'", name, max, v ? v : "");
    *out = n;
    return 0;
}

/* @return -1 when argv[*i] was an option this form takes (handled), else the exit status. */
static int option(int argc, char **argv, int *i, const char *cmd, unsigned allowed,
                  struct cmt__fleet_args *a)
{
    const char *v;
    unsigned long n;
    if ((allowed & CMT__FA_JSON) && cmt__is(argv[*i], "--json", NULL))
        return a->json = 1, -1;
    if ((allowed & CMT__FA_CSV) && cmt__is(argv[*i], "--csv", NULL))
        return a->csv = 1, -1;
    if (cmt__value_option(argc, argv, i, "--jobs", NULL, &v))
        return number(cmd, "--jobs", v, 64, &n) ? 2 : (a->jobs = (unsigned)n, -1);
    if ((allowed & CMT__FA_POINTS) && cmt__value_option(argc, argv, i, "--points", NULL, &v))
        return number(cmd, "--points", v, 100000, &n) || n < 2 ? 2 : (a->points = (uint32_t)n, -1);
    if ((allowed & CMT__FA_FAIL_PCT) &&
        cmt__value_option(argc, argv, i, "--fail-if-peak-grows", NULL, &v)) {
        char *end;
        a->fail_pct = v ? strtod(v, &end) : 0;
        if (!v || !*v || *end || a->fail_pct < 0)
            return cmt__usage_error(cmd, "--fail-if-peak-grows wants a percentage, got '%s'",
                                    v ? v : "");
        return a->have_fail = 1, -1;
    }
    return cmt__usage_error(cmd, "unknown option '%s'", argv[*i]);
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
    for (int i = 1; i < argc; i++) {
        int rc = -1;
        if (cmt__is(argv[i], "-h", "--help")) {
            fputs(usage, stdout);
            rc = 0;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            rc = option(argc, argv, &i, cmd, allowed, a);
        } else {
            a->inputs[a->ninputs++] = argv[i];
        }
        if (rc >= 0) {
            free(a->inputs);
            a->inputs = NULL;
            return rc;
        }
    }
    if (a->ninputs)
        return -1;
    free(a->inputs);
    a->inputs = NULL;
    return cmt__usage_error(cmd, "missing trace FILE or DIRECTORY");
}

int cmt__fleet_parse_open(int argc, char **argv, const char *cmd, const char *usage,
                          unsigned allowed, struct cmt__fleet_args *a, struct cmt_fleet *fleet)
{
    int rc = cmt__fleet_parse(argc, argv, cmd, usage, allowed, a);
    if (rc >= 0)
        return rc;
    rc = cmt__fleet_open(cmd, a->inputs, a->ninputs, a->jobs, fleet);
    free(a->inputs);
    a->inputs = NULL;
    return rc ? rc : -1;
}

int cmt__fleet_open(const char *cmd, const char *const *inputs, int n, unsigned jobs,
                    struct cmt_fleet *fleet)
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
    struct cmt_fleet_options o = {.jobs = jobs};
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
    if (p->rank >= 0)
        cmt__json_i64(j, "rank", p->rank);
    else
        cmt__json_null(j, "rank");
    if (p->local_rank >= 0)
        cmt__json_i64(j, "local_rank", p->local_rank);
    else
        cmt__json_null(j, "local_rank");
    if (p->world_size >= 0)
        cmt__json_i64(j, "world_size", p->world_size);
    else
        cmt__json_null(j, "world_size");
    if (p->host)
        cmt__json_string(j, "host", p->host);
    else
        cmt__json_null(j, "host");
    if (p->job_id)
        cmt__json_string(j, "job_id", p->job_id);
    else
        cmt__json_null(j, "job_id");
    cmt__json_string(j, "command", p->command ? p->command : "");
}
