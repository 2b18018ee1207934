/* cmd_diff.c — `cumemtrace diff [--json] [--fail-if-peak-grows PCT] A B`. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pass.h"
#include "print/phase_print.h"
#include "commands.h"
#include "print/alloc_print.h"
#include "fleet/fleet_cli.h"
#include "options.h"
#include "output.h"
#include "sites.h"

static const char usage[] =
    "usage: cumemtrace diff [--json] [--fail-if-peak-grows PCT] A B\n"
    "       cumemtrace diff [--json] [--fail-if-peak-grows PCT] [--jobs N] DIR_A DIR_B\n"
    "\n"
    "Compares two runs (e.g. before and after a configuration change): peak device memory per\n"
    "device and process-wide, time to peak, allocation counts, out-of-memory episodes and their\n"
    "verdicts, fragmentation at the peak, and the call sites (matched by symbolized stack)\n"
    "whose bytes at the peak changed most.\n"
    "\n"
    "Two directories of traces (runs of several processes) are compared rank by rank (process\n"
    "by process in the order report lists them when the traces know no ranks);\n"
    "--fail-if-peak-grows then applies to each rank.\n"
    "\n"
    "  --json                    {\"a\": {...}, \"b\": {...}, \"delta\": {...}}\n"
    "  --fail-if-peak-grows PCT  exit 1 when B's peak exceeds A's by more than PCT percent\n"
    "  --jobs N                  traces read at once (directories; default: the processors)\n"
    "  -h, --help                this help\n";

#define SITES 10

static void json_side(struct cmt__json *j, const char *key, const struct cmt__pass *p)
{
    const struct cmt_replay_totals *t = cmt_replay_totals(p->replay);
    cmt__json_object(j, key);
    cmt__json_string(j, "file", p->path);
    cmt__json_u64(j, "peak_live_bytes", t->peak_live_bytes);
    cmt__json_u64(j, "peak_t_ns", t->peak_t_ns);
    cmt__alloc_json_headline(j, "allocator", p->alloc);
    CMT__JSON_U64S(j, {"alloc_calls", t->alloc_calls}, {"free_calls", t->free_calls},
                   {"failures", t->failures}, {"oom_episodes", cmt_oom_count(p->oom)});
    cmt__json_array(j, "verdicts");
    for (uint32_t i = 0; i < cmt_oom_count(p->oom); i++)
        cmt__json_string(j, NULL, cmt_verdict_name(cmt_oom_episode(p->oom, i)->verdict));
    cmt__json_end_array(j);
    cmt__json_array(j, "devices");
    for (uint32_t s = 0; s < cmt_replay_device_count(p->replay); s++) {
        const struct cmt_replay_device *d = cmt_replay_device_slot(p->replay, s);
        if (!d || !d->alloc_calls)
            continue;
        cmt__json_object(j, NULL);
        cmt__json_i64(j, "dev", d->dev);
        cmt__json_u64(j, "peak_live_bytes", d->peak_live_bytes);
        cmt__json_u64(j, "peak_t_ns", d->peak_t_ns);
        cmt__alloc_json_device(j, p->alloc, d->dev);
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
    cmt__alloc_json_settings(j, p);
    const struct cmt_fragmentation f = p->diff.frag_at_peak;
    if (p->diff.have_frag) {
        cmt__json_object(j, "fragmentation_at_peak");
        cmt__json_u64(j, "hole_bytes", f.hole_bytes);
        cmt__json_u64(j, "largest_hole_bytes", f.largest_hole);
        cmt__json_double(j, "hole_fragmentation", f.hole_fragmentation);
        CMT__JSON_U64S(j, {"granularity_waste_bytes", f.waste_bytes},
                       {"pool_retained_bytes", f.pool_retained_bytes},
                       {"reserved_va_bytes", f.reserved_va_bytes});
        cmt__json_end_object(j);
    }
    cmt__json_end_object(j);
}

static double pct(uint64_t a, uint64_t b)
{
    return a ? ((double)b - (double)a) * 100.0 / (double)a : (b ? 100.0 : 0.0);
}

static void output_json(const struct cmt__pass *pa, const struct cmt__pass *pb,
                        const struct cmt_site_delta *sites, size_t nsites)
{
    const struct cmt_replay_totals *a = cmt_replay_totals(pa->replay);
    const struct cmt_replay_totals *b = cmt_replay_totals(pb->replay);
    struct cmt__json j;
    cmt__json_init(&j, stdout);
    cmt__json_object(&j, NULL);
    json_side(&j, "a", pa);
    json_side(&j, "b", pb);
    cmt__json_object(&j, "delta");
    cmt__json_i64(&j, "peak_live_bytes", (int64_t)(b->peak_live_bytes - a->peak_live_bytes));
    cmt__json_double(&j, "peak_live_percent", pct(a->peak_live_bytes, b->peak_live_bytes));
    cmt__json_i64(&j, "peak_t_ns", (int64_t)(b->peak_t_ns - a->peak_t_ns));
    cmt__json_i64(&j, "alloc_calls", (int64_t)(b->alloc_calls - a->alloc_calls));
    cmt__json_i64(&j, "oom_episodes",
                  (int64_t)cmt_oom_count(pb->oom) - (int64_t)cmt_oom_count(pa->oom));
    cmt__json_array(&j, "sites");
    for (size_t i = 0; i < nsites && i < SITES; i++) {
        if (sites[i].a == sites[i].b)
            break;
        cmt__json_object(&j, NULL);
        cmt__json_u64(&j, "a_bytes", sites[i].a);
        cmt__json_u64(&j, "b_bytes", sites[i].b);
        cmt__json_i64(&j, "delta_bytes", (int64_t)(sites[i].b - sites[i].a));
        if (sites[i].stack_a)
            cmt__json_stack(&j, "stack", pa->reader, sites[i].stack_a);
        else
            cmt__json_stack(&j, "stack", pb->reader, sites[i].stack_b);
        cmt__json_end_object(&j);
    }
    cmt__json_end_array(&j);
    cmt__phases_diff_json(&j, &pa->phases, &pb->phases);
    cmt__json_end_object(&j);
    cmt__json_end_object(&j);
    cmt__json_finish(&j);
}

static void row(const char *name, uint64_t a, uint64_t b, int bytes)
{
    char x[32], y[32], d[32];
    if (bytes) {
        cmt__bytes(a, x);
        cmt__bytes(b, y);
        cmt__bytes(a > b ? a - b : b - a, d);
    } else {
        snprintf(x, sizeof x, "%" PRIu64, a);
        snprintf(y, sizeof y, "%" PRIu64, b);
        snprintf(d, sizeof d, "%" PRIu64, a > b ? a - b : b - a);
    }
    printf("  %-22s %14s %14s   %s%s (%+.1f%%)\n", name, x, y,
           a == b  ? ""
           : a > b ? "-"
                   : "+",
           d, pct(a, b));
}

/* Peaks inside the allocators of every device, and the settings each run used (only when a
 * side has allocator-level records). */
