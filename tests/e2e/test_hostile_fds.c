/* Programs that take every descriptor above 2 for themselves (issue 24 item 1): one dup2's its
 * own data file over fds 3..255, one closes every fd >= 3, each between rounds of allocations.
 * After each round a new thread allocates once (a new per-thread ring, in `record`'s state
 * file, after the program took the descriptors). Under `record` and under a bare LD_PRELOAD
 * every allocation is in the trace (compared with simcuda's own log, which must survive them
 * too) and the program's data file is untouched. */
#include <sys/resource.h>

#include "e2e_util.h"

TestSuite(hostile_fds, .init = e2e_setup, .fini = e2e_teardown);

#define ALLOCATIONS 22000
#define ROUNDS "22" /* fd_hostile's rounds of 1000 (the first after one allocation) */
#define DATA_BYTES 65536

/* The program's data file, in the scratch directory, filled with a pattern kept in `want`. */
static const char *make_data(unsigned char want[DATA_BYTES])
{
    static char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/data.bin", e2e_dir);
    for (size_t i = 0; i < DATA_BYTES; i++)
        want[i] = (unsigned char)(i * 2654435761u >> 13);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, want, DATA_BYTES), DATA_BYTES);
    close(fd);
    return path;
}

static void assert_data_untouched(const char *path, const unsigned char want[DATA_BYTES])
{
    static unsigned char got[DATA_BYTES + 1];
    int fd = open(path, O_RDONLY);
    cr_assert_geq(fd, 0);
    ssize_t n = read(fd, got, sizeof got);
    close(fd);
    cr_assert_eq(n, DATA_BYTES, "the program's data file is %zd bytes, was %d", n, DATA_BYTES);
    size_t at = 0;
    while (at < DATA_BYTES && got[at] == want[at])
        at++;
    cr_assert_eq(at, DATA_BYTES, "the program's data file was written into at byte %zu", at);
}

/* The shim keeps its descriptors near the top of RLIMIT_NOFILE's range, which must lie above
 * the 255 the program sweeps: the soft limit raised to at least 1024 where the hard one allows
 * (the programs inherit it). */
static void room_above_the_sweep(void)
{
    struct rlimit r;
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &r), 0);
    if (r.rlim_cur < 1024 && (r.rlim_max == RLIM_INFINITY || r.rlim_max >= 1024)) {
        r.rlim_cur = 1024;
        cr_assert_eq(setrlimit(RLIMIT_NOFILE, &r), 0);
    }
    if (r.rlim_cur < 512)
        cr_skip_test("RLIMIT_NOFILE is %llu: no room above fd 255", (unsigned long long)r.rlim_cur);
}

/* Runs fd_hostile MODE under `record` (recorded != 0) or a bare LD_PRELOAD, then checks the
 * trace, simcuda's log and the data file. */
static void run_hostile(const char *mode, int recorded)
{
    static struct run r, report;
    static unsigned char want[DATA_BYTES];
    room_above_the_sweep();
    char log[PATH_MAX + 16], count[16], path[NAME_MAX + 1] = "hostile.cmt";
    snprintf(log, sizeof log, "%s/simcuda.log", e2e_dir);
    setenv("SIMCUDA_LOG", log, 1);
    snprintf(count, sizeof count, "%d", ALLOCATIONS);
    const char *data = make_data(want);
    const char *args[] = {mode, data, count, NULL};
    if (recorded)
        e2e_record_one(&r, path, NULL, "tests/progs/fd_hostile", args, 0);
    else
        e2e_run_bare(&r, path, "tests/progs/fd_hostile", args);
    unsetenv("SIMCUDA_LOG");
    cr_assert_eq(r.status, 0, "fd_hostile %s: status %d: %s", mode, r.status, r.err);
    assert_data_untouched(data, want);
    /* and one on a new thread after each round: a new ring (in record's state file) each */
    cr_assert(strstr(r.out, "threads " ROUNDS "\n"), "%s", r.out);
    int all = ALLOCATIONS + atoi(ROUNDS);
    struct trace t;
    trace_load(&t, path);
    cr_assert_eq(t.rc, 0, "%s: %s", path, cmt_reader_damage(t.r));
    cr_assert_eq(count_api(&t, "cuMemAlloc_v2", 0), (size_t)all, "%s: %zu events", mode, t.n);
    cr_assert_eq(count_api(&t, "cuMemFree_v2", 0), (size_t)all);
    trace_free(&t);
    e2e_check_simcuda_log(log, &report);
    char served[64];
    snprintf(served, sizeof served, "allocations served %d / recorded %d", all, all);
    cr_assert(strstr(report.out, served), "simcuda's log lost calls too:\n%s", report.out);
}

Test(hostile_fds, dup2_over_every_low_fd_under_record)
{
    run_hostile("dup2", 1);
}

Test(hostile_fds, dup2_over_every_low_fd_bare)
{
    run_hostile("dup2", 0);
}

Test(hostile_fds, closing_every_fd_under_record)
{
    run_hostile("close", 1);
}

Test(hostile_fds, closing_every_fd_bare)
{
    run_hostile("close", 0);
}
