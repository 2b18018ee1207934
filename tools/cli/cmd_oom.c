/* cmd_oom.c — `cumemtrace oom [--json] FILE`. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pass.h"
#include "print/alloc_print.h"
#include "print/phase_print.h"
#include "commands.h"
#include "fleet/fleet_cli.h"
#include "frames.h"
#include "print/ledger_print.h"
#include "print/oom_alloc.h"
#include "print/whatif_cli.h"
#include "options.h"
#include "output.h"

static const char usage[] =
    "usage: cumemtrace oom [--json] [--capacity BYTES] FILE\n"
    "       cumemtrace oom [--json] [--jobs N] TRACE... | DIR   (several processes)\n"
    "\n"
    "Explains every out-of-memory failure in a trace: the request, the API, the device and its\n"
    "free/total memory, what this process and others held, a verdict (over_capacity,\n"
    "fragmentation, held_by_others, exhausted_by_process), retries with the frees between them,\n"
    "and the call sites that held the memory. docs/analysis.md defines every figure.\n"
    "\n"
    "Over several traces (or a directory of them), each failure also names the other traced\n"
    "processes that held memory on the same GPU at that moment (held_by_others).\n"
    "\n"
    "  --json      one JSON object: {\"episodes\": [...]} (keys are a stable contract); over\n"
    "              several traces {\"traces\": [{..., \"episodes\": [...]}]}\n"
    "  --capacity BYTES  the device's total, e.g. 80GiB, for a trace that does not give it (a\n"
    "              PyTorch snapshot): without it such a failure's verdict is total_unknown\n"
    "  --jobs N    traces read at once (several traces; default: the processors)\n"
    "  -h, --help  this help\n";

/* The other processes that held memory at an episode (several traces), for json_episode. */
struct others {
    const struct cmt_fleet *fleet;
    const struct cmt_fleet_holder *h;
    size_t n;
};

