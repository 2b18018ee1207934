/* Full disk, small address space (issue 12 item 5): a trace that cannot be written is named
 * in one stderr line with the error; the shim reserves no address space up front, so a
 * program that runs under `ulimit -v` runs as well traced. */
#include <errno.h>
#include <sys/resource.h>

#include "e2e_util.h"

TestSuite(limits, .init = e2e_setup, .fini = e2e_teardown);

/* Runs fn with a resource limit set (children inherit it), then puts the limit back. */
static void with_limit(int resource, rlim_t cur, void (*fn)(void *), void *arg)
{
    struct rlimit old, lim;
    cr_assert_eq(getrlimit(resource, &old), 0);
    lim = old;
    lim.rlim_cur = cur;
    cr_assert_eq(setrlimit(resource, &lim), 0);
    fn(arg);
    cr_assert_eq(setrlimit(resource, &old), 0);
}

struct bare_run {
    struct run *r;
    const char *output, *prog;
    const char *const *args;
};

static void run_bare(void *arg)
{
    struct bare_run *b = arg;
    e2e_run_bare(b->r, b->output, b->prog, b->args);
}

static int count_lines(const char *text, const char *prefix)
{
    int n = 0;
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
        n += !strncmp(p, prefix, strlen(prefix));
    return n;
}

/* A file-size limit (EFBIG where a full disk gives ENOSPC; SIGXFSZ ignored, as a program that
 * wants the error would): the program runs as before and one line names the file and why. */
Test(limits, a_trace_that_cannot_be_written_is_named_with_its_error)
{
    static struct run r;
    const char *path = "full.cmt";
    const char *args[] = {"threads", "1", "1000", NULL};
    void (*old)(int) = signal(SIGXFSZ, SIG_IGN);
    with_limit(RLIMIT_FSIZE, 1024, run_bare,
               &(struct bare_run){&r, path, "tests/progs/scenarios", args});
    signal(SIGXFSZ, old);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(count_lines(r.err, "cumemtrace:"), 1, "one line: %s", r.err);
    char want[PATH_MAX + 64];
    snprintf(want, sizeof want, "cumemtrace: writing %s failed: %s", path, strerror(EFBIG));
    cr_assert(strstr(r.err, want), "want '%s' in: %s", want, r.err);
}

/* Runs `scenarios threads-vm T 200` under `ulimit -v` (in the child only: the test process
 * is larger than the limit): untraced when `output` is NULL, else traced into it, with a bare
 * LD_PRELOAD or under `record` (`recorded`). @return its status. */
static int run_limited(struct run *r, long limit_kb, const char *threads, const char *output,
                       int recorded)
{
    char prog[PATH_MAX], shim[PATH_MAX], cli[PATH_MAX], script[64];
    snprintf(script, sizeof script, "ulimit -v %ld && exec \"$@\"", limit_kb);
    char *argv[16] = {"/bin/sh", "-c", script, "sh"};
    int n = 4;
    if (output && recorded) {
        argv[n++] = (char *)e2e_path(cli, "bin/cumemtrace");
        argv[n++] = "record";
        argv[n++] = "-o";
        argv[n++] = (char *)output;
        argv[n++] = "--";
    } else if (output) {
        setenv("LD_PRELOAD", e2e_path(shim, "lib/libcumemtrace.so"), 1);
        setenv("CUMEMTRACE_OUTPUT", output, 1);
    }
    argv[n++] = (char *)e2e_path(prog, "tests/progs/scenarios");
    argv[n++] = "threads-vm";
    argv[n++] = (char *)threads;
    argv[n++] = "200";
    argv[n] = NULL;
    e2e_run(r, argv);
    unsetenv("LD_PRELOAD");
    unsetenv("CUMEMTRACE_OUTPUT");
    return r->status;
}

/* The smallest address-space limit (KiB, in steps of 8 MiB) `threads` threads run under
 * untraced. */
static long smallest_limit(struct run *r, const char *threads)
{
    long lo = 16 << 10, hi = 2 << 20; /* KiB: fails at lo, runs at hi */
    cr_assert_eq(run_limited(r, hi, threads, NULL, 0), 0, "%s", r->err);
    while (hi - lo > 8 << 10) {
        long mid = (lo + hi) / 2;
        if (run_limited(r, mid, threads, NULL, 0) == 0)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

/* `threads` threads under the smallest address-space limit the untraced program runs under
 * (in steps of 8 MiB) with 48 MiB to spare, traced with a bare LD_PRELOAD or under `record`:
 * the program runs (threads-vm exits 3 when a thread cannot start), stderr has no line of the
 * shim's but `record`'s one naming the trace, and every allocation and free is in the trace. */
static void assert_fits_traced(int threads, int recorded)
{
    static struct run r;
    char count[16];
    snprintf(count, sizeof count, "%d", threads);
    long hi = smallest_limit(&r, count);
    long limit = hi + (48 << 10);
    cr_assert_eq(run_limited(&r, limit, count, NULL, 0), 0, "untraced under %ld MiB: %s",
                 limit >> 10, r.err);
    const char *path = "vm.cmt", *how = recorded ? "recorded" : "traced";
    cr_assert_eq(run_limited(&r, limit, count, path, recorded), 0,
                 "%s under %ld MiB (the program alone runs under %ld): %s", how, limit >> 10,
                 hi >> 10, r.err);
    cr_assert_eq(count_lines(r.err, "cumemtrace:"), recorded, "%s", r.err);
    struct trace t;
    trace_load(&t, path);
    cr_assert_eq(t.rc, 0, "%s", cmt_reader_damage(t.r));
    cr_assert_eq(count_api(&t, "cuMemAlloc_v2", 0), (size_t)threads * 200,
                 "%zu events under %ld MiB (the program alone runs under %ld)", t.n, limit >> 10,
                 hi >> 10);
    cr_assert_eq(count_api(&t, "cuMemFree_v2", 0), (size_t)threads * 200);
    trace_free(&t);
    cr_log_info("%d threads: the program runs under %ld MiB, %s too under %ld MiB\n", threads,
                hi >> 10, how, limit >> 10);
}

/* 32 threads, bare LD_PRELOAD (what the shim needs: a 0.65 MiB ring per thread, 21 MiB for
 * 32, its writer's stack and buffers, the stack table as it grows; 32 MiB in all here).
 * Before, the shim reserved ~90 MB for its stack table at the first call and its writer
 * thread a 64 MB malloc arena. */
Test(limits, a_traced_program_fits_where_the_untraced_one_does)
{
    assert_fits_traced(32, 0);
}

/* 64 threads under `record` (issue 24 item 10), whose rings are 13 MiB each where the
 * address space is not limited: under `ulimit -v` a ring takes a share of the room left
 * (cmt__ring_entries). Before, `record` needed about 1 GB more and thread 60 did not start. */
Test(limits, sixty_four_threads_fit_under_record_where_the_untraced_program_does)
{
    assert_fits_traced(64, 1);
}
