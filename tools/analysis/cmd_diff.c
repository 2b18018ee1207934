/* cmd_diff.c — `cumemtrace diff [--json] [--fail-if-peak-grows PCT] A B`. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_common.h"
#include "commands.h"
#include "output.h"
#include "sites.h"

static const char usage[] =
    "usage: cumemtrace diff [--json] [--fail-if-peak-grows PCT] A B\n"
    "\n"
    "Compares two runs (e.g. before and after a configuration change): peak device memory per\n"
    "device and process-wide, time to peak, allocation counts, out-of-memory episodes and their\n"
    "verdicts, fragmentation at the peak, and the call sites (matched by symbolized stack)\n"
    "whose bytes at the peak changed most.\n"
    "\n"
    "  --json                    {\"a\": {...}, \"b\": {...}, \"delta\": {...}}\n"
    "  --fail-if-peak-grows PCT  exit 1 when B's peak exceeds A's by more than PCT percent\n"
    "  -h, --help                this help\n";

#define SITES 10
#define KEY 1024

struct site_delta {
    char *key;
    uint32_t stack_a, stack_b;
    uint64_t a, b;
};

static int by_key(const void *x, const void *y)
{
    return strcmp(((const struct site_delta *)x)->key, ((const struct site_delta *)y)->key);
}

static uint64_t magnitude(const struct site_delta *s)
{
    return s->a > s->b ? s->a - s->b : s->b - s->a;
}

static int by_change(const void *x, const void *y)
{
    uint64_t a = magnitude(x), b = magnitude(y);
    return a < b ? 1 : a > b ? -1 : 0;
}

/* Sites of both runs at their peaks, matched by symbolized stack. @return count (in *out). */
static size_t match_sites(const struct cmt__pass *pa, const struct cmt__pass *pb,
                          struct site_delta **out)
{
    uint32_t na = cmt_replay_site_count(pa->replay), nb = cmt_replay_site_count(pb->replay);
    struct site_delta *v = calloc((size_t)na + nb + 1, sizeof *v);
    size_t n = 0;
    char key[KEY];
    for (int side = 0; v && side < 2; side++) {
        const struct cmt__pass *p = side ? pb : pa;
        uint32_t count = side ? nb : na;
        for (uint32_t i = 0; i < count; i++) {
            const struct cmt_replay_site *s = cmt_replay_site(p->replay, i);
            if (!s->at_peak_bytes)
                continue;
            struct site_delta d = {.key = strdup(cmt__site_key(p->reader, s->stack, key, sizeof key))};
            if (!d.key)
                continue;
            if (side) {
                d.b = s->at_peak_bytes;
                d.stack_b = s->stack;
            } else {
                d.a = s->at_peak_bytes;
                d.stack_a = s->stack;
            }
            v[n++] = d;
        }
    }
    if (!v)
        return *out = NULL, 0;
    qsort(v, n, sizeof *v, by_key);
    size_t m = 0; /* merge equal keys */
    for (size_t i = 0; i < n; i++) {
        if (m && strcmp(v[m - 1].key, v[i].key) == 0) {
            v[m - 1].a += v[i].a;
            v[m - 1].b += v[i].b;
            if (!v[m - 1].stack_a)
                v[m - 1].stack_a = v[i].stack_a;
            if (!v[m - 1].stack_b)
                v[m - 1].stack_b = v[i].stack_b;
            free(v[i].key);
        } else {
            v[m++] = v[i];
        }
    }
    qsort(v, m, sizeof *v, by_change);
    *out = v;
    return m;
}

static int32_t peak_device(const cmt_replay *rp)
{
    int32_t best = -1;
    uint64_t max = 0;
    for (uint32_t s = 0; s < cmt_replay_device_count(rp); s++) {
        const struct cmt_replay_device *d = cmt_replay_device_slot(rp, s);
        if (d && d->peak_live_bytes > max) {
            max = d->peak_live_bytes;
            best = d->dev;
        }
    }
    return best;
}

static void json_side(struct cmt__json *j, const char *key, const struct cmt__pass *p)
{
    const struct cmt_replay_totals *t = cmt_replay_totals(p->replay);
    cmt__json_object(j, key);
    cmt__json_string(j, "file", p->path);
    cmt__json_u64(j, "peak_live_bytes", t->peak_live_bytes);
    cmt__json_u64(j, "peak_t_ns", t->peak_t_ns);
    cmt__json_u64(j, "alloc_calls", t->alloc_calls);
    cmt__json_u64(j, "free_calls", t->free_calls);
    cmt__json_u64(j, "failures", t->failures);
    cmt__json_u64(j, "oom_episodes", cmt_oom_count(p->oom));
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
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
    struct cmt_fragmentation f;
    if (cmt_replay_peak_fragmentation(p->replay, peak_device(p->replay), &f) == 0) {
        cmt__json_object(j, "fragmentation_at_peak");
        cmt__json_u64(j, "hole_bytes", f.hole_bytes);
        cmt__json_u64(j, "largest_hole_bytes", f.largest_hole);
        cmt__json_double(j, "hole_fragmentation", f.hole_fragmentation);
        cmt__json_u64(j, "granularity_waste_bytes", f.waste_bytes);
        cmt__json_u64(j, "pool_retained_bytes", f.pool_retained_bytes);
        cmt__json_u64(j, "reserved_va_bytes", f.reserved_va_bytes);
        cmt__json_end_object(j);
    }
    cmt__json_end_object(j);
}

static double pct(uint64_t a, uint64_t b)
{
    return a ? ((double)b - (double)a) * 100.0 / (double)a : (b ? 100.0 : 0.0);
}

