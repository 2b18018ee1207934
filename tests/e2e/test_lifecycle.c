/* Threads, fork, exec, deaths: nothing lost, nothing duplicated, the program unchanged. */
#include <signal.h>

#include "e2e_util.h"

#define CUDA_ERROR_OUT_OF_MEMORY_VALUE 2 /* CUresult */

TestSuite(lifecycle, .init = e2e_setup, .fini = e2e_teardown);

static void record_scenario(struct run *r, const char *const opts[], const char *const args[])
{
    e2e_record(r, opts, "tests/progs/scenarios", args);
}

/* In seq order, every free names a live pointer and every allocation a free one. */
static void assert_consistent_pairs(const struct trace *t, size_t *allocs, size_t *frees)
{
    enum { SLOTS = 1 << 16 };
    static uint64_t live[SLOTS];
    memset(live, 0, sizeof live);
    *allocs = *frees = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct cmt_event *e = &t->ev[i];
        const char *api = api_of(t, e);
        uint64_t p = e->v[CMT_FIELD_PTR];
        uint64_t slot = (p >> 21) & (SLOTS - 1);
        if (!strcmp(api, "cuMemAlloc_v2") && e->result == 0) {
            cr_assert_eq(live[slot], 0, "seq %lu: %#lx allocated while live", e->seq, p);
            live[slot] = p;
            ++*allocs;
        } else if (!strcmp(api, "cuMemFree_v2") && e->result == 0) {
            cr_assert_eq(live[slot], p, "seq %lu: free of %#lx, not live", e->seq, p);
            live[slot] = 0;
            ++*frees;
        }
    }
}

Test(lifecycle, eight_threads_lose_nothing)
{
    static struct run r;
    const char *args[] = {"threads", "8", "20000", NULL};
    char path[NAME_MAX + 1];
    e2e_record_one(&r, path, NULL, "tests/progs/scenarios", args, 0);
    struct trace t;
    trace_load(&t, path);
    cr_assert_eq(t.rc, 0);
    cr_assert(cmt_reader_clean_exit(t.r));
    cr_assert_eq(cmt_reader_seq_gaps(t.r), 0, "events lost");
    for (size_t i = 0; i < t.n; i++)
        cr_assert_eq(t.ev[i].seq, i, "duplicated or reordered at %zu", i);
    size_t allocs, frees;
    assert_consistent_pairs(&t, &allocs, &frees);
    cr_assert_eq(allocs, 8 * 20000);
    cr_assert_eq(frees, 8 * 20000);
    uint32_t tids[16];
    int ntids = 0;
    for (size_t i = 0; i < t.n; i++) {
        int known = 0;
        for (int k = 0; k < ntids; k++)
            known |= tids[k] == t.ev[i].tid;
        if (!known && ntids < 16)
            tids[ntids++] = t.ev[i].tid;
    }
    cr_assert_eq(ntids, 9, "main thread + 8 workers");
    for (int k = 0; k < ntids; k++)
        cr_assert_not_null(cmt_reader_thread_name(t.r, tids[k]));
    trace_free(&t);
}

/* 300 forks while two threads unwind without pause: no child may inherit the loader's lock
 * taken (a child walking the loaded objects, as C++ exceptions do, would deadlock, and the
 * run hang until the watchdog). */
Test(lifecycle, forks_during_unwinding_never_deadlock)
{
    static struct run r;
    const char *args[] = {"forkstorm", "300", NULL};
    const char *opts[] = {"-o", "storm.%p.cmt", "--no-symbolize", NULL};
    e2e_record(&r, opts, "tests/progs/scenarios", args);
    cr_assert_eq(r.status, 0, "%s", r.err);
}

