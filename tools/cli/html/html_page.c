/* html_page.c — the self-contained HTML report: the embedded template with the runs' data as
 * one JSON object (keys in docs/html-report.md). The charts are drawn by the template's
 * script from that data; nothing here computes an analysis. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "html/html.h"
#include "html/html_ranks.h"
#include "print/phase_print.h"
#include "print/alloc_print.h"
#include "print/ledger_print.h"
#include "oom.h"
#include "output.h"
#include "report.h"
#include "sites.h"

#define NAME_SIZE 1024
#define SCHEMA 1

const char *cmt__html_summary(const struct cmt__html_run *run, char *buf, size_t size)
{
    const struct cmt__pass *p = &run->pass;
    const struct cmt_replay_totals *t = cmt_replay_totals(p->replay);
    char a[32], b[32], dev[160], why[320], alloc_text[400];
    const char *alloc = cmt__alloc_headline_text(p, alloc_text, sizeof alloc_text);
    uint32_t n = p->oom ? cmt_oom_count(p->oom) : 0;
    if (n) {
        const struct cmt_oom_episode *e = cmt_oom_episode(p->oom, 0);
        cmt__oom_sentence(e, why, sizeof why);
        snprintf(buf, size, "Out of memory%s: %s of %s on %s failed at %s (%s): %s.",
                 n > 1 ? " (first of several)" : "", e->api, cmt__bytes(e->request_bytes, a),
                 cmt__device_label(p->replay, e->dev, dev, sizeof dev), cmt__duration(e->t_ns, b),
                 cmt_verdict_name(e->verdict), why);
    } else if (t->peak_live_bytes) {
        snprintf(buf, size,
                 "No out-of-memory failure: device memory peaked at %s, %s into the run (%" PRIu64
                 " allocation calls)%s%s.",
                 cmt__bytes(t->peak_live_bytes, a), cmt__duration(t->peak_t_ns, b), t->alloc_calls,
                 alloc ? "; " : "", alloc ? alloc : "");
    } else if (alloc) {
        snprintf(buf, size, "No out-of-memory failure: %s (no driver calls recorded).", alloc);
    } else {
        snprintf(buf, size, "No device memory was allocated.");
    }
    return buf;
}

static void group_json(struct cmt__json *j, const cmt_reader *r, const char *name, uint32_t stack,
                       uint64_t at_peak, uint64_t own_peak)
{
    cmt__json_object(j, NULL);
    cmt__json_string(j, "name", name);
    cmt__json_stack(j, "stack", r, stack);
    cmt__json_u64(j, "at_peak_bytes", at_peak);
    cmt__json_u64(j, "own_peak_bytes", own_peak);
    cmt__json_end_object(j);
}

/* A group's name: its call-site frame, and where two groups would read the same (one call
 * site reached from two callers), the frames after it up to where they differ. */
static void group_names(const cmt_reader *r, const struct cmt_site_groups *g,
                        char names[][NAME_SIZE])
{
    char keys[CMT_SITE_GROUPS_MAX][NAME_SIZE];
    for (uint32_t k = 0; k < g->count; k++) {
        cmt_stack_top(r, g->stack[k], names[k], NAME_SIZE);
        cmt_site_key(r, g->stack[k], keys[k], NAME_SIZE);
    }
    int twin[CMT_SITE_GROUPS_MAX]; /* another group of the same name, or -1 */
    for (uint32_t k = 0; k < g->count; k++) {
        twin[k] = -1;
        for (uint32_t o = 0; o < g->count && twin[k] < 0; o++)
            if (o != k && strcmp(names[k], names[o]) == 0)
                twin[k] = (int)o;
    }
    for (uint32_t k = 0; k < g->count; k++) {
        if (twin[k] < 0)
            continue;
        /* the key's frames up to and including the first that differs from the twin's */
        const char *other = keys[twin[k]];
        size_t n = 0, len = strlen(keys[k]);
        while (n < len && keys[k][n] == other[n])
            n++;
        const char *cut = strstr(keys[k] + n, " <- ");
        snprintf(names[k], NAME_SIZE, "%.*s", (int)(cut ? (size_t)(cut - keys[k]) : len), keys[k]);
    }
}

