/* Copies and sets (simcuda_copy.c): bytes move between host memory and managed memory, plain
 * device memory holds none, and every device range is checked. */
#include "simcuda_test_util.h"

#include <string.h>
#include <sys/mman.h>

Test(copy, managed_memory_keeps_what_the_host_writes)
{
    simcuda_test_start("1GiB", "0");
    CUdeviceptr managed;
    CU_OK(cuMemAllocManaged(&managed, 3 * MiB, CU_MEM_ATTACH_GLOBAL));
    int *host_view = (int *)(uintptr_t)managed;
    for (int i = 0; i < 1024; i++)
        host_view[i] = i;
    int back[1024] = {0};
    CU_OK(cuMemcpyDtoH(back, managed, sizeof back));
    cr_assert_eq(back[1023], 1023);
    CU_OK(cuMemcpy(managed + 2 * MiB, managed, 4096)); /* within one allocation */
    cr_assert_eq(host_view[2 * MiB / 4 + 17], 17);
    int in[4] = {9, 8, 7, 6};
    CU_OK(cuMemcpyHtoDAsync(managed, in, sizeof in, NULL));
    cr_assert_eq(host_view[2], 7);
    CU_OK(cuMemFree(managed));
}

Test(copy, sets_write_managed_memory_word_by_word)
{
    simcuda_test_start("1GiB", "0");
    CUdeviceptr managed;
    CU_OK(cuMemAllocManaged(&managed, MiB, CU_MEM_ATTACH_GLOBAL));
    unsigned *words = (unsigned *)(uintptr_t)managed;
    CU_OK(cuMemsetD32(managed, 0xdeadbeef, 16));
    cr_assert_eq(words[15], 0xdeadbeefu);
    cr_assert_eq(words[16], 0u);
    CU_OK(cuMemsetD8Async(managed + 64, 0xab, 4, NULL));
    cr_assert_eq(words[16], 0xababababu);
    CU_OK(cuMemsetD32Async(managed + 128, 5, 1, NULL));
    cr_assert_eq(words[32], 5u);
    CU_OK(cuStreamWriteValue32(NULL, managed + 132, 42, 0));
    cr_assert_eq(words[33], 42u);
    CU_FAILS(cuStreamWriteValue32(NULL, managed, 1, 0x80), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(managed));
}

Test(copy, plain_device_memory_holds_no_bytes)
{
    simcuda_test_start("1GiB", "0");
    CUdeviceptr device, managed;
    CU_OK(cuMemAlloc(&device, MiB));
    CU_OK(cuMemAllocManaged(&managed, MiB, CU_MEM_ATTACH_GLOBAL));
    char in[64], out[64];
    memset(in, 1, sizeof in);
    memset(out, 2, sizeof out);
    CU_OK(cuMemcpyHtoD(device, in, sizeof in));
    CU_OK(cuMemcpyDtoH(out, device, sizeof out));
    cr_assert_eq(out[0], 2, "a copy out of device memory leaves the destination as it was");
    memset((void *)(uintptr_t)managed, 3, 64);
    CU_OK(cuMemcpyDtoD(device, managed, 64));
    CU_OK(cuMemcpyDtoDAsync(managed, device, 64, NULL));
    cr_assert_eq(((char *)(uintptr_t)managed)[0], 3);
    CU_OK(cuMemFree(device));
    CU_OK(cuMemFree(managed));
}

Test(copy, ranges_are_checked)
{
    simcuda_test_start("1GiB", "0");
    CUdeviceptr device;
    char buffer[64];
    CU_OK(cuMemAlloc(&device, 4096));
    CU_FAILS(cuMemcpyHtoD(device + 4000, buffer, 200), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemsetD32(device, 0, 2000), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemcpyDtoD(device, device + 8192, 8), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(device));
    CU_FAILS(cuMemcpyDtoH(buffer, device, 8), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemsetD8(device, 0, 8), CUDA_ERROR_INVALID_VALUE);
}

/* cuMemcpy (unified addressing) takes any host address that is mapped, and refuses one that is
 * not instead of crashing. */
Test(copy, unified_copies_refuse_unmapped_host_memory)
{
    simcuda_test_start("1GiB", "0");
    char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(page, MAP_FAILED);
    char source[16] = "simulated";
    CU_OK(cuMemcpy((CUdeviceptr)(uintptr_t)page, (CUdeviceptr)(uintptr_t)source, sizeof source));
    cr_assert_str_eq(page, "simulated");
    munmap(page, 4096);
    CU_FAILS(cuMemcpy((CUdeviceptr)(uintptr_t)page, (CUdeviceptr)(uintptr_t)source, 16),
             CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemcpyAsync(0, (CUdeviceptr)(uintptr_t)source, 16, NULL), CUDA_ERROR_INVALID_VALUE);
}

Test(copy, asynchronous_copies_check_their_stream)
{
    simcuda_test_start("1GiB", "0");
    CUdeviceptr managed;
    CUstream stream;
    CU_OK(cuMemAllocManaged(&managed, MiB, CU_MEM_ATTACH_GLOBAL));
    CU_OK(cuStreamCreate(&stream, 0));
    char in[8] = "abc";
    CU_OK(cuMemcpyHtoDAsync(managed, in, sizeof in, stream));
    CU_OK(cuStreamDestroy(stream));
    CU_FAILS(cuMemcpyHtoDAsync(managed, in, sizeof in, stream), CUDA_ERROR_INVALID_HANDLE);
}
