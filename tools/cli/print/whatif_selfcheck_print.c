/* whatif_selfcheck_print.c — how `whatif` shows the model's check of itself against a run with
 * allocator-level records (whatif_blocks.h). */
#include <inttypes.h>
#include <stdio.h>

#include "output.h"
#include "print/whatif_cli.h"

static const char *site_text(const struct cmt_whatif_run_out *run, uint32_t site)
{
    const struct cmt_whatif_stream *s = run->stream;
    return site && site < s->site_count && s->sites[site][0] ? s->sites[site] : NULL;
}

/* A history that starts late: what the file proves, what the model rebuilt from it. */
static void print_window(FILE *f, const struct cmt_whatif_selfcheck *c)
{
    if (!c->before_segments && !c->before_blocks)
        return;
    fprintf(f,
            "  window    the history starts late (a ring-limited snapshot); the file proves the "
            "state at its\n"
            "            start: %" PRIu64 " segment%s and %" PRIu64 " block%s held, ",
            c->before_segments, c->before_segments == 1 ? "" : "s", c->before_blocks,
            c->before_blocks == 1 ? "" : "s");
    if (c->expandable)
        fprintf(f, "placed where the model puts them\n"
                   "            (expandable segments): an approximation under every setting\n");
    else if (c->before_inexact)
        fprintf(f,
                "rebuilt in c10's layout except %" PRIu64 " block%s\n"
                "            placed where the model puts them: an approximation under every "
                "setting\n",
                c->before_inexact, c->before_inexact == 1 ? "" : "s");
    else
        fprintf(f, "rebuilt exactly in c10's layout under the run's\n"
                   "            settings; another setting starts from that same layout, an "
                   "approximation (how\n"
                   "            it would have laid out memory before the window is not in the "
                   "file)\n");
}

void cmt__whatif_print_selfcheck(FILE *f, const struct cmt_whatif_run_out *run)
{
    const struct cmt_whatif_selfcheck *c = run->check;
    char a[32], b[32], conf_buf[1200], error_buf[1200];
    fprintf(f, "  stream    the allocator's own block events (tensors of their requested size)\n");
    /* the settings and the model's error quote the trace: shown through the one terminal rule */
    const char *conf = cmt__text(c->conf[0] ? c->conf : "PyTorch's defaults", conf_buf,
                                 sizeof conf_buf);
    if (!c->ran) {
        fprintf(f, "  self-check  the run's settings (%s) could not be replayed: %s\n", conf,
                c->error[0] ? cmt__text(c->error, error_buf, sizeof error_buf) : "model error");
        return;
    }
    if (c->expandable)
        fprintf(f,
                "  self-check  with the run's settings (%s) the model's peak reserved is %s, "
                "the run's %s (expandable segments: segments not compared)\n",
                conf, cmt__bytes(c->model_peak_reserved, a),
                cmt__bytes(c->recorded_peak_reserved, b));
    else if (!c->recorded_segments)
        fprintf(f,
                "  self-check  with the run's settings (%s): the run recorded no segment "
                "allocation in its window; the model made %" PRIu64 "\n",
                conf, c->model_segments);
    else {
        char frees[96] = ""; /* named when either side freed a segment */
        if (c->recorded_frees || c->model_frees)
            snprintf(frees, sizeof frees, " and %" PRIu64 " of %" PRIu64 " segment frees",
                     c->agreeing_frees, c->recorded_frees);
        fprintf(f,
                "  self-check  with the run's settings (%s) the model reproduces %" PRIu64
                " of %" PRIu64 " segment allocations%s of this run%s\n",
                conf, c->agreeing, c->recorded_segments, frees,
                c->model_segments != c->recorded_segments || c->model_frees != c->recorded_frees
                    ? " (the model made a different number)"
                    : "");
    }
    if (!c->expandable || c->model_end_reserved != c->recorded_end_reserved ||
        c->model_ooms != c->recorded_ooms) {
        char e[32], g[32];
        fprintf(f,
                "              peak reserved%s %s (run %s), at the end %s (run %s), "
                "out-of-memory failures %" PRIu64 " (run %" PRIu64 ")\n",
                c->before_segments ? " in the window" : "", cmt__bytes(c->model_peak_reserved, a),
                cmt__bytes(c->recorded_peak_reserved, b), cmt__bytes(c->model_end_reserved, e),
                cmt__bytes(c->recorded_end_reserved, g), c->model_ooms, c->recorded_ooms);
    }
    if (c->capacity_bounded)
        fprintf(f,
                "              replayed with a capacity of at most %s: the run's out-of-memory "
                "retries prove it\n",
                cmt__bytes(c->capacity_bound, a));
    print_window(f, c);
    for (size_t i = 0; i < c->diff_count; i++) {
        const struct cmt_whatif_check_diff *d = &c->diffs[i];
        char r[32], m[32], q[32], t[32], text[512];
        const char *site = site_text(run, d->site);
        fprintf(f, "    segment %s#%zu: run %s, model %s, for a %s request at %s%s%s%s\n",
                d->is_free ? "free " : "", d->index + 1,
                d->recorded.size ? cmt__bytes(d->recorded.size, r) : "none",
                d->model.size ? cmt__bytes(d->model.size, m) : "none",
                cmt__bytes(d->request_bytes, q), cmt__duration(d->t_ns, t), site ? " (" : "",
                site ? cmt__text(site, text, sizeof text) : "", site ? ")" : "");
    }
    uint64_t shown = c->diff_count,
             all = (c->recorded_segments > c->model_segments ? c->recorded_segments
                                                             : c->model_segments) -
                   c->agreeing +
                   (c->recorded_frees > c->model_frees ? c->recorded_frees : c->model_frees) -
                   c->agreeing_frees;
    if (all > shown)
        fprintf(f, "    ... and %" PRIu64 " more disagreements (--json lists the first %d)\n",
                all - shown, CMT_WHATIF_CHECK_DIFFS);
}

