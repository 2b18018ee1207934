/* cmd_html.c — `cumemtrace html [-o OUT.html] [--points N] [--whatif|--no-whatif] FILE [FILE2]`:
 * one self-contained HTML report of one run, or of two runs and their diff; of a directory of
 * ranks (or three traces or more), one rank's report under every rank's memory (html_ranks.c).
 *
 * Two passes per trace: the first runs oom, report and diff's side and chooses the call-site
 * groups the chart stacks (the groups can only be chosen once the peak is known); the second
 * fills the series stacked by those groups and, when a what-if applies, collects the
 * tensor-level stream. html_page.c writes the page. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmt_error.h"
#include "commands.h"
#include "html/html.h"
#include "html/html_ranks.h"
#include "oom.h"
#include "print/ledger_print.h"
#include "whatif_blocks.h"
#include "print/whatif_cli.h"
#include "options.h"
#include "output.h"
#include "progress.h"

#define CMD "html"
#define GROUPS 10
#define DEFAULT_POINTS 1500
#define LEDGER_POINTS 120 /* the ledger bar's moments: bucket ends, and the peak */
#define WHATIF_EVENT_LIMIT UINT64_C(20000000) /* above it --whatif is needed */
#define DIFF_SITES 15
#define LEVEL_CENTRES 4     /* windows of finer levels: the peak and the first OOMs */
#define LEVEL_POINTS 1000   /* buckets per finer level */
#define HISTORY_POINTS 2000 /* points of the allocator's lines over its events */
#define RANK_POINTS 500     /* buckets of each rank's line (ranks view): a few pixels each */

static const char usage[] =
    "usage: cumemtrace html [-o OUT.html] [--points N] [--whatif | --no-whatif] [--capacity "
    "BYTES]\n"
    "                      FILE [FILE2] | DIR | FILE1 FILE2 FILE3...\n"
    "\n"
    "Writes one self-contained HTML file (no network needed, opens from file://): the summary,\n"
    "per device an interactive memory timeline stacked by the top call sites with the device's\n"
    "capacity, the memory held by other processes and the out-of-memory failures (zoom with the\n"
    "wheel, pan by dragging, hover for the stack under the cursor), each OOM's figures, verdict\n"
    "and holders, the what-if table of allocator settings when the trace allows one, and the\n"
    "leaks at exit. With FILE2, both runs on one time axis and the call sites that changed most.\n"
    "With allocator-level records (PyTorch's caching allocator, or a snapshot .pickle as FILE):\n"
    "the allocated and reserved lines, and the allocator's segments and blocks at each OOM.\n"
    "With a directory of traces (one per rank) or three traces or more: every rank's device "
    "memory\n"
    "on one time axis (the allocator's where recorded), then the page of the first rank to fail,\n"
    "else of the one with the highest peak.\n"
    "\n"
    "  -o, --output OUT  the page (default: FILE without .cmt, plus .html; DIR.html; for\n"
    "                three traces or more, FILE1 without .cmt, plus -ranks.html)\n"
    "  --points N    at most N points per device and run (default 1500; peaks stay exact)\n"
    "  --whatif      run the what-if sweep however long the trace (default: up to 20M events)\n"
    "  --no-whatif   never run it\n"
    "  --capacity BYTES  the what-if's memory to reserve, e.g. 20GiB (default, as whatif: what\n"
    "                the trace says was free, else no limit, \"capacity unknown\")\n"
    "  -h, --help    this help\n";

struct options {
    const char *out, **paths; /* the arguments (argv's) */
    size_t npaths;
    char **traces; /* several traces (a directory's, or three or more): the ranks view */
    size_t ntraces;
    uint32_t points;
    int whatif;        /* 1 forced, 0 never, -1 default */
    uint64_t capacity; /* --capacity; 0: cmt_whatif_capacity_choose's default */
};

enum { OPT_HELP = 1, OPT_OUTPUT, OPT_POINTS, OPT_CAPACITY, OPT_WHATIF, OPT_NO_WHATIF };

