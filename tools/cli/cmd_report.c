/* cmd_report.c — `cumemtrace report [--json] FILE`. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pass.h"
#include "print/phase_print.h"
#include "commands.h"
#include "print/alloc_print.h"
#include "fleet/fleet_cli.h"
#include "print/ledger_print.h"
#include "options.h"
#include "output.h"
#include "sites.h"
#include "cmt_search.h"

static const char usage[] =
    "usage: cumemtrace report [--json] [--at TIME]... FILE\n"
    "       cumemtrace report [--json] [--jobs N] TRACE... | DIR   (several processes)\n"
    "\n"
    "Summarises a trace: the process, its devices, calls per API, peak device memory per device\n"
    "and when, the call sites that held the most at the peak, allocations still alive at exit\n"
    "(leaks) by call site, failures, the size histogram, temporary allocations (freed before the\n"
    "next allocation) and per-thread totals, and the ledger of each device (its capacity split\n"
    "into rows that add up: tensors, cache, driver allocations by owner, context, others, free)\n"
    "at the peak and at the end. docs/analysis.md defines every figure.\n"
    "\n"
    "Over several traces (or a directory of them): one report of the run: each process's and\n"
    "rank's peak, which rank failed first and when, the imbalance (max over median peak), and\n"
    "the GPUs that several processes shared.\n"
    "\n"
    "  --json      one JSON object\n"
    "  --at TIME   the ledger also at TIME from the trace's start (12.5s, 800ms, 40us, 3min;\n"
    "              repeatable)\n"
    "  --jobs N    traces read at once (several traces; default: the processors)\n"
    "  -h, --help  this help\n";

static void json_sites(struct cmt__json *j, const char *key, const cmt_replay *rp,
                       const struct cmt_ranked_site *top, size_t n)
{
    cmt__json_array(j, key);
    for (size_t i = 0; i < n; i++) {
        cmt__json_object(j, NULL);
        cmt__json_u64(j, "bytes", top[i].bytes);
        cmt__json_u64(j, "count", top[i].count);
        cmt__json_stack(j, "stack", cmt_replay_reader(rp), cmt_replay_site(rp, top[i].site)->stack);
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
}

static void json_process(struct cmt__json *j, const struct cmt__pass *p)
{
    const struct cmt_replay_totals *t = cmt_replay_totals(p->replay);
    const struct cmt_process *proc = cmt_reader_process(p->reader);
    cmt__json_object(j, "process");
    if (proc) {
        cmt__json_u64(j, "pid", proc->pid);
        cmt__json_string(j, "exe", proc->exe);
        cmt__json_array(j, "argv");
        for (uint32_t i = 0; i < proc->argc; i++)
            cmt__json_string(j, NULL, proc->argv[i]);
        cmt__json_end_array(j);
        cmt__json_string(j, "hostname", proc->hostname);
        cmt__json_u64(j, "driver_version", proc->driver_version);
    }
    cmt__json_bool(j, "clean_exit", t->ended);
    if (t->signaled)
        cmt__json_u64(j, "signal", t->signo);
    cmt__json_bool(j, "damaged", p->damage < 0);
    cmt__json_end_object(j);
}

/* Adds to a device's (or, all set, the run's) failures the out-of-memory events of its
 * allocators beyond its failed driver calls: a snapshot has no driver calls, and in a recorded
 * trace each allocator OOM is also a failed driver call. */
static void allocator_ooms(const cmt_alloc *a, int all, int32_t dev, uint64_t *failures,
                           uint64_t *oom)
{
    uint64_t n = 0;
    for (size_t i = 0; i < cmt_alloc_device_count(a); i++)
        if (all || cmt_alloc_device_at(a, i)->dev == dev)
            n += cmt_alloc_device_at(a, i)->ooms;
    if (n > *oom) {
        *failures += n - *oom;
        *oom = n;
    }
}

