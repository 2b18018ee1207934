/* simcuda: multicast objects (team, bindings, mappings of the object, release, sharing). */
#include "simcuda_test_util.h"

#include <sys/wait.h>
#include <unistd.h>

static CUmulticastObjectProp team_prop(unsigned devices, size_t size)
{
    CUmulticastObjectProp prop = {0};
    prop.numDevices = devices;
    prop.size = size;
    prop.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return prop;
}

static const CUmemAccessDesc read_write = {
    .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
    .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};

Test(multicast, granularity_minimum_is_the_page_recommended_is_larger)
{
    simcuda_test_start(NULL, NULL);
    CUmulticastObjectProp prop = team_prop(1, 8 * MiB);
    size_t minimum = 0, recommended = 0;
    CU_OK(cuMulticastGetGranularity(&minimum, &prop, CU_MULTICAST_GRANULARITY_MINIMUM));
    CU_OK(cuMulticastGetGranularity(&recommended, &prop, CU_MULTICAST_GRANULARITY_RECOMMENDED));
    cr_assert_eq(minimum, PAGE);
    cr_assert_gt(recommended, minimum);
    cr_assert_eq(recommended % minimum, 0);
    CU_FAILS(cuMulticastGetGranularity(&minimum, &prop, (CUmulticastGranularity_flags)7),
             CUDA_ERROR_INVALID_VALUE);
}

Test(multicast, object_holds_no_memory_and_bound_memory_is_counted_once)
{
    simcuda_test_start("1GiB", "0");
    CUmulticastObjectProp prop = team_prop(1, 16 * MiB);
    CUmemAllocationProp mem = simcuda_test_vmm_prop(0);
    CUmemGenericAllocationHandle mc, phys;
    CU_OK(cuMulticastCreate(&mc, &prop));
    cr_assert_eq(simcuda_test_free(), 1 * GiB, "a multicast object has no memory of its own");
    CU_OK(cuMulticastAddDevice(mc, 0));
    CU_OK(cuMemCreate(&phys, 16 * MiB, &mem, 0));
    CU_OK(cuMulticastBindMem(mc, 0, phys, 0, 16 * MiB, 0));
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, 16 * MiB, PAGE, 0, 0));
    CU_OK(cuMemMap(va, 16 * MiB, 0, mc, 0));
    CU_OK(cuMemSetAccess(va, 16 * MiB, &read_write, 1));
    cr_assert_eq(simcuda_test_free(), 1 * GiB - 16 * MiB, "bound and mapped: still one copy");
    CU_OK(cuMemUnmap(va, 16 * MiB));
    CU_OK(cuMemAddressFree(va, 16 * MiB));
    CU_OK(cuMulticastUnbind(mc, 0, 0, 16 * MiB));
    CU_OK(cuMemRelease(phys));
    cr_assert_eq(simcuda_test_free(), 1 * GiB);
    CU_OK(cuMemRelease(mc));
    CU_FAILS(cuMemRelease(mc), CUDA_ERROR_INVALID_VALUE);
}

Test(multicast, a_binding_holds_its_memory_until_unbound)
{
    simcuda_test_start("1GiB", "0");
    CUmulticastObjectProp prop = team_prop(1, 8 * MiB);
    CUmemAllocationProp mem = simcuda_test_vmm_prop(0);
    CUmemGenericAllocationHandle mc, phys;
    CU_OK(cuMulticastCreate(&mc, &prop));
    CU_OK(cuMulticastAddDevice(mc, 0));
    CU_OK(cuMemCreate(&phys, 8 * MiB, &mem, 0));
    CU_OK(cuMulticastBindMem(mc, 0, phys, 0, 8 * MiB, 0));
    CU_OK(cuMemRelease(phys));
    cr_assert_eq(simcuda_test_free(), 1 * GiB - 8 * MiB, "released, still bound");
    CU_OK(cuMulticastUnbind(mc, 0, 0, 8 * MiB));
    cr_assert_eq(simcuda_test_free(), 1 * GiB);
    /* and an object released with memory bound lets it go */
    CU_OK(cuMemCreate(&phys, 8 * MiB, &mem, 0));
    CU_OK(cuMulticastBindMem(mc, 0, phys, 0, 8 * MiB, 0));
    CU_OK(cuMemRelease(phys));
    CU_OK(cuMemRelease(mc));
    cr_assert_eq(simcuda_test_free(), 1 * GiB);
}

