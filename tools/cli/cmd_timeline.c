/* cmd_timeline.c — `cumemtrace timeline [--csv | --json | --svg OUT.svg] [--points N] FILE`. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pass.h"
#include "print/phase_print.h"
#include "commands.h"
#include "escape.h"
#include "export/export.h"
#include "print/alloc_print.h"
#include "fleet/fleet_cli.h"
#include "options.h"
#include "output.h"
#include "site_timeline.h"
#include "timeline.h"

static const char usage[] =
    "usage: cumemtrace timeline [--csv | --json | --svg OUT.svg] [--points N] FILE\n"
    "       cumemtrace timeline [--csv | --json] [--points N] [--jobs N] TRACE... | DIR\n"
    "\n"
    "Device memory of the traced process over time, per device: live bytes by kind, reserved\n"
    "address space, pool retention, allocation count and fragmentation, with the peak and the\n"
    "out-of-memory failures marked. Downsampling keeps each bucket's maximum, so the peak is\n"
    "exact, and its last value, so memory freed inside a bucket is drawn freed. Without an output "
    "option: a short summary with a sparkline.\n"
    "\n"
    "Over several traces (or a directory of them): the processes side by side on one clock,\n"
    "one row (text) or column (CSV: t_ns, wall_ns, rank_N or pid_N) each.\n"
    "\n"
    "  --csv         one row per point (columns in docs/analysis.md)\n"
    "  --json        {\"devices\": [{\"dev\", \"peak_live_bytes\", \"points\": [...]}]}\n"
    "  --svg OUT     write a self-contained SVG chart to OUT (also --svg=OUT)\n"
    "  --points N    at most N points per device (default 60 for the summary, 1000 otherwise)\n"
    "  --jobs N      traces read at once (several traces; default: the processors)\n"
    "  -h, --help    this help\n";

enum format { TEXT, CSV, JSON, SVG };

/* A bucket without an allocator event keeps the figures the last one left. */
struct alloc_carry {
    uint64_t allocated, reserved, inactive_split;
};
static struct cmt_timeline_point alloc_point(struct alloc_carry *c,
                                             const struct cmt_timeline_point *p)
{
    struct cmt_timeline_point q = *p;
    if (!p->alloc_used) {
        q.alloc_allocated = q.last_alloc_allocated = c->allocated;
        q.alloc_reserved = q.last_alloc_reserved = c->reserved;
        q.alloc_inactive_split = q.last_alloc_inactive_split = c->inactive_split;
    }
    c->allocated = q.last_alloc_allocated;
    c->reserved = q.last_alloc_reserved;
    c->inactive_split = q.last_alloc_inactive_split;
    return q;
}

/* The phase cell of a point: the outermost range open at its time (the band's), "" none. */
static void csv_phase(const struct cmt_phases *ph, uint64_t t_ns)
{
    static struct cmt__out out;
    const char *name = cmt_phases_name(ph, cmt__phase_band_at(ph, t_ns, t_ns + 1));
    name = name ? name : "";
    cmt__out_init(&out, stdout);
    cmt__out_char(&out, ',');
    if (*name)
        cmt__out_csv(&out, name, cmt__csv_is_formula(name));
    cmt__out_flush(&out);
}

