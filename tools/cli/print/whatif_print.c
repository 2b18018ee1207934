/* whatif_print.c — the table, PyTorch's messages and the recommendation of
 * `cumemtrace whatif`, as text or as JSON (the JSON keys are a contract). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "oom.h"
#include "output.h"
#include "print/whatif_cli.h"

#define MIB ((uint64_t)1 << 20)

static const char *label(const struct cmt_whatif_setting *s, char *buf, size_t len)
{
    if (cmt_whatif_setting_conf(s, buf, len) <= 0)
        snprintf(buf, len, "default (max_split_size_mb unlimited)");
    return buf;
}

static const char *split_text(uint64_t split, char buf[32])
{
    if (split == UINT64_MAX)
        snprintf(buf, 32, "unlimited");
    else
        snprintf(buf, 32, "%" PRIu64, split / MIB);
    return buf;
}

static void oom_message(const struct cmt_whatif_run_out *run, const struct cmt_whatif_result *r,
                        char *buf, size_t len)
{
    cmt_model_format_oom_as(&r->oom_info, run->oom_style, buf, len);
}

/* Event `index` of the stream, every field (zeroes if it is not there). */
static struct cmt_whatif_event event_at(const struct cmt_whatif_run_out *run, size_t index)
{
    struct cmt_whatif_event e = {0};
    cmt_whatif_stream_event(run->stream, index, &e);
    return e;
}

static const char *site_of(const struct cmt_whatif_run_out *run, size_t event)
{
    const struct cmt_whatif_stream *s = run->stream;
    uint32_t site = event_at(run, event).site;
    return site < s->site_count ? s->sites[site] : "";
}

int cmt__whatif_capacity_at_failure(const struct cmt_oom *oom, int32_t dev,
                                    struct cmt_whatif_capacity *cap)
{
    for (uint32_t i = 0; oom && i < cmt_oom_count(oom); i++) {
        const struct cmt_oom_episode *e = cmt_oom_episode(oom, i);
        if (e->dev != dev)
            continue;
        if (e->verdict != CMT_VERDICT_HELD_BY_OTHERS || !e->total_bytes)
            return 0; /* the first failure is what the sweep answers */
        cmt_whatif_capacity_held(cap, e->process_bytes, e->free_bytes);
        return 1;
    }
    return 0;
}

/* ---- text ------------------------------------------------------------- */

int cmt__whatif_capacity_text(const struct cmt_whatif_capacity *cap,
                              const struct cmt_whatif_stream *s, char *buf, size_t len)
{
    char a[32], b[32], c[32];
    switch (cap->source) {
    case CMT_WHATIF_CAPACITY_UNKNOWN:
        return snprintf(buf, len,
                        "unknown: the trace does not say how much device memory was free, so "
                        "the settings are replayed without a limit and compared by what they "
                        "reserve; pass --capacity SIZE to see which run out of memory");
    case CMT_WHATIF_CAPACITY_TRACE:
        return snprintf(buf, len, "%s = %s total - %s in use before the first allocation",
                        cmt__bytes(cap->capacity, a), cmt__bytes(s->device_total, b),
                        cmt__bytes(s->device_total - s->device_free, c));
    case CMT_WHATIF_CAPACITY_OOM: {
        char d[32], e[32];
        uint64_t held = cap->oom_own_bytes + cap->oom_free_bytes;
        return snprintf(buf, len,
                        "%s = %s this process held + %s free at its out-of-memory failure (held "
                        "by other processes: they had %s of the %s total then, so the replay "
                        "runs on what was actually left to it)",
                        cmt__bytes(cap->capacity, a), cmt__bytes(cap->oom_own_bytes, b),
                        cmt__bytes(cap->oom_free_bytes, c),
                        cmt__bytes(s->device_total > held ? s->device_total - held : 0, d),
                        cmt__bytes(s->device_total, e));
    }
    case CMT_WHATIF_CAPACITY_GIVEN: break;
    }
    return snprintf(buf, len, "%s (--capacity) of %s", cmt__bytes(cap->capacity, a),
                    cmt__bytes(cap->device_total, b));
}