static void json_others(struct cmt__json *j, const struct others *o)
{
    cmt__json_array(j, "held_by_others");
    for (size_t i = 0; i < o->n; i++) {
        cmt__json_object(j, NULL);
        cmt__fleet_json_who(j, &o->fleet->processes[o->h[i].process]);
        cmt__json_i64(j, "dev", o->h[i].dev);
        cmt__json_u64(j, "held_bytes", o->h[i].held_bytes);
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
}

static void json_episode(struct cmt__json *j, const struct cmt__pass *p,
                         const struct cmt_oom_episode *e, const struct others *others,
                         const cmt_ledger *ledger, const struct cmt_phases *phases)
{
    const cmt_reader *r = p->reader;
    cmt__json_object(j, NULL);
    cmt__json_u64(j, "request_bytes", e->request_bytes);
    cmt__json_string(j, "api", e->api);
    cmt__json_i64(j, "dev", e->dev);
    CMT__JSON_U64S(j, {"t_ns", e->t_ns}, {"seq", e->seq}, {"tid", e->tid},
                   {"attempts", e->attempts}, {"frees_between", e->frees_between},
                   {"released_bytes", e->released_bytes});
    cmt__json_bool(j, "fatal", e->fatal);
    cmt__json_u64(j, "free_bytes", e->free_bytes);
    cmt__json_u64(j, "total_bytes", e->total_bytes);
    cmt__json_bool(j, "free_measured", e->have_meminfo);
    cmt__json_bool(j, "total_given", e->total_given);
    CMT__JSON_U64S(j, {"process_bytes", e->process_bytes},
                   {"pool_retained_bytes", e->pool_retained_bytes},
                   {"others_bytes", e->others_bytes}, {"shortfall_bytes", e->shortfall_bytes});
    cmt__json_string(j, "verdict", cmt_verdict_name(e->verdict));
    cmt__phase_oom_json(j, phases, e->t_ns, e->tid);
    cmt__json_array(j, "hints");
    if (e->hint_retention)
        cmt__json_string(j, NULL, "caching_allocator_retention");
    if (e->hint_leak)
        cmt__json_string(j, NULL, "leak");
    cmt__json_end_array(j);
    cmt__json_object(j, "fragmentation");
    cmt__json_u64(j, "hole_bytes", e->frag.hole_bytes);
    cmt__json_u64(j, "largest_hole_bytes", e->frag.largest_hole);
    cmt__json_double(j, "hole_fragmentation", e->frag.hole_fragmentation);
    cmt__json_u64(j, "granularity_waste_bytes", e->frag.waste_bytes);
    cmt__json_end_object(j);
    cmt__json_stack(j, "stack", r, e->stack);
    cmt__json_array(j, "holders");
    for (uint32_t i = 0; i < e->holder_count; i++) {
        cmt__json_object(j, NULL);
        cmt__json_u64(j, "bytes", e->holders[i].bytes);
        cmt__json_u64(j, "count", e->holders[i].count);
        cmt__json_stack(j, "stack", r, e->holders[i].stack);
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
    if (e->alloc)
        cmt__oom_json_allocator(j, r, e);
    if (others)
        json_others(j, others);
    const struct cmt_ledger_moment *m = cmt__ledger_at_oom(ledger, e->dev, e->t_ns);
    if (m)
        cmt__ledger_json(j, "ledger", p, m);
    cmt__json_end_object(j);
}

static void print_frame(void *ctx, const char *frame)
{
    int *n = ctx;
    char text[512];
    printf("      #%-2d %s\n", (*n)++, cmt__text(frame, text, sizeof text));
}

/* @return how many frames lie between leaf and node (node's depth), or 0 when node is not on
 * the stack. */
static int frames_above(const cmt_reader *r, uint32_t leaf, uint32_t node)
{
    struct cmt_stack_node n;
    uint32_t id = leaf;
    for (int depth = 0; id && depth < 4096; depth++) {
        if (id == node)
            return depth;
        if (cmt_reader_stack_node(r, id, &n) != 0 || n.parent == id)
            break;
        id = n.parent;
    }
    return 0;
}

/* @return 1 when a frame shown is raw (no function name). */
static int print_episode(const struct cmt__pass *p, const struct cmt_oom_episode *e, uint32_t i)
{
    char a[32], b[32], c[32], dev[160], sentence[512], top[512];
    const cmt_reader *r = p->reader;
    cmt__device_label(p->replay, e->dev, dev, sizeof dev);
    cmt__oom_sentence(e, sentence, sizeof sentence);
    char api[256], thread_text[256];
    printf("%s: out of memory #%u: %s of %s on %s failed: %s.\n", p->path, i + 1,
           cmt__text(e->api, api, sizeof api), cmt__bytes(e->request_bytes, a), dev, sentence);
    const char *thread = cmt_reader_thread_name(r, e->tid);
    printf("  verdict    %s\n", cmt_verdict_name(e->verdict));
    printf("  request    %s (%" PRIu64 " bytes) at %s, thread %u%s%s%s, seq %" PRIu64 "\n", a,
           e->request_bytes, cmt__duration(e->t_ns, b), e->tid, thread ? " (" : "",
           thread ? cmt__text(thread, thread_text, sizeof thread_text) : "", thread ? ")" : "",
           e->seq);
    cmt__phase_oom_text(stdout, &p->phases, e->t_ns, e->tid);
    printf("  device     total %s%s, free %s%s, shortfall %s\n",
           e->total_bytes ? cmt__bytes(e->total_bytes, a) : "not recorded (--capacity gives it)",
           e->total_given ? " (--capacity)" : "", cmt__bytes(e->free_bytes, b),
           e->have_meminfo ? "" : " (last sample before the failure)",
           cmt__bytes(e->shortfall_bytes, c));
    printf("  held       this process %s (of which pool retention %s), others %s\n",
           cmt__bytes(e->process_bytes, a), cmt__bytes(e->pool_retained_bytes, b),
           cmt__bytes(e->others_bytes, c));
    printf("  attempts   %" PRIu64 ", %" PRIu64 " frees between them released %s; %s\n",
           e->attempts, e->frees_between, cmt__bytes(e->released_bytes, a),
           e->fatal ? "no attempt succeeded (fatal)" : "a retry succeeded (not fatal)");
    if (e->alloc)
        cmt__oom_print_allocator(r, e, dev);
    else if (e->hint_retention) /* each line fits 100 columns */
        printf("  hint       %s\n"
               "             much of this process's memory is probably a cache, split by live "
               "tensors.\n"
               "             Record once with PYTORCH_NO_CUDA_MEMORY_CACHING=1 and run `cumemtrace "
               "whatif`\n"
               "             to find a PYTORCH_CUDA_ALLOC_CONF (max_split_size_mb, "
               "expandable_segments) that avoids it\n",
               e->released_bytes ? "the request was retried after releasing cached memory, as "
                                   "PyTorch's caching allocator does:"
                                 : "the request was retried at the same size with nothing "
                                   "released between the attempts:");
    if (e->hint_leak)
        printf("  hint       possible leak: %s allocated repeatedly and never freed (%s live)\n",
               cmt__text(cmt_stack_top(r, e->holders[e->hint_leak - 1].stack, top, sizeof top),
                         sentence, sizeof sentence),
               cmt__bytes(e->holders[e->hint_leak - 1].bytes, a));
    if (e->stack) { /* from the call site: the allocator's own frames say nothing new */
        uint32_t site = cmt_call_site_node(r, e->stack);
        int n = site ? frames_above(r, e->stack, site) : 0;
        if (n > 0)
            printf("  failing stack, from the call site (%d allocator frame%s above it: --json "
                   "lists them):\n",
                   n, n == 1 ? "" : "s");
        else
            printf("  failing stack:\n");
        cmt_stack_frames(r, n > 0 ? site : e->stack, 32, print_frame, &n);
    }
    if (e->holder_count)
        printf("  top holders on %s at the failure:\n", dev);
    for (uint32_t h = 0; h < e->holder_count; h++)
        printf("    %10s  %6" PRIu64 " alloc%s  %s\n", cmt__bytes(e->holders[h].bytes, a),
               e->holders[h].count, e->holders[h].count == 1 ? " " : "s",
               cmt__text(cmt_stack_top(r, e->holders[h].stack, top, sizeof top), sentence,
                         sizeof sentence));
    int raw = cmt__site_is_raw(r, e->stack);
    for (uint32_t h = 0; h < e->holder_count; h++)
        raw |= cmt__site_is_raw(r, e->holders[h].stack);
    return raw;
}

/* "  held_by_others: pid 4242, rank 1, python train.py held 60.10 GiB (FILE)", one line per
 * holder, and what none of the traces accounts for. */
static void print_others(const struct others *o, const struct cmt_oom_episode *e)
{
    char a[32], cmd[200], file[512];
    uint64_t named = 0;
    for (size_t i = 0; i < o->n; i++) {
        const struct cmt_fleet_process *q = &o->fleet->processes[o->h[i].process];
        printf("  held_by_others: pid %" PRIu64, q->pid);
        if (q->rank >= 0)
            printf(", rank %d", (int)q->rank);
        printf(", %s held %s (%s)\n", cmt__text(q->command ? q->command : "?", cmd, sizeof cmd),
               cmt__bytes(o->h[i].held_bytes, a), cmt__text(q->path, file, sizeof file));
        named += o->h[i].held_bytes;
    }
    if (e->others_bytes > named)
        printf("  held_by_others: %s not in these traces (untraced processes, contexts)\n",
               cmt__bytes(e->others_bytes - named, a));
}

/* One trace's pass, kept from the holders' replays to the printing. */
struct kept {
    struct cmt__pass p;
    cmt_ledger *ledger;
    int ran; /* 1: p holds the pass; -1: it could not be made (said on stderr) */
};

struct passes {
    const struct cmt_fleet *f;
    struct kept *k;
};

/* cmt_fleet_replay_fn: the printing pass of each trace with episodes, with the holders'
 * observer when it is asked; the others are read by the fleet when asked (--json prints the
 * episodes of one with none without reading it). */
static int printing_pass(void *ctx, uint32_t t, const struct cmt_observer *held)
{
    struct passes *s = ctx;
    const struct cmt_fleet_process *pr = &s->f->processes[t];
    if (pr->error || !pr->episode_count)
        return 0;
    struct kept *k = &s->k[t];
    const struct cmt_ledger_options lo = {.at = CMT_LEDGER_AT_OOM};
    if (cmt__ledger_pass(&k->p, "oom", pr->path, CMT__PASS_OOM, &lo, 1, &k->ledger, held)) {
        k->ran = -1; /* it goes unprinted (its pass said why); the fleet asks it on its own */
        return 0;
    }
    k->ran = 1;
    return 1;
}

/* One trace's episodes from its kept pass (k NULL: none), as `oom FILE` prints them, each with
 * its holders in the other traces; *raw_out = 1 when a frame shown has no name. */
static void fleet_trace(const struct cmt_fleet *f, uint32_t t, struct kept *k,
                        struct cmt_fleet_holders *h, struct cmt__json *j, int *first, int *raw_out)
{
    struct cmt__pass *p = k ? &k->p : NULL;
    const struct cmt_fleet_process *pr = &f->processes[t];
    uint32_t n = p ? cmt_oom_count(p->oom) : 0;
    int raw = 0;
    if (j) {
        cmt__json_object(j, NULL);
        cmt__fleet_json_who(j, pr);
        cmt__json_array(j, "episodes");
    }
    for (uint32_t i = 0; i < n && i < pr->episode_count; i++) {
        struct others o = {f, h[i].list, h[i].count};
        if (j) {
            json_episode(j, p, cmt_oom_episode(p->oom, i), &o, k->ledger, &p->phases);
        } else {
            if (!*first)
                putchar('\n');
            *first = 0;
            const struct cmt_oom_episode *e = cmt_oom_episode(p->oom, i);
            raw |= print_episode(p, e, i);
            print_others(&o, e);
            const struct cmt_ledger_moment *m = cmt__ledger_at_oom(k->ledger, e->dev, e->t_ns);
            if (m)
                cmt__ledger_print(p, m, "the failure", "  ");
        }
    }
    if (j) {
        cmt__json_end_array(j);
        cmt__json_end_object(j);
    }
    *raw_out = raw && p && !p->damage;
}

static void close_kept(struct kept *k, uint32_t n)
{
    for (uint32_t t = 0; k && t < n; t++)
        if (k[t].ran) {
            if (k[t].ran > 0)
                cmt__pass_close(&k[t].p);
            cmt_ledger_destroy(k[t].ledger);
        }
    free(k);
}

static int fleet_oom(int argc, char **argv)
{
    struct cmt__fleet_args a;
    struct cmt_fleet f;
    int rc = cmt__fleet_parse_open(argc, argv, "oom", usage, CMT__FA_JSON | CMT__FA_NO_SERIES, &a,
                                   &f);
    if (rc >= 0)
        return rc;
    rc = 0;
    struct cmt__json j;
    int first = 1;
    uint32_t quiet = 0, raw = 0, first_raw = 0;
    /* each trace that prints is read once more, for its own lines and what it held at the
     * others' episodes, all before any output */
    struct passes s = {&f, calloc(f.count ? f.count : 1, sizeof *s.k)};
    struct cmt_fleet_holders **held;
    int hr = s.k ? cmt_fleet_held_by_others_in(&f, &held, printing_pass, &s) : CMT_ENOMEM;
    if (hr != 0) {
        fprintf(stderr, "cumemtrace oom: %s\n",
                hr == CMT_ENOMEM ? "out of memory"
                                 : "a trace read a moment ago cannot be read again (moved?)");
        close_kept(s.k, f.count);
        cmt_fleet_free(&f);
        return 1;
    }
    if (a.json) {
        cmt__json_init(&j, stdout);
        cmt__json_object(&j, NULL);
        cmt__json_array(&j, "traces");
    }
    for (uint32_t t = 0; t < f.count; t++) {
        if (f.processes[t].error || s.k[t].ran < 0)
            rc = 1;
        else if (s.k[t].ran || a.json) {
            int r = 0;
            fleet_trace(&f, t, s.k[t].ran ? &s.k[t] : NULL, held[t], a.json ? &j : NULL, &first,
                        &r);
            first_raw = raw ? first_raw : t;
            raw += (uint32_t)r;
        } else
            quiet++;
    }
    if (a.json) {
        cmt__json_end_array(&j);
        cmt__json_end_object(&j);
        cmt__json_finish(&j);
    } else if (quiet) {
        printf("%s%u of the %u traces: no out-of-memory failures\n", first ? "" : "\n", quiet,
               f.count);
    }
    if (!a.json && raw == 1) /* one hint, not one per rank */
        cmt__hint_symbolize("oom", f.processes[first_raw].path, 1);
    else if (!a.json && raw)
        fprintf(stderr,
                "cumemtrace oom: hint: frames without names (module+0xoffset) in %u traces: run "
                "`cumemtrace symbolize` on them where the programs ran\n",
                raw);
    cmt_fleet_holders_free(&f, held);
    close_kept(s.k, f.count);
    cmt_fleet_free(&f);
    return rc;
}

enum { OPT_HELP = 1, OPT_JSON, OPT_CAPACITY, OPT_JOBS };

/* --capacity is taken out of argv first (cmt__opts_take); --json and --help are then
 * cmt__parse_json_file's, or with --jobs the several-trace form's (fleet_oom). */
const struct cmt__option cmt_cmd_oom_options[] = {
    CMT__OPTION_HELP(OPT_HELP),
    {NULL, "--json", 0, OPT_JSON, NULL},
    {NULL, "--capacity", 1, OPT_CAPACITY, NULL},
    {NULL, "--jobs", 1, OPT_JOBS, NULL},
    {0},
};

/* --capacity's value into *(uint64_t *)capacity. @return 0, or 2 after a usage error. */
static int take_capacity(const char *v, void *capacity)
{
    if (!v || cmt_whatif_parse_bytes(v, capacity) != 0 || !*(uint64_t *)capacity)
        return cmt__usage_error("oom", "--capacity: '%s' is not a size such as 80GiB", v ? v : "");
    return 0;
}

int cmt_cmd_oom(int argc, char **argv)
{
    int json, status;
    struct cmt__pass p;
    const char *path;
    uint64_t capacity = 0;
    int given = argc;
    if (cmt__opts_take("oom", &argc, argv, cmt_cmd_oom_options, OPT_CAPACITY, take_capacity,
                       &capacity) != 0) /* one trace only */
        return 2;
    if (cmt__fleet_wanted(argc, argv, 1, cmt_cmd_oom_options)) {
        if (given != argc)
            return cmt__usage_error("oom", "--capacity is for one trace");
        return fleet_oom(argc, argv);
    }
    int rc = cmt__parse_json_file(argc, argv, "oom", usage, &json, &path);
    if (rc)
        return rc < 0 ? 0 : rc;
    cmt_ledger *ledger;
    const struct cmt_ledger_options lo = {.at = CMT_LEDGER_AT_OOM};
    if (cmt__ledger_pass(&p, "oom", path, CMT__PASS_OOM, &lo, 0, &ledger, NULL) != 0) {
        cmt_ledger_destroy(ledger);
        return 1;
    }
    cmt_oom_set_capacity(p.oom, capacity);
    uint32_t n = cmt_oom_count(p.oom);
    if (json) {
        struct cmt__json j;
        cmt__json_init(&j, stdout);
        cmt__json_object(&j, NULL);
        cmt__json_string(&j, "file", path);
        cmt__json_array(&j, "episodes");
        for (uint32_t i = 0; i < n; i++)
            json_episode(&j, &p, cmt_oom_episode(p.oom, i), NULL, ledger, &p.phases);
        cmt__json_end_array(&j);
        cmt__phases_json(&j, &p.phases);
        cmt__json_end_object(&j);
        cmt__json_finish(&j);
    } else if (n == 0) {
        const struct cmt_replay_totals *t = cmt_replay_totals(p.replay);
        char a[32], alloc[400];
        const char *at = cmt__alloc_headline_text(&p, alloc, sizeof alloc);
        if (t->alloc_calls || !at) /* driver figures where the trace has them, both with both */
            printf("%s: no out-of-memory failures (%" PRIu64 " allocation calls, peak %s%s%s).\n",
                   path, t->alloc_calls, cmt__bytes(t->peak_live_bytes, a), at ? "; " : "",
                   at ? at : "");
        else
            printf("%s: no out-of-memory failures (%s; no driver calls recorded).\n", path, at);
    } else {
        int raw = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (i)
                putchar('\n');
            const struct cmt_oom_episode *e = cmt_oom_episode(p.oom, i);
            raw |= print_episode(&p, e, i);
            const struct cmt_ledger_moment *m = cmt__ledger_at_oom(ledger, e->dev, e->t_ns);
            if (m)
                cmt__ledger_print(&p, m, "the failure", "  ");
        }
        cmt__phases_text(stdout, &p.phases);
        cmt__hint_symbolize("oom", path, raw && !p.damage);
    }
    status = cmt__pass_status(&p);
    cmt__pass_close(&p);
    cmt_ledger_destroy(ledger);
    return status;
}
