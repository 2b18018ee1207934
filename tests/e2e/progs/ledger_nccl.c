/* ledger_nccl.c — built as libnccl.so for ledger_libs.c: NCCL-like memory, a buffer of
 * physical memory mapped into a reserved range (cuMemCreate/cuMemMap, as NCCL's cuMem path
 * does) and a plain cuMemAlloc (its legacy path). Test code. */
#define PROG_NAME "libnccl"
#include "prog_driver.h"

#define NCCL_BUFFER (8u << 20)
#define NCCL_FIFO ((3u << 20) + 4096)

/* The memory NCCL would allocate for a communicator; prints what it got. */
void ncclCommInitLike(CUdevice dev);
void ncclCommInitLike(CUdevice dev)
{
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    CUmemGenericAllocationHandle handle;
    CUdeviceptr va, fifo;
    CHECK(cuMemCreate(&handle, NCCL_BUFFER, &prop, 0));
    CHECK(cuMemAddressReserve(&va, NCCL_BUFFER, 0, 0, 0));
    CHECK(cuMemMap(va, NCCL_BUFFER, 0, handle, 0));
    CHECK(cuMemAlloc(&fifo, NCCL_FIFO));
    printf("nccl handle=0x%llx\nnccl address=0x%llx\n", (unsigned long long)handle,
           (unsigned long long)fifo);
}