static void groups_json(struct cmt__json *j, const struct cmt__html_run *run)
{
    const struct cmt_site_groups *g = &run->groups;
    static char names[CMT_SITE_GROUPS_MAX][NAME_SIZE];
    group_names(run->pass.reader, g, names);
    cmt__json_array(j, "groups");
    for (uint32_t k = 0; k < g->count; k++)
        group_json(j, run->pass.reader, names[k], g->stack[k], g->at_peak_bytes[k],
                   g->own_peak_bytes[k]);
    group_json(j, run->pass.reader, "other call sites", 0, g->at_peak_bytes[g->count],
               g->own_peak_bytes[g->count]);
    cmt__json_end_array(j);
}

/* Points as parallel arrays (only buckets that saw an event); gb and lgb hold group_count
 * values per point: at the bucket's maximum and at its end. */
static void buckets_json(struct cmt__json *j, const struct cmt_site_timeline_point *points,
                         uint32_t n, uint32_t group_count, const uint64_t *gb, const uint64_t *lgb)
{
    static const char *const keys[] = {"t", "live", "lt", "llive", "oom"};
    for (int col = 0; col < 5; col++) {
        cmt__json_array(j, keys[col]);
        for (uint32_t i = 0; i < n; i++) {
            const struct cmt_site_timeline_point *p = &points[i];
            uint64_t v[] = {p->t_ns, p->live_bytes, p->last_t_ns, p->last_live_bytes, p->oom};
            if (p->used)
                cmt__json_u64(j, NULL, v[col]);
        }
        cmt__json_end_array(j);
    }
    for (int last = 0; last < 2; last++) {
        cmt__json_array(j, last ? "lg" : "g");
        for (uint32_t i = 0; i < n; i++) {
            if (!points[i].used)
                continue;
            const uint64_t *g = (last ? lgb : gb) + (size_t)i * group_count;
            cmt__json_array(j, NULL);
            for (uint32_t k = 0; k < group_count; k++)
                cmt__json_u64(j, NULL, g[k]);
            cmt__json_end_array(j);
        }
        cmt__json_end_array(j);
    }
}