static void csv(const struct cmt_timeline *tl, const struct cmt_phases *ph)
{
    int chart[CMT_KIND_COUNT];
    size_t nchart = cmt_timeline_charted_kinds(chart);
    printf("t_ns,dev,live_bytes");
    for (size_t k = 0; k < nchart; k++)
        printf(",%s_bytes", cmt_kind_name(chart[k]));
    printf(",host_pinned_bytes,reserved_va_bytes,mapped_bytes,pool_retained_bytes,allocations,"
           "hole_bytes,largest_hole_bytes,hole_fragmentation,largest_unmapped_bytes,"
           "granularity_waste_bytes,oom,peak,last_t_ns,last_live_bytes%s%s\n",
           tl->alloc_seen ? ",allocated_bytes,reserved_bytes,inactive_split_bytes,"
                            "last_allocated_bytes,last_reserved_bytes"
                          : "",
           ph->range_count ? ",phase" : "");
    for (uint32_t s = 0; s < tl->device_count; s++) {
        const struct cmt_timeline_device *d = &tl->devices[s];
        struct alloc_carry carry = {0};
        for (uint32_t i = 0; i < tl->max_points; i++) {
            const struct cmt_timeline_point *p = &d->points[i];
            if (!p->used)
                continue;
            struct cmt_timeline_point ap = alloc_point(&carry, p);
            printf("%" PRIu64 ",%d,%" PRIu64, p->t_ns, d->dev, p->live_bytes);
            for (size_t k = 0; k < nchart; k++)
                printf(",%" PRIu64, p->kind_bytes[chart[k]]);
            printf(",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
                   ",%" PRIu64 ",%.4f,%" PRIu64 ",%" PRIu64 ",%u,%u,%" PRIu64 ",%" PRIu64,
                   p->kind_bytes[CMT_KIND_HOST], p->kind_bytes[CMT_KIND_VA], p->mapped_bytes,
                   p->kind_bytes[CMT_KIND_POOL], p->allocations, p->hole_bytes, p->largest_hole,
                   p->hole_fragmentation, p->largest_unmapped, p->waste_bytes, p->oom, p->peak,
                   p->last_t_ns, p->last_live_bytes);
            if (tl->alloc_seen)
                printf(",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64,
                       ap.alloc_allocated, ap.alloc_reserved, ap.alloc_inactive_split,
                       ap.last_alloc_allocated, ap.last_alloc_reserved);
            if (ph->range_count)
                csv_phase(ph, p->t_ns);
            putchar('\n');
        }
    }
}

static void json(const struct cmt__pass *pass, const struct cmt_timeline *tl)
{
    int chart[CMT_KIND_COUNT];
    size_t nchart = cmt_timeline_charted_kinds(chart);
    struct cmt__json j;
    cmt__json_init(&j, stdout);
    cmt__json_object(&j, NULL);
    cmt__json_string(&j, "file", pass->path);
    cmt__json_u64(&j, "bucket_ns", tl->width);
    cmt__json_array(&j, "devices");
    for (uint32_t s = 0; s < tl->device_count; s++) {
        const struct cmt_timeline_device *d = &tl->devices[s];
        const struct cmt_replay_device *rd = cmt_replay_device(pass->replay, d->dev);
        const struct cmt_alloc_device *ad = cmt_alloc_device(pass->alloc, 0, d->dev);
        if (!rd && !ad)
            continue;
        cmt__json_object(&j, NULL);
        cmt__json_i64(&j, "dev", d->dev);
        cmt__json_u64(&j, "peak_live_bytes", rd ? rd->peak_live_bytes : 0);
        cmt__json_u64(&j, "peak_t_ns", rd ? rd->peak_t_ns : 0);
        cmt__alloc_json_device(&j, pass->alloc, d->dev);
        cmt__json_array(&j, "points");
        struct alloc_carry carry = {0};
        for (uint32_t i = 0; i < tl->max_points; i++) {
            const struct cmt_timeline_point *p = &d->points[i];
            if (!p->used)
                continue;
            struct cmt_timeline_point ap = alloc_point(&carry, p);
            cmt__json_object(&j, NULL);
            cmt__json_u64(&j, "t_ns", p->t_ns);
            cmt__json_i64(&j, "dev", d->dev);
            cmt__json_u64(&j, "live_bytes", p->live_bytes);
            for (size_t k = 0; k < nchart; k++) {
                char key[48];
                snprintf(key, sizeof key, "%s_bytes", cmt_kind_name(chart[k]));
                cmt__json_u64(&j, key, p->kind_bytes[chart[k]]);
            }
            CMT__JSON_U64S(&j, {"host_pinned_bytes", p->kind_bytes[CMT_KIND_HOST]},
                           {"reserved_va_bytes", p->kind_bytes[CMT_KIND_VA]},
                           {"mapped_bytes", p->mapped_bytes},
                           {"pool_retained_bytes", p->kind_bytes[CMT_KIND_POOL]},
                           {"allocations", p->allocations}, {"hole_bytes", p->hole_bytes},
                           {"largest_hole_bytes", p->largest_hole});
            cmt__json_double(&j, "hole_fragmentation", p->hole_fragmentation);
            CMT__JSON_U64S(&j, {"largest_unmapped_bytes", p->largest_unmapped},
                           {"granularity_waste_bytes", p->waste_bytes}, {"oom", p->oom});
            cmt__json_bool(&j, "peak", p->peak);
            cmt__json_u64(&j, "last_t_ns", p->last_t_ns);
            cmt__json_u64(&j, "last_live_bytes", p->last_live_bytes);
            if (tl->alloc_seen) {
                CMT__JSON_U64S(&j, {"allocated_bytes", ap.alloc_allocated},
                               {"reserved_bytes", ap.alloc_reserved},
                               {"inactive_split_bytes", ap.alloc_inactive_split},
                               {"last_allocated_bytes", ap.last_alloc_allocated},
                               {"last_reserved_bytes", ap.last_alloc_reserved});
            }
            cmt__json_end_object(&j);
        }
        cmt__json_end_array(&j);
        cmt__json_end_object(&j);
    }
    cmt__json_end_array(&j);
    cmt__json_array(&j, "oom_episodes");
    for (uint32_t i = 0; pass->oom && i < cmt_oom_count(pass->oom); i++) {
        const struct cmt_oom_episode *e = cmt_oom_episode(pass->oom, i);
        cmt__json_object(&j, NULL);
        cmt__json_u64(&j, "t_ns", e->t_ns);
        cmt__json_i64(&j, "dev", e->dev);
        cmt__json_u64(&j, "request_bytes", e->request_bytes);
        cmt__json_string(&j, "verdict", cmt_verdict_name(e->verdict));
        cmt__json_end_object(&j);
    }
    cmt__json_end_array(&j);
    cmt__phases_json(&j, &pass->phases);
    cmt__json_end_object(&j);
    cmt__json_finish(&j);
}