int cmt__whatif_unknown_capacity_advice(const struct cmt_whatif_result *best, char *buf, size_t len)
{
    char conf[160], a[32];
    return snprintf(buf, len,
                    "%s reserves the least (peak %s). Without a capacity no setting runs out of "
                    "memory here: pass --capacity SIZE (the card's free memory) for a "
                    "recommendation.",
                    label(&best->setting, conf, sizeof conf), cmt__bytes(best->peak_reserved, a));
}

/* Text after `first` (whose width is `indent`), wrapped at 96 columns, each further line
 * indented by `indent` spaces. */
static void print_wrapped(FILE *f, const char *first, int indent, const char *text)
{
    enum { WIDTH = 96 };
    fputs(first, f);
    int column = indent;
    while (*text) {
        size_t word = strcspn(text, " ");
        if (column > indent && column + 1 + (int)word > WIDTH) {
            fprintf(f, "\n%*s", indent, "");
            column = indent;
        } else if (column > indent) {
            fputc(' ', f);
            column++;
        }
        fwrite(text, 1, word, f);
        column += (int)word;
        text += word;
        text += strspn(text, " ");
    }
    fputc('\n', f);
}

static void print_header(FILE *f, const struct cmt_whatif_run_out *run)
{
    const struct cmt_whatif_stream *s = run->stream;
    char a[32], name[256], from[256];
    fprintf(f, "%s: %" PRIu64 " allocations and %" PRIu64 " frees on GPU %d%s%s%s", run->path,
            s->allocs, s->frees, s->device, s->device_name[0] ? " (" : "",
            cmt__text(s->device_name, name, sizeof name), s->device_name[0] ? ")" : "");
    if (s->failed_allocs)
        fprintf(f, "; %" PRIu64 " failed allocation%s replayed as request%s", s->failed_allocs,
                s->failed_allocs == 1 ? "" : "s", s->failed_allocs == 1 ? "" : "s");
    fputc('\n', f);
    struct cmt_whatif_capacity cap = {.capacity = run->capacity,
                                      .device_total = run->device_total,
                                      .source = run->capacity_source,
                                      .oom_own_bytes = run->oom_own_bytes,
                                      .oom_free_bytes = run->oom_free_bytes};
    char text[512];
    cmt__whatif_capacity_text(&cap, s, text, sizeof text);
    print_wrapped(f, "  capacity  ", 12, text);
    if (run->dev.memory_fraction > 0.0)
        fprintf(f, "  fraction  %g (--memory-fraction): the allocator may hold %s\n",
                run->dev.memory_fraction,
                cmt__bytes((uint64_t)(run->dev.memory_fraction * (double)run->device_total), a));
    fprintf(f, "  replayed  %zu setting%s x %zu events in %.1f ms\n", run->count,
            run->count == 1 ? "" : "s", s->event_count, run->seconds * 1e3);
    size_t checked = 0, borderline = 0;
    for (size_t i = 0; i < run->count; i++) {
        checked += run->results[i].other_checked;
        borderline += run->results[i].borderline;
    }
    const char *policy = cmt_model_address_policy_name(run->dev.address_policy);
    const char *other = cmt_model_address_policy_name(
        run->dev.address_policy == CMT_MODEL_ADDRESSES_FIRST_FIT ? CMT_MODEL_ADDRESSES_NEVER_REUSE
                                                                 : CMT_MODEL_ADDRESSES_FIRST_FIT);
    if (checked)
        fprintf(f,
                "  addresses %s; %zu setting%s replayed under %s too (device addresses could "
                "differ there), %zu borderline\n",
                policy, checked, checked == 1 ? "" : "s", other, borderline);
    else
        fprintf(f, "  addresses %s (%s would place every device allocation alike)\n", policy,
                other);
    if (s->torch_version[0])
        fprintf(f, "  PyTorch   %s (from %s)%s\n", cmt__text(s->torch_version, name, sizeof name),
                cmt__text(s->torch_version_source, from, sizeof from),
                run->oom_style_from_trace ? ": OOM messages in its 1.x wording" : "");
    if (s->caching_detected) {
        fprintf(f,
                "\n  WARNING: this trace looks like it went through a caching allocator:\n"
                "  %s.\n"
                "  Replaying it models caching twice. Record a tensor-level stream instead:\n"
                "    PYTORCH_NO_CUDA_MEMORY_CACHING=1 cumemtrace record -- python app.py\n"
                "  or  PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync cumemtrace record -- "
                "python app.py\n",
                cmt__text(s->caching_reason, text, sizeof text));
    }
}

