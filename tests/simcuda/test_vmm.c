/* simcuda: virtual memory management (handles, reservations, mappings, sharing). */
#include "simcuda_test_util.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

Test(vmm, granularity_is_two_mebibytes)
{
    simcuda_test_start(NULL, NULL);
    CUmemAllocationProp prop = simcuda_test_vmm_prop(0);
    size_t minimum = 0, recommended = 0;
    CU_OK(cuMemGetAllocationGranularity(&minimum, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CU_OK(cuMemGetAllocationGranularity(&recommended, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    cr_assert_eq(minimum, PAGE);
    cr_assert_eq(recommended, PAGE);
}

Test(vmm, physical_memory_lives_until_release_and_unmap)
{
    simcuda_test_start("1GiB", "0");
    CUmemAllocationProp prop = simcuda_test_vmm_prop(0);
    CUmemGenericAllocationHandle handle;
    CUdeviceptr va;
    CU_OK(cuMemCreate(&handle, 8 * MiB, &prop, 0));
    cr_assert_eq(simcuda_test_free(), 1 * GiB - 8 * MiB);
    /* Address space alone takes no pages. */
    CU_OK(cuMemAddressReserve(&va, 16 * MiB, 0, 0, 0));
    cr_assert_eq(simcuda_test_free(), 1 * GiB - 8 * MiB);
    CU_OK(cuMemMap(va, 8 * MiB, 0, handle, 0));
    CU_OK(cuMemRelease(handle));
    cr_assert_eq(simcuda_test_free(), 1 * GiB - 8 * MiB, "mapped memory is still used");
    CU_FAILS(cuMemRelease(handle), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemUnmap(va, 8 * MiB));
    cr_assert_eq(simcuda_test_free(), 1 * GiB);
    CU_OK(cuMemAddressFree(va, 16 * MiB));
}

Test(vmm, unmap_then_release_also_frees)
{
    simcuda_test_start("1GiB", "0");
    CUmemAllocationProp prop = simcuda_test_vmm_prop(0);
    CUmemGenericAllocationHandle handle;
    CUdeviceptr va;
    CU_OK(cuMemCreate(&handle, 4 * MiB, &prop, 0));
    CU_OK(cuMemAddressReserve(&va, 4 * MiB, 0, 0, 0));
    CU_OK(cuMemMap(va, 4 * MiB, 0, handle, 0));
    CU_OK(cuMemUnmap(va, 4 * MiB));
    cr_assert_eq(simcuda_test_free(), 1 * GiB - 4 * MiB, "the handle still holds it");
    CU_OK(cuMemRelease(handle));
    cr_assert_eq(simcuda_test_free(), 1 * GiB);
}

Test(vmm, address_free_refused_while_mapped)
{
    simcuda_test_start(NULL, NULL);
    CUmemAllocationProp prop = simcuda_test_vmm_prop(0);
    CUmemGenericAllocationHandle handle;
    CUdeviceptr va;
    CU_OK(cuMemCreate(&handle, PAGE, &prop, 0));
    CU_OK(cuMemAddressReserve(&va, 4 * PAGE, 0, 0, 0));
    CU_OK(cuMemMap(va + PAGE, PAGE, 0, handle, 0));
    CU_FAILS(cuMemAddressFree(va, 4 * PAGE), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemAddressFree(va, 2 * PAGE), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemUnmap(va + PAGE, PAGE));
    CU_OK(cuMemAddressFree(va, 4 * PAGE));
    CU_FAILS(cuMemAddressFree(va, 4 * PAGE), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemRelease(handle));
}

Test(vmm, retained_handle_needs_its_own_release)
{
    simcuda_test_start("1GiB", "0");
    CUmemAllocationProp prop = simcuda_test_vmm_prop(0), read_back;
    CUmemGenericAllocationHandle handle, retained;
    CUdeviceptr va;
    CU_OK(cuMemCreate(&handle, 2 * PAGE, &prop, 0));
    CU_OK(cuMemAddressReserve(&va, 2 * PAGE, 0, 0, 0));
    CU_OK(cuMemMap(va, 2 * PAGE, 0, handle, 0));
    CU_OK(cuMemRetainAllocationHandle(&retained, (void *)(uintptr_t)(va + PAGE + 7)));
    cr_assert_eq(retained, handle);
    CU_OK(cuMemUnmap(va, 2 * PAGE));
    CU_OK(cuMemRelease(handle));
    /* One reference left: the memory and the handle are still there. */
    cr_assert_eq(simcuda_test_free(), 1 * GiB - 2 * PAGE);
    CU_OK(cuMemGetAllocationPropertiesFromHandle(&read_back, retained));
    cr_assert_eq(read_back.location.id, 0);
    CU_OK(cuMemRelease(retained));
    cr_assert_eq(simcuda_test_free(), 1 * GiB);
    CU_FAILS(cuMemGetAllocationPropertiesFromHandle(&read_back, retained),
             CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemRetainAllocationHandle(&retained, (void *)(uintptr_t)va),
             CUDA_ERROR_INVALID_VALUE);
}

Test(vmm, create_checks_size_and_location)
{
    simcuda_test_start("64MiB", "0");
    CUmemAllocationProp prop = simcuda_test_vmm_prop(0);
    CUmemGenericAllocationHandle handle;
    CU_FAILS(cuMemCreate(&handle, PAGE + 4096, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemCreate(&handle, 0, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemCreate(NULL, PAGE, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
    CU_FAILS(cuMemCreate(&handle, PAGE, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    prop = simcuda_test_vmm_prop(3);
    CU_FAILS(cuMemCreate(&handle, PAGE, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    prop = simcuda_test_vmm_prop(0);
    CU_FAILS(cuMemCreate(&handle, 66 * MiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
    CU_OK(cuMemCreate(&handle, 64 * MiB, &prop, 0));
    cr_assert_eq(simcuda_test_free(), 0);
}

Test(vmm, map_checks_reservation_overlap_and_handle_size)
{
    simcuda_test_start(NULL, NULL);
    CUmemAllocationProp prop = simcuda_test_vmm_prop(0);
    CUmemGenericAllocationHandle handle;
    CUdeviceptr va;
    CU_OK(cuMemCreate(&handle, 2 * PAGE, &prop, 0));
    CU_OK(cuMemAddressReserve(&va, 4 * PAGE, 0, 0, 0));
    CU_FAILS(cuMemMap(va, 3 * PAGE, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemMap(va, PAGE, 2 * PAGE, handle, 0), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemMap(va + 3 * PAGE, 2 * PAGE, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemMap(0x1000000, PAGE, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemMap(va, PAGE, 0, handle + 99, 0), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemMap(va, PAGE, PAGE, handle, 0));
    CU_FAILS(cuMemMap(va, PAGE, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemMap(va + PAGE, 2 * PAGE, 0, handle, 0));
    /* Unmap takes whole mappings only. */
    CU_FAILS(cuMemUnmap(va, 2 * PAGE), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemUnmap(va, 4 * PAGE), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemUnmap(va, 3 * PAGE));
}

Test(vmm, set_access_needs_a_mapped_range)
{
    simcuda_test_start(NULL, NULL);
    CUmemAllocationProp prop = simcuda_test_vmm_prop(0);
    CUmemGenericAllocationHandle handle;
    CUdeviceptr va;
    CUmemAccessDesc access = {.location = prop.location,
                              .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CU_OK(cuMemCreate(&handle, PAGE, &prop, 0));
    CU_OK(cuMemAddressReserve(&va, 2 * PAGE, 0, 0, 0));
    CU_OK(cuMemMap(va, PAGE, 0, handle, 0));
    CU_OK(cuMemSetAccess(va, PAGE, &access, 1));
    CU_FAILS(cuMemSetAccess(va, 2 * PAGE, &access, 1), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemSetAccess(va, PAGE, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemcpyHtoD(va + 100, "abc", 3));
    CU_FAILS(cuMemcpyHtoD(va + PAGE, "abc", 3), CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr base;
    size_t size;
    CU_OK(cuMemGetAddressRange(&base, &size, va + 5));
    cr_assert_eq(base, va);
    cr_assert_eq(size, PAGE);
}

Test(vmm, shareable_handle_round_trip)
{
    simcuda_test_start("1GiB", "0");
    CUmemAllocationProp prop = simcuda_test_vmm_prop(0);
    CUmemGenericAllocationHandle handle, imported;
    int fd = -1;
    CU_OK(cuMemCreate(&handle, 4 * PAGE, &prop, 0));
    CU_OK(cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    cr_assert_geq(fd, 0);
    CU_OK(cuMemImportFromShareableHandle(&imported, (void *)(intptr_t)fd,
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    cr_assert_eq(simcuda_test_free(), 1 * GiB - 4 * PAGE, "import takes no new pages");
    CU_OK(cuMemRelease(handle));
    cr_assert_eq(simcuda_test_free(), 1 * GiB - 4 * PAGE);
    CU_OK(cuMemRelease(imported));
    cr_assert_eq(simcuda_test_free(), 1 * GiB);
    CU_FAILS(cuMemImportFromShareableHandle(&imported, (void *)(intptr_t)fd,
                                            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
             CUDA_ERROR_INVALID_VALUE);
    cr_assert_neq(fcntl(fd, F_GETFD), -1, "the shareable handle is a real descriptor");
    cr_assert_eq(close(fd), 0);
}

Test(vmm, a_shareable_handle_that_is_no_descriptor_is_refused)
{
    simcuda_test_start("1GiB", "0");
    CUmemGenericAllocationHandle imported;
    int pipe_ends[2];
    cr_assert_eq(pipe(pipe_ends), 0);
    CU_FAILS(cuMemImportFromShareableHandle(&imported, (void *)(intptr_t)pipe_ends[0],
                                            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
             CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemImportFromShareableHandle(&imported, (void *)(intptr_t)12345,
                                            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
             CUDA_ERROR_INVALID_VALUE);
}

/* A forked child is another process: importing makes its own record of the memory, once. */
Test(vmm, a_forked_child_imports_the_parents_memory)
{
    simcuda_test_start("1GiB", "0");
    CUmemAllocationProp prop = simcuda_test_vmm_prop(0);
    CUmemGenericAllocationHandle handle;
    int fd = -1;
    CU_OK(cuMemCreate(&handle, 2 * PAGE, &prop, 0));
    CU_OK(cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    CU_OK(cuMemRelease(handle)); /* the parent lets go: the child's record is its own */
    pid_t child = fork();
    if (child == 0) {
        CUmemGenericAllocationHandle first, second;
        CUdeviceptr va;
        int ok = cuMemImportFromShareableHandle(&first, (void *)(intptr_t)fd,
                                                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ==
                     CUDA_SUCCESS &&
                 cuMemImportFromShareableHandle(&second, (void *)(intptr_t)fd,
                                                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ==
                     CUDA_SUCCESS &&
                 first == second && simcuda_test_free() == 1 * GiB - 2 * PAGE &&
                 cuMemAddressReserve(&va, 2 * PAGE, 0, 0, 0) == CUDA_SUCCESS &&
                 cuMemMap(va, 2 * PAGE, 0, first, 0) == CUDA_SUCCESS &&
                 cuMemRelease(first) == CUDA_SUCCESS && cuMemRelease(second) == CUDA_SUCCESS &&
                 cuMemUnmap(va, 2 * PAGE) == CUDA_SUCCESS && simcuda_test_free() == 1 * GiB;
        _exit(ok ? 0 : 1);
    }
    int status;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's import failed");
    close(fd);
}

/* memMapIPCDrv's pattern across exec, over a unix socket (tests/e2e/progs/ipc_fd.c); the
 * program kills a child that does not answer, and this test kills the program after 20 s. */
Test(vmm, a_descriptor_passed_over_a_socket_imports_in_another_program)
{
    simcuda_test_run_program(SIMCUDA_IPC_FD);
}

Test(vmm, reserve_honours_a_free_fixed_address)
{
    simcuda_test_start(NULL, NULL);
    CUdeviceptr first, fixed, again;
    CU_OK(cuMemAddressReserve(&first, PAGE, 0, 0, 0));
    CU_OK(cuMemAddressReserve(&fixed, PAGE, 0, first + 64 * PAGE, 0));
    cr_assert_eq(fixed, first + 64 * PAGE);
    CU_OK(cuMemAddressReserve(&again, PAGE, 0, fixed, 0));
    cr_assert_neq(again, fixed, "a taken hint is ignored");
    CUdeviceptr aligned;
    CU_OK(cuMemAddressReserve(&aligned, PAGE, 1 * GiB, 0, 0));
    cr_assert_eq(aligned % GiB, 0);
    CU_FAILS(cuMemAddressReserve(&aligned, PAGE + 1, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
}