static void allocator_rows(const struct cmt__pass *pa, const struct cmt__pass *pb)
{
    char sa[1024], sb[1024];
    const char *ta = cmt__alloc_settings_text(pa, sa, sizeof sa);
    const char *tb = cmt__alloc_settings_text(pb, sb, sizeof sb);
    if (!ta && !tb)
        return;
    struct cmt_alloc_figures peak[2] = {{0}};
    for (int side = 0; side < 2; side++) {
        const cmt_alloc *a = (side ? pb : pa)->alloc;
        for (size_t i = 0; i < cmt_alloc_device_count(a); i++) {
            const struct cmt_alloc_device *d = cmt_alloc_device_at(a, i);
            peak[side].allocated_bytes += d->peak.allocated_bytes;
            peak[side].reserved_bytes += d->peak.reserved_bytes;
            peak[side].inactive_split_bytes += d->peak.inactive_split_bytes;
        }
    }
    row("peak allocated", peak[0].allocated_bytes, peak[1].allocated_bytes, 1);
    row("peak reserved", peak[0].reserved_bytes, peak[1].reserved_bytes, 1);
    row("peak inactive split", peak[0].inactive_split_bytes, peak[1].inactive_split_bytes, 1);
    printf("  settings A: %s\n", ta ? ta : "no allocator-level records");
    printf("  settings B: %s\n", tb ? tb : "no allocator-level records");
}