/* The finer levels of device dev (site_levels.h): each a span with its entry state. */
static void levels_json(struct cmt__json *j, const struct cmt_site_levels *lv, int32_t dev)
{
    cmt__json_array(j, "levels");
    for (uint32_t i = 0; i < lv->count; i++) {
        const struct cmt_site_level *l = &lv->levels[i];
        if (l->dev != dev)
            continue;
        cmt__json_object(j, NULL);
        CMT__JSON_U64S(j, {"window", l->window}, {"t_lo", l->t_lo}, {"t_hi", l->t_hi},
                       {"bucket_ns", l->width}, {"entry_live", l->entry_live_bytes});
        cmt__json_array(j, "entry_g");
        for (uint32_t k = 0; k < lv->group_count; k++)
            cmt__json_u64(j, NULL, l->entry_groups[k]);
        cmt__json_end_array(j);
        buckets_json(j, l->p, l->points, lv->group_count, l->group_bytes, l->last_group_bytes);
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
}

/* The points of a device's series as parallel arrays, and its free/total samples. */
static void points_json(struct cmt__json *j, const struct cmt_site_timeline *tl,
                        const struct cmt_site_timeline_device *d)
{
    buckets_json(j, d->points, tl->max_points, tl->group_count, d->group_bytes,
                 d->last_group_bytes);
    /* free/total samples: at their bucket's start, the most held by others, the last */
    static const char *const skeys[] = {"t", "total", "others", "last"};
    cmt__json_object(j, "samples");
    for (int col = 0; col < 4; col++) {
        cmt__json_array(j, skeys[col]);
        for (uint32_t i = 0; i < tl->max_points; i++) {
            const struct cmt_site_timeline_point *p = &d->points[i];
            uint64_t v[] = {(uint64_t)i << tl->width_shift, p->total_bytes, p->others_bytes,
                            p->last_others_bytes};
            if (p->sampled)
                cmt__json_u64(j, NULL, v[col]);
        }
        cmt__json_end_array(j);
    }
    cmt__json_end_object(j);
}

/* One device: its series (d NULL: none, a device only the allocator's records name). */
static void device_json(struct cmt__json *j, const struct cmt__html_run *run, int32_t dev,
                        const struct cmt_site_timeline_device *d)
{
    const struct cmt_site_timeline *tl = &run->series;
    const struct cmt_replay_device *rd = cmt_replay_device(run->pass.replay, dev);
    static const struct cmt_site_timeline_device none;
    char label[160];
    cmt__json_object(j, NULL);
    cmt__json_i64(j, "dev", dev);
    cmt__json_string(j, "label", cmt__device_label(run->pass.replay, dev, label, sizeof label));
    uint64_t total = !rd ? 0 : rd->total_bytes ? rd->total_bytes : rd->baseline_total_bytes;
    CMT__JSON_U64S(j, {"total_bytes", total}, {"peak_bytes", rd ? rd->peak_live_bytes : 0},
                   {"peak_t_ns", rd ? rd->peak_t_ns : 0}, {"bucket_ns", tl->width});
    if (d) {
        points_json(j, tl, d);
        levels_json(j, &run->levels, dev);
    } else { /* no bucket used */
        struct cmt_site_timeline empty = {.group_count = tl->group_count};
        points_json(j, &empty, &none);
    }
    cmt__html_alloc_lines_json(j, run, dev);
    cmt__json_end_object(j);
}

static int charted(const struct cmt__html_run *run, int32_t dev)
{
    const struct cmt_site_timeline_device *d = run->have_series
                                                   ? cmt_site_timeline_device(&run->series, dev)
                                                   : NULL;
    const struct cmt_replay_device *rd = cmt_replay_device(run->pass.replay, dev);
    return d && rd && rd->peak_live_bytes;
}

static void devices_json(struct cmt__json *j, const struct cmt__html_run *run)
{
    const struct cmt_site_timeline *tl = &run->series;
    cmt__json_array(j, "devices");
    for (uint32_t s = 0; run->have_series && s < tl->device_count; s++)
        if (charted(run, tl->devices[s].dev))
            device_json(j, run, tl->devices[s].dev, &tl->devices[s]);
    /* devices only the allocator-level records name (a converted snapshot has no driver
     * events): their allocated and reserved lines */
    for (size_t i = 0; run->have_alloc && i < run->alloc.line_count; i++)
        if (!charted(run, run->alloc.lines[i].dev))
            device_json(j, run, run->alloc.lines[i].dev, NULL);
    cmt__json_end_array(j);
}

static void oom_json(struct cmt__json *j, const struct cmt__html_run *run)
{
    const struct cmt__pass *p = &run->pass;
    char sentence[512], dev[160];
    cmt__json_array(j, "ooms");
    for (uint32_t i = 0; p->oom && i < cmt_oom_count(p->oom); i++) {
        const struct cmt_oom_episode *e = cmt_oom_episode(p->oom, i);
        cmt__json_object(j, NULL);
        cmt__json_i64(j, "dev", e->dev);
        cmt__json_string(j, "device", cmt__device_label(p->replay, e->dev, dev, sizeof dev));
        cmt__json_u64(j, "t_ns", e->t_ns);
        cmt__json_u64(j, "seq", e->seq);
        cmt__json_string(j, "api", e->api);
        cmt__json_u64(j, "request_bytes", e->request_bytes);
        cmt__json_string(j, "verdict", cmt_verdict_name(e->verdict));
        cmt__phase_oom_json(j, &p->phases, e->t_ns, e->tid);
        cmt__oom_sentence(e, sentence, sizeof sentence);
        cmt__json_string(j, "sentence", sentence);
        cmt__json_u64(j, "attempts", e->attempts);
        cmt__json_u64(j, "released_bytes", e->released_bytes);
        cmt__json_bool(j, "fatal", e->fatal);
        cmt__json_bool(j, "free_measured", e->have_meminfo);
        CMT__JSON_U64S(
            j, {"free_bytes", e->free_bytes}, {"total_bytes", e->total_bytes},
            {"process_bytes", e->process_bytes}, {"pool_retained_bytes", e->pool_retained_bytes},
            {"others_bytes", e->others_bytes}, {"shortfall_bytes", e->shortfall_bytes},
            {"hole_bytes", e->frag.hole_bytes}, {"largest_hole_bytes", e->frag.largest_hole});
        cmt__json_stack(j, "stack", p->reader, e->stack);
        cmt__json_array(j, "holders");
        for (uint32_t h = 0; h < e->holder_count; h++) {
            char top[512];
            cmt__json_object(j, NULL);
            cmt__json_string(j, "name",
                             cmt_stack_top(p->reader, e->holders[h].stack, top, sizeof top));
            cmt__json_u64(j, "bytes", e->holders[h].bytes);
            cmt__json_u64(j, "count", e->holders[h].count);
            cmt__json_stack(j, "stack", p->reader, e->holders[h].stack);
            cmt__json_end_object(j);
        }
        cmt__json_end_array(j);
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
}

static void leaks_json(struct cmt__json *j, const struct cmt__html_run *run)
{
    const struct cmt__pass *p = &run->pass;
    char top[512];
    cmt__json_u64(j, "live_at_end_bytes", cmt_replay_totals(p->replay)->live_bytes);
    cmt__json_array(j, "leaks");
    for (size_t i = 0; i < p->report.leak_count; i++) {
        const struct cmt_ranked_site *l = &p->report.leaks[i];
        uint32_t stack = cmt_replay_site(p->replay, l->site)->stack;
        cmt__json_object(j, NULL);
        cmt__json_string(j, "name", cmt_stack_top(p->reader, stack, top, sizeof top));
        cmt__json_u64(j, "bytes", l->bytes);
        cmt__json_u64(j, "count", l->count);
        cmt__json_stack(j, "stack", p->reader, stack);
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
}

static void whatif_json(struct cmt__json *j, const struct cmt__html_run *run)
{
    cmt__json_object(j, "whatif");
    cmt__json_bool(j, "available", run->have_whatif);
    if (!run->have_whatif) {
        cmt__json_string(j, "reason", run->whatif_reason);
        cmt__json_end_object(j);
        return;
    }
    cmt__json_u64(j, "capacity_bytes", run->whatif_capacity.capacity);
    cmt__json_string(j, "capacity_source",
                     cmt_whatif_capacity_source_name(run->whatif_capacity.source));
    cmt__json_string(j, "capacity_text", run->whatif_capacity_text);
    cmt__json_string(j, "advice", run->whatif_advice);
    cmt__json_i64(j, "best", run->whatif_best);
    cmt__json_array(j, "rows");
    for (size_t i = 0; i < run->whatif_count; i++) {
        const struct cmt_whatif_result *res = &run->whatif[i];
        char conf[256];
        cmt_whatif_setting_conf(&res->setting, conf, sizeof conf);
        cmt__json_object(j, NULL);
        cmt__json_string(j, "conf", conf);
        cmt__json_bool(j, "oom", res->oom);
        CMT__JSON_U64S(j, {"peak_reserved_bytes", res->peak_reserved},
                       {"peak_allocated_bytes", res->peak_allocated},
                       {"inactive_split_at_peak_bytes", res->inactive_split_at_peak},
                       {"alloc_retries", res->alloc_retries},
                       {"device_alloc_calls", res->device_alloc_calls});
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
    cmt__json_end_object(j);
}

/* The run's figures under its name: the driver's where it has them, the allocator's beside
 * them, or alone with "no driver calls recorded". @return buf. */
static const char *run_line(const struct cmt__html_run *run, char *buf, size_t size)
{
    const struct cmt_replay_totals *t = cmt_replay_totals(run->pass.replay);
    char a[32], b[32], alloc[400];
    const char *at = cmt__alloc_headline_text(&run->pass, alloc, sizeof alloc);
    if (t->alloc_calls || !at)
        snprintf(buf, size, "%" PRIu64 " events, %" PRIu64 " allocation calls, peak %s at %s%s%s",
                 t->events, t->alloc_calls, cmt__bytes(t->peak_live_bytes, a),
                 cmt__duration(t->peak_t_ns, b), at ? "; " : "", at ? at : "");
    else
        snprintf(buf, size, "%s (no driver calls recorded)", at);
    return buf;
}

static void run_json(struct cmt__json *j, const struct cmt__html_run *run)
{
    const struct cmt_replay_totals *t = cmt_replay_totals(run->pass.replay);
    char summary[1024], line[600];
    cmt__json_object(j, NULL);
    cmt__json_string(j, "file", run->pass.path);
    cmt__json_string(j, "summary", cmt__html_summary(run, summary, sizeof summary));
    cmt__alloc_json_headline(j, "allocator_figures", run->pass.alloc);
    cmt__json_string(j, "line", run_line(run, line, sizeof line));
    CMT__JSON_U64S(j, {"events", t->events}, {"alloc_calls", t->alloc_calls},
                   {"peak_bytes", t->peak_live_bytes}, {"peak_t_ns", t->peak_t_ns},
                   {"end_t_ns", t->last_t_ns});
    cmt__json_bool(j, "damaged", run->pass.damage < 0);
    groups_json(j, run);
    devices_json(j, run);
    oom_json(j, run);
    cmt__phase_band_json(j, &run->pass.phases);
    leaks_json(j, run);
    whatif_json(j, run);
    if (cmt__html_alloc_json(j, run) != 0)
        cmt__json_null(j, "allocator_failed"); /* out of memory: the view is missing */
    if (cmt__html_history_json(j, run) != 0)
        cmt__json_null(j, "history_failed");
    cmt__ledger_page_json(j, &run->pass, run->ledger_alloc, run->ledger);
    cmt__json_end_object(j);
}

static void diff_json(struct cmt__json *j, const struct cmt__html_run *runs,
                      const struct cmt_site_delta *deltas, size_t ndeltas)
{
    cmt__json_object(j, "diff");
    cmt__json_array(j, "sites");
    for (size_t i = 0; i < ndeltas; i++) {
        const struct cmt_site_delta *d = &deltas[i];
        cmt__json_object(j, NULL);
        cmt__json_string(j, "name", d->key);
        cmt__json_u64(j, "a_bytes", d->a);
        cmt__json_u64(j, "b_bytes", d->b);
        if (d->stack_b)
            cmt__json_stack(j, "stack", runs[1].pass.reader, d->stack_b);
        else
            cmt__json_stack(j, "stack", runs[0].pass.reader, d->stack_a);
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
    cmt__json_end_object(j);
}

/* The data object, written to a memory stream so that it can be made safe for a <script>. */
static char *data_json(const struct cmt__html_run *runs, size_t nruns,
                       const struct cmt_site_delta *deltas, size_t ndeltas, size_t *len)
{
    char *buf = NULL;
    FILE *m = open_memstream(&buf, len);
    if (!m)
        return NULL;
    struct cmt__json j;
    cmt__json_init(&j, m);
    /* inside <script>, "</script>" or "<!--" in a trace's string would end the data */
    j.escape_flags = CMT__JSON_ESCAPE_HTML;
    cmt__json_object(&j, NULL);
    cmt__json_u64(&j, "schema", SCHEMA);
    cmt__json_string(&j, "generator", "cumemtrace " CMT_VERSION);
    cmt__json_array(&j, "runs");
    for (size_t i = 0; i < nruns; i++)
        run_json(&j, &runs[i]);
    cmt__json_end_array(&j);
    if (nruns == 2)
        diff_json(&j, runs, deltas, ndeltas);
    if (nruns == 1 && runs[0].ranks)
        cmt__html_ranks_json(&j, runs[0].ranks);
    cmt__json_end_object(&j);
    if (fclose(m) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

int cmt__html_write(FILE *f, const struct cmt__html_run *runs, size_t nruns,
                    const struct cmt_site_delta *deltas, size_t ndeltas)
{
    const char *tpl = cmt__html_template, *marker = strstr(tpl, CMT__HTML_MARKER);
    if (!marker)
        return -1;
    size_t len;
    char *data = data_json(runs, nruns, deltas, ndeltas, &len);
    if (!data)
        return -1;
    fwrite(tpl, 1, (size_t)(marker - tpl), f);
    fwrite(data, 1, len, f); /* its strings escaped '<' (CMT__JSON_ESCAPE_HTML) */
    fputs(marker + strlen(CMT__HTML_MARKER), f);
    free(data);
    return ferror(f) ? -1 : 0;
}