/* What a trace cannot tell the model, per result (docs/analysis.md, "What the trace cannot
 * tell"): X(name, JSON string, the text's line). */
#define CMT__WHATIF_LIMITS(X)                                                                  \
    X(EMPTY_CACHE, "empty_cache",                                                              \
      "the trace shows the program's empty_cache() calls only where they released segments;\n" \
      "  under another setting a call that released nothing here could have, and the model\n"  \
      "  keeps those segments: figures after such a call may differ")                          \
    X(PAST_OOM, "past_recorded_oom",                                                           \
      "these settings get past the recorded run's out-of-memory failure: what the program\n"   \
      "  did after it is not in the trace, so their figures cover the trace only")             \
    X(BEFORE_WINDOW, "before_window",                                                          \
      "the history starts late (a ring-limited snapshot): these settings start from the\n"     \
      "  state at the window's start as the run's settings laid it out (how they would have\n" \
      "  laid it out is not in the file), and their peaks are the window's")                   \
    X(NO_STREAMS, "no_streams",                                                                \
      "the driver's allocation calls carry no stream: the model replays them as one stream\n"  \
      "  (record with --torch for the streams PyTorch used)")

enum {
#define CMT__LIMIT_BIT(name, json, text) CMT__LIMIT_BIT_##name,
    CMT__WHATIF_LIMITS(CMT__LIMIT_BIT)
#undef CMT__LIMIT_BIT
};

/* Whether a result starts from the state the file proves: the whole run, or a late start
 * rebuilt exactly (whatif_blocks.h) under the run's own settings. */
static bool starts_exactly(const struct cmt_whatif_selfcheck *c, const struct cmt_whatif_result *r)
{
    if (!c->before_segments && !c->before_blocks)
        return true;
    if (c->expandable || c->before_inexact)
        return false;
    struct cmt_model_config run_config;
    char run_conf[160], conf[160];
    cmt_model_config_default(&run_config, 1);
    if (cmt_model_config_parse(&run_config, c->conf, NULL) != 0 ||
        cmt_model_config_format(&run_config, run_conf, sizeof run_conf) < 0 ||
        cmt_whatif_setting_conf(&r->setting, conf, sizeof conf) < 0)
        return false;
    return strcmp(run_conf, conf) == 0;
}

/* The limits of a result, one bit each (1u << CMT__LIMIT_BIT_name). */
static unsigned result_limits(const struct cmt_whatif_run_out *run,
                              const struct cmt_whatif_result *r)
{
    const struct cmt_whatif_stream *s = run->stream;
    unsigned limits = 0;
    if (s->empty_caches)
        limits |= 1u << CMT__LIMIT_BIT_EMPTY_CACHE;
    if (s->failed_allocs && !r->oom)
        limits |= 1u << CMT__LIMIT_BIT_PAST_OOM;
    if (run->check && !starts_exactly(run->check, r))
        limits |= 1u << CMT__LIMIT_BIT_BEFORE_WINDOW;
    if (!run->check) { /* driver calls: cuMemAlloc has no stream, async ones have theirs */
        struct cmt_whatif_cursor c;
        struct cmt_whatif_event e;
        bool streams = false;
        cmt_whatif_cursor_init(&c, s);
        while (!streams && cmt_whatif_cursor_next(&c, &e))
            streams = !e.is_free && e.stream != 0;
        if (!streams)
            limits |= 1u << CMT__LIMIT_BIT_NO_STREAMS;
    }
    return limits;
}

