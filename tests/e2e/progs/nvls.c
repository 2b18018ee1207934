/* nvls.c — a driver-API program in the shape of NCCL's NVLS transport (src/transport/nvls.cc),
 * written for the tests: the multicast buffer a communicator sets up and tears down, and a user
 * buffer registered by address. Linked against libcuda.so.1 (simcuda).
 *   nvls [ROUNDS]   ROUNDS setups and teardowns (default 2); prints "nvls ok SIZE" */
#define PROG_NAME "nvls"
#include "prog_driver.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static size_t align_up(size_t size, size_t granularity)
{
    return (size + granularity - 1) / granularity * granularity;
}

struct buffer {
    CUmemGenericAllocationHandle uc_handle, mc_handle;
    CUdeviceptr uc, mc;
    size_t size;
};

/* nvlsAllocateMem: a multicast object for the team, this device's physical memory bound into
 * it, both mapped (unicast and multicast addresses). */
static void allocate(struct buffer *b, CUdevice dev, size_t want)
{
    CUmulticastObjectProp mcprop = {
        .numDevices = 1, .size = want, .handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR};
    size_t mcgran, ucgran;
    CHECK(cuMulticastGetGranularity(&mcgran, &mcprop, CU_MULTICAST_GRANULARITY_MINIMUM));
    b->size = mcprop.size = align_up(want, mcgran);
    CHECK(cuMulticastCreate(&b->mc_handle, &mcprop));
    /* what rank 0 hands the other ranks: a shareable descriptor of the object */
    int fd = -1;
    CHECK(cuMemExportToShareableHandle(&fd, b->mc_handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                       0));
    /* what another rank does with it (nvlsGroupConnect): import, here in the same process, so
     * the same object with one more reference */
    CUmemGenericAllocationHandle peer;
    CHECK(cuMemImportFromShareableHandle(&peer, (void *)(intptr_t)fd,
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(fd);
    if (peer != b->mc_handle) {
        fprintf(stderr, "nvls: the import gave another object\n");
        exit(2);
    }
    CHECK(cuMemRelease(peer));
    CHECK(cuMulticastAddDevice(b->mc_handle, dev));

    CUmemAllocationProp ucprop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                  .requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                  .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev}};
    CUmemAccessDesc desc = {.location = ucprop.location,
                            .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CHECK(cuMemGetAllocationGranularity(&ucgran, &ucprop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    CHECK(cuMemAddressReserve(&b->uc, b->size, ucgran, 0, 0));
    CHECK(cuMemCreate(&b->uc_handle, b->size, &ucprop, 0));
    CHECK(cuMemMap(b->uc, b->size, 0, b->uc_handle, 0));
    CHECK(cuMemSetAccess(b->uc, b->size, &desc, 1));
    CHECK(cuMulticastBindMem(b->mc_handle, 0, b->uc_handle, 0, b->size, 0));
    CHECK(cuMemAddressReserve(&b->mc, b->size, mcgran, 0, 0));
    CHECK(cuMemMap(b->mc, b->size, 0, b->mc_handle, 0));
    CHECK(cuMemSetAccess(b->mc, b->size, &desc, 1));
}

/* nvlsGroupUnbind, then nvlsGroupUnmapMem. */
static void release(struct buffer *b, CUdevice dev)
{
    CHECK(cuMulticastUnbind(b->mc_handle, dev, 0, b->size));
    CHECK(cuMemUnmap(b->uc, b->size));
    CHECK(cuMemAddressFree(b->uc, b->size));
    CHECK(cuMemRelease(b->uc_handle));
    CHECK(cuMemUnmap(b->mc, b->size));
    CHECK(cuMemAddressFree(b->mc, b->size));
    CHECK(cuMemRelease(b->mc_handle));
}

/* A user buffer registered for NVLS (ncclNvlsRegisterBuffer): bound by its address into an
 * object of its own, mapped, then deregistered (ncclNvlsDeregBuffer). */
static void register_user_buffer(const struct buffer *user, CUdevice dev)
{
    CUmulticastObjectProp prop = {.numDevices = 1, .size = user->size};
    CUmemGenericAllocationHandle mc;
    CUdeviceptr va;
    CUmemAccessDesc desc = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev},
                            .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CHECK(cuMulticastCreate(&mc, &prop));
    CHECK(cuMulticastAddDevice(mc, dev));
    CHECK(cuMulticastBindAddr(mc, 0, user->uc, user->size, 0));
    CHECK(cuMemAddressReserve(&va, user->size, 0, 0, 0));
    CHECK(cuMemMap(va, user->size, 0, mc, 0));
    CHECK(cuMemSetAccess(va, user->size, &desc, 1));
    CHECK(cuMulticastUnbind(mc, dev, 0, user->size));
    CHECK(cuMemUnmap(va, user->size));
    CHECK(cuMemAddressFree(va, user->size));
    CHECK(cuMemRelease(mc));
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 2;
    CUdevice dev = prog_start();
    int supported = 0;
    CHECK(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, dev));
    if (!supported) {
        fprintf(stderr, "nvls: the device has no multicast support\n");
        return 2;
    }
    size_t size = 0;
    for (int round = 0; round < rounds; round++) {
        struct buffer comm, user;
        allocate(&comm, dev, (size_t)(round + 1) * (40 << 20)); /* rounded up to 2 MiB */
        /* a user buffer NCCL registers: VMM memory the program mapped itself */
        allocate(&user, dev, 16 << 20);
        register_user_buffer(&user, dev);
        size = comm.size;
        release(&user, dev);
        release(&comm, dev);
    }
    CHECK(cuDevicePrimaryCtxRelease(dev));
    printf("nvls ok %zu\n", size);
    return 0;
}