static const char *const bars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};

/* The allocator's lines of a device: its peaks, and sparklines of reserved and allocated bytes
 * on the scale of reserved's peak. */
static void text_allocator(const struct cmt__pass *pass, const struct cmt_timeline *tl,
                           const struct cmt_timeline_device *d)
{
    struct cmt_alloc_figures now, peak;
    char a[32], b[32], c[32], e[32], f[32], label[160];
    if (!cmt__alloc_totals(pass->alloc, d->dev, &now, &peak))
        return;
    printf("%s allocator: allocated peak %s (%s at the end), reserved peak %s (%s at the end), "
           "inactive split peak %s\n",
           cmt__device_label(pass->replay, d->dev, label, sizeof label),
           cmt__bytes(peak.allocated_bytes, a), cmt__bytes(now.allocated_bytes, b),
           cmt__bytes(peak.reserved_bytes, c), cmt__bytes(now.reserved_bytes, e),
           cmt__bytes(peak.inactive_split_bytes, f));
    uint64_t end = cmt_replay_totals(pass->replay)->last_t_ns;
    const struct cmt_alloc_device *ad = cmt_alloc_device(pass->alloc, 0, d->dev);
    end = ad->last_t_ns > end ? ad->last_t_ns : end;
    uint64_t cells = (end >> tl->width_shift) + 1;
    for (int row = 0; row < 2; row++) {
        struct alloc_carry carry = {0};
        printf("  %-10s", row ? "allocated" : "reserved");
        for (uint32_t i = 0; i < tl->max_points && i < cells; i++) {
            struct cmt_timeline_point ap = alloc_point(&carry, &d->points[i]);
            uint64_t v = row ? ap.alloc_allocated : ap.alloc_reserved;
            if (!d->points[i].used) /* an empty bucket: the last value before it */
                v = row ? carry.allocated : carry.reserved;
            uint64_t top = peak.reserved_bytes;
            int level = !top || !v ? 0 : v >= top ? 7 : (int)((double)v / (double)top * 7);
            fputs(bars[level], stdout);
        }
        printf("\n");
    }
    if (!cmt_replay_totals(pass->replay)->alloc_calls) /* the driver's rows show it otherwise */
        cmt__phase_band_text(stdout, &pass->phases, tl->width,
                             cells < tl->max_points ? cells : tl->max_points, 1);
}

