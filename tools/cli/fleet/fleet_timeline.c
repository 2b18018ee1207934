/* fleet_timeline.c — `timeline` and `diff` over several traces: the processes side by side
 * on one clock, and two runs compared rank by rank. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/fleet_cli.h"
#include "output.h"

/* "rank_3" or "pid_4242": a CSV column, a JSON label. */
static const char *column(const struct cmt_fleet_process *p, char *buf, size_t size)
{
    if (p->rank >= 0)
        snprintf(buf, size, "rank_%d", (int)p->rank);
    else
        snprintf(buf, size, "pid_%" PRIu64, p->pid);
    return buf;
}

static void timeline_csv(const struct cmt_fleet *f, const uint64_t *v, uint32_t n, uint64_t w)
{
    char name[48];
    printf("t_ns,wall_ns");
    for (uint32_t p = 0; p < f->count; p++)
        if (!f->processes[p].error)
            printf(",%s", column(&f->processes[p], name, sizeof name));
    printf("\n");
    for (uint32_t b = 0; b < n; b++) {
        printf("%" PRIu64 ",%" PRIu64, b * w, f->start_wall_ns + b * w);
        for (uint32_t p = 0; p < f->count; p++)
            if (!f->processes[p].error)
                printf(",%" PRIu64, v[(size_t)p * n + b]);
        printf("\n");
    }
}

static void timeline_json(const struct cmt_fleet *f, const uint64_t *v, uint32_t n, uint64_t w)
{
    struct cmt__json j;
    cmt__json_init(&j, stdout);
    cmt__json_object(&j, NULL);
    CMT__JSON_U64S(&j, {"start_wall_ns", f->start_wall_ns}, {"width_ns", w}, {"points", n});
    cmt__json_array(&j, "processes");
    for (uint32_t p = 0; p < f->count; p++) {
        const struct cmt_fleet_process *pr = &f->processes[p];
        if (pr->error)
            continue;
        cmt__json_object(&j, NULL);
        cmt__fleet_json_who(&j, pr);
        cmt__json_i64(&j, "dev", pr->busiest_dev);
        cmt__json_u64(&j, "peak_live_bytes", pr->peak_live_bytes);
        cmt__json_u64(&j, "start_offset_ns", pr->start_wall_ns - f->start_wall_ns);
        if (pr->failure)
            cmt__json_u64(&j, "failure_offset_ns",
                          pr->start_wall_ns + pr->failure_t_ns - f->start_wall_ns);
        cmt__json_array(&j, "live_bytes");
        for (uint32_t b = 0; b < n; b++)
            cmt__json_u64(&j, NULL, v[(size_t)p * n + b]);
        cmt__json_end_array(&j);
        cmt__json_end_object(&j);
    }
    cmt__json_end_array(&j);
    cmt__json_end_object(&j);
    cmt__json_finish(&j);
}

/* One row per process: a cell per bucket scaled to the highest peak of all, '!' where it
 * failed. */
