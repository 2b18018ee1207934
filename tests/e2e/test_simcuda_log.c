/* The trace against the driver's own record of truth: programs recorded on simcuda with
 * SIMCUDA_LOG set, and every memory call simcuda served (allocations and frees of every
 * kind) must be in the traces, and nothing else (simcuda_log_check). Driver-API programs and
 * runtime programs (nvcc -cudart shared, on simcudart). */
#include "e2e_util.h"

TestSuite(simcuda_log, .init = e2e_setup, .fini = e2e_teardown);

/* SIMCUDA_LOG in the scratch directory (an absolute path: record's children share it). */
static const char *log_path(void)
{
    static char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/simcuda.log", e2e_dir);
    setenv("SIMCUDA_LOG", path, 1);
    return path;
}

/* Records prog with args, expects exit `status`, and compares every trace with the log.
 * @return the checker's report. */
static const char *record_and_compare(const char *prog, const char *const args[], int status)
{
    static struct run r, report;
    const char *log = log_path();
    e2e_record(&r, NULL, prog, args);
    cr_assert_eq(r.status, status, "%s %s: status %d: %s", prog, args && args[0] ? args[0] : "",
                 r.status, r.err);
    e2e_check_simcuda_log(log, &report);
    /* The log saw the calls: a checker that compared nothing would pass anything. */
    cr_assert(strstr(report.out, "allocations served 0 /") == NULL,
              "%s: simcuda logged no allocation:\n%s", prog, report.out);
    return report.out;
}

Test(simcuda_log, every_memory_entry_point)
{
    const char *args[] = {"all-apis", NULL};
    record_and_compare("tests/progs/scenarios", args, 0);
}

Test(simcuda_log, threads)
{
    const char *args[] = {"threads", "4", "500", NULL};
    record_and_compare("tests/progs/scenarios", args, 0);
}

Test(simcuda_log, threads_on_vmm)
{
    const char *args[] = {"threads-vm", "4", "50", NULL};
    record_and_compare("tests/progs/scenarios", args, 0);
}

Test(simcuda_log, fork_children_append_to_the_same_log)
{
    const char *args[] = {"fork", NULL};
    record_and_compare("tests/progs/scenarios", args, 0);
}

Test(simcuda_log, exec_children_reopen_the_log)
{
    char prog[PATH_MAX];
    const char *args[] = {"exec", e2e_path(prog, "tests/progs/alloc_deep"), NULL};
    record_and_compare("tests/progs/scenarios", args, 0);
}

Test(simcuda_log, out_of_memory)
{
    const char *args[] = {"oom", NULL};
    const char *report = record_and_compare("tests/progs/scenarios", args, 0);
    cr_assert(strstr(report, "failed calls served 1 / recorded 1"),
              "the failed allocation is compared too:\n%s", report);
}

Test(simcuda_log, a_deep_call_stack)
{
    record_and_compare("tests/progs/alloc_deep", NULL, 0);
}

/* memMapIPCDrv's pattern: the exported descriptor reaches an exec'ed child over a socket. */
Test(simcuda_log, vmm_memory_shared_across_processes)
{
    record_and_compare("tests/progs/ipc_fd", NULL, 0);
    char names[4][NAME_MAX + 1];
    cr_assert_eq(e2e_traces(names, 4), 2, "the parent and the child each leave a trace");
}

/* Graph memory nodes: nodes, instantiations, launches (which take memory), frees inside and
 * outside the graph, destroys and the trim are each compared, call by call. */
Test(simcuda_log, graph_memory_nodes)
{
    const char *report = record_and_compare("tests/progs/graph_memory", NULL, 0);
    cr_assert(strstr(report, "frees served 0 /") == NULL, "free nodes and frees compared:\n%s",
              report);
}

/* Stream capture: allocations and frees served as nodes of the capture's graph (logged with
 * the graph as handle) match the events the shim marked with that graph; the capture's begin
 * and end, the instantiation and the launches are compared too. */