static void json_segment(struct cmt__json *j, const char *key, const struct cmt_whatif_segment *s)
{
    if (!s->size) {
        cmt__json_null(j, key);
        return;
    }
    cmt__json_object(j, key);
    cmt__json_u64(j, "bytes", s->size);
    cmt__json_u64(j, "request_index", s->request);
    cmt__json_end_object(j);
}

void cmt__whatif_json_selfcheck(struct cmt__json *j, const struct cmt_whatif_run_out *run)
{
    const struct cmt_whatif_selfcheck *c = run->check;
    cmt__json_object(j, "self_check");
    cmt__json_string(j, "source", "allocator_events");
    cmt__json_string(j, "conf", c->conf);
    cmt__json_bool(j, "ran", c->ran);
    if (c->error[0])
        cmt__json_string(j, "error", c->error);
    cmt__json_bool(j, "expandable_segments", c->expandable);
    CMT__JSON_U64S(
        j, {"recorded_segments", c->recorded_segments}, {"model_segments", c->model_segments},
        {"agreeing_segments", c->agreeing}, {"recorded_segment_frees", c->recorded_frees},
        {"model_segment_frees", c->model_frees}, {"agreeing_segment_frees", c->agreeing_frees},
        {"segments_before_window", c->before_segments}, {"blocks_before_window", c->before_blocks},
        {"blocks_before_window_approximated", c->before_inexact});
    cmt__json_bool(j, "window_start_exact",
                   (c->before_segments || c->before_blocks) && !c->expandable &&
                       !c->before_inexact);
    CMT__JSON_U64S(j, {"recorded_ooms", c->recorded_ooms}, {"model_ooms", c->model_ooms},
                   {"recorded_peak_reserved_bytes", c->recorded_peak_reserved},
                   {"model_peak_reserved_bytes", c->model_peak_reserved});
    if (c->capacity_bounded)
        cmt__json_u64(j, "capacity_bound_bytes", c->capacity_bound);
    else
        cmt__json_null(j, "capacity_bound_bytes");
    cmt__json_u64(j, "recorded_end_reserved_bytes", c->recorded_end_reserved);
    cmt__json_u64(j, "model_end_reserved_bytes", c->model_end_reserved);
    /* the one verdict: every figure the run recorded reproduced (with expandable segments,
     * where segments are not compared, the peak, the end and the OOMs alone say it) */
    cmt__json_bool(j, "agrees",
                   c->ran && !c->error[0] && c->agreeing == c->recorded_segments &&
                       c->model_segments == c->recorded_segments &&
                       c->agreeing_frees == c->recorded_frees &&
                       c->model_frees == c->recorded_frees && c->model_ooms == c->recorded_ooms &&
                       c->model_peak_reserved == c->recorded_peak_reserved &&
                       c->model_end_reserved == c->recorded_end_reserved);
    cmt__json_array(j, "disagreements");
    for (size_t i = 0; i < c->diff_count; i++) {
        const struct cmt_whatif_check_diff *d = &c->diffs[i];
        const char *site = site_text(run, d->site);
        cmt__json_object(j, NULL);
        cmt__json_u64(j, "index", d->index);
        json_segment(j, "recorded", &d->recorded);
        json_segment(j, "model", &d->model);
        cmt__json_u64(j, "request_bytes", d->request_bytes);
        cmt__json_u64(j, "t_ns", d->t_ns);
        cmt__json_string_or_null(j, "site", site);
        cmt__json_string(j, "kind", d->is_free ? "segment_free" : "segment_alloc");
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
    cmt__json_end_object(j);
}