/* The driver's rows: peak, calls, failures, fragmentation at the peak. */
static void driver_rows(const struct cmt__pass *pa, const struct cmt__pass *pb)
{
    const struct cmt_replay_totals *a = cmt_replay_totals(pa->replay);
    const struct cmt_replay_totals *b = cmt_replay_totals(pb->replay);
    uint64_t ea = cmt_oom_count(pa->oom), eb = cmt_oom_count(pb->oom);
    char x[32], y[32];
    row("peak live", a->peak_live_bytes, b->peak_live_bytes, 1);
    printf("  %-22s %14s %14s\n", "time to peak", cmt__duration(a->peak_t_ns, x),
           cmt__duration(b->peak_t_ns, y));
    row("allocation calls", a->alloc_calls, b->alloc_calls, 0);
    row("failures", a->failures, b->failures, 0);
    row("OOM episodes", ea, eb, 0);
    struct cmt_fragmentation none = {0};
    struct cmt_fragmentation fa = pa->diff.have_frag ? pa->diff.frag_at_peak : none;
    struct cmt_fragmentation fb = pb->diff.have_frag ? pb->diff.frag_at_peak : none;
    row("address gaps at peak", fa.hole_bytes, fb.hole_bytes, 1); /* address space, not memory */
    row("largest gap at peak", fa.largest_hole, fb.largest_hole, 1);
    row("granularity waste", fa.waste_bytes, fb.waste_bytes, 1);
    row("pool retention", fa.pool_retained_bytes, fb.pool_retained_bytes, 1);
}

static void output_text(const struct cmt__pass *pa, const struct cmt__pass *pb,
                        const struct cmt_site_delta *sites, size_t nsites)
{
    const struct cmt_replay_totals *a = cmt_replay_totals(pa->replay);
    const struct cmt_replay_totals *b = cmt_replay_totals(pb->replay);
    char x[32], y[32], frame[512], text[512];
    uint64_t ea = cmt_oom_count(pa->oom), eb = cmt_oom_count(pb->oom);
    struct cmt_alloc_summary sa, sb;
    int alloc = cmt_alloc_summarize(pa->alloc, &sa) | cmt_alloc_summarize(pb->alloc, &sb);
    int driver = a->alloc_calls || b->alloc_calls || !alloc;
    if (driver) /* driver figures where the traces have them, the allocator's beside them */
        printf("peak %s -> %s (%+.1f%%); ", cmt__bytes(a->peak_live_bytes, x),
               cmt__bytes(b->peak_live_bytes, y), pct(a->peak_live_bytes, b->peak_live_bytes));
    if (alloc)
        printf("allocator peak allocated %s -> %s (%+.1f%%); ",
               cmt__bytes(sa.peak_allocated_bytes, x), cmt__bytes(sb.peak_allocated_bytes, y),
               pct(sa.peak_allocated_bytes, sb.peak_allocated_bytes));
    printf("out-of-memory episodes %" PRIu64 " -> %" PRIu64 "%s\n", ea, eb,
           driver ? "" : " (no driver calls recorded)");
    printf("  %-22s %14s %14s\n", "", "A", "B");
    if (driver)
        driver_rows(pa, pb);
    allocator_rows(pa, pb);
    for (int side = 0; side < 2; side++) {
        const struct cmt__pass *p = side ? pb : pa;
        for (uint32_t i = 0; i < cmt_oom_count(p->oom); i++) {
            const struct cmt_oom_episode *e = cmt_oom_episode(p->oom, i);
            char api[256];
            printf("  %s: out of memory: %s of %s on GPU %d: %s\n", side ? "B" : "A",
                   cmt__text(e->api, api, sizeof api), cmt__bytes(e->request_bytes, x), e->dev,
                   cmt_verdict_name(e->verdict));
        }
    }
    if (nsites && sites[0].a != sites[0].b)
        printf("\ncall sites whose bytes at the peak changed most\n");
    int raw = 0;
    for (size_t i = 0; i < nsites && i < SITES && sites[i].a != sites[i].b; i++) {
        raw |= sites[i].stack_a ? cmt__site_is_raw(pa->reader, sites[i].stack_a)
                                : cmt__site_is_raw(pb->reader, sites[i].stack_b);
        printf("  %10s -> %-10s  %s\n", cmt__bytes(sites[i].a, x), cmt__bytes(sites[i].b, y),
               cmt__text(sites[i].stack_a
                             ? cmt_stack_top(pa->reader, sites[i].stack_a, frame, sizeof frame)
                             : cmt_stack_top(pb->reader, sites[i].stack_b, frame, sizeof frame),
                         text, sizeof text));
    }
    cmt__phases_diff_text(stdout, &pa->phases, &pb->phases);
    if (raw && !pa->damage && !pb->damage) /* one line names both files */
        fprintf(stderr,
                "cumemtrace diff: hint: frames without names (module+0xoffset): run `cumemtrace "
                "symbolize %s %s` where the programs ran\n",
                pa->path, pb->path);
}

struct diff_args {
    int json, gate;
    double limit;
    const char *paths[2];
    int npaths;
};

enum { OPT_HELP = 1, OPT_JSON, OPT_FAIL_IF_PEAK_GROWS, OPT_JOBS };

