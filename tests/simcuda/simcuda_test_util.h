/* Helpers shared by the simcuda tests. Criterion runs each test in its own process, so each
 * test sets its environment before cuInit. */
#ifndef SIMCUDA_TEST_UTIL_H
#define SIMCUDA_TEST_UTIL_H

#include <criterion/criterion.h>
#include <cuda.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define KiB ((uint64_t)1 << 10)
#define MiB ((uint64_t)1 << 20)
#define GiB ((uint64_t)1 << 30)
#define PAGE (2 * MiB)

#define CU_OK(call) cr_assert_eq((call), CUDA_SUCCESS, "%s failed", #call)
#define CU_FAILS(call, code) cr_assert_eq((call), (code), "%s: expected %s", #call, #code)

/* cuInit with the given capacity and context overhead (NULL: leave unset), then make device
 * 0's primary context current. */
static inline CUcontext simcuda_test_start(const char *memory, const char *overhead)
{
    CUcontext ctx;
    if (memory)
        setenv("SIMCUDA_MEMORY", memory, 1);
    if (overhead)
        setenv("SIMCUDA_CONTEXT_OVERHEAD", overhead, 1);
    CU_OK(cuInit(0));
    CU_OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CU_OK(cuCtxSetCurrent(ctx));
    return ctx;
}

/* cuMemCreate's properties: pinned memory on device, exportable as a POSIX descriptor. */
static inline CUmemAllocationProp simcuda_test_vmm_prop(int device)
{
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return prop;
}

static inline size_t simcuda_test_free(void)
{
    size_t free_bytes = 0, total_bytes = 0;
    CU_OK(cuMemGetInfo(&free_bytes, &total_bytes));
    return free_bytes;
}

/* Runs program (no arguments, this environment) and asserts it exits 0 within 20 s; a program
 * that hangs is killed and the test fails. */
static inline void simcuda_test_run_program(const char *program)
{
    char *argv[] = {(char *)program, NULL};
    pid_t pid;
    cr_assert_eq(posix_spawn(&pid, program, NULL, NULL, argv, environ), 0);
    int status = 0;
    pid_t got = 0;
    for (int ms = 0; ms < 20000 && (got = waitpid(pid, &status, WNOHANG)) == 0; ms += 10)
        usleep(10000);
    if (got == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        cr_assert_fail("%s hung", program);
    }
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: status %d", program, status);
}

#endif
