/* simcuda: pool IPC (exportable pools, their descriptors, pointers shared between processes)
 * and a range's dma-buf handle. */
#include "simcuda_test_util.h"

#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define FD_TYPE CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR

static CUmemoryPool make_pool(CUmemAllocationHandleType types)
{
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = types;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    CUmemoryPool pool;
    CU_OK(cuMemPoolCreate(&pool, &props));
    return pool;
}

/* The pool exported and imported again (in this process: the same memfd, another mapping). */
static CUmemoryPool reimport(CUmemoryPool pool)
{
    int fd = -1;
    CUmemoryPool imported;
    CU_OK(cuMemPoolExportToShareableHandle(&fd, pool, FD_TYPE, 0));
    cr_assert_geq(fd, 0, "a real descriptor");
    CU_OK(cuMemPoolImportFromShareableHandle(&imported, (void *)(intptr_t)fd, FD_TYPE, 0));
    close(fd); /* the imported pool keeps its own */
    return imported;
}

Test(pool_ipc, an_imported_pointer_maps_the_same_bytes)
{
    simcuda_test_start("1GiB", "0");
    CUmemoryPool pool = make_pool(FD_TYPE), imported = reimport(pool);
    CUdeviceptr ptr, view;
    CUmemPoolPtrExportData share;
    CU_OK(cuMemAllocFromPoolAsync(&ptr, 3 * MiB, pool, NULL));
    size_t before = simcuda_test_free();
    CU_OK(cuMemsetD32(ptr, 0x11223344, (3 * MiB) / 4));
    CU_OK(cuMemPoolExportPointer(&share, ptr));
    CU_OK(cuMemPoolImportPointer(&view, imported, &share));
    cr_assert_neq(view, ptr, "an address of its own");
    cr_assert_eq(simcuda_test_free(), before, "the import takes no pages");
    uint32_t word = 0;
    CU_OK(cuMemcpyDtoH(&word, view + 4096, sizeof word));
    cr_assert_eq(word, 0x11223344, "the exporter's bytes");
    word = 0xabcdef01;
    CU_OK(cuMemcpyHtoD(view + 8, &word, sizeof word));
    word = 0;
    CU_OK(cuMemcpyDtoH(&word, ptr + 8, sizeof word));
    cr_assert_eq(word, 0xabcdef01, "a write through the import is seen by the exporter");
    size_t size = 0;
    CU_OK(cuMemGetAddressRange(NULL, &size, view));
    cr_assert_eq(size, 3 * MiB);
    CU_OK(cuMemFreeAsync(view, NULL));
    CU_FAILS(cuMemcpyDtoH(&word, view, sizeof word), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemcpyDtoH(&word, ptr + 8, sizeof word));
    cr_assert_eq(word, 0xabcdef01, "freeing the import leaves the exporter's block");
    CU_OK(cuMemPoolImportPointer(&view, imported, &share));
    CU_OK(cuMemFree(view)); /* cuMemFree unmaps an import too */
    CU_OK(cuMemFreeAsync(ptr, NULL));
    CU_OK(cuMemPoolDestroy(imported));
    CU_OK(cuMemPoolDestroy(pool));
}