const struct cmt__option cmt_cmd_html_options[] = {
    CMT__OPTION_HELP(OPT_HELP),
    {"-o", "--output", 1, OPT_OUTPUT, NULL},
    {NULL, "--points", 1, OPT_POINTS, NULL},
    {NULL, "--capacity", 1, OPT_CAPACITY, NULL},
    {NULL, "--whatif", 0, OPT_WHATIF, NULL},
    {NULL, "--no-whatif", 0, OPT_NO_WHATIF, NULL},
    {0},
};

/* One option's value into *o. @return 0, or 2 after a usage error. */
static int option(int opt, const char *v, struct options *o)
{
    char *end;
    long n;
    switch (opt) {
    case OPT_OUTPUT:
        if (!v || !*v)
            return cmt__usage_error(CMD, "-o needs an output file");
        o->out = v;
        return 0;
    case OPT_POINTS:
        n = v ? strtol(v, &end, 10) : 0;
        if (!v || end == v || *end || n < 2 || n > 100000)
            return cmt__usage_error(CMD, "--points wants 2..100000, got '%s'", v ? v : "");
        o->points = (uint32_t)n;
        return 0;
    case OPT_CAPACITY:
        if (!v || cmt_whatif_parse_bytes(v, &o->capacity) != 0)
            return cmt__usage_error(CMD, "--capacity: '%s' is not a size such as 20GiB",
                                    v ? v : "");
        return 0;
    default: /* --whatif, --no-whatif */
        if (o->whatif >= 0 && o->whatif != (opt == OPT_WHATIF))
            return cmt__usage_error(CMD, "--whatif and --no-whatif conflict: choose one");
        o->whatif = opt == OPT_WHATIF;
        return 0;
    }
}

/* An option or a trace (cmt__opts_parse). @return 0, or 2 after a usage error. */
static int on_arg(const struct cmt__opts *p, int opt, void *ctx)
{
    struct options *o = ctx;
    if (opt != CMT__OPT_ARG)
        return option(opt, p->value, o) ? 2 : 0;
    o->paths[o->npaths++] = p->value;
    return 0;
}

static int parse_args(int argc, char **argv, struct options *o)
{
    o->points = DEFAULT_POINTS;
    o->whatif = -1;
    if (!(o->paths = calloc((size_t)argc + 1, sizeof *o->paths))) {
        fprintf(stderr, "cumemtrace %s: out of memory\n", CMD);
        return 1;
    }
    int rc = cmt__opts_parse(CMD, argc, argv, cmt_cmd_html_options, 0, usage, on_arg, o);
    if (rc)
        return rc;
    if (!o->npaths)
        return cmt__usage_error(CMD, "missing trace FILE");
    if (o->npaths != 2) { /* one trace, a directory's traces, or three or more: the ranks */
        if (o->npaths == 1 && !cmt__is_dir(o->paths[0]))
            return 0;
        if (cmt__trace_paths(CMD, o->paths, o->npaths, &o->traces, &o->ntraces) != 0)
            return 1;
        if (o->ntraces == 1) /* a directory's one trace: its page */
            o->paths[0] = o->traces[0];
        return 0;
    }
    static char one[2][4096]; /* a directory's one trace */
    for (size_t i = 0; i < o->npaths; i++)
        if (!(o->paths[i] = cmt__one_trace(CMD, o->paths[i],
                                           "two arguments are two runs to compare: name one "
                                           "trace for each (`cumemtrace html DIR` draws every "
                                           "rank of a directory)",
                                           one[i], sizeof one[i])))
            return 1;
    return 0;
}

/* The what-if sweep of a collected stream: `cumemtrace whatif`'s default one (its capacity
 * choice, its device, its max_split_size_mb ladder with PyTorch's other defaults), so the page's
 * rows are the ones whatif prints for the same trace. */
