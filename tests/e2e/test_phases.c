/* NVTX ranges end to end: progs/nvtx_phases.c pushes and starts ranges on several threads and
 * allocates inside them, printing each range and each allocation with the phase it is in.
 * The trace's RANGE records must hold every range with its thread, and the phase analysis
 * (tools/analysis/phases.h) must put every allocation in the phase the program named. The
 * same through annotate.h's range calls. */
#include "e2e_util.h"

#include <inttypes.h>

#include "phases.h"
#include "replay.h"

TestSuite(phases, .init = e2e_setup, .fini = e2e_teardown);

struct line {
    char what[16], action[16], name[64];
    unsigned tid;
    unsigned long long bytes;
};

static int lines(const char *out, struct line *l, int max)
{
    int n = 0;
    for (const char *p = out; *p && n < max; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : "")
        if (sscanf(p, "%15s %u %15s %llu %63s", l[n].what, &l[n].tid, l[n].action, &l[n].bytes,
                   l[n].name) == 5)
            n++;
    return n;
}

/* Every range the program opened is a RANGE record of its thread; pushes are popped. */
static void ranges_match(const char *path, const struct line *l, int n, int nvtx)
{
    static struct cmt_range got[256];
    int ng = 0, pushes = 0, pops = 0, starts = 0, ends = 0, domains = 0;
    cmt_reader *r;
    cr_assert_eq(cmt_reader_open_file(&r, path, NULL), 0);
    struct cmt_record rec;
    int rc;
    static char names[256][64];
    while ((rc = cmt_reader_next(r, &rec)) > 0) {
        if (rec.type != CMT_REC_RANGE || ng >= 256)
            continue;
        got[ng] = rec.u.range;
        snprintf(names[ng], sizeof names[ng], "%s", rec.u.range.message);
        got[ng].message = names[ng];
        pushes += got[ng].action == CMT_RA_PUSH;
        pops += got[ng].action == CMT_RA_POP;
        starts += got[ng].action == CMT_RA_START;
        ends += got[ng].action == CMT_RA_END;
        domains += got[ng].action == CMT_RA_DOMAIN;
        ng++;
    }
    cr_assert_eq(rc, 0, "%s reads whole", path);
    cr_assert_eq(cmt_reader_seq_gaps(r), 0, "ranges take no driver seqs");
    int expected_pushes = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(l[i].what, "range"))
            continue;
        uint32_t action = !strcmp(l[i].action, "push") ? CMT_RA_PUSH : CMT_RA_START;
        expected_pushes += action == CMT_RA_PUSH;
        int found = 0;
        for (int k = 0; k < ng && !found; k++)
            found = got[k].action == action && got[k].tid == l[i].tid &&
                    !strcmp(got[k].message, l[i].name);
        cr_assert(found, "%s %s on thread %u is in the trace", l[i].action, l[i].name, l[i].tid);
    }
    cr_assert_eq(pushes, expected_pushes, "no push the program did not make");
    cr_assert_eq(pops, pushes, "every push popped");
    cr_assert_eq(starts, 1);
    cr_assert_eq(ends, 1);
    for (int k = 0; k < ng; k++)
        if (got[k].action == CMT_RA_END)
            for (int s = 0; s < ng; s++)
                if (got[s].action == CMT_RA_START)
                    cr_assert_eq(got[k].id, got[s].id, "the end names the start's id");
    cr_assert_eq(domains, nvtx, "the NVTX run names its domain");
    if (nvtx)
        for (int k = 0; k < ng; k++)
            if (got[k].action == CMT_RA_PUSH && !strcmp(got[k].message, "tail"))
                cr_assert(got[k].domain != 0 && got[k].category == 7, "a domain push, category 7");
    cmt_reader_close(r);
}

/* The phases of the trace at path, replayed whole. @return the replay's code. */
struct analysed {
    cmt_reader *r;
    cmt_replay *rp;
    struct cmt_phases ph;
};
static int analyse(struct analysed *a, const char *path)
{
    cr_assert_eq(cmt_reader_open_file(&a->r, path, NULL), 0);
    cr_assert_eq(cmt_replay_create(&a->rp, a->r), 0);
    struct cmt_observer obs = cmt_phases_observer(&a->ph);
    return cmt_replay_run(a->rp, &obs, 1);
}
static void analysed_free(struct analysed *a)
{
    cmt_phases_free(&a->ph);
    cmt_replay_destroy(a->rp);
    cmt_reader_close(a->r);
}

/* The phase analysis puts each allocation where the program said it was. */
static void attribution_matches(const char *path, const struct line *l, int n)
{
    static struct analysed a;
    cr_assert_eq(analyse(&a, path), 0);
    const struct cmt_phases *ph = &a.ph;
    cr_assert(!ph->have_blocks);
    int checked = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(l[i].what, "alloc"))
            continue;
        const char *name = !strcmp(l[i].name, "-") ? NULL : l[i].name;
        uint64_t count = 0, bytes = 0;
        for (int k = 0; k < n; k++)
            if (!strcmp(l[k].what, "alloc") && !strcmp(l[k].name, l[i].name)) {
                count++;
                bytes += l[k].bytes;
            }
        uint32_t phase = name ? cmt_phases_find(ph, name) : 0;
        if (name && !phase) /* the NVTX domain's phase */
            phase = cmt_phases_find(ph, "cmt-test:tail");
        cr_assert(!name || phase, "phase %s exists", l[i].name);
        const struct cmt_phase_stats *st = cmt_phases_stats(ph, phase);
        cr_assert_eq(st->alloc_count, count, "%s: %" PRIu64 " allocations", l[i].name, count);
        cr_assert_eq(st->alloc_bytes, bytes, "%s: %" PRIu64 " bytes", l[i].name, bytes);
        cr_assert_eq(st->live_bytes, !strcmp(l[i].name, "leak") ? bytes : 0,
                     "%s: only the leak's allocation is live at the end", l[i].name);
        cr_assert_geq(st->peak_bytes, bytes);
        checked++;
    }
    cr_assert_geq(checked, 12, "the program allocated in every phase");
    uint32_t train = cmt_phases_find(ph, "train");
    cr_assert_eq(ph->phases[train].instances, 1);
    cr_assert_eq(ph->phases[cmt_phases_find(ph, "inner")].instances, 4, "one per worker");
    for (size_t i = 0; i < ph->range_count; i++)
        cr_assert(!ph->ranges[i].open, "every range closed");
    analysed_free(&a);
}

