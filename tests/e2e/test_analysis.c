/* The analyses over traces recorded from real programs on simcuda (issue 4's checks). */
#include "e2e_util.h"

TestSuite(analysis, .init = e2e_setup, .fini = e2e_teardown);

static void record_oom_mode(char path[NAME_MAX + 1], const char *used, const char *mode)
{
    if (used)
        setenv("SIMCUDA_USED", used, 1);
    else
        unsetenv("SIMCUDA_USED");
    static struct run r;
    const char *args[] = {mode, NULL};
    e2e_record_one(&r, path, NULL, "tests/progs/scenarios", args, 1); /* dies of its OOM */
    unsetenv("SIMCUDA_USED");
}

static void record_cache_oom(char path[NAME_MAX + 1], const char *used)
{
    record_oom_mode(path, used, "cache-oom");
}

static void cli(struct run *r, const char *cmd, const char *a, const char *b, const char *c)
{
    char exe[PATH_MAX];
    char *argv[] = {(char *)e2e_path(exe, "bin/cumemtrace"),
                    (char *)cmd,
                    (char *)a,
                    (char *)b,
                    (char *)c,
                    NULL};
    e2e_run(r, argv);
}

static int has(const char *text, const char *fmt, uint64_t value)
{
    char needle[256];
    snprintf(needle, sizeof needle, fmt, (unsigned long long)value);
    return strstr(text, needle) != NULL;
}

Test(analysis, caching_allocator_oom_is_one_episode_exhausted_by_process)
{
    char path[NAME_MAX + 1];
    record_cache_oom(path, NULL);
    struct trace t;
    trace_load(&t, path);
    const struct cmt_meminfo *first = NULL;
    for (int i = 0; i < t.nmem && !first; i++)
        if (t.mem[i].reason == CMT_MEMINFO_OOM)
            first = &t.mem[i];
    cr_assert_not_null(first, "the shim recorded free/total at the failure");
    uint64_t process = 0; /* live bytes at the first failure, replayed here independently */
    for (size_t i = 0; i < t.n && t.ev[i].seq < first->seq; i++) {
        const char *api = api_of(&t, &t.ev[i]);
        if (t.ev[i].result)
            continue;
        if (!strcmp(api, "cuMemAlloc_v2"))
            process += t.ev[i].v[CMT_FIELD_SIZE];
        else if (!strcmp(api, "cuMemFree_v2"))
            process -= 512ull << 20; /* only load_weights segments are freed */
    }
    static struct run r;
    cli(&r, "oom", "--json", path, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "\"episodes\":[{"), "%s", r.out);
    cr_assert_null(strstr(r.out, "},{\"request_bytes\""), "exactly one episode: %s", r.out);
    cr_assert(has(r.out, "\"request_bytes\":%llu,", 4ull << 30), "%s", r.out);
    cr_assert(strstr(r.out, "\"api\":\"cuMemAlloc_v2\""));
    cr_assert(strstr(r.out, "\"attempts\":2,"), "%s", r.out);
    cr_assert(strstr(r.out, "\"frees_between\":2,"), "%s", r.out);
    cr_assert(has(r.out, "\"released_bytes\":%llu,", 1ull << 30), "%s", r.out);
    cr_assert(strstr(r.out, "\"fatal\":true"), "%s", r.out);
    cr_assert(has(r.out, "\"free_bytes\":%llu,", first->free_bytes), "%s", r.out);
    cr_assert(has(r.out, "\"total_bytes\":%llu,", 24ull << 30), "%s", r.out);
    cr_assert(has(r.out, "\"process_bytes\":%llu,", process), "%s", r.out);
    cr_assert(has(r.out, "\"others_bytes\":%llu,", (24ull << 30) - first->free_bytes - process),
              "%s", r.out);
    cr_assert(strstr(r.out, "\"verdict\":\"exhausted_by_process\""), "%s", r.out);
    cr_assert(strstr(r.out, "\"holders\":[{\"bytes\":"), "%s", r.out);
    cr_assert(strstr(strstr(r.out, "\"holders\":"), "\"stack\":[\"load_weights scenarios.c"),
              "the largest call site first: %s", r.out);
    cr_assert(strstr(r.out, "\"stack\":[\"decode scenarios.c"), "the failing stack: %s", r.out);
    cli(&r, "oom", path, NULL, NULL);
    cr_assert_eq(r.status, 0);
    cr_assert(strstr(r.out, "out of memory #1: cuMemAlloc_v2 of 4.00 GiB"), "%s", r.out);
    trace_free(&t);
}

