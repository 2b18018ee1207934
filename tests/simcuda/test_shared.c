/* simcuda: SIMCUDA_SHARED=NAME, one simulated device shared by several processes. */
#include "simcuda_test_util.h"

#include <criterion/redirect.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static char name[48];

/* A name of this test process's own, removed at the end. */
static void shared_name(void)
{
    snprintf(name, sizeof name, "cmt-test-%d", (int)getpid());
    setenv("SIMCUDA_SHARED", name, 1);
}

static void remove_file(void)
{
    char path[96];
    snprintf(path, sizeof path, "/simcuda-%s", name);
    shm_unlink(path);
}

/* A child that initialises simcuda itself (forked before cuInit), allocates `bytes`, says so
 * on `ready`, and waits for a byte on `go` before it frees and exits (or dies holding it when
 * `die`). @return its pid. */
static pid_t holder(size_t bytes, int ready[2], int go[2], int die)
{
    cr_assert_eq(pipe(ready), 0);
    cr_assert_eq(pipe(go), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        CUcontext ctx;
        CUdeviceptr p;
        char c = 0;
        if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx) ||
            cuMemAlloc(&p, bytes))
            _exit(1);
        if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
            _exit(2);
        if (die)
            raise(SIGKILL);
        _exit(cuMemFree(p) ? 3 : 0);
    }
    char c;
    cr_assert_eq(read(ready[0], &c, 1), 1, "the holder did not start");
    return pid;
}

static int finish(pid_t pid, int go[2])
{
    char c = 0;
    cr_assert_eq(write(go[1], &c, 1), 1);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return st;
}

Test(shared, another_process_s_memory_lowers_free_memory_and_fails_allocations)
{
    shared_name();
    setenv("SIMCUDA_MEMORY", "8GiB", 1);
    setenv("SIMCUDA_CONTEXT_OVERHEAD", "256MiB", 1);
    int ready[2], go[2];
    pid_t pid = holder(5 * GiB, ready, go, 0);
    simcuda_test_start(NULL, NULL);
    size_t expected = 8 * GiB - (5 * GiB + 256 * MiB) - 256 * MiB;
    cr_assert_eq(simcuda_test_free(), expected);
    CUdeviceptr p;
    CU_FAILS(cuMemAlloc(&p, expected + 1), CUDA_ERROR_OUT_OF_MEMORY);
    CU_OK(cuMemAlloc(&p, 2 * GiB));
    cr_assert_eq(simcuda_test_free(), expected - 2 * GiB);
    int st = finish(pid, go);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "holder status %d", st);
    cr_assert_eq(simcuda_test_free(), 8 * GiB - 256 * MiB - 2 * GiB, "the holder's memory is back");
    remove_file();
}

Test(shared, a_killed_process_holds_nothing)
{
    shared_name();
    setenv("SIMCUDA_MEMORY", "4GiB", 1);
    setenv("SIMCUDA_CONTEXT_OVERHEAD", "0", 1);
    int ready[2], go[2];
    pid_t pid = holder(3 * GiB, ready, go, 1);
    simcuda_test_start(NULL, NULL);
    cr_assert_eq(simcuda_test_free(), 1 * GiB);
    int st = finish(pid, go);
    cr_assert(WIFSIGNALED(st), "the holder was to die");
    cr_assert_eq(simcuda_test_free(), 4 * GiB);
    remove_file();
}

Test(shared, another_name_is_another_device)
{
    shared_name();
    setenv("SIMCUDA_MEMORY", "4GiB", 1);
    setenv("SIMCUDA_CONTEXT_OVERHEAD", "0", 1);
    int ready[2], go[2];
    pid_t pid = holder(3 * GiB, ready, go, 0);
    char other[64];
    snprintf(other, sizeof other, "%.40s-other", name);
    setenv("SIMCUDA_SHARED", other, 1);
    simcuda_test_start(NULL, NULL);
    cr_assert_eq(simcuda_test_free(), 4 * GiB);
    finish(pid, go);
    remove_file();
    snprintf(name, sizeof name, "%.40s", other);
    remove_file();
}

Test(shared, a_bad_name_is_refused_in_one_line, .init = cr_redirect_stderr)
{
    setenv("SIMCUDA_SHARED", "a/b", 1);
    simcuda_test_start("1GiB", "0");
    cr_assert_eq(simcuda_test_free(), 1 * GiB);
    fflush(stderr);
    cr_assert_stderr_eq_str("simcuda: SIMCUDA_SHARED=\"a/b\": expected a name of at most 64 "
                            "characters without '/'; the devices are not shared\n");
}