static void print_limits(FILE *f, const struct cmt_whatif_run_out *run)
{
    unsigned any = 0, all = ~0u;
    for (size_t i = 0; i < run->count; i++) {
        unsigned l = result_limits(run, &run->results[i]);
        any |= l;
        all &= l;
    }
    if (!any)
        return;
    fputs("\nWhat the trace cannot tell:\n", f);
#define CMT__LIMIT_TEXT(name, json, text)                                                   \
    if (any & (1u << CMT__LIMIT_BIT_##name)) {                                              \
        fprintf(f, "  %s\n", text);                                                         \
        if (!(all & (1u << CMT__LIMIT_BIT_##name)))                                         \
            for (size_t i = 0; i < run->count; i++)                                         \
                if (result_limits(run, &run->results[i]) & (1u << CMT__LIMIT_BIT_##name)) { \
                    char conf[160];                                                         \
                    cmt_whatif_setting_conf(&run->results[i].setting, conf, sizeof conf);   \
                    fprintf(f, "    %s\n", conf[0] ? conf : "(defaults)");                  \
                }                                                                           \
    }
    CMT__WHATIF_LIMITS(CMT__LIMIT_TEXT)
#undef CMT__LIMIT_TEXT
}

static void print_table(FILE *f, const struct cmt_whatif_run_out *run)
{
    size_t width = 7, result_width = 22;
    char buf[160], res[64];
    for (size_t i = 0; i < run->count; i++) {
        size_t n = strlen(label(&run->results[i].setting, buf, sizeof buf));
        if (n > width)
            width = n;
        if (run->results[i].borderline && result_width < 34)
            result_width = 34;
    }
    fprintf(f, "\n  %-*s  %-*s %13s %14s %13s %14s %7s %8s\n", (int)width, "setting",
            (int)result_width, "result", "peak reserved", "peak allocated", "res - alloc",
            "inactive split", "retries", "cudaMalloc");
    for (size_t i = 0; i < run->count; i++) {
        const struct cmt_whatif_result *r = &run->results[i];
        char a[32], b[32], c[32], d[32];
        if (r->oom)
            snprintf(res, sizeof res, "OOM at %s", cmt__bytes(r->oom_info.requested, a));
        else
            snprintf(res, sizeof res, "ok");
        if (r->borderline) {
            size_t n = strlen(res);
            snprintf(res + n, sizeof res - n, ", borderline");
        }
        fprintf(f, "  %-*s  %-*s %13s %14s %13s %14s %7" PRIu64 " %8" PRIu64 "%s\n", (int)width,
                label(&r->setting, buf, sizeof buf), (int)result_width, res,
                cmt__bytes(r->peak_reserved, a), cmt__bytes(r->peak_allocated, b),
                cmt__bytes(r->peak_reserved - r->allocated_at_peak, c),
                cmt__bytes(r->inactive_split_at_peak, d), r->alloc_retries, r->device_alloc_calls,
                run->rec.best == (long)i ? "  <- best" : "");
    }
    fprintf(f, "  (fragmentation columns at the moment reserved memory peaked; cudaMalloc = device "
               "allocation calls, failed ones included)\n");
    for (size_t i = 0; i < run->count; i++) {
        const struct cmt_whatif_result *r = &run->results[i];
        if (!r->borderline)
            continue;
        fprintf(f,
                "  borderline: %s %s under %s addresses and %s under %s; where a real driver "
                "reuses freed addresses is not documented, so either can happen\n",
                label(&r->setting, buf, sizeof buf), r->oom ? "runs out of memory" : "fits",
                cmt_model_address_policy_name(r->address_policy),
                r->other_oom ? "runs out of memory" : "fits",
                cmt_model_address_policy_name(r->address_policy == CMT_MODEL_ADDRESSES_FIRST_FIT
                                                  ? CMT_MODEL_ADDRESSES_NEVER_REUSE
                                                  : CMT_MODEL_ADDRESSES_FIRST_FIT));
    }
}

/* Settings that fail at the same event with the same message are grouped. */
static void print_ooms(FILE *f, const struct cmt_whatif_run_out *run)
{
    char msg[768], other[768], buf[160], a[32], t[32], site[512];
    bool *done = calloc(run->count ? run->count : 1, sizeof *done);
    bool first = true;
    for (size_t i = 0; done && i < run->count; i++) {
        const struct cmt_whatif_result *r = &run->results[i];
        if (!r->oom || done[i])
            continue;
        if (first)
            fprintf(f, "\nFirst out-of-memory of each failing setting, as PyTorch reports it:\n");
        first = false;
        oom_message(run, r, msg, sizeof msg);
        fprintf(f, "\n  %s", label(&r->setting, buf, sizeof buf));
        for (size_t j = i + 1; j < run->count; j++) {
            const struct cmt_whatif_result *q = &run->results[j];
            if (!q->oom || q->oom_event != r->oom_event)
                continue;
            oom_message(run, q, other, sizeof other);
            if (strcmp(msg, other) == 0) {
                done[j] = true;
                fprintf(f, ", %s", label(&q->setting, buf, sizeof buf));
            }
        }
        cmt__text(site_of(run, r->oom_event), site, sizeof site);
        struct cmt_whatif_event e = event_at(run, r->oom_event);
        fprintf(f, ":\n    call #%" PRIu64 " at %s: a %s request%s%s\n    %s\n", e.seq,
                cmt__duration(e.t_ns, t), cmt__bytes(r->oom_info.requested, a),
                site[0] ? " from " : "", site, cmt__text(msg, other, sizeof other));
    }
    free(done);
}

static void print_recommendation(FILE *f, const struct cmt_whatif_run_out *run)
{
    const struct cmt_whatif_recommendation *rec = &run->rec;
    char buf[160], conf[160], a[32], b[32];
    fprintf(f, "\nRecommendation\n");
    if (rec->best < 0 && run->capacity_source == CMT_WHATIF_CAPACITY_OOM) {
        print_wrapped(f, "  ", 2,
                      "No allocator setting avoids this OOM: its memory was held by other "
                      "processes, and no PYTORCH_CUDA_ALLOC_CONF gives it back. Stop or wait "
                      "for them (nvidia-smi lists them), run where the GPU is not shared, or "
                      "lower the memory the program needs (batch size, resolution).");
        return;
    }
    if (rec->best < 0) {
        fprintf(f, "  No setting tried avoids the OOM. Lower the memory the program needs (batch "
                   "size, resolution), or try more settings (--expandable-segments true,false).\n");
    } else if (run->capacity_source == CMT_WHATIF_CAPACITY_UNKNOWN) {
        char advice[512];
        cmt__whatif_unknown_capacity_advice(&run->results[rec->best], advice, sizeof advice);
        print_wrapped(f, "  ", 2, advice);
        return;
    } else {
        const struct cmt_whatif_result *best = &run->results[rec->best];
        fprintf(f, "  %s avoids out-of-memory with the lowest peak reserved (%s)%s.\n",
                label(&best->setting, buf, sizeof buf), cmt__bytes(best->peak_reserved, a),
                best->borderline ? ", but only under some address reuse (borderline)" : "");
    }
    if (rec->smallest_failing_request) {
        uint64_t req = rec->smallest_failing_request;
        fprintf(f,
                "  The write-up's rule, made exact: the smallest failing allocation is %s "
                "(%.2f MiB);\n  with max_split_size_mb at or below %" PRIu64
                " its cached block is oversize, and smaller tensors never split it.\n",
                cmt__bytes(req, a), (double)req / (double)MIB, req / MIB);
        if (rec->rule >= 0)
            fprintf(f, "  Largest such value tried without OOM: %s.",
                    split_text(run->results[rec->rule].setting.max_split_size, b));
        else
            fprintf(f, "  No value tried at or below it avoided the OOM.");
        if (run->has_exact)
            fprintf(f, " The bound itself (%" PRIu64 ") replays %s.", rec->exact_max_split_mb,
                    run->exact.oom ? "with an OOM" : "without OOM");
        fputc('\n', f);
    }
    if (rec->best >= 0) {
        const struct cmt_whatif_result *best = &run->results[rec->best];
        if (cmt_whatif_setting_conf(&best->setting, conf, sizeof conf) > 0)
            fprintf(f, "\n  export PYTORCH_CUDA_ALLOC_CONF=%s\n", conf);
        else if (run->check && run->check->conf[0] && run->stream->failed_allocs)
            /* the run set something, and ran out of memory with it */
            fprintf(f,
                    "\n  PyTorch's defaults avoid out-of-memory here; the run's own settings (%s) "
                    "ran out of memory:\n  unset PYTORCH_CUDA_ALLOC_CONF\n",
                    cmt__text(run->check->conf, conf, sizeof conf));
        else
            fprintf(f,
                    "\n  PyTorch's defaults already avoid out-of-memory here; nothing to set.\n");
        if (rec->rule >= 0 && rec->rule != rec->best &&
            cmt_whatif_setting_conf(&run->results[rec->rule].setting, conf, sizeof conf) > 0)
            fprintf(f, "  export PYTORCH_CUDA_ALLOC_CONF=%s   # by the rule\n", conf);
    }
}

void cmt_whatif_print_text(FILE *f, const struct cmt_whatif_run_out *run)
{
    print_header(f, run);
    if (run->check)
        cmt__whatif_print_selfcheck(f, run);
    print_table(f, run);
    print_limits(f, run);
    print_ooms(f, run);
    print_recommendation(f, run);
}

/* ---- JSON ------------------------------------------------------------- */

/* The JSON writers of the setting types (model_settings.h): sizes in MiB,
 * unlimited as null. */
static void json_mb(struct cmt__json *j, const char *key, uint64_t v)
{
    cmt__json_u64(j, key, v / MIB);
}

static void json_limit_mb(struct cmt__json *j, const char *key, uint64_t v)
{
    if (v == UINT64_MAX)
        cmt__json_null(j, key);
    else
        json_mb(j, key, v);
}

static void json_pow2(struct cmt__json *j, const char *key, unsigned v)
{
    cmt__json_u64(j, key, v);
}

static void json_fraction(struct cmt__json *j, const char *key, double v)
{
    cmt__json_double(j, key, v);
}

static void json_boolean(struct cmt__json *j, const char *key, bool v)
{
    cmt__json_bool(j, key, v);
}

/* The settings of a result, in table order: those the JSON had from the
 * start (the first CMT__JSON_FIRST_SETTINGS) right after "setting", settings
 * added since at the end of the result, so the older keys keep their place.
 * Zero fields are written as the default they stand for. */
#define CMT__JSON_FIRST_SETTINGS 4

static void json_settings(struct cmt__json *j, const struct cmt_whatif_setting *st, bool first)
{
#define CMT__SETTING_JSON(field, type, conf_key, def, flag, json_key, ...)                        \
    if ((CMT_MODEL_SETTING_##field < CMT__JSON_FIRST_SETTINGS) == first)                          \
        json_##type(j, json_key,                                                                  \
                    st->field || CMT_MODEL_SETTING_##field < CMT__JSON_FIRST_SETTINGS ? st->field \
                                                                                      : def);
    CMT_MODEL_SETTINGS(CMT__SETTING_JSON)
#undef CMT__SETTING_JSON
}

static void json_oom(struct cmt__json *j, const struct cmt_whatif_run_out *run,
                     const struct cmt_whatif_result *r)
{
    char msg[768];
    const struct cmt_model_oom *o = &r->oom_info;
    cmt__json_object(j, "first_oom");
    cmt__json_u64(j, "event", r->oom_event);
    struct cmt_whatif_event e = event_at(run, r->oom_event);
    cmt__json_u64(j, "seq", e.seq);
    cmt__json_u64(j, "t_ns", e.t_ns);
    cmt__json_string(j, "call_site", site_of(run, r->oom_event));
    CMT__JSON_U64S(j, {"requested_bytes", o->requested}, {"rounded_bytes", o->rounded},
                   {"alloc_size_bytes", o->alloc_size}, {"stream", o->stream},
                   {"allocated_bytes", o->allocated}, {"reserved_bytes", o->reserved},
                   {"free_bytes", o->device_free}, {"total_bytes", o->device_total});
    oom_message(run, r, msg, sizeof msg);
    cmt__json_string(j, "message", msg);
    cmt__json_end_object(j);
}

/* The model's figures under the keys of PyTorch's torch.cuda.memory_stats() (the model keeps
 * one pool's worth, "all"; active equals allocated, as record_stream is not modelled). */
static void json_memory_stats(struct cmt__json *j, const struct cmt_model_stats *st)
{
    cmt__json_object(j, "memory_stats");
    CMT__JSON_U64S(
        j, {"allocated_bytes.all.current", st->allocated_bytes},
        {"allocated_bytes.all.peak", st->peak_allocated},
        {"reserved_bytes.all.current", st->reserved_bytes},
        {"reserved_bytes.all.peak", st->peak_reserved},
        {"active_bytes.all.current", st->active_bytes},
        {"active_bytes.all.peak", st->peak_allocated},
        {"inactive_split_bytes.all.current", st->inactive_split_bytes},
        {"requested_bytes.all.current", st->requested_bytes},
        {"allocation.all.current", st->allocation}, {"active.all.current", st->active},
        {"inactive_split.all.current", st->inactive_split}, {"segment.all.current", st->segment},
        {"oversize_allocations.current", st->oversize_allocations},
        {"oversize_segments.current", st->oversize_segments},
        {"num_alloc_retries", st->num_alloc_retries}, {"num_ooms", st->num_ooms},
        {"num_device_alloc", st->num_device_alloc}, {"num_device_free", st->device_free_calls});
    cmt__json_end_object(j);
}

static void json_result(struct cmt__json *j, const struct cmt_whatif_run_out *run,
                        const struct cmt_whatif_result *r)
{
    char conf[160];
    cmt__json_object(j, NULL);
    cmt_whatif_setting_conf(&r->setting, conf, sizeof conf);
    cmt__json_string(j, "setting", conf);
    json_settings(j, &r->setting, true);
    cmt__json_bool(j, "oom", r->oom);
    CMT__JSON_U64S(
        j, {"peak_reserved_bytes", r->peak_reserved}, {"peak_allocated_bytes", r->peak_allocated},
        {"reserved_minus_allocated_at_peak_bytes", r->peak_reserved - r->allocated_at_peak},
        {"inactive_split_at_peak_bytes", r->inactive_split_at_peak},
        {"alloc_retries", r->alloc_retries}, {"device_alloc_calls", r->device_alloc_calls},
        {"events_replayed", r->events_replayed});
    cmt__json_double(j, "replay_seconds", r->seconds);
    if (r->oom)
        json_oom(j, run, r);
    else
        cmt__json_null(j, "first_oom");
    json_settings(j, &r->setting, false);
    cmt__json_string(j, "address_policy", cmt_model_address_policy_name(r->address_policy));
    cmt__json_bool(j, "addresses_diverged", r->addresses_diverged);
    if (r->other_checked) {
        cmt__json_object(j, "other_address_policy");
        cmt__json_string(
            j, "address_policy",
            cmt_model_address_policy_name(r->address_policy == CMT_MODEL_ADDRESSES_FIRST_FIT
                                              ? CMT_MODEL_ADDRESSES_NEVER_REUSE
                                              : CMT_MODEL_ADDRESSES_FIRST_FIT));
        cmt__json_bool(j, "oom", r->other_oom);
        cmt__json_u64(j, "peak_reserved_bytes", r->other_peak_reserved);
        cmt__json_end_object(j);
    } else {
        cmt__json_null(j, "other_address_policy");
    }
    cmt__json_bool(j, "borderline", r->borderline);
    json_memory_stats(j, &r->stats);
    cmt__json_array(j, "limits"); /* what the trace cannot tell (print_limits) */
    unsigned limits = result_limits(run, r);
#define CMT__LIMIT_JSON(name, json, text)       \
    if (limits & (1u << CMT__LIMIT_BIT_##name)) \
        cmt__json_string(j, NULL, json);
    CMT__WHATIF_LIMITS(CMT__LIMIT_JSON)
#undef CMT__LIMIT_JSON
    cmt__json_end_array(j);
    cmt__json_end_object(j);
}

static void json_recommendation(struct cmt__json *j, const struct cmt_whatif_run_out *run)
{
    const struct cmt_whatif_recommendation *rec = &run->rec;
    char conf[160], line[200];
    if (rec->best < 0) {
        cmt__json_null(j, "recommendation");
    } else {
        const struct cmt_whatif_result *best = &run->results[rec->best];
        cmt_whatif_setting_conf(&best->setting, conf, sizeof conf);
        snprintf(line, sizeof line, "PYTORCH_CUDA_ALLOC_CONF=%s", conf);
        cmt__json_object(j, "recommendation");
        cmt__json_u64(j, "result_index", (uint64_t)rec->best);
        cmt__json_string(j, "setting", conf);
        json_limit_mb(j, "max_split_size_mb", best->setting.max_split_size);
        cmt__json_bool(j, "expandable_segments", best->setting.expandable_segments);
        cmt__json_u64(j, "peak_reserved_bytes", best->peak_reserved);
        cmt__json_string(j, "pytorch_cuda_alloc_conf", line);
        cmt__json_end_object(j);
    }
    cmt__json_object(j, "split_rule");
    cmt__json_u64_or_null(j, "smallest_failing_request_bytes", rec->smallest_failing_request);
    if (rec->rule >= 0)
        json_limit_mb(j, "max_split_size_mb", run->results[rec->rule].setting.max_split_size);
    else
        cmt__json_null(j, "max_split_size_mb");
    cmt__json_u64_or_null(j, "exact_max_split_size_mb", rec->exact_max_split_mb);
    if (run->has_exact)
        cmt__json_bool(j, "exact_oom", run->exact.oom);
    else
        cmt__json_null(j, "exact_oom");
    cmt__json_end_object(j);
}

void cmt_whatif_print_json(FILE *f, const struct cmt_whatif_run_out *run)
{
    const struct cmt_whatif_stream *s = run->stream;
    struct cmt__json j;
    cmt__json_init(&j, f);
    cmt__json_object(&j, NULL);
    cmt__json_string(&j, "file", run->path);
    cmt__json_i64(&j, "device", s->device);
    cmt__json_string(&j, "device_name", s->device_name);
    cmt__json_u64(&j, "device_total_bytes", run->device_total);
    cmt__json_u64(&j, "capacity_bytes", run->capacity);
    cmt__json_string(&j, "capacity_source", cmt_whatif_capacity_source_name(run->capacity_source));
    CMT__JSON_U64S(&j, {"events", s->event_count}, {"allocations", s->allocs}, {"frees", s->frees},
                   {"failed_allocations", s->failed_allocs},
                   {"empty_cache_calls", s->empty_caches});
    cmt__json_bool(&j, "caching_allocator_detected", s->caching_detected);
    if (s->caching_detected)
        cmt__json_string(&j, "caching_allocator_reason", s->caching_reason);
    else
        cmt__json_null(&j, "caching_allocator_reason");
    cmt__json_double(&j, "sweep_seconds", run->seconds);
    if (run->dev.memory_fraction > 0.0)
        cmt__json_double(&j, "memory_fraction", run->dev.memory_fraction);
    else
        cmt__json_null(&j, "memory_fraction");
    cmt__json_string(&j, "address_policy", cmt_model_address_policy_name(run->dev.address_policy));
    size_t borderline = 0;
    for (size_t i = 0; i < run->count; i++)
        borderline += run->results[i].borderline;
    cmt__json_u64(&j, "borderline_settings", borderline);
    if (s->torch_version[0]) {
        cmt__json_string(&j, "pytorch_version", s->torch_version);
        cmt__json_string(&j, "pytorch_version_source", s->torch_version_source);
    } else {
        cmt__json_null(&j, "pytorch_version");
        cmt__json_null(&j, "pytorch_version_source");
    }
    cmt__json_string(&j, "oom_message_style", run->oom_style == CMT_MODEL_OOM_1X ? "1.x" : "2.x");
    cmt__json_array(&j, "results");
    for (size_t i = 0; i < run->count; i++)
        json_result(&j, run, &run->results[i]);
    cmt__json_end_array(&j);
    if (run->check)
        cmt__whatif_json_selfcheck(&j, run);
    json_recommendation(&j, run);
    cmt__json_end_object(&j);
    cmt__json_finish(&j);
}