Test(multicast, bind_and_map_wait_for_the_whole_team)
{
    setenv("SIMCUDA_DEVICES", "2", 1);
    simcuda_test_start("1GiB", "0");
    CUmulticastObjectProp prop = team_prop(2, 4 * MiB);
    CUmemAllocationProp mem = simcuda_test_vmm_prop(0);
    CUmemGenericAllocationHandle mc, phys;
    CU_OK(cuMulticastCreate(&mc, &prop));
    CU_OK(cuMulticastAddDevice(mc, 0));
    CU_FAILS(cuMulticastAddDevice(mc, 0), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemCreate(&phys, 4 * MiB, &mem, 0));
    CU_FAILS(cuMulticastBindMem(mc, 0, phys, 0, 4 * MiB, 0), CUDA_ERROR_NOT_PERMITTED);
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, 4 * MiB, 0, 0, 0));
    CU_FAILS(cuMemMap(va, 4 * MiB, 0, mc, 0), CUDA_ERROR_NOT_PERMITTED);
    CU_OK(cuMulticastAddDevice(mc, 1));
    CU_FAILS(cuMulticastAddDevice(mc, 2), CUDA_ERROR_INVALID_DEVICE);
    CU_OK(cuMulticastBindMem(mc, 0, phys, 0, 4 * MiB, 0));
    CU_OK(cuMemMap(va, 4 * MiB, 0, mc, 0));
    CU_OK(cuMulticastUnbind(mc, 1, 0, 4 * MiB)); /* device 1 has nothing bound there */
    CU_OK(cuMemUnmap(va, 4 * MiB));
    CU_OK(cuMulticastUnbind(mc, 0, 0, 4 * MiB));
}

Test(multicast, the_documented_errors)
{
    simcuda_test_start("1GiB", "0");
    CUmulticastObjectProp prop = team_prop(1, 8 * MiB);
    CUmemAllocationProp mem = simcuda_test_vmm_prop(0);
    CUmemGenericAllocationHandle mc, phys;
    CUmulticastObjectProp odd = team_prop(1, 3 * MiB);
    CU_FAILS(cuMulticastCreate(&mc, &odd), CUDA_ERROR_INVALID_VALUE);
    CUmulticastObjectProp too_many = team_prop(2, 8 * MiB);
    CU_FAILS(cuMulticastCreate(&mc, &too_many), CUDA_ERROR_INVALID_DEVICE);
    CUmulticastObjectProp fabric = team_prop(1, 8 * MiB);
    fabric.handleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
    CU_FAILS(cuMulticastCreate(&mc, &fabric), CUDA_ERROR_NOT_SUPPORTED);
    CU_FAILS(cuMulticastCreate(NULL, &prop), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMulticastCreate(&mc, &prop));
    CU_FAILS(cuMulticastAddDevice(mc, 5), CUDA_ERROR_INVALID_DEVICE);
    CU_OK(cuMulticastAddDevice(mc, 0));
    CU_OK(cuMemCreate(&phys, 8 * MiB, &mem, 0));
    CU_FAILS(cuMulticastBindMem(mc, 1 * MiB, phys, 0, 2 * MiB, 0), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMulticastBindMem(mc, 0, phys, 1 * MiB, 2 * MiB, 0), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMulticastBindMem(mc, 0, phys, 0, 3 * MiB, 0), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMulticastBindMem(mc, 4 * MiB, phys, 0, 8 * MiB, 0), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMulticastBindMem(mc, 0, phys, 4 * MiB, 8 * MiB, 0), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMulticastBindMem(mc, 0, phys, 0, 8 * MiB, 1), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMulticastBindMem(mc, 0, mc, 0, 8 * MiB, 0), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMulticastBindMem(mc, 0, phys, 0, 4 * MiB, 0));
    CU_FAILS(cuMulticastBindMem(mc, 2 * MiB, phys, 4 * MiB, 4 * MiB, 0),
             CUDA_ERROR_INVALID_VALUE); /* overlaps the first binding */
    CU_FAILS(cuMulticastUnbind(mc, 0, 0, 2 * MiB), CUDA_ERROR_INVALID_VALUE); /* a part of it */
    CU_FAILS(cuMulticastUnbind(mc, 0, 0, 16 * MiB), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMulticastUnbind(mc, 7, 0, 4 * MiB), CUDA_ERROR_INVALID_DEVICE);
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, 16 * MiB, 0, 0, 0));
    CU_FAILS(cuMemMap(va, 16 * MiB, 0, mc, 0), CUDA_ERROR_INVALID_VALUE); /* over its size */
    CU_OK(cuMemMap(va, 8 * MiB, 0, mc, 0));
    CU_OK(cuMemSetAccess(va, 4 * MiB, &read_write, 1));
    /* the upper half is bound to nothing */
    CU_FAILS(cuMemSetAccess(va, 8 * MiB, &read_write, 1), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemUnmap(va, 8 * MiB));
    CU_OK(cuMemAddressFree(va, 16 * MiB));
    CU_OK(cuMulticastUnbind(mc, 0, 0, 8 * MiB));
    CU_OK(cuMemRelease(phys));
    CU_OK(cuMemRelease(mc));
}