static void text(const struct cmt__pass *pass, const struct cmt_timeline *tl)
{
    char a[32], b[32], c[32], label[160];
    int any = 0;
    for (uint32_t s = 0; s < tl->device_count; s++) {
        const struct cmt_timeline_device *d = &tl->devices[s];
        const struct cmt_replay_device *rd = cmt_replay_device(pass->replay, d->dev);
        if (cmt_alloc_device(pass->alloc, 0, d->dev) &&
            (!rd || (!rd->peak_live_bytes && !rd->alloc_calls))) {
            any = 1; /* only the allocator's view (a converted snapshot) */
            text_allocator(pass, tl, d);
            continue;
        }
        if (!rd || (!rd->peak_live_bytes && !rd->alloc_calls))
            continue;
        any = 1;
        printf("%s: peak %s at %s", cmt__device_label(pass->replay, d->dev, label, sizeof label),
               cmt__bytes(rd->peak_live_bytes, a), cmt__duration(rd->peak_t_ns, b));
        printf(", at the end %s", cmt__bytes(rd->live_bytes, c));
        if (rd->oom_failures)
            printf(", %" PRIu64 " out-of-memory failure%s", rd->oom_failures,
                   rd->oom_failures == 1 ? "" : "s");
        printf("\n  ");
        /* one cell per bucket up to the trace's end: a used bucket shows its maximum, an empty
         * one the last value before it (so a drop shows in the cell after it) */
        uint64_t last = 0, end = cmt_replay_totals(pass->replay)->last_t_ns;
        uint64_t cells = (end >> tl->width_shift) + 1;
        for (uint32_t i = 0; i < tl->max_points && i < cells; i++) {
            const struct cmt_timeline_point *p = &d->points[i];
            uint64_t v = p->used ? p->live_bytes : last;
            last = p->used ? p->last_live_bytes : last;
            uint64_t peak = rd->peak_live_bytes;
            int level = !peak || !v ? 0 : v >= peak ? 7 : (int)((double)v / (double)peak * 7);
            fputs(p->oom ? "!" : bars[level > 7 ? 7 : level < 0 ? 0 : level], stdout);
        }
        printf("  0 .. %s\n", cmt__duration(end, a));
        uint64_t drawn = cells < tl->max_points ? cells : tl->max_points;
        cmt__phase_band_text(stdout, &pass->phases, tl->width, drawn, 0);
        struct cmt_fragmentation f;
        if (cmt_replay_peak_fragmentation(pass->replay, d->dev, &f) == 0)
            printf("  at the peak: address gaps %s (largest %s, fragmentation %.2f; address "
                   "space between allocations, not device memory), granularity "
                   "waste %s, pool retention %s\n",
                   cmt__bytes(f.hole_bytes, a), cmt__bytes(f.largest_hole, b), f.hole_fragmentation,
                   cmt__bytes(f.waste_bytes, c), cmt__bytes(f.pool_retained_bytes, label));
        if (cmt_alloc_device(pass->alloc, 0, d->dev))
            text_allocator(pass, tl, d);
    }
    if (!any)
        printf("%s: no device memory was allocated.\n", pass->path);
}

enum { OPT_HELP = 1, OPT_CSV, OPT_JSON, OPT_SVG, OPT_POINTS, OPT_JOBS };

/* --jobs is the several-trace form's (fleet_cli.c parses that form). */
const struct cmt__option cmt_cmd_timeline_options[] = {
    CMT__OPTION_HELP(OPT_HELP),
    {NULL, "--csv", 0, OPT_CSV, NULL},
    {NULL, "--json", 0, OPT_JSON, NULL},
    {NULL, "--svg", 1, OPT_SVG, "an output file"},
    {NULL, "--points", 1, OPT_POINTS, "a number"},
    {NULL, "--jobs", 1, OPT_JOBS, NULL},
    {0},
};

struct timeline_args {
    enum format fmt;
    const char *path, *svg_path;
    long points;
    const char *chosen; /* the output option given */
};

