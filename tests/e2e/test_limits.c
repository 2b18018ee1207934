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

/* Runs `scenarios threads-vm 32 200` under `ulimit -v` (in the child only: the test process
 * is larger than the limit), traced when `output` is set. @return its status. */
static int run_limited(struct run *r, long limit_kb, const char *output)
{
    char prog[PATH_MAX], shim[PATH_MAX], script[64];
    snprintf(script, sizeof script, "ulimit -v %ld && exec \"$@\"", limit_kb);
    char *argv[] = {
        "/bin/sh",    "-c", script, "sh", (char *)e2e_path(prog, "tests/progs/scenarios"),
        "threads-vm", "32", "200",  NULL};
    if (output) {
        setenv("LD_PRELOAD", e2e_path(shim, "lib/libcumemtrace.so"), 1);
        setenv("CUMEMTRACE_OUTPUT", output, 1);
    }
    e2e_run(r, argv);
    unsetenv("LD_PRELOAD");
    unsetenv("CUMEMTRACE_OUTPUT");
    return r->status;
}

/* 32 threads under the smallest address-space limit the untraced program runs under (in
 * steps of 8 MiB), with 48 MiB to spare (what the shim needs: a 0.65 MiB ring per thread,
 * 21 MiB for 32, its writer's stack and buffers, the stack table as it grows; 32 MiB in all
 * here): the traced one runs too, and every event is in the trace. Before, the shim reserved ~90 MB for its stack
 * table at the first call and its writer thread a 64 MB malloc arena. */
Test(limits, a_traced_program_fits_where_the_untraced_one_does)
{
    static struct run r;
    long lo = 16 << 10, hi = 2 << 20; /* KiB: fails at lo, runs at hi */
    cr_assert_eq(run_limited(&r, hi, NULL), 0, "%s", r.err);
    while (hi - lo > 8 << 10) {
        long mid = (lo + hi) / 2;
        if (run_limited(&r, mid, NULL) == 0)
            hi = mid;
        else
            lo = mid;
    }
    long limit = hi + (48 << 10);
    cr_assert_eq(run_limited(&r, limit, NULL), 0, "untraced under %ld MiB: %s", limit >> 10, r.err);
    const char *path = "vm.cmt";
    int status = run_limited(&r, limit, path);
    cr_assert_eq(status, 0, "traced under %ld MiB (the program alone runs under %ld): %s",
                 limit >> 10, hi >> 10, r.err);
    cr_assert_eq(count_lines(r.err, "cumemtrace:"), 0, "%s", r.err);
    struct trace t;
    trace_load(&t, path);
    cr_assert_eq(t.rc, 0, "%s", cmt_reader_damage(t.r));
    cr_assert_eq(count_api(&t, "cuMemAlloc_v2", 0), 32 * 200,
                 "%zu events under %ld MiB (the program alone runs under %ld)", t.n, limit >> 10,
                 hi >> 10);
    cr_assert_eq(count_api(&t, "cuMemFree_v2", 0), 32 * 200);
    cr_log_info("32 threads: the program runs under %ld MiB, traced too under %ld MiB\n", hi >> 10,
                limit >> 10);
    trace_free(&t);
}