static void whatif_sweep(const struct options *o, struct cmt__html_run *run,
                         const struct cmt_whatif_stream *s)
{
    if (s->caching_detected) {
        snprintf(run->whatif_reason, sizeof run->whatif_reason,
                 "the trace looks recorded through a caching allocator (%s); record with "
                 "PYTORCH_NO_CUDA_MEMORY_CACHING=1 for a what-if",
                 s->caching_reason);
        return;
    }
    struct cmt_whatif_capacity *cap = &run->whatif_capacity;
    cmt_whatif_capacity_choose(s, o->capacity, cap);
    if (!o->capacity) /* a failure other processes caused: what the process had then */
        cmt__whatif_capacity_at_failure(run->pass.oom, s->device, cap);
    struct cmt_whatif_device dev = cmt_whatif_capacity_device(cap);
    struct cmt_whatif_setting settings[CMT__HTML_WHATIF_MAX], base;
    cmt_whatif_setting_default(&base);
    base.max_split_size = UINT64_MAX;
    uint64_t split[6];
    size_t n = cmt_whatif_default_splits_on(s, &dev, &base, split);
    for (size_t i = 0; i < n; i++) {
        settings[i] = base;
        settings[i].max_split_size = split[i];
    }
    if (cmt_whatif_run_on(s, &dev, settings, n, 0, run->whatif) != 0) {
        snprintf(run->whatif_reason, sizeof run->whatif_reason, "the sweep could not run");
        return;
    }
    struct cmt_whatif_recommendation rec;
    cmt_whatif_recommend(run->whatif, n, &rec);
    run->whatif_count = n;
    run->whatif_best = rec.best;
    cmt__whatif_capacity_text(cap, s, run->whatif_capacity_text, sizeof run->whatif_capacity_text);
    if (cap->source == CMT_WHATIF_CAPACITY_UNKNOWN && rec.best >= 0)
        cmt__whatif_unknown_capacity_advice(&run->whatif[rec.best], run->whatif_advice,
                                            sizeof run->whatif_advice);
    run->have_whatif = 1;
}

/* Whether this run gets a what-if, or why not. */
static int want_whatif(const struct options *o, struct cmt__html_run *run)
{
    const struct cmt_replay_totals *t = cmt_replay_totals(run->pass.replay);
    if (o->whatif == 0) {
        snprintf(run->whatif_reason, sizeof run->whatif_reason, "not asked for (--no-whatif)");
        return 0;
    }
    if (o->whatif < 0 && t->events > WHATIF_EVENT_LIMIT) {
        snprintf(run->whatif_reason, sizeof run->whatif_reason,
                 "%" PRIu64 " events: longer than the default limit (--whatif runs it)", t->events);
        return 0;
    }
    return 1;
}

/* The finer levels' windows: around the device peak that is the run's, then the first OOMs
 * (the page's budget: LEVEL_CENTRES windows of LEVEL_POINTS buckets per level). */
static int levels_init(struct cmt__html_run *run)
{
    const cmt_replay *rp = run->pass.replay;
    uint64_t t[LEVEL_CENTRES];
    int32_t dev[LEVEL_CENTRES];
    size_t n = 0;
    const struct cmt_replay_device *top = NULL;
    for (uint32_t s = 0; s < cmt_replay_device_count(rp); s++) {
        const struct cmt_replay_device *d = cmt_replay_device_slot(rp, s);
        if (d && (!top || d->peak_live_bytes > top->peak_live_bytes))
            top = d;
    }
    if (top && top->peak_live_bytes) {
        t[n] = top->peak_t_ns;
        dev[n++] = top->dev;
    }
    for (uint32_t i = 0; run->pass.oom && i < cmt_oom_count(run->pass.oom) && n < LEVEL_CENTRES;
         i++) {
        t[n] = cmt_oom_episode(run->pass.oom, i)->t_ns;
        dev[n++] = cmt_oom_episode(run->pass.oom, i)->dev;
    }
    return cmt_site_levels_init(&run->levels, &run->series, t, dev, n,
                                cmt_replay_totals(rp)->last_t_ns, LEVEL_POINTS);
}