Test(multicast, bind_by_address_finds_the_mapped_memory)
{
    simcuda_test_start("1GiB", "0");
    CUmulticastObjectProp prop = team_prop(1, 4 * MiB);
    CUmemAllocationProp mem = simcuda_test_vmm_prop(0);
    CUmemGenericAllocationHandle mc, phys, retained;
    CU_OK(cuMulticastCreate(&mc, &prop));
    CU_OK(cuMulticastAddDevice(mc, 0));
    CU_OK(cuMemCreate(&phys, 8 * MiB, &mem, 0));
    CUdeviceptr uc, mcva, plain;
    CU_OK(cuMemAddressReserve(&uc, 8 * MiB, 0, 0, 0));
    CU_OK(cuMemMap(uc, 8 * MiB, 0, phys, 0));
    CU_OK(cuMemAlloc(&plain, 4 * MiB));
    CU_FAILS(cuMulticastBindAddr(mc, 0, plain, 4 * MiB, 0), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMulticastBindAddr(mc, 0, uc + 6 * MiB, 4 * MiB, 0), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMulticastBindAddr(mc, 0, uc + 4 * MiB, 4 * MiB, 0));
    CU_OK(cuMemAddressReserve(&mcva, 4 * MiB, 0, 0, 0));
    CU_OK(cuMemMap(mcva, 4 * MiB, 0, mc, 0));
    CU_OK(cuMemRetainAllocationHandle(&retained, (void *)(uintptr_t)mcva));
    cr_assert_eq(retained, mc, "a mapping of the object gives the object's handle");
    CU_OK(cuMemRelease(retained));
    CU_OK(cuMemRelease(mc));
    CU_OK(cuMemSetAccess(mcva, 4 * MiB, &read_write, 1)); /* mapped: the object lives on */
    CU_OK(cuMemUnmap(mcva, 4 * MiB));
    CU_FAILS(cuMulticastUnbind(mc, 0, 0, 4 * MiB), CUDA_ERROR_INVALID_VALUE); /* gone */
    CU_OK(cuMemUnmap(uc, 8 * MiB));
    CU_OK(cuMemRelease(phys));
    cr_assert_eq(simcuda_test_free(), 1 * GiB - 4 * MiB, "only cuMemAlloc's memory is left");
    CU_OK(cuMemFree(plain));
}

Test(multicast, exported_handle_imports_as_the_same_object)
{
    simcuda_test_start("1GiB", "0");
    CUmulticastObjectProp prop = team_prop(1, 4 * MiB);
    CUmemGenericAllocationHandle mc, imported;
    CU_OK(cuMulticastCreate(&mc, &prop));
    int fd = -1;
    CU_OK(cuMemExportToShareableHandle(&fd, mc, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    cr_assert_geq(fd, 0);
    CU_OK(cuMemImportFromShareableHandle(&imported, (void *)(intptr_t)fd,
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    cr_assert_eq(imported, mc);
    close(fd);
    CU_OK(cuMemRelease(imported));
    CU_OK(cuMulticastAddDevice(mc, 0)); /* one reference is left */
    CU_OK(cuMemRelease(mc));
    CU_FAILS(cuMulticastAddDevice(mc, 0), CUDA_ERROR_INVALID_VALUE);
    CUmulticastObjectProp unshared = team_prop(1, 4 * MiB);
    unshared.handleTypes = 0;
    CU_OK(cuMulticastCreate(&mc, &unshared));
    /* its handle types did not ask for a descriptor */
    CU_FAILS(cuMemExportToShareableHandle(&fd, mc, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
             CUDA_ERROR_NOT_SUPPORTED);
}

/* A forked child is another process: importing the object makes the child's own record of it,
 * whose team the child completes, and into which it binds its own memory. */
Test(multicast, a_forked_child_imports_the_object_as_its_own)
{
    simcuda_test_start("1GiB", "0");
    CUmulticastObjectProp prop = team_prop(1, 4 * MiB);
    CUmemGenericAllocationHandle mc;
    int fd = -1;
    CU_OK(cuMulticastCreate(&mc, &prop));
    CU_OK(cuMemExportToShareableHandle(&fd, mc, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    CU_OK(cuMulticastAddDevice(mc, 0)); /* the parent's team is complete, the child's is not */
    pid_t child = fork();
    if (child == 0) {
        CUmemAllocationProp mem = simcuda_test_vmm_prop(0);
        CUmemGenericAllocationHandle first, second, phys;
        int ok = cuMemImportFromShareableHandle(&first, (void *)(intptr_t)fd,
                                                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ==
                     CUDA_SUCCESS &&
                 cuMemImportFromShareableHandle(&second, (void *)(intptr_t)fd,
                                                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ==
                     CUDA_SUCCESS &&
                 first == second && first != mc &&
                 cuMemCreate(&phys, 4 * MiB, &mem, 0) == CUDA_SUCCESS &&
                 cuMulticastBindMem(first, 0, phys, 0, 4 * MiB, 0) == CUDA_ERROR_NOT_PERMITTED &&
                 cuMulticastAddDevice(first, 0) == CUDA_SUCCESS &&
                 cuMulticastBindMem(first, 0, phys, 0, 4 * MiB, 0) == CUDA_SUCCESS &&
                 cuMemRelease(phys) == CUDA_SUCCESS && cuMemRelease(first) == CUDA_SUCCESS &&
                 simcuda_test_free() == 1 * GiB - 4 * MiB && cuMemRelease(second) == CUDA_SUCCESS &&
                 simcuda_test_free() == 1 * GiB;
        _exit(ok ? 0 : 1);
    }
    int status;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's import failed");
    close(fd);
    CU_OK(cuMemRelease(mc));
}