Test(analysis, shared_device_oom_is_held_by_others)
{
    char path[NAME_MAX + 1];
    record_cache_oom(path, "20GiB");
    static struct run r;
    cli(&r, "oom", "--json", path, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "\"verdict\":\"held_by_others\""), "%s", r.out);
    cr_assert(has(r.out, "\"others_bytes\":%llu,", (20ull << 30) + (256ull << 20)),
              "SIMCUDA_USED + the context: %s", r.out);
}

/* The timeline's peak equals the peak replayed from the dumped events. */
Test(analysis, timeline_peak_equals_the_replayed_peak)
{
    static struct run r;
    const char *args[] = {"threads", "4", "3000", NULL};
    char names[1][NAME_MAX + 1];
    e2e_record_one(&r, names[0], NULL, "tests/progs/scenarios", args, 0);
    struct trace t;
    trace_load(&t, names[0]);
    enum { SLOTS = 1 << 16 };
    static uint64_t size_at[SLOTS];
    uint64_t live = 0, peak = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct cmt_event *e = &t.ev[i];
        uint64_t slot = (e->v[CMT_FIELD_PTR] >> 21) & (SLOTS - 1);
        if (e->result)
            continue;
        if (!strcmp(api_of(&t, e), "cuMemAlloc_v2")) {
            size_at[slot] = e->v[CMT_FIELD_SIZE];
            live += size_at[slot];
            peak = live > peak ? live : peak;
        } else if (!strcmp(api_of(&t, e), "cuMemFree_v2")) {
            live -= size_at[slot];
        }
    }
    cr_assert_gt(peak, 0);
    /* 1000 points of JSON stay well inside the 1 MiB the test keeps of a command's output */
    for (const char *points = "20"; points; points = points[0] == '2' ? "1000" : NULL) {
        char exe[PATH_MAX];
        char *argv[] = {(char *)e2e_path(exe, "bin/cumemtrace"),
                        "timeline",
                        "--json",
                        "--points",
                        (char *)points,
                        names[0],
                        NULL};
        e2e_run(&r, argv);
        cr_assert_eq(r.status, 0, "%s", r.err);
        cr_assert(has(r.out, "\"peak_live_bytes\":%llu,", peak), "peak %llu: %.400s",
                  (unsigned long long)peak, r.out);
        uint64_t max_point = 0;
        for (const char *p = r.out; (p = strstr(p, "\"live_bytes\":")); p++) {
            uint64_t v = strtoull(p + 13, NULL, 10);
            max_point = v > max_point ? v : max_point;
        }
        cr_assert_eq(max_point, peak, "downsampling to %s points keeps the peak", points);
    }
    trace_free(&t);
}

Test(analysis, diff_tells_two_runs_apart_and_gates_growth)
{
    char a[NAME_MAX + 1], b[NAME_MAX + 1];
    record_cache_oom(a, "20GiB");
    rename(a, "a.trace");
    record_cache_oom(b, NULL);
    rename(b, "b.trace");
    static struct run r;
    cli(&r, "diff", "--json", "a.trace", "b.trace");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "\"a\":{") && strstr(r.out, "\"b\":{") && strstr(r.out, "\"delta\":"),
              "%s", r.out);
    cr_assert(strstr(r.out, "held_by_others") && strstr(r.out, "exhausted_by_process"),
              "each run's verdict: %s", r.out);
    cli(&r, "diff", "--fail-if-peak-grows", "10", "a.trace");
    cr_assert_eq(r.status, 2, "two traces are needed");
    char exe[PATH_MAX];
    char *grow[] = {(char *)e2e_path(exe, "bin/cumemtrace"),
                    "diff",
                    "--fail-if-peak-grows",
                    "10",
                    "a.trace",
                    "b.trace",
                    NULL};
    e2e_run(&r, grow);
    cr_assert_eq(r.status, 1, "B's peak is ~9x A's: the gate fails: %s", r.out);
    char *shrink[] = {exe, "diff", "--fail-if-peak-grows", "10", "b.trace", "a.trace", NULL};
    e2e_run(&r, shrink);
    cr_assert_eq(r.status, 0, "a smaller peak passes the gate: %s", r.err);
}