/* One option (not --help) into *t. @return 0, or 2 after a usage error. */
static int timeline_option(const struct cmt__opts *p, int opt, struct timeline_args *t)
{
    static const enum format formats[] = {[OPT_CSV] = CSV, [OPT_JSON] = JSON, [OPT_SVG] = SVG};
    const char *v = p->value;
    if (opt == OPT_SVG) {
        if (!*v)
            return cmt__opts_needs(p);
        t->svg_path = v;
    } else if (opt == OPT_POINTS) {
        char *end;
        t->points = strtol(v, &end, 10);
        if (end == v || *end || t->points < 2 || t->points > 1000000)
            return cmt__usage_error("timeline", "--points wants 2..1000000, got '%s'", v);
        return 0;
    } else if (opt != OPT_CSV && opt != OPT_JSON) { /* --jobs: cmt__fleet_wanted took it */
        return cmt__usage_error("timeline", "unknown option '%s'", p->arg);
    }
    enum format want = formats[opt];
    static const char *const names[] = {"", "--csv", "--json", "--svg"};
    if (t->fmt != TEXT && t->fmt != want)
        return cmt__usage_error("timeline", "%s and %s conflict: choose one output", t->chosen,
                                names[want]);
    t->fmt = want;
    t->chosen = names[want];
    return 0;
}

/* An option or the trace (cmt__opts_parse). @return 0, or 2 after a usage error. */
static int timeline_arg(const struct cmt__opts *p, int opt, void *ctx)
{
    struct timeline_args *t = ctx;
    if (opt != CMT__OPT_ARG)
        return timeline_option(p, opt, t) ? 2 : 0;
    if (t->path)
        return cmt__usage_error("timeline", "one trace file expected, got '%s' too", p->value);
    t->path = p->value;
    return 0;
}

/* @return 0 with *t filled; -1 after printing help (exit 0); 2 after a usage error. */
static int timeline_args(int argc, char **argv, struct timeline_args *t)
{
    int rc = cmt__opts_parse("timeline", argc, argv, cmt_cmd_timeline_options, 0, usage,
                             timeline_arg, t);
    if (rc)
        return rc;
    if (!t->path)
        return cmt__usage_error("timeline", "missing trace FILE");
    return 0;
}

int cmt_cmd_timeline(int argc, char **argv)
{
    struct timeline_args t = {TEXT, NULL, NULL, 0, NULL};
    if (cmt__fleet_wanted(argc, argv, 1, cmt_cmd_timeline_options))
        return cmt__fleet_timeline(argc, argv, usage);
    int prc = timeline_args(argc, argv, &t);
    if (prc)
        return prc < 0 ? 0 : prc;
    enum format fmt = t.fmt;
    const char *path = t.path, *svg_path = t.svg_path;
    long points = t.points;
    struct cmt_timeline tl;
    cmt_timeline_init(&tl, points ? (uint32_t)points : fmt == TEXT ? 60 : fmt == SVG ? 400 : 1000);
    /* the summary and the chart show no point's hole measures (the summary's line at the peak
     * measures the peak itself): only the CSV and JSON take the sampling's cost */
    cmt_timeline_set_no_holes(&tl, fmt == TEXT || fmt == SVG);
    /* the SVG's capacity line and others band come from the free/total samples */
    struct cmt_site_groups none = {0};
    struct cmt_site_timeline samples;
    cmt_site_timeline_init(&samples, tl.max_points, &none);
    struct cmt_observer extra = cmt_site_timeline_observer(&samples);
    struct cmt__pass p;
    if (cmt__pass_open(&p, "timeline", path) != 0 ||
        cmt__pass_replay(&p, 1, &tl, &extra, fmt == SVG) != 0) {
        cmt_site_timeline_free(&samples);
        cmt_timeline_free(&tl);
        return 1;
    }
    int rc = 0;
    if (fmt == CSV) {
        csv(&tl, &p.phases);
    } else if (fmt == JSON) {
        json(&p, &tl);
    } else if (fmt == SVG) {
        FILE *f = fopen(svg_path, "w");
        int bad = !f || cmt__timeline_svg(f, &p, &tl, samples.failed ? NULL : &samples) != 0;
        if ((f && fclose(f) != 0) || bad) {
            fprintf(stderr, "cumemtrace timeline: %s: cannot write the chart\n", svg_path);
            rc = 1;
        } else {
            printf("%s: wrote %s\n", path, svg_path);
        }
    } else {
        text(&p, &tl);
    }
    if (cmt__pass_status(&p))
        rc = 1;
    cmt__pass_close(&p);
    cmt_site_timeline_free(&samples);
    cmt_timeline_free(&tl);
    return rc;
}