/* --jobs is the several-trace form's (fleet_cli.c parses that form). */
const struct cmt__option cmt_cmd_diff_options[] = {
    CMT__OPTION_HELP(OPT_HELP),
    {NULL, "--json", 0, OPT_JSON, NULL},
    {NULL, "--fail-if-peak-grows", 1, OPT_FAIL_IF_PEAK_GROWS, "a percentage"},
    {NULL, "--jobs", 1, OPT_JOBS, NULL},
    {0},
};

/* --fail-if-peak-grows's value. @return 0, or 2 after a usage error. */
static int fail_limit(const char *v, struct diff_args *o)
{
    char *end;
    o->limit = strtod(v, &end);
    if (end == v || (*end && strcmp(end, "%") != 0) || o->limit < 0)
        return cmt__usage_error("diff",
                                "--fail-if-peak-grows wants a percentage >= 0, "
                                "got '%s'",
                                v);
    o->gate = 1;
    return 0;
}

/* An option or a trace (cmt__opts_parse). @return 0, or 2 after a usage error. */
static int on_arg(const struct cmt__opts *p, int opt, void *ctx)
{
    struct diff_args *o = ctx;
    if (opt == OPT_JSON)
        o->json = 1;
    else if (opt == OPT_FAIL_IF_PEAK_GROWS)
        return fail_limit(p->value, o) ? 2 : 0;
    else if (opt == OPT_JOBS) /* the several-trace form's (cmt__fleet_wanted) */
        return cmt__usage_error("diff", "unknown option '%s'", p->arg);
    else if (o->npaths == 2)
        return cmt__usage_error("diff", "two trace files expected, got '%s' too", p->value);
    else
        o->paths[o->npaths++] = p->value;
    return 0;
}

/* @return 0 with *o filled; -1 after printing help (exit 0); 2 after a usage error. */
static int parse_args(int argc, char **argv, struct diff_args *o)
{
    int rc = cmt__opts_parse("diff", argc, argv, cmt_cmd_diff_options, 0, usage, on_arg, o);
    if (rc)
        return rc;
    if (o->npaths != 2)
        return cmt__usage_error("diff", "two trace files A and B expected");
    return 0;
}

int cmt_cmd_diff(int argc, char **argv)
{
    struct diff_args o = {0};
    if (cmt__fleet_wanted(argc, argv, 2, cmt_cmd_diff_options))
        return cmt__fleet_diff(argc, argv, usage);
    int prc = parse_args(argc, argv, &o);
    if (prc)
        return prc < 0 ? 0 : prc;
    struct cmt__pass pa, pb;
    unsigned want = CMT__PASS_OOM | CMT__PASS_DIFF;
    if (cmt__pass_run(&pa, "diff", o.paths[0], want, NULL) != 0)
        return 1;
    if (cmt__pass_run(&pb, "diff", o.paths[1], want, NULL) != 0) {
        cmt__pass_close(&pa);
        return 1;
    }
    struct cmt_site_delta *sites = NULL;
    size_t nsites = 0;
    cmt_diff_sites(&pa.diff, &pb.diff, &sites, &nsites); /* out of memory: no sites */
    if (o.json)
        output_json(&pa, &pb, sites, nsites);
    else
        output_text(&pa, &pb, sites, nsites);
    int rc = 0;
    uint64_t a = cmt_replay_totals(pa.replay)->peak_live_bytes;
    uint64_t b = cmt_replay_totals(pb.replay)->peak_live_bytes;
    struct cmt_alloc_summary sa, sb;
    if (!cmt_replay_totals(pa.replay)->alloc_calls && !cmt_replay_totals(pb.replay)->alloc_calls &&
        (cmt_alloc_summarize(pa.alloc, &sa) | cmt_alloc_summarize(pb.alloc, &sb))) {
        a = sa.peak_allocated_bytes; /* snapshots: the allocator's peak is the run's */
        b = sb.peak_allocated_bytes;
    }
    if (o.gate && (double)b > (double)a * (1.0 + o.limit / 100.0)) {
        char x[32], y[32];
        fprintf(stderr,
                "cumemtrace diff: peak grew from %s to %s (%+.1f%%), more than the "
                "allowed %.1f%%\n",
                cmt__bytes(a, x), cmt__bytes(b, y), pct(a, b), o.limit);
        rc = 1;
    }
    if (cmt__pass_status(&pa) || cmt__pass_status(&pb))
        rc = 1;
    free(sites);
    cmt__pass_close(&pa);
    cmt__pass_close(&pb);
    return rc;
}