/* The second pass, over the first pass's reader rewound (its tables stay): the series stacked
 * by the chosen groups, and the what-if's stream. @return 0, or 1 after saying why. */
static int second_pass(const struct options *o, struct cmt__html_run *run)
{
    const char *path = run->pass.path;
    cmt_reader *r = run->pass.reader;
    cmt_replay *rp = NULL;
    struct cmt_whatif_stream stream, blocks;
    struct cmt_whatif_selfcheck check = {0};
    struct cmt_whatif_collector *wc = NULL;
    struct cmt_whatif_block_collector *bc = NULL;
    int whatif = want_whatif(o, run);
    cmt_reader_rewind(r);
    if (cmt_replay_create(&rp, r) != 0 ||
        cmt_site_timeline_init(&run->series, o->points, &run->groups) != 0 ||
        levels_init(run) != 0 ||
        (whatif && (cmt_whatif_collector_create(&wc, &stream) != 0 ||
                    cmt_whatif_block_collector_create(&bc, &blocks, &check) != 0))) {
        fprintf(stderr, "cumemtrace %s: %s: out of memory\n", CMD, path);
        cmt_whatif_collector_destroy(wc);
        cmt_replay_destroy(rp);
        return 1;
    }
    run->have_series = 1;
    if (cmt_alloc_present(run->pass.alloc)) {
        run->have_alloc = 1;
        if (cmt__html_alloc_init(&run->alloc, run->pass.alloc, o->points,
                                 cmt_replay_totals(run->pass.replay)->last_t_ns) != 0)
            run->alloc.failed = 1;
    }
    struct cmt_observer obs[11];
    size_t n = 0;
    uint64_t times[LEDGER_POINTS + 1];
    const struct cmt_replay_totals *first = cmt_replay_totals(run->pass.replay);
    const struct cmt_ledger_options lo = {
        .times = times,
        .time_count = cmt__ledger_page_times(first->last_t_ns, first->peak_t_ns, o->points,
                                             LEDGER_POINTS, times)};
    if (cmt_alloc_create(&run->ledger_alloc) != 0 ||
        cmt_ledger_create(&run->ledger, run->ledger_alloc, &lo) != 0 ||
        (run->have_alloc &&
         (cmt_alloc_history_create(&run->history, run->ledger_alloc, HISTORY_POINTS) != 0 ||
          cmt_alloc_outside_create(&run->outside, run->history) != 0))) {
        fprintf(stderr, "cumemtrace %s: %s: out of memory\n", CMD, path);
        cmt_replay_destroy(rp);
        return 1;
    }
    struct cmt__progress progress;
    struct stat st;
    if (cmt__progress_wanted(stderr)) {
        cmt__progress_init(&progress, stderr, CMD, path, 1,
                           stat(path, &st) == 0 ? (uint64_t)st.st_size : 0, cmt__progress_now_ns());
        progress.stage = 2;
        progress.stages = 2;
        obs[n++] = cmt__progress_observer(&progress);
    }
    obs[n++] = cmt_site_timeline_observer(&run->series);
    obs[n++] = cmt_site_levels_observer(&run->levels); /* after the series it reads */
    if (wc) {
        obs[n++] = cmt_whatif_observer(wc);
        obs[n++] = cmt_whatif_block_observer(bc);
    }
    if (run->have_alloc && !run->alloc.failed)
        obs[n++] = cmt__html_alloc_observer(&run->alloc);
    obs[n++] = cmt_alloc_observer(run->ledger_alloc); /* before the ledger, which reads it */
    obs[n++] = cmt_ledger_observer(run->ledger);
    if (run->history) /* after the view it reads */
        obs[n++] = cmt_alloc_history_observer(run->history);
    if (run->outside) /* its finish reads the history's segments */
        obs[n++] = cmt_alloc_outside_observer(run->outside);
    int rc = cmt_replay_run(rp, obs, n);
    if (n && obs[0].ctx == &progress)
        cmt__progress_done(&progress);
    if (wc) {
        /* as `whatif`: the allocator's block events when the trace has them, else the driver's */
        struct cmt_err err = {0};
        int brc = cmt_whatif_block_collector_end(bc, rc, &err);
        int drc = cmt_whatif_collector_end(wc, rc, brc == CMT_ENOT_FOUND ? &err : NULL);
        const struct cmt_whatif_stream *use = brc == CMT_ENOT_FOUND ? (drc ? NULL : &stream)
                                              : brc                 ? NULL
                                                                    : &blocks;
        if (use)
            whatif_sweep(o, run, use);
        else
            snprintf(run->whatif_reason, sizeof run->whatif_reason, "%s", cmt_err_message(&err));
        if (drc == 0)
            cmt_whatif_stream_free(&stream);
        if (brc == 0)
            cmt_whatif_stream_free(&blocks);
        cmt_whatif_collector_destroy(wc);
        cmt_whatif_block_collector_destroy(bc);
        cmt_whatif_selfcheck_free(&check);
    }
    cmt_replay_destroy(rp);
    if (rc == CMT_ENOMEM || run->series.failed || run->alloc.failed) {
        fprintf(stderr, "cumemtrace %s: %s: out of memory\n", CMD, path);
        return 1;
    }
    return 0;
}