static void run_mode(const char *mode)
{
    static struct run run;
    static struct line l[128];
    char path[NAME_MAX + 1];
    const char *args[] = {mode, NULL};
    e2e_record_one(&run, path, NULL, "tests/progs/nvtx_phases", mode ? args : NULL, 0);
    int n = lines(run.out, l, 128);
    cr_assert_geq(n, 20, "stdout: %s", run.out);
    ranges_match(path, l, n, !mode);
    attribution_matches(path, l, n);
}

Test(phases, nvtx_ranges_of_every_thread_are_recorded_and_allocations_attributed)
{
    run_mode(NULL);
}

Test(phases, annotate_ranges_are_recorded_and_allocations_attributed)
{
    run_mode("annotate");
}

Test(phases, without_the_shim_nvtx_does_nothing)
{
    static struct run r;
    char prog[PATH_MAX];
    char *argv[] = {(char *)e2e_path(prog, "tests/progs/nvtx_phases"), NULL};
    e2e_run(&r, argv);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char names[2][NAME_MAX + 1];
    cr_assert_eq(e2e_traces(names, 2), 0);
}

Test(phases, report_and_timeline_show_the_phases)
{
    static struct run r;
    char path[NAME_MAX + 1], cli[PATH_MAX];
    e2e_record_one(&r, path, NULL, "tests/progs/nvtx_phases", NULL, 0);
    char *report[] = {(char *)e2e_path(cli, "bin/cumemtrace"), "report", path, NULL};
    e2e_run(&r, report);
    cr_assert_eq(r.status, 0);
    const char *by = strstr(r.out, "by phase (driver allocations;");
    cr_assert(by, "%s", r.out);
    cr_assert(strstr(by, "\n  leak ") && strstr(by, "3.00 MiB (1)"), "the leak's phase: %s", by);
    char *timeline[] = {cli, "timeline", path, NULL};
    e2e_run(&r, timeline);
    /* The legend letters follow the band's order; whether the short "load" range wins a cell
     * of its own depends on the machine's timing, so only the train's entry is asserted. */
    const char *band = strstr(r.out, "  phases\n");
    cr_assert(band, "the band: %s", r.out);
    const char *legend_end = strchr(band + 9, '\n');
    const char *train = strstr(band, " train");
    cr_assert(legend_end && train && train < legend_end && train[-2] == ' ' && train[-1] >= 'A' &&
                  train[-1] <= 'Z',
              "the band's legend names the train: %s", r.out);
    char *table[] = {cli, "timeline", "--csv", path, NULL};
    e2e_run(&r, table);
    cr_assert_eq(r.status, 0);
    const char *nl = strchr(r.out, '\n');
    cr_assert(nl && nl - r.out > 6 && !strncmp(nl - 6, ",phase", 6), "the header: %s", r.out);
    cr_assert(strstr(r.out, ",train\n") && strstr(r.out, ",load\n"), "a phase per point: %s",
              r.out);
}

/* A process killed with its ranges open: record salvages them from the rings, as it does the
 * memory events, and the open ranges last to the trace's end. */
Test(phases, ranges_of_a_killed_process_are_salvaged)
{
    static struct run run;
    static struct line l[16];
    char path[NAME_MAX + 1];
    const char *args[] = {"kill", NULL};
    e2e_record_one(&run, path, NULL, "tests/progs/nvtx_phases", args, 128 + SIGKILL);
    int n = lines(run.out, l, 16);
    cr_assert_eq(n, 3, "push, alloc, start: %s", run.out);
    static struct analysed a;
    analyse(&a, path); /* no END: salvaged */
    cr_assert_eq(a.ph.range_count, 2, "both ranges: %s", run.err);
    cr_expect_eq(a.ph.ranges[0].tid, l[0].tid);
    cr_expect(a.ph.ranges[0].open && a.ph.ranges[1].open);
    cr_expect_eq(cmt_phases_stats(&a.ph, cmt_phases_find(&a.ph, "doomed"))->alloc_bytes, 1u << 20);
    analysed_free(&a);
}

/* record leaves an injection library already named (a profiler's) in place: no ranges then,
 * and the program runs as before. */
Test(phases, record_keeps_an_nvtx_injection_already_set)
{
    static struct run run;
    char path[NAME_MAX + 1];
    setenv("NVTX_INJECTION64_PATH", "/nonexistent/libprofiler.so", 1);
    e2e_record_one(&run, path, NULL, "tests/progs/nvtx_phases", NULL, 0);
    unsetenv("NVTX_INJECTION64_PATH");
    cmt_reader *r;
    cr_assert_eq(cmt_reader_open_file(&r, path, NULL), 0);
    struct cmt_record rec;
    int ranges = 0, events = 0;
    while (cmt_reader_next(r, &rec) > 0) {
        ranges += rec.type == CMT_REC_RANGE;
        events += rec.type == CMT_REC_EVENT;
    }
    cr_expect_eq(ranges, 0);
    cr_expect_gt(events, 20, "the memory calls are still recorded");
    cmt_reader_close(r);
}