static void json_devices(struct cmt__json *j, const cmt_replay *rp, const cmt_alloc *a)
{
    cmt__json_array(j, "devices");
    for (uint32_t s = 0; s < cmt_replay_device_count(rp); s++) {
        const struct cmt_replay_device *d = cmt_replay_device_slot(rp, s);
        if (!d)
            continue;
        cmt__json_object(j, NULL);
        cmt__json_i64(j, "dev", d->dev);
        if (d->name)
            cmt__json_string(j, "name", d->name);
        CMT__JSON_U64S(j, {"total_bytes", d->total_bytes}, {"peak_live_bytes", d->peak_live_bytes},
                       {"peak_t_ns", d->peak_t_ns}, {"live_bytes_at_end", d->live_bytes},
                       {"alloc_calls", d->alloc_calls}, {"free_calls", d->free_calls});
        uint64_t failures = d->failures, oom = d->oom_failures;
        allocator_ooms(a, 0, d->dev, &failures, &oom);
        cmt__json_u64(j, "failures", failures);
        cmt__json_u64(j, "oom_failures", oom);
        cmt__alloc_json_device(j, a, d->dev);
        cmt__json_end_object(j);
    }
    /* devices only the allocator-level records name (a converted snapshot) */
    for (size_t i = 0; i < cmt_alloc_device_count(a); i++) {
        int32_t dev = cmt_alloc_device_at(a, i)->dev;
        int seen = cmt_replay_device(rp, dev) != NULL;
        for (size_t k = 0; k < i && !seen; k++)
            seen = cmt_alloc_device_at(a, k)->dev == dev;
        if (seen)
            continue;
        cmt__json_object(j, NULL);
        cmt__json_i64(j, "dev", dev);
        cmt__alloc_json_device(j, a, dev);
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
}

static void json_api_calls(struct cmt__json *j, const cmt_replay *rp, const cmt_reader *r)
{
    cmt__json_object(j, "api_calls");
    for (uint32_t id = 0; id < 65536; id++) {
        const struct cmt_api *a = cmt_reader_api(r, id);
        uint64_t n = a ? cmt_replay_api_calls(rp, id) : 0;
        if (n)
            cmt__json_u64(j, a->name, n);
    }
    cmt__json_end_object(j);
}

static void json_histogram(struct cmt__json *j, const struct cmt_replay_totals *t)
{
    cmt__json_array(j, "size_histogram");
    for (int b = 0; b < 65; b++) {
        if (!t->size_histogram[b])
            continue;
        cmt__json_object(j, NULL);
        cmt__json_u64(j, "min_bytes", b ? UINT64_C(1) << (b - 1) : 0);
        cmt__json_u64(j, "max_bytes", b == 0 ? 0 : b == 64 ? UINT64_MAX : (UINT64_C(1) << b) - 1);
        cmt__json_u64(j, "count", t->size_histogram[b]);
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
}

static void json_threads(struct cmt__json *j, const cmt_replay *rp, const cmt_reader *r)
{
    cmt__json_array(j, "threads");
    for (uint32_t i = 0; i < cmt_replay_thread_count(rp); i++) {
        const struct cmt_replay_thread *th = cmt_replay_thread(rp, i);
        const char *name = cmt_reader_thread_name(r, th->tid);
        cmt__json_object(j, NULL);
        cmt__json_u64(j, "tid", th->tid);
        if (name)
            cmt__json_string(j, "name", name);
        CMT__JSON_U64S(j, {"alloc_count", th->alloc_count}, {"alloc_bytes", th->alloc_bytes},
                       {"free_count", th->free_count}, {"freed_bytes", th->freed_bytes},
                       {"failures", th->failures});
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
}

#define MAX_AT 16 /* --at times */

/* The ledger of a report: the --at times and the end taken in the pass itself; the peak, known
 * only at its end, is one of those moments when it falls on one (an --at time, or the last
 * event: nothing after it changed the state), else a second replay up to the peak takes it. */
struct report_ledger {
    cmt_ledger *ledger;  /* the pass's: the --at times and the end */
    cmt_ledger *rerun;   /* the second replay's: the peak (NULL when ledger holds it) */
    unsigned peak_in;    /* the moments of ledger that are the peak's: CMT_LEDGER_AT_* */
    uint64_t at[MAX_AT]; /* the --at times, ascending (take_at sorts them) */
    size_t at_count;
    uint64_t peak_t;
    int ran;
};

/* @return m as the peak's moment (at the peak's time), or NULL when it is not one. */
static const struct cmt_ledger_moment *peak_moment(const struct report_ledger *l,
                                                   const cmt_ledger *from,
                                                   const struct cmt_ledger_moment *m,
                                                   struct cmt_ledger_moment *copy)
{
    if (from == l->rerun)
        return m;
    if (!(m->why & l->peak_in) || ((l->peak_in & CMT_LEDGER_AT_TIME) && m->t_ns != l->peak_t))
        return NULL;
    *copy = *m; /* the end's moment keeps the state of the peak, not its time */
    copy->t_ns = l->peak_t;
    return copy;
}

/* The peak's moments of every device, in device order. */
static void json_ledger_peak(struct cmt__json *j, const struct cmt__pass *p,
                             const struct report_ledger *l)
{
    const cmt_ledger *from = l->rerun ? l->rerun : l->ledger;
    struct cmt_ledger_moment copy;
    cmt__json_array(j, "peak");
    for (size_t i = 0; i < cmt_ledger_count(from); i++) {
        const struct cmt_ledger_moment *m = peak_moment(l, from, cmt_ledger_moment(from, i), &copy);
        if (m)
            cmt__ledger_json(j, NULL, p, m);
    }
    cmt__json_end_array(j);
}

/* Moments of every device for `why` (for CMT_LEDGER_AT_TIME: taken at time t), in device
 * order. */
static void json_ledger_list(struct cmt__json *j, const char *key, const struct cmt__pass *p,
                             const struct report_ledger *l, unsigned why, uint64_t t)
{
    cmt__json_array(j, key);
    for (size_t i = 0; i < cmt_ledger_count(l->ledger); i++) {
        const struct cmt_ledger_moment *m = cmt_ledger_moment(l->ledger, i);
        if ((m->why & why) && (!(why & CMT_LEDGER_AT_TIME) || m->t_ns == t))
            cmt__ledger_json(j, NULL, p, m);
    }
    cmt__json_end_array(j);
}

static void json_ledger(struct cmt__json *j, const struct cmt__pass *p,
                        const struct report_ledger *l)
{
    if (!l->ran || !l->ledger)
        return;
    cmt__json_object(j, "ledger");
    json_ledger_peak(j, p, l);
    json_ledger_list(j, "end", p, l, CMT_LEDGER_AT_END, 0);
    cmt__json_array(j, "at");
    for (size_t t = 0; t < l->at_count; t++) {
        cmt__json_object(j, NULL);
        cmt__json_u64(j, "t_ns", l->at[t]);
        json_ledger_list(j, "devices", p, l, CMT_LEDGER_AT_TIME, l->at[t]);
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
    cmt__json_end_object(j);
}

static void text_moment(const struct cmt__pass *p, const struct report_ledger *l,
                        const struct cmt_ledger_moment *m, int peak)
{
    char when[64], a[32];
    if (!m->total_bytes && !m->process_bytes)
        return; /* a device nothing was measured or held on */
    if (peak)
        snprintf(when, sizeof when, "the peak (%s)", cmt__duration(l->peak_t, a));
    else if (m->why & CMT_LEDGER_AT_END)
        snprintf(when, sizeof when, "the end");
    else
        snprintf(when, sizeof when, "%s", cmt__duration(m->t_ns, a));
    putchar('\n');
    cmt__ledger_print(p, m, when, "");
}

/* The peak's moments, every device's (text_moment). */
static void text_peak(const struct cmt__pass *p, const struct report_ledger *l)
{
    const cmt_ledger *from = l->rerun ? l->rerun : l->ledger;
    struct cmt_ledger_moment copy;
    for (size_t i = 0; i < cmt_ledger_count(from); i++) {
        const struct cmt_ledger_moment *m = peak_moment(l, from, cmt_ledger_moment(from, i), &copy);
        if (m)
            text_moment(p, l, m, 1);
    }
}

/* The moments in time order (the peak among the --at times), then the end. */
static void text_ledger(const struct cmt__pass *p, const struct report_ledger *l)
{
    if (!l->ran || !l->ledger)
        return;
    int peak_shown = 0;
    for (size_t i = 0; i < cmt_ledger_count(l->ledger); i++) {
        const struct cmt_ledger_moment *m = cmt_ledger_moment(l->ledger, i);
        if (m->why == CMT_LEDGER_AT_PEAK)
            continue; /* shown by text_peak */
        int past = (m->why & CMT_LEDGER_AT_END) || m->t_ns > l->peak_t;
        if (past && !peak_shown) {
            text_peak(p, l);
            peak_shown = 1;
        }
        if (!l->rerun && l->peak_in == CMT_LEDGER_AT_TIME && (m->why & CMT_LEDGER_AT_TIME) &&
            m->t_ns == l->peak_t)
            continue; /* the peak itself, shown as the peak */
        text_moment(p, l, m, 0);
    }
    if (!peak_shown)
        text_peak(p, l);
}

static void json_report(const struct cmt__pass *p, const struct report_ledger *l)
{
    const cmt_replay *rp = p->replay;
    const struct cmt_replay_totals *t = cmt_replay_totals(rp);
    struct cmt__json j;
    cmt__json_init(&j, stdout);
    cmt__json_object(&j, NULL);
    cmt__json_string(&j, "file", p->path);
    json_process(&j, p);
    CMT__JSON_U64S(&j, {"events", t->events}, {"duration_ns", t->last_t_ns},
                   {"peak_live_bytes", t->peak_live_bytes}, {"peak_t_ns", t->peak_t_ns},
                   {"live_bytes_at_end", t->live_bytes});
    cmt__alloc_json_headline(&j, "allocator", p->alloc);
    cmt__json_u64(&j, "host_pinned_bytes_at_end", t->host_bytes);
    int host = t->host_peak_bytes || p->report.host_site_count; /* keys of traces with it */
    if (host)
        cmt__json_u64(&j, "host_pinned_peak_bytes", t->host_peak_bytes);
    json_devices(&j, rp, p->alloc);
    if (t->odd_device_events) { /* counted in the devices' dev -1 */
        cmt__json_u64(&j, "odd_device_events", t->odd_device_events);
        cmt__json_i64(&j, "odd_device_first", t->odd_device_first);
    }
    cmt__alloc_json_settings(&j, p);
    json_api_calls(&j, rp, p->reader);
    json_sites(&j, "peak_sites", rp, p->report.peak_sites, p->report.peak_site_count);
    json_sites(&j, "leaks", rp, p->report.leaks, p->report.leak_count);
    if (host)
        json_sites(&j, "host_pinned_sites", rp, p->report.host_sites, p->report.host_site_count);
    uint64_t failures = t->failures, oom = t->oom_failures;
    allocator_ooms(p->alloc, 1, 0, &failures, &oom);
    cmt__json_object(&j, "failures");
    CMT__JSON_U64S(&j, {"total", failures}, {"out_of_memory", oom},
                   {"unknown_frees", t->unknown_frees});
    cmt__json_end_object(&j);
    json_histogram(&j, t);
    cmt__json_object(&j, "temporary");
    cmt__json_u64(&j, "count", t->temporary_count);
    cmt__json_u64(&j, "bytes", t->temporary_bytes);
    cmt__json_end_object(&j);
    json_threads(&j, rp, p->reader);
    cmt__phases_json(&j, &p->phases);
    json_ledger(&j, p, l);
    cmt__json_end_object(&j);
    cmt__json_finish(&j);
}

/* Prints the sites under `title` (none: under the line just printed). @return 1 when a site
 * shown is named by a raw frame. */
static int text_sites(const cmt_replay *rp, const char *title, const struct cmt_ranked_site *top,
                      size_t n)
{
    char a[32], frame[512], text[512];
    int raw = 0;
    if (!n)
        return 0;
    if (title)
        printf("\n%s\n", title);
    for (size_t i = 0; i < n; i++)
        printf(
            "  %10s  %7" PRIu64 " alloc%s  %s\n", cmt__bytes(top[i].bytes, a), top[i].count,
            top[i].count == 1 ? " " : "s",
            cmt__text(cmt_stack_top(cmt_replay_reader(rp), cmt_replay_site(rp, top[i].site)->stack,
                                    frame, sizeof frame),
                      text, sizeof text));
    for (size_t i = 0; i < n; i++)
        raw |= cmt__site_is_raw(cmt_replay_reader(rp), cmt_replay_site(rp, top[i].site)->stack);
    return raw;
}

/* The allocator-level lines (only with allocator-level records). */
static void text_allocator(const struct cmt__pass *p)
{
    char a[32], b[32], c[32], d[32], e[32], label[160], settings[1024];
    if (!cmt__alloc_settings_text(p, settings, sizeof settings))
        return;
    printf("%-10s %s\n", "settings", settings);
    for (size_t i = 0; i < cmt_alloc_device_count(p->alloc); i++) {
        int32_t dev = cmt_alloc_device_at(p->alloc, i)->dev;
        int seen = 0;
        for (size_t k = 0; k < i && !seen; k++)
            seen = cmt_alloc_device_at(p->alloc, k)->dev == dev;
        struct cmt_alloc_figures now, peak;
        if (seen || !cmt__alloc_totals(p->alloc, dev, &now, &peak))
            continue;
        printf("%-10s %s: allocated %s at the end (peak %s), reserved %s (peak %s), %" PRIu64
               " segments, inactive split %s\n",
               "allocator", cmt__device_label(p->replay, dev, label, sizeof label),
               cmt__bytes(now.allocated_bytes, a), cmt__bytes(peak.allocated_bytes, b),
               cmt__bytes(now.reserved_bytes, c), cmt__bytes(peak.reserved_bytes, d), now.segments,
               cmt__bytes(now.inactive_split_bytes, e));
    }
}

static void text_report(const struct cmt__pass *p, const struct report_ledger *l)
{
    const cmt_replay *rp = p->replay;
    const cmt_reader *r = p->reader;
    const struct cmt_replay_totals *t = cmt_replay_totals(rp);
    const struct cmt_process *proc = cmt_reader_process(r);
    char a[32], b[32], c[32], label[160], alloc[400];
    struct cmt_alloc_summary ah;
    int have_alloc = cmt_alloc_summarize(p->alloc, &ah);
    const char *alloc_text = cmt__alloc_headline_text(p, alloc, sizeof alloc);
    if (t->alloc_calls || !alloc_text) /* driver figures where the trace has them */
        printf("%s: peak %s of device memory at %s, %s still allocated at the end%s%s\n", p->path,
               cmt__bytes(t->peak_live_bytes, a), cmt__duration(t->peak_t_ns, b),
               cmt__bytes(t->live_bytes, c), alloc_text ? "; " : "", alloc_text ? alloc_text : "");
    else
        printf("%s: %s (no driver calls recorded)\n", p->path, alloc_text);
    if (proc) {
        char text[1024];
        printf("process    pid %" PRIu64 " on %s:", proc->pid,
               cmt__text(proc->hostname, text, sizeof text));
        for (uint32_t i = 0; i < proc->argc && i < 16; i++)
            printf(" %s", cmt__text(proc->argv[i], text, sizeof text));
        printf("\n");
    }
    printf("exit       %s\n", t->ended      ? "clean"
                              : t->signaled ? "killed by a signal"
                                            : "no end marker (crashed or killed)");
    if (have_alloc)
        printf("events     %" PRIu64 " driver events, %" PRIu64 " allocator events over %s\n",
               t->events, ah.events, cmt__duration(t->last_t_ns, a));
    else
        printf("events     %" PRIu64 " over %s\n", t->events, cmt__duration(t->last_t_ns, a));
    for (uint32_t s = 0; s < cmt_replay_device_count(rp); s++) {
        const struct cmt_replay_device *d = cmt_replay_device_slot(rp, s);
        if (!d || (!d->alloc_calls && !d->total_bytes))
            continue;
        if (d->dev < 0 && !d->peak_live_bytes && !d->total_bytes)
            continue; /* only memory of no device (pinned host, recorded with dev -1) */
        printf("%-10s %s: peak %s at %s of %s, %" PRIu64 " allocations, %" PRIu64 " failed\n",
               "device", cmt__device_label(rp, d->dev, label, sizeof label),
               cmt__bytes(d->peak_live_bytes, a), cmt__duration(d->peak_t_ns, b),
               cmt__bytes(d->total_bytes, c), d->alloc_calls, d->failures);
    }
    if (t->odd_device_events)
        printf("%-10s %" PRIu64 " events on ordinals outside 0..%d (the first %" PRId32
               ") are counted as device ?\n",
               "device", t->odd_device_events, CMT_MAX_DEVICES - 1, t->odd_device_first);
    text_allocator(p);
    text_ledger(p, l);
    printf("\ncalls by API\n");
    for (uint32_t id = 0; id < 65536; id++) {
        const struct cmt_api *api = cmt_reader_api(r, id);
        uint64_t n = api ? cmt_replay_api_calls(rp, id) : 0;
        char text[256];
        if (n)
            printf("  %10" PRIu64 "  %s\n", n, cmt__text(api->name, text, sizeof text));
    }
    int raw = text_sites(rp, "top call sites at the peak", p->report.peak_sites,
                         p->report.peak_site_count);
    raw |= text_sites(rp, "still allocated at the end (leaks), by call site", p->report.leaks,
                      p->report.leak_count);
    if (t->host_peak_bytes || p->report.host_site_count) { /* never in the device figures */
        printf("\npinned host memory (not device memory): peak %s, %s at the end, by call site\n",
               cmt__bytes(t->host_peak_bytes, a), cmt__bytes(t->host_bytes, b));
        raw |= text_sites(rp, NULL, p->report.host_sites, p->report.host_site_count);
    }
    cmt__phases_text(stdout, &p->phases);
    uint64_t failures = t->failures, oom = t->oom_failures;
    allocator_ooms(p->alloc, 1, 0, &failures, &oom);
    printf("\nfailures   %" PRIu64 " (out of memory %" PRIu64
           "), frees of unknown pointers %" PRIu64 "\n",
           failures, oom, t->unknown_frees);
    printf("temporary  %" PRIu64 " allocations (%s) freed before the next allocation\n",
           t->temporary_count, cmt__bytes(t->temporary_bytes, a));
    printf("\nsizes\n");
    for (int k = 0; k < 65; k++)
        if (t->size_histogram[k])
            printf("  %10s .. %-10s %10" PRIu64 "\n", cmt__bytes(k ? UINT64_C(1) << (k - 1) : 0, a),
                   cmt__bytes(k == 0    ? 0
                              : k == 64 ? UINT64_MAX
                                        : (UINT64_C(1) << k) - 1,
                              b),
                   t->size_histogram[k]);
    printf("\nthreads\n");
    for (uint32_t i = 0; i < cmt_replay_thread_count(rp); i++) {
        const struct cmt_replay_thread *th = cmt_replay_thread(rp, i);
        const char *name = cmt_reader_thread_name(r, th->tid);
        char text[256];
        printf("  %-8u %-16s %8" PRIu64 " allocs %10s, %8" PRIu64 " frees, %" PRIu64 " failed\n",
               th->tid, cmt__text(name, text, sizeof text), th->alloc_count,
               cmt__bytes(th->alloc_bytes, a), th->free_count, th->failures);
    }
    cmt__hint_symbolize("report", p->path, raw && !p->damage);
}

enum { OPT_HELP = 1, OPT_JSON, OPT_AT, OPT_JOBS };

/* --at is taken out of argv first (cmt__opts_take); --json and --help are then
 * cmt__parse_json_file's, --jobs the several-trace form's (fleet_report.c). */
const struct cmt__option cmt_cmd_report_options[] = {
    CMT__OPTION_HELP(OPT_HELP),
    {NULL, "--json", 0, OPT_JSON, NULL},
    {NULL, "--at", 1, OPT_AT, NULL},
    {NULL, "--jobs", 1, OPT_JOBS, NULL},
    {0},
};

/* One --at TIME into l->at. @return 0, or 2 after a usage error. */
static int take_at(const char *v, void *ctx)
{
    struct report_ledger *l = ctx;
    if (l->at_count == MAX_AT)
        return cmt__usage_error("report", "at most %d --at times", MAX_AT);
    if (!v || cmt__parse_time(v, &l->at[l->at_count]) != 0)
        return cmt__usage_error("report", "--at wants a time such as 12.5s or 800ms, got '%s'",
                                v ? v : "");
    l->at_count++;
    return 0;
}

/* Where the peak's moment is, once pass p is over: one of the ledger's (an --at time, or the
 * end when the peak was the last event), else the second replay takes it. */
static void ledger_peak(const struct cmt__pass *p, struct report_ledger *l)
{
    const struct cmt_replay_totals *t = cmt_replay_totals(p->replay);
    l->peak_t = t->peak_t_ns;
    for (size_t a = 0; a < l->at_count; a++)
        if (l->at[a] == l->peak_t)
            l->peak_in = CMT_LEDGER_AT_TIME;
    for (size_t i = 0; !l->peak_in && i < cmt_ledger_count(l->ledger); i++) {
        const struct cmt_ledger_moment *m = cmt_ledger_moment(l->ledger, i);
        if ((m->why & CMT_LEDGER_AT_END) && m->seq == t->peak_seq)
            l->peak_in = CMT_LEDGER_AT_END; /* nothing after the peak: the end is its state */
    }
    for (size_t i = 0; !l->peak_in && i < cmt_ledger_count(l->ledger); i++)
        if (cmt_ledger_moment(l->ledger, i)->why & CMT_LEDGER_AT_PEAK)
            l->peak_in = CMT_LEDGER_AT_PEAK; /* kept in the pass itself */
    if (!l->peak_in && cmt__ledger_rerun_to(p, l->peak_t, &l->rerun) != 0)
        fprintf(stderr, "cumemtrace report: %s: out of memory (no ledger at the peak)\n", p->path);
}

int cmt_cmd_report(int argc, char **argv)
{
    int json, status;
    struct cmt__pass p;
    struct report_ledger l;
    const char *path;
    memset(&l, 0, sizeof l);
    if ((status = cmt__opts_take("report", &argc, argv, cmt_cmd_report_options, OPT_AT, take_at,
                                 &l)) != 0)
        return status;
    if (l.at_count > 1)
        qsort(l.at, l.at_count, sizeof *l.at, cmt_u64_ascending);
    if (cmt__fleet_wanted(argc, argv, 1, cmt_cmd_report_options)) {
        if (l.at_count) /* each GPU has its own moment there */
            return cmt__usage_error("report", "--at reads one trace, not several");
        return cmt__fleet_report(argc, argv, usage);
    }
    int rc = cmt__parse_json_file(argc, argv, "report", usage, &json, &path);
    if (rc)
        return rc < 0 ? 0 : rc;
    struct cmt_ledger_options o = {
        .at = CMT_LEDGER_AT_END | CMT_LEDGER_AT_PEAK, .times = l.at, .time_count = l.at_count};
    if (cmt__ledger_pass(&p, "report", path, CMT__PASS_REPORT, &o, 0, &l.ledger, NULL) != 0) {
        cmt_ledger_destroy(l.ledger);
        return 1;
    }
    status = cmt__pass_status(&p); /* of this pass: the second replay reads the reader again */
    if (l.ledger) {
        l.ran = 1;
        ledger_peak(&p, &l);
    }
    if (json)
        json_report(&p, &l);
    else
        text_report(&p, &l);
    cmt_ledger_destroy(l.rerun);
    cmt_ledger_destroy(l.ledger);
    cmt__pass_close(&p);
    return status;
}