Test(simcuda_log, stream_capture_of_stream_ordered_allocations)
{
    const char *report = record_and_compare("tests/progs/graph_capture", NULL, 0);
    cr_assert(strstr(report, "frees served 0 /") == NULL, "%s", report);
    char names[4][NAME_MAX + 1];
    cr_assert_eq(e2e_traces(names, 4), 1);
    struct trace t;
    trace_load(&t, names[0]);
    cr_assert_eq(t.rc, 0);
    size_t captured = 0, captured_frees = 0, plain = 0;
    for (size_t i = 0; i < t.n; i++) {
        const char *api = api_of(&t, &t.ev[i]);
        int marked = (t.ev[i].fields & CMT_F(HANDLE)) != 0;
        captured += !strcmp(api, "cuMemAllocAsync") && marked;
        plain += !strcmp(api, "cuMemAllocAsync") && !marked;
        captured_frees += !strcmp(api, "cuMemFreeAsync") && marked;
    }
    cr_assert_eq(captured, 3,
                 "the captured step's workspace and output, and the invalidated capture's "
                 "allocation, carry their graph");
    cr_assert_eq(captured_frees, 1, "the workspace's free in the capture is a free node");
    cr_assert_eq(plain, 6, "the warm-up's allocations are not marked");
    cr_assert_eq(count_api(&t, "cuStreamEndCapture", 0), 2, "the invalidated end too");
    trace_free(&t);
}

/* Cross-stream capture: the allocations and frees on the side stream that joined the origin's
 * capture through an event are nodes of the origin's graph (logged and recorded with it as
 * handle); the eager ones before the capture and after it are not. */
Test(simcuda_log, a_stream_joined_into_a_capture_records_its_nodes_with_the_graph)
{
    record_and_compare("tests/progs/graph_capture_fork", NULL, 0);
    char names[4][NAME_MAX + 1];
    cr_assert_eq(e2e_traces(names, 4), 1);
    struct trace t;
    trace_load(&t, names[0]);
    cr_assert_eq(t.rc, 0);
    uint64_t graph = 0, origin = 0;
    for (size_t i = 0; i < t.n && !graph; i++)
        if (!strcmp(api_of(&t, &t.ev[i]), "cuStreamEndCapture") && t.ev[i].result == 0) {
            graph = t.ev[i].v[CMT_FIELD_HANDLE];
            origin = t.ev[i].v[CMT_FIELD_STREAM];
        }
    cr_assert_neq(graph, 0, "the first end returned the graph");
    size_t side_nodes = 0, origin_nodes = 0, plain = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct cmt_event *e = &t.ev[i];
        const char *api = api_of(&t, e);
        if (strcmp(api, "cuMemAllocAsync") && strcmp(api, "cuMemFreeAsync"))
            continue;
        if (!(e->fields & CMT_F(HANDLE))) {
            plain++;
            continue;
        }
        if (e->v[CMT_FIELD_HANDLE] != graph)
            continue; /* the unjoined capture's stray allocation */
        if (e->v[CMT_FIELD_STREAM] == origin)
            origin_nodes++;
        else
            side_nodes++;
    }
    cr_assert_eq(origin_nodes, 1, "input, allocated on the origin");
    cr_assert_eq(side_nodes, 4, "square, output and two frees on the joined stream");
    cr_assert_eq(plain, 3, "the warm-up's allocation and free, the output's later free");
    trace_free(&t);
}

/* streamOrderedAllocationIPC's pattern: a pool's descriptor and a pointer's share data reach
 * an exec'ed child, which imports, reads, writes and frees the pointer. */
Test(simcuda_log, pool_memory_shared_across_processes)
{
    record_and_compare("tests/progs/pool_ipc", NULL, 0);
    char names[4][NAME_MAX + 1];
    cr_assert_eq(e2e_traces(names, 4), 2, "the parent and the child each leave a trace");
    int imports = 0, exports = 0;
    for (int i = 0; i < 2; i++) {
        struct trace t;
        trace_load(&t, names[i]);
        cr_assert_eq(t.rc, 0);
        imports += (int)count_api(&t, "cuMemPoolImportPointer", 0);
        exports += (int)count_api(&t, "cuMemPoolExportPointer", 0);
        trace_free(&t);
    }
    cr_assert_eq(imports, 1, "the child's import is recorded");
    cr_assert_eq(exports, 1, "the parent's export is recorded");
}