static int collect(const struct options *o, struct cmt__html_run *run, const char *path)
{
    unsigned want = CMT__PASS_OOM | CMT__PASS_REPORT |
                    (o->npaths == 2 && !o->traces ? CMT__PASS_DIFF : 0);
    if (cmt__pass_open(&run->pass, CMD, path) != 0)
        return 1;
    run->pass.stage = 1; /* second_pass follows */
    run->pass.stages = 2;
    if (cmt__pass_replay(&run->pass, want, NULL, NULL, 0) != 0)
        return 1;
    if (cmt_site_groups_choose(run->pass.replay, GROUPS, &run->groups) != 0) {
        fprintf(stderr, "cumemtrace %s: %s: out of memory\n", CMD, path);
        return 1;
    }
    return second_pass(o, run);
}

static void release(struct cmt__html_run *run)
{
    cmt_alloc_outside_destroy(run->outside);
    cmt_alloc_history_destroy(run->history);
    cmt_ledger_destroy(run->ledger);
    cmt_alloc_destroy(run->ledger_alloc);
    cmt__html_alloc_free(&run->alloc);
    cmt_site_levels_free(&run->levels);
    cmt_site_timeline_free(&run->series);
    cmt_site_groups_free(&run->groups);
    cmt__pass_close(&run->pass);
}

/* FILE without ".cmt", plus ".html"; DIR (without its trailing '/') plus ".html"; for three
 * traces or more, the first without ".cmt", plus "-ranks.html". */
static char *default_out(const struct options *o)
{
    const char *path = o->paths[0], *tail = ".html";
    size_t n = strlen(path);
    int dir = cmt__is_dir(path);
    while (dir && n > 1 && path[n - 1] == '/')
        n--;
    if (!dir && n > 4 && strcmp(path + n - 4, ".cmt") == 0)
        n -= 4;
    if (o->ntraces > 1 && !dir)
        tail = "-ranks.html";
    size_t size = n + strlen(tail) + 1;
    char *out = malloc(size);
    if (out && dir && (n == 1 && (*path == '.' || *path == '/')))
        snprintf(out, size, "ranks.html"); /* "." or "/": the page in the working directory */
    else if (out)
        snprintf(out, size, "%.*s%s", (int)n, path, tail);
    return out;
}