static void timeline_text(const struct cmt_fleet *f, const uint64_t *v, uint32_t n, uint64_t w)
{
    static const char *const bars[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    char a[32], b[32], who[320];
    uint64_t top = 0;
    for (size_t i = 0; i < (size_t)n * f->count; i++)
        top = v[i] > top ? v[i] : top;
    printf("%u processes on one clock, 0 .. %s from the first start; each cell the most held "
           "in %s (busiest device), scaled to %s\n",
           f->count, cmt__duration(f->end_wall_ns - f->start_wall_ns, a), cmt__duration(w, b),
           cmt__bytes(top, who));
    for (uint32_t p = 0; p < f->count; p++) {
        const struct cmt_fleet_process *pr = &f->processes[p];
        if (pr->error)
            continue;
        int64_t fail =
            pr->failure ? (int64_t)((pr->start_wall_ns + pr->failure_t_ns - f->start_wall_ns) / w)
                        : -1;
        printf("  %-34s %10s |", cmt__fleet_who(pr, who, sizeof who),
               cmt__bytes(pr->peak_live_bytes, a));
        for (uint32_t c = 0; c < n; c++) {
            uint64_t x = v[(size_t)p * n + c];
            int level = !top || !x ? 0 : x >= top ? 8 : 1 + (int)((double)x / (double)top * 7);
            fputs(c == fail ? "!" : bars[level], stdout);
        }
        printf("|\n");
    }
}

int cmt__fleet_timeline(int argc, char **argv, const char *usage)
{
    struct cmt__fleet_args a;
    int rc = cmt__fleet_parse(argc, argv, "timeline", usage,
                              CMT__FA_JSON | CMT__FA_CSV | CMT__FA_POINTS, &a);
    if (rc >= 0)
        return rc;
    if (a.json && a.csv) {
        free(a.inputs);
        return cmt__usage_error("timeline", "--csv and --json conflict: choose one output");
    }
    struct cmt_fleet f;
    rc = cmt__fleet_open("timeline", a.inputs, a.ninputs, a.jobs, &f);
    free(a.inputs);
    if (rc)
        return rc;
    uint32_t n = a.points ? a.points : a.json || a.csv ? 1000 : 60;
    uint64_t *v, w;
    if (cmt_fleet_grid(&f, n, &v, &w) != 0) {
        fprintf(stderr, "cumemtrace timeline: out of memory\n");
        cmt_fleet_free(&f);
        return 1;
    }
    if (a.csv)
        timeline_csv(&f, v, n, w);
    else if (a.json)
        timeline_json(&f, v, n, w);
    else
        timeline_text(&f, v, n, w);
    rc = 0;
    for (uint32_t p = 0; p < f.count; p++)
        rc |= f.processes[p].error != 0;
    free(v);
    cmt_fleet_free(&f);
    return rc;
}

/* ---- diff: two runs, rank by rank ---- */

static double change(uint64_t a, uint64_t b)
{
    return a ? ((double)b - (double)a) / (double)a * 100.0 : b ? 100.0 : 0.0;
}

static void json_side(struct cmt__json *j, const char *key, const char *input,
                      const struct cmt_fleet *f)
{
    cmt__json_object(j, key);
    cmt__json_string(j, "input", input);
    CMT__JSON_U64S(j, {"processes", f->count}, {"max_peak_bytes", f->peak_max_bytes},
                   {"median_peak_bytes", f->peak_median_bytes});
    if (f->peak_median_bytes)
        cmt__json_double(j, "imbalance", f->imbalance);
    else
        cmt__json_null(j, "imbalance");
    const struct cmt_fleet_process *first = f->first_failure >= 0 ? &f->processes[f->first_failure]
                                                                  : NULL;
    cmt__json_i64_or_null(j, "first_failing_rank", first ? first->rank : -1);
    cmt__json_end_object(j);
}

static void json_member(struct cmt__json *j, const char *key, const struct cmt_fleet *f, int64_t i)
{
    if (i < 0) {
        cmt__json_null(j, key);
        return;
    }
    const struct cmt_fleet_process *p = &f->processes[i];
    cmt__json_object(j, key);
    cmt__fleet_json_who(j, p);
    cmt__json_u64(j, "peak_live_bytes", p->peak_live_bytes);
    cmt__json_u64(j, "oom_episodes", p->episode_count);
    cmt__json_end_object(j);
}

static void diff_json(const char *const in[2], const struct cmt_fleet f[2], const int64_t *pairs,
                      size_t n)
{
    struct cmt__json j;
    cmt__json_init(&j, stdout);
    cmt__json_object(&j, NULL);
    json_side(&j, "a", in[0], &f[0]);
    json_side(&j, "b", in[1], &f[1]);
    cmt__json_array(&j, "pairs");
    for (size_t i = 0; i < n; i++) {
        int64_t x = pairs[2 * i], y = pairs[2 * i + 1];
        cmt__json_object(&j, NULL);
        json_member(&j, "a", &f[0], x);
        json_member(&j, "b", &f[1], y);
        if (x >= 0 && y >= 0)
            cmt__json_i64(
                &j, "peak_delta_bytes",
                (int64_t)(f[1].processes[y].peak_live_bytes - f[0].processes[x].peak_live_bytes));
        cmt__json_end_object(&j);
    }
    cmt__json_end_array(&j);
    cmt__json_end_object(&j);
    cmt__json_finish(&j);
}

static void diff_text(const char *const in[2], const struct cmt_fleet f[2], const int64_t *pairs,
                      size_t n)
{
    char a[32], b[32], name[48], text[512];
    for (int s = 0; s < 2; s++) {
        const struct cmt_fleet *fs = &f[s];
        printf("%c: %s: %u processes, max peak %s, imbalance ", 'A' + s,
               cmt__text(in[s], text, sizeof text), fs->count, cmt__bytes(fs->peak_max_bytes, a));
        if (fs->peak_median_bytes)
            printf("%.2f", fs->imbalance);
        else
            printf("unknown");
        const struct cmt_fleet_process *first = fs->first_failure >= 0
                                                    ? &fs->processes[fs->first_failure]
                                                    : NULL;
        printf(", first failure: %s\n", first ? cmt__fleet_who(first, text, sizeof text) : "none");
    }
    printf("\n  %-14s %12s %12s %9s %6s %6s\n", "process", "peak A", "peak B", "change", "OOM A",
           "OOM B");
    for (size_t i = 0; i < n; i++) {
        int64_t x = pairs[2 * i], y = pairs[2 * i + 1];
        const struct cmt_fleet_process *pa = x >= 0 ? &f[0].processes[x] : NULL;
        const struct cmt_fleet_process *pb = y >= 0 ? &f[1].processes[y] : NULL;
        char pct[16] = "-", oa[16] = "-", ob[16] = "-";
        if (pa && pb)
            snprintf(pct, sizeof pct, "%+.1f%%", change(pa->peak_live_bytes, pb->peak_live_bytes));
        if (pa)
            snprintf(oa, sizeof oa, "%u", pa->episode_count);
        if (pb)
            snprintf(ob, sizeof ob, "%u", pb->episode_count);
        printf("  %-14s %12s %12s %9s %6s %6s\n", column(pa ? pa : pb, name, sizeof name),
               pa ? cmt__bytes(pa->peak_live_bytes, a) : "-",
               pb ? cmt__bytes(pb->peak_live_bytes, b) : "-", pct, oa, ob);
    }
}

int cmt__fleet_diff(int argc, char **argv, const char *usage)
{
    struct cmt__fleet_args a;
    int rc = cmt__fleet_parse(argc, argv, "diff", usage, CMT__FA_JSON | CMT__FA_FAIL_PCT, &a);
    if (rc >= 0)
        return rc;
    if (a.ninputs != 2) {
        free(a.inputs);
        return cmt__usage_error("diff", "two runs expected (A B: directories or traces), got %d",
                                a.ninputs);
    }
    const char *in[2] = {a.inputs[0], a.inputs[1]};
    struct cmt_fleet f[2];
    rc = cmt__fleet_open("diff", &in[0], 1, a.jobs, &f[0]);
    if (!rc && (rc = cmt__fleet_open("diff", &in[1], 1, a.jobs, &f[1])))
        cmt_fleet_free(&f[0]);
    free(a.inputs);
    if (rc)
        return rc;
    int64_t *pairs;
    size_t n;
    if (cmt_fleet_pair(&f[0], &f[1], &pairs, &n) == 0) {
        if (a.json)
            diff_json(in, f, pairs, n);
        else
            diff_text(in, f, pairs, n);
        for (size_t i = 0; a.have_fail && i < n; i++) /* a rank that grew too much fails */
            if (pairs[2 * i] >= 0 && pairs[2 * i + 1] >= 0 &&
                change(f[0].processes[pairs[2 * i]].peak_live_bytes,
                       f[1].processes[pairs[2 * i + 1]].peak_live_bytes) > a.fail_pct)
                rc = 1;
        free(pairs);
    } else {
        fprintf(stderr, "cumemtrace diff: out of memory\n");
        rc = 1;
    }
    cmt_fleet_free(&f[0]);
    cmt_fleet_free(&f[1]);
    return rc;
}