static void output_json(const struct cmt__pass *pa, const struct cmt__pass *pb,
                        const struct site_delta *sites, size_t nsites)
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
    printf("  %-22s %14s %14s   %s%s (%+.1f%%)\n", name, x, y, a == b ? "" : a > b ? "-" : "+", d,
           pct(a, b));
}

static void output_text(const struct cmt__pass *pa, const struct cmt__pass *pb,
                        const struct site_delta *sites, size_t nsites)
{
    const struct cmt_replay_totals *a = cmt_replay_totals(pa->replay);
    const struct cmt_replay_totals *b = cmt_replay_totals(pb->replay);
    char x[32], y[32], frame[512];
    uint64_t ea = cmt_oom_count(pa->oom), eb = cmt_oom_count(pb->oom);
    printf("peak %s -> %s (%+.1f%%); out-of-memory episodes %" PRIu64 " -> %" PRIu64 "\n",
           cmt__bytes(a->peak_live_bytes, x), cmt__bytes(b->peak_live_bytes, y),
           pct(a->peak_live_bytes, b->peak_live_bytes), ea, eb);
    printf("  %-22s %14s %14s\n", "", "A", "B");
    row("peak live", a->peak_live_bytes, b->peak_live_bytes, 1);
    printf("  %-22s %14s %14s\n", "time to peak", cmt__duration(a->peak_t_ns, x),
           cmt__duration(b->peak_t_ns, y));
    row("allocation calls", a->alloc_calls, b->alloc_calls, 0);
    row("failures", a->failures, b->failures, 0);
    row("OOM episodes", ea, eb, 0);
    struct cmt_fragmentation fa = {0}, fb = {0};
    cmt_replay_peak_fragmentation(pa->replay, peak_device(pa->replay), &fa);
    cmt_replay_peak_fragmentation(pb->replay, peak_device(pb->replay), &fb);
    row("holes at peak", fa.hole_bytes, fb.hole_bytes, 1);
    row("largest hole at peak", fa.largest_hole, fb.largest_hole, 1);
    row("granularity waste", fa.waste_bytes, fb.waste_bytes, 1);
    row("pool retention", fa.pool_retained_bytes, fb.pool_retained_bytes, 1);
    for (int side = 0; side < 2; side++) {
        const struct cmt__pass *p = side ? pb : pa;
        for (uint32_t i = 0; i < cmt_oom_count(p->oom); i++) {
            const struct cmt_oom_episode *e = cmt_oom_episode(p->oom, i);
            printf("  %s: out of memory: %s of %s on GPU %d: %s\n", side ? "B" : "A", e->api,
                   cmt__bytes(e->request_bytes, x), e->dev, cmt_verdict_name(e->verdict));
        }
    }
    if (nsites && sites[0].a != sites[0].b)
        printf("\ncall sites whose bytes at the peak changed most\n");
    for (size_t i = 0; i < nsites && i < SITES && sites[i].a != sites[i].b; i++)
        printf("  %10s -> %-10s  %s\n", cmt__bytes(sites[i].a, x), cmt__bytes(sites[i].b, y),
               sites[i].stack_a ? cmt__stack_top(pa->reader, sites[i].stack_a, frame, sizeof frame)
                                : cmt__stack_top(pb->reader, sites[i].stack_b, frame, sizeof frame));
}

int cmt_cmd_diff(int argc, char **argv)
{
    int json = 0, gate = 0;
    double limit = 0;
    const char *paths[2] = {NULL, NULL};
    int npaths = 0;
    for (int i = 1; i < argc; i++) {
        if (cmt__is(argv[i], "-h", "--help")) {
            fputs(usage, stdout);
            return 0;
        } else if (cmt__is(argv[i], "--json", NULL)) {
            json = 1;
        } else if (cmt__is(argv[i], "--fail-if-peak-grows", NULL)) {
            char *end;
            if (++i >= argc)
                return cmt__usage_error("diff", "--fail-if-peak-grows needs a percentage");
            limit = strtod(argv[i], &end);
            if (end == argv[i] || (*end && strcmp(end, "%") != 0) || limit < 0)
                return cmt__usage_error("diff", "--fail-if-peak-grows wants a percentage >= 0, "
                                        "got '%s'", argv[i]);
            gate = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cmt__usage_error("diff", "unknown option '%s'", argv[i]);
        } else if (npaths == 2) {
            return cmt__usage_error("diff", "two trace files expected, got '%s' too", argv[i]);
        } else {
            paths[npaths++] = argv[i];
        }
    }
    if (npaths != 2)
        return cmt__usage_error("diff", "two trace files A and B expected");
    struct cmt__pass pa, pb;
    if (cmt__pass_run(&pa, "diff", paths[0], 1, NULL) != 0)
        return 1;
    if (cmt__pass_run(&pb, "diff", paths[1], 1, NULL) != 0) {
        cmt__pass_close(&pa);
        return 1;
    }
    struct site_delta *sites = NULL;
    size_t nsites = match_sites(&pa, &pb, &sites);
    if (json)
        output_json(&pa, &pb, sites, nsites);
    else
        output_text(&pa, &pb, sites, nsites);
    int rc = 0;
    uint64_t a = cmt_replay_totals(pa.replay)->peak_live_bytes;
    uint64_t b = cmt_replay_totals(pb.replay)->peak_live_bytes;
    if (gate && (double)b > (double)a * (1.0 + limit / 100.0)) {
        char x[32], y[32];
        fprintf(stderr, "cumemtrace diff: peak grew from %s to %s (%+.1f%%), more than the "
                "allowed %.1f%%\n", cmt__bytes(a, x), cmt__bytes(b, y), pct(a, b), limit);
        rc = 1;
    }
    for (size_t i = 0; i < nsites; i++)
        free(sites[i].key);
    free(sites);
    cmt__pass_close(&pa);
    cmt__pass_close(&pb);
    return rc;
}