static void need_runtime_programs(void)
{
#if !CMT_HAVE_NVCC
    cr_skip_test("no working nvcc in the CUDA toolkit at configure time (CMT_NVCC, "
                 "CMT_NVCC_WORKS): the runtime programs (tests/e2e/progs/*.cu, nvcc -cudart "
                 "shared) were not built");
#endif
}

/* On simcudart, the project's libcudart.so.13, ahead of simcuda. */
static void use_simcudart(void)
{
    char runtime[PATH_MAX], driver[PATH_MAX], both[2 * PATH_MAX + 2];
    snprintf(both, sizeof both, "%s:%s", e2e_path(runtime, "lib/simcudart"),
             e2e_path(driver, "lib/simcuda"));
    setenv("LD_LIBRARY_PATH", both, 1);
}

Test(simcuda_log, a_runtime_program_on_simcudart)
{
    need_runtime_programs();
    use_simcudart();
    record_and_compare("tests/progs/rt_memory", NULL, 0);
}

/* The checker itself: a served call missing from the trace, and a recorded call the log does
 * not have, are both named. */
Test(simcuda_log, the_checker_names_what_differs)
{
    static struct run r, report;
    const char *args[] = {"all-apis", NULL};
    const char *log = log_path();
    e2e_record(&r, NULL, "tests/progs/scenarios", args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    unsetenv("SIMCUDA_LOG");
    static char text[1 << 16];
    slurp(log, text, sizeof text);
    char *first_line_end = strchr(text, '\n');
    cr_assert_not_null(first_line_end);
    char checker[PATH_MAX], cli[PATH_MAX], names[4][NAME_MAX + 1];
    cr_assert_eq(e2e_traces(names, 4), 1);
    char *argv[] = {(char *)e2e_path(checker, "tests/progs/simcuda_log_check"),
                    (char *)e2e_path(cli, "bin/cumemtrace"), "edited.log", names[0], NULL};

    /* the log without its first call: that call is recorded, not served */
    FILE *f = fopen("edited.log", "w");
    fputs(first_line_end + 1, f);
    fclose(f);
    e2e_run(&report, argv);
    cr_assert_eq(report.status, 1, "%s", report.out);
    cr_assert(strstr(report.out, "recorded, not served:"), "%s", report.out);

    /* a call no trace has: served, not recorded */
    f = fopen("edited.log", "w");
    fprintf(f,
            "%ssimcuda pid=%d entry=cuMemAlloc result=0 address=0x80000000 size=4096 "
            "handle=0x0\n",
            text, 1);
    fclose(f);
    e2e_run(&report, argv);
    cr_assert_eq(report.status, 1, "%s", report.out);
    cr_assert(strstr(report.out, "served, not recorded: simcuda pid=1 entry=cuMemAlloc "), "%s",
              report.out);
}

/* Built with --default-stream per-thread: the runtime's _ptds/_ptsz entry points. */
Test(simcuda_log, a_runtime_program_on_the_per_thread_default_stream)
{
    need_runtime_programs();
    use_simcudart();
    record_and_compare("tests/progs/rt_memory_per_thread", NULL, 0);
}

/* graphMemoryNodes' shape through the runtime: simcudart's graphs hand their memory nodes to
 * the driver, so the runtime program's graph memory is recorded and compared. */
Test(simcuda_log, a_runtime_program_with_graph_memory_nodes)
{
    need_runtime_programs();
    use_simcudart();
    const char *report = record_and_compare("tests/progs/rt_graph_memory", NULL, 0);
    cr_assert(strstr(report, "frees served 0 /") == NULL, "%s", report);
}