Test(analysis, retry_without_frees_hints_at_the_cache)
{
    char path[NAME_MAX + 1];
    record_oom_mode(path, NULL, "retry-oom");
    struct run r;
    cli(&r, "oom", "--json", path, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "\"attempts\":2,"), "%s", r.out);
    cr_assert(strstr(r.out, "\"frees_between\":0,"), "%s", r.out);
    cr_assert(strstr(r.out, "\"hints\":[\"caching_allocator_retention\""), "%s", r.out);
    cli(&r, "oom", path, NULL, NULL);
    cr_assert(strstr(r.out, "PYTORCH_NO_CUDA_MEMORY_CACHING=1 and run `cumemtrace whatif`"), "%s",
              r.out);
}

/* A device first used by cuMemCreate with no context current (issue 12 item 7): the trace names
 * it (DEVICE record with its total) and `oom` measures the failure against it. */
Test(analysis, a_device_first_used_without_a_context_is_named)
{
    char path[NAME_MAX + 1];
    static struct run r;
    const char *args[] = {"vmm-no-context", NULL};
    e2e_record_one(&r, path, NULL, "tests/progs/scenarios", args, 0);
    struct trace t;
    trace_load(&t, path);
    cr_expect_eq(t.ndevices, 1, "one DEVICE record, got %d", t.ndevices);
    trace_free(&t);
    static struct run o;
    cli(&o, "oom", path, NULL, NULL);
    cr_expect_null(strstr(o.out, "of the 0 B device"), "%s", o.out);
    cr_expect(strstr(o.out, "(24.00 GiB)"), "measured against the device: %s", o.out);
}

/* Stream capture recorded from a program in PyTorch's CUDA-graph shape (graph_capture.c): the
 * captured cuMemAllocAsync calls are the graph's nodes, so the peak is what simcuda's graph
 * pool says the replayed graph holds (its output; the workspace is freed inside the graph),
 * not the captured allocations counted live at capture time (34 MiB). */
Test(analysis, captured_allocations_are_live_only_when_the_graph_is_launched)
{
    static struct run r, report;
    char path[NAME_MAX + 1];
    e2e_record_one(&r, path, NULL, "tests/progs/graph_capture", NULL, 0);
    unsigned long long used = 0, reserved = 0;
    const char *line = strstr(r.out, "graph_capture: used ");
    cr_assert(line && sscanf(line, "graph_capture: used %llu reserved %llu", &used, &reserved) == 2,
              "%s", r.out);
    cr_assert_gt(used, 0);
    cr_assert_gt(reserved, used, "the workspace's pages stay reserved in the graph pool");
    cli(&report, "report", "--json", path, NULL);
    cr_assert_eq(report.status, 0, "%s", report.err);
    cr_assert(has(report.out, "\"peak_live_bytes\":%llu,", used), "simcuda: used %llu\n%s", used,
              report.out);
    cr_assert(strstr(report.out, "\"live_bytes_at_end\":0,"), "%s", report.out);
}

/* Graph memory recorded from a program: the replay makes a launched allocation node live at
 * the node's call site, and a workspace freed inside its graph never counts. The peak is the
 * step's 10 MiB output (graph_memory.c), allocated by the graph and freed by the consumer. */
Test(analysis, graph_memory_is_live_from_launch_at_the_allocation_node)
{
    static struct run r, report;
    char path[NAME_MAX + 1];
    e2e_record_one(&r, path, NULL, "tests/progs/graph_memory", NULL, 0);
    cli(&report, "report", "--json", path, NULL);
    cr_assert_eq(report.status, 0, "%s", report.err);
    cr_assert(has(report.out, "\"peak_live_bytes\":%llu,", 10u << 20), "%s", report.out);
    cr_assert(strstr(report.out, "\"live_bytes_at_end\":0,"), "%s", report.out);
    cr_assert(strstr(report.out,
                     "\"peak_sites\":[{\"bytes\":10485760,\"count\":1,\"stack\":[\"main "
                     "graph_memory.c:"),
              "the peak is the output's allocation node:\n%s", report.out);
}