Test(lifecycle, fork_child_with_cuda_writes_its_own_trace_only)
{
    static struct run r;
    const char *args[] = {"fork", NULL};
    record_scenario(&r, NULL, args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char names[8][NAME_MAX + 1];
    cr_assert_eq(e2e_traces(names, 8), 2, "parent and the child that used CUDA: %s", r.out);
    int parent = 0, child = 0;
    for (int i = 0; i < 2; i++) {
        cr_assert(strstr(r.err, names[i]), "record reports %s", names[i]);
        struct trace t;
        trace_load(&t, names[i]);
        cr_assert_eq(t.rc, 0);
        size_t mine = count_api(&t, "cuMemAlloc_v2", 11111111);
        size_t childs = count_api(&t, "cuMemAlloc_v2", 22222222);
        if (mine) {
            parent++;
            cr_assert_eq(childs, 0);
            cr_assert_eq(count_api(&t, "cuMemFree_v2", 0), 1);
        } else {
            child++;
            cr_assert_eq(childs, 1, "the child's own allocation");
            cr_assert_eq(t.ev[0].seq, 0, "the child starts its own sequence");
            cr_assert_eq(t.ndevices, 1, "the child's trace describes its device");
            cr_assert_neq(t.process->pid, t.process->ppid);
        }
        trace_free(&t);
    }
    cr_assert_eq(parent, 1);
    cr_assert_eq(child, 1, "never the parent's buffered events");
}

Test(lifecycle, exec_child_is_traced)
{
    char prog[PATH_MAX];
    static struct run r;
    const char *args[] = {"exec", e2e_path(prog, "tests/progs/alloc_deep"), NULL};
    record_scenario(&r, NULL, args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char names[4][NAME_MAX + 1];
    int n = e2e_traces(names, 4);
    cr_assert_geq(n, 1);
    int saw_exec_alloc = 0;
    for (int i = 0; i < n; i++) {
        struct trace t;
        trace_load(&t, names[i]);
        saw_exec_alloc |= count_api(&t, "cuMemAlloc_v2", 12345678) == 1;
        trace_free(&t);
    }
    cr_assert(saw_exec_alloc, "the exec'd program's allocation: %s", r.out);
}

/* Dies after 10 allocations: the trace keeps them, says how it ended, and the program's
 * status is what it would have been without the shim. */
static void death(const char *how, int status, int signo, int expect_clean)
{
    static struct run r;
    const char *opts[] = {"--flush-ms", "50", NULL};
    const char *args[] = {"signal", how, NULL};
    record_scenario(&r, opts, args);
    cr_assert_eq(r.status, status, "%s: status %d, stderr %s", how, r.status, r.err);
    char names[4][NAME_MAX + 1];
    cr_assert_eq(e2e_traces(names, 4), 1, "%s: %s", how, r.out);
    struct trace t;
    trace_load(&t, names[0]);
    cr_assert_eq(t.rc, 0, "%s: a dead process's trace is readable", how);
    cr_assert_eq(count_api(&t, "cuMemAlloc_v2", 4444444), 10, "%s: events kept", how);
    cr_assert_eq(t.signo, signo, "%s: signal record", how);
    cr_assert_eq(cmt_reader_clean_exit(t.r), expect_clean, "%s", how);
    trace_free(&t);
}

Test(lifecycle, sigsegv_flushes_then_dies_as_before)
{
    death("segv", 128 + SIGSEGV, SIGSEGV, 0);
}

Test(lifecycle, abort_flushes_then_dies_as_before)
{
    death("abort", 128 + SIGABRT, SIGABRT, 0);
}

Test(lifecycle, sigterm_flushes_then_dies_as_before)
{
    death("term", 128 + SIGTERM, SIGTERM, 0);
}

Test(lifecycle, programs_own_handler_still_runs)
{
    static struct run r;
    const char *args[] = {"signal", "term-handled", NULL};
    record_scenario(&r, NULL, args);
    cr_assert_eq(r.status, 42, "%s", r.err);
    cr_assert(strstr(r.out, "handled SIGTERM"), "%s", r.out);
}

Test(lifecycle, sigkill_loses_at_most_the_flush_interval)
{
    death("kill", 128 + SIGKILL, 0, 0); /* slept 400 ms > 50 ms flush: all 10 on disk */
}

Test(lifecycle, underscore_exit_loses_at_most_the_flush_interval)
{
    death("_exit", 7, 0, 0);
}

Test(lifecycle, oom_failure_is_recorded_with_free_and_total)
{
    static struct run r;
    const char *args[] = {"oom", NULL};
    char path[NAME_MAX + 1];
    e2e_record_one(&r, path, NULL, "tests/progs/scenarios", args, 0);
    struct trace t;
    trace_load(&t, path);
    const struct cmt_event *failed = NULL;
    for (size_t i = 0; i < t.n; i++)
        if (t.ev[i].result == CUDA_ERROR_OUT_OF_MEMORY_VALUE)
            failed = &t.ev[i];
    cr_assert_not_null(failed);
    cr_assert_eq(failed->v[CMT_FIELD_SIZE], 1ull << 30);
    cr_assert_eq(failed->fields & CMT_F(PTR), 0, "no output read after a failure");
    const struct cmt_meminfo *oom = NULL;
    for (int i = 0; i < t.nmem; i++)
        if (t.mem[i].reason == CMT_MEMINFO_OOM)
            oom = &t.mem[i];
    cr_assert_not_null(oom);
    cr_assert_eq(oom->seq, failed->seq);
    cr_assert_eq(oom->total_bytes, 24ull << 30);
    cr_assert_lt(oom->free_bytes, 1ull << 30);
    trace_free(&t);
}

Test(lifecycle, deepbind_is_reported_once)
{
    char lib[PATH_MAX];
    static struct run r;
    const char *args[] = {"deepbind", e2e_path(lib, "tests/progs/libdeepbind_lib.so"), NULL};
    char path[NAME_MAX + 1];
    e2e_record_one(&r, path, NULL, "tests/progs/scenarios", args, 0);
    cr_assert(strstr(r.err, "RTLD_DEEPBIND"), "%s", r.err);
    cmt_reader *rd;
    cr_assert_eq(cmt_reader_open_file(&rd, path, NULL), 0);
    struct cmt_record rec;
    int notes = 0;
    while (cmt_reader_next(rd, &rec) > 0)
        notes += rec.type == CMT_REC_NOTE && strstr(rec.u.note.text, "RTLD_DEEPBIND");
    cr_assert_eq(notes, 1);
    cmt_reader_close(rd);
}

/* Timestamps (TSC converted by the writer, or clock_gettime) follow real time: the two
 * allocations are at least the 300 ms sleep apart and at most what the program itself measured
 * around both (and 1% for the TSC's calibration), however long a loaded machine made that. */
static void sleepy(const char *clock)
{
    setenv("CUMEMTRACE_CLOCK", clock, 1);
    static struct run r;
    const char *args[] = {"sleepy", NULL};
    char path[NAME_MAX + 1];
    e2e_record_one(&r, path, NULL, "tests/progs/scenarios", args, 0);
    unsetenv("CUMEMTRACE_CLOCK");
    struct trace t;
    trace_load(&t, path);
    uint64_t a = 0, b = 0;
    for (size_t i = 0; i < t.n; i++) {
        if (count_api(&t, "cuMemAlloc_v2", 0) != 2)
            break;
        if (!strcmp(api_of(&t, &t.ev[i]), "cuMemAlloc_v2"))
            (a ? &b : &a)[0] = t.ev[i].t_ns;
    }
    cr_assert(b > a, "%s clock: %lu then %lu", clock, a, b);
    const char *said = strstr(r.out, "outer_ns ");
    cr_assert_not_null(said, "%s", r.out);
    uint64_t outer = strtoull(said + strlen("outer_ns "), NULL, 10);
    cr_assert(b - a >= 300000000 && b - a <= outer + outer / 100 + 1000000,
              "%s clock: %lu ns apart, slept 300 ms, %lu ns around both", clock, b - a, outer);
    trace_free(&t);
    unlink(path);
}

Test(lifecycle, timestamps_follow_real_time)
{
    sleepy("auto");
    sleepy("monotonic");
}

/* exec keeps what came before (issue 12 item 2): each image allocates 10 times, then execs
 * the next with another exec function; every image's events are kept, each in its own trace
 * (the same pid: the later image's name gets .1, .2, ...), and record lists them all. */
Test(lifecycle, exec_chain_keeps_every_images_events)
{
    static struct run r;
    const char *args[] = {"exec-chain", "execv", "execvp", "execve", "execvpe",
                          "fexecve",    "execl", "execlp", "execle", NULL};
    record_scenario(&r, NULL, args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char names[16][NAME_MAX + 1];
    int n = e2e_traces(names, 16);
    cr_assert_eq(n, 9, "one trace per image: %s", r.err);
    for (int i = 0; i < n; i++) {
        struct trace t;
        trace_load(&t, names[i]);
        cr_assert_eq(t.rc, 0, "%s", names[i]);
        cr_assert_eq(count_api(&t, "cuMemAlloc_v2", 5555555), 10, "%s: every event", names[i]);
        cr_assert(cmt_reader_clean_exit(t.r), "%s: complete", names[i]);
        trace_free(&t);
        cr_assert(strstr(r.out, names[i]) || strstr(r.err, names[i]), "record lists %s", names[i]);
    }
}

/* An exec that fails changes nothing for the program (errno kept); the trace so far is
 * complete, and what follows goes to a new trace. */
Test(lifecycle, failed_exec_keeps_tracing)
{
    static struct run r;
    const char *args[] = {"exec-fail", NULL};
    record_scenario(&r, NULL, args);
    cr_assert_eq(r.status, 0, "execv returned -1 with ENOENT: %s", r.err);
    char names[4][NAME_MAX + 1];
    cr_assert_eq(e2e_traces(names, 4), 2, "%s", r.err);
    size_t total = 0;
    for (int i = 0; i < 2; i++) {
        struct trace t;
        trace_load(&t, names[i]);
        cr_assert_eq(t.rc, 0);
        total += count_api(&t, "cuMemAlloc_v2", 5555555);
        cr_assert(cmt_reader_clean_exit(t.r), "%s", names[i]);
        trace_free(&t);
    }
    cr_assert_eq(total, 20);
}

/* A vfork child shares the parent's memory: its exec must leave the parent's trace alone. */
Test(lifecycle, vfork_child_exec_leaves_the_parents_trace_alone)
{
    char prog[PATH_MAX];
    static struct run r;
    const char *args[] = {"vfork-exec", e2e_path(prog, "tests/progs/alloc_deep"), NULL};
    record_scenario(&r, NULL, args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char names[4][NAME_MAX + 1];
    cr_assert_eq(e2e_traces(names, 4), 2, "parent and the exec'd child: %s", r.err);
    int parent = 0;
    for (int i = 0; i < 2; i++) {
        struct trace t;
        trace_load(&t, names[i]);
        cr_assert_eq(t.rc, 0);
        if (count_api(&t, "cuMemAlloc_v2", 5555555)) {
            parent++;
            cr_assert_eq(count_api(&t, "cuMemAlloc_v2", 5555555), 20);
            cr_assert_eq(cmt_reader_seq_gaps(t.r), 0);
            cr_assert(cmt_reader_clean_exit(t.r));
        } else {
            cr_assert_eq(count_api(&t, "cuMemAlloc_v2", 12345678), 1);
        }
        trace_free(&t);
    }
    cr_assert_eq(parent, 1);
}

/* The header, the process record and the module maps reach the file as soon as tracing
 * starts (issue 12 item 4): a process killed inside its first flush interval still leaves a
 * trace that says which program it was. */
Test(lifecycle, process_record_is_on_disk_from_the_start)
{
    static struct run r;
    const char *args[] = {"signal", "kill", NULL}; /* killed 400 ms in: < the 500 ms flush */
    record_scenario(&r, NULL, args);
    cr_assert_eq(r.status, 128 + SIGKILL, "%s", r.err);
    char names[4][NAME_MAX + 1];
    cr_assert_eq(e2e_traces(names, 4), 1, "%s", r.err);
    struct trace t;
    trace_load(&t, names[0]);
    cr_assert_not_null(t.process, "the process record was written at start");
    cr_assert_eq(t.process->argc, 3);
    cr_assert_str_eq(t.process->argv[1], "signal");
    trace_free(&t);
}