static int write_page(const char *out, struct cmt__html_run *runs, size_t nruns)
{
    struct cmt_site_delta *deltas = NULL;
    size_t ndeltas = 0;
    if (nruns == 2 && cmt_diff_sites(&runs[0].pass.diff, &runs[1].pass.diff, &deltas, &ndeltas))
        ndeltas = 0;
    FILE *f = fopen(out, "w");
    int bad = !f ||
              cmt__html_write(f, runs, nruns, deltas, ndeltas < DIFF_SITES ? ndeltas : DIFF_SITES);
    long size = f ? ftell(f) : 0;
    if ((f && fclose(f) != 0) || bad) {
        fprintf(stderr, "cumemtrace %s: %s: cannot write the report\n", CMD, out);
        free(deltas);
        return 1;
    }
    free(deltas);
    char a[32], summary[1024], text[1024];
    for (size_t i = 0; i < nruns; i++) /* A, then B */
        printf("%s%s: %s\n", nruns > 1 ? (i ? "B: " : "A: ") : "", runs[i].pass.path,
               cmt__text(cmt__html_summary(&runs[i], summary, sizeof summary), text, sizeof text));
    const struct cmt__html_ranks *rs = runs[0].ranks;
    if (rs)
        printf("ranks: %u traces on %s; the page's is %s (%s)\n", rs->fleet.count,
               rs->aligned ? "the wall clock" : "each run's own clock from its start",
               runs[0].pass.path, rs->shown_why);
    printf("wrote %s (%s)\n", out, cmt__bytes((uint64_t)size, a));
    return 0;
}

/* Several traces: every rank's line, and the path of the one whose page is drawn (NULL after
 * saying why there is none). */
static const char *load_ranks(const struct options *o, struct cmt__html_ranks *rs)
{
    if (cmt__html_ranks_load(rs, (const char *const *)o->traces, o->ntraces,
                             o->points < RANK_POINTS ? o->points : RANK_POINTS) != 0) {
        fprintf(stderr, "cumemtrace %s: out of memory\n", CMD);
        return NULL;
    }
    for (uint32_t i = 0; i < rs->fleet.count; i++)
        if (rs->fleet.processes[i].error)
            fprintf(stderr, "cumemtrace %s: %s: %s (a rank without its line)\n", CMD,
                    rs->fleet.processes[i].path, cmt_err_message(&rs->fleet.processes[i].open_err));
    const char *shown = cmt__html_ranks_shown_path(rs);
    if (!shown)
        fprintf(stderr, "cumemtrace %s: none of the %u traces can be read\n", CMD, rs->fleet.count);
    return shown;
}

int cmt_cmd_html(int argc, char **argv)
{
    struct options o = {0};
    struct cmt__html_ranks ranks = {0};
    int rc = parse_args(argc, argv, &o), status = 1;
    struct cmt__html_run *runs = rc ? NULL : calloc(2, sizeof *runs);
    char *out = rc || o.out ? NULL : default_out(&o);
    size_t n = 0, nruns = o.traces ? 1 : o.npaths; /* traces listed: one page, ranks or one */
    if (rc) {
        status = rc < 0 ? 0 : rc;
        goto done;
    }
    if (!runs || (!o.out && !out)) {
        fprintf(stderr, "cumemtrace %s: out of memory\n", CMD);
        goto done;
    }
    if (o.ntraces > 1 && !(o.paths[0] = load_ranks(&o, &ranks)))
        goto done;
    runs[0].ranks = o.ntraces > 1 ? &ranks : NULL;
    for (; n < nruns; n++)
        if (collect(&o, &runs[n], o.paths[n]) != 0) {
            release(&runs[n]);
            goto done;
        }
    status = write_page(o.out ? o.out : out, runs, n);
    for (size_t i = 0; i < n && !status; i++)
        status = cmt__pass_status(&runs[i].pass);
done:
    for (size_t i = 0; runs && i < n; i++)
        release(&runs[i]);
    if (o.ntraces > 1)
        cmt__html_ranks_free(&ranks);
    cmt__trace_paths_free(o.traces, o.ntraces);
    free(o.paths);
    free(runs);
    free(out);
    return status;
}