Test(pool_ipc, errors_as_the_driver_documents_them)
{
    simcuda_test_start("1GiB", "0");
    CUmemoryPool plain = make_pool(CU_MEM_HANDLE_TYPE_NONE), pool = make_pool(FD_TYPE);
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_WIN32;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemoryPool other;
    CU_FAILS(cuMemPoolCreate(&other, &props), CUDA_ERROR_NOT_SUPPORTED);
    int fd = -1;
    CU_FAILS(cuMemPoolExportToShareableHandle(&fd, plain, FD_TYPE, 0), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemPoolExportToShareableHandle(&fd, pool, CU_MEM_HANDLE_TYPE_WIN32, 0),
             CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemPoolExportToShareableHandle(&fd, pool, FD_TYPE, 1), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemPoolImportFromShareableHandle(&other, (void *)(intptr_t)0, FD_TYPE, 0),
             CUDA_ERROR_INVALID_VALUE); /* stdin: not a pool's descriptor */
    CUmemPoolPtrExportData share;
    CUdeviceptr in_plain, in_pool, view;
    CU_OK(cuMemAllocFromPoolAsync(&in_plain, MiB, plain, NULL));
    CU_OK(cuMemAllocFromPoolAsync(&in_pool, MiB, pool, NULL));
    CU_FAILS(cuMemPoolExportPointer(&share, in_plain), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemPoolExportPointer(&share, in_pool + 256), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemPoolExportPointer(&share, 0x1234), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemPoolExportPointer(&share, in_pool));
    CU_FAILS(cuMemPoolImportPointer(&view, pool, &share), CUDA_ERROR_INVALID_VALUE);
    CUmemoryPool imported = reimport(pool), imported_plain;
    CU_FAILS(cuMemAllocFromPoolAsync(&view, MiB, imported, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuDeviceSetMemPool(0, imported), CUDA_ERROR_INVALID_VALUE);
    CUmemPoolPtrExportData garbage;
    memset(&garbage, 0x5a, sizeof garbage);
    CU_FAILS(cuMemPoolImportPointer(&view, imported, &garbage), CUDA_ERROR_INVALID_VALUE);
    CUmemoryPool second = make_pool(FD_TYPE);
    imported_plain = reimport(second);
    CU_FAILS(cuMemPoolImportPointer(&view, imported_plain, &share), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemFreeAsync(in_pool + 256, NULL), CUDA_ERROR_INVALID_VALUE);
}

Test(pool_ipc, blocks_of_a_plain_pool_hold_no_bytes)
{
    simcuda_test_start("1GiB", "0");
    CUmemoryPool plain = make_pool(CU_MEM_HANDLE_TYPE_NONE);
    CUdeviceptr ptr;
    CU_OK(cuMemAllocFromPoolAsync(&ptr, MiB, plain, NULL));
    uint32_t word = 7;
    CU_OK(cuMemcpyHtoD(ptr, &word, sizeof word));
    word = 0;
    CU_OK(cuMemcpyDtoH(&word, ptr, sizeof word));
    cr_assert_eq(word, 0, "as before: pool memory without an export type holds no bytes");
}

/* streamOrderedAllocationIPC's pattern across exec (tests/e2e/progs/pool_ipc.c): the program
 * kills a child that does not answer, and this test kills the program after 20 s. */
Test(pool_ipc, another_program_sees_and_writes_the_same_bytes)
{
    simcuda_test_run_program(SIMCUDA_POOL_IPC);
}

Test(pool_ipc, a_range_handle_is_a_real_descriptor)
{
    simcuda_test_start("1GiB", "0");
    CUdeviceptr ptr, async;
    CU_OK(cuMemAlloc(&ptr, 4 * MiB));
    int fd = -1, supported = 0;
    CU_OK(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, 0));
    cr_assert_eq(supported, 1);
    CU_OK(cuMemGetHandleForAddressRange(&fd, ptr, 2 * MiB, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
    cr_assert_geq(fd, 0);
    char magic[8];
    cr_assert_eq(pread(fd, magic, sizeof magic, 0), (ssize_t)sizeof magic, "a descriptor to read");
    close(fd);
    CU_FAILS(
        cuMemGetHandleForAddressRange(&fd, ptr + 1, 4096, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0),
        CUDA_ERROR_INVALID_VALUE); /* not page-aligned */
    CU_FAILS(
        cuMemGetHandleForAddressRange(&fd, ptr, 8 * MiB, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0),
        CUDA_ERROR_INVALID_VALUE); /* beyond the allocation */
    CU_FAILS(cuMemGetHandleForAddressRange(&fd, ptr, 4096, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                                           CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE),
             CUDA_ERROR_NOT_SUPPORTED);
    CU_OK(cuMemAllocAsync(&async, 2 * MiB, NULL));
    CU_FAILS(
        cuMemGetHandleForAddressRange(&fd, async, 4096, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0),
        CUDA_ERROR_INVALID_VALUE); /* pool memory: not a range the driver exports */
}
