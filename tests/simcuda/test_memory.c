/* simcuda: environment, page accounting, contexts, classic allocations, IPC, host memory. */
#include "simcuda_test_util.h"

#include <criterion/redirect.h>

#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

Test(memory, oom_exactly_at_the_page_boundary)
{
    simcuda_test_start("1GiB", "256MiB");
    CUdeviceptr big, last, extra;
    size_t free_bytes, total_bytes;
    CU_OK(cuMemGetInfo(&free_bytes, &total_bytes));
    cr_assert_eq(total_bytes, 1 * GiB);
    cr_assert_eq(free_bytes, 768 * MiB);
    /* One byte more than what is free needs one page more than there is. */
    CU_FAILS(cuMemAlloc(&big, 768 * MiB + 1), CUDA_ERROR_OUT_OF_MEMORY);
    CU_OK(cuMemAlloc(&big, 766 * MiB));
    CU_OK(cuMemAlloc(&last, 1)); /* takes the last whole page */
    cr_assert_eq(simcuda_test_free(), 0);
    CU_FAILS(cuMemAlloc(&extra, 1), CUDA_ERROR_OUT_OF_MEMORY);
    CU_OK(cuMemFree(last));
    cr_assert_eq(simcuda_test_free(), PAGE);
    CU_OK(cuMemAlloc(&extra, PAGE));
}

Test(memory, get_info_agrees_after_alloc_and_free_sequences)
{
    simcuda_test_start("4GiB", "0");
    const size_t sizes[] = {1, PAGE, PAGE + 1, 10 * MiB, 3 * MiB};
    const size_t pages[] = {1, 1, 2, 5, 2};
    CUdeviceptr pointers[5];
    size_t expected = 4 * GiB;
    cr_assert_eq(simcuda_test_free(), expected);
    for (int i = 0; i < 5; i++) {
        CU_OK(cuMemAlloc(&pointers[i], sizes[i]));
        expected -= pages[i] * PAGE;
        cr_assert_eq(simcuda_test_free(), expected, "after allocation %d", i);
    }
    for (int i = 4; i >= 0; i -= 2) {
        CU_OK(cuMemFree(pointers[i]));
        expected += pages[i] * PAGE;
        cr_assert_eq(simcuda_test_free(), expected, "after free %d", i);
    }
    CU_OK(cuMemFree(pointers[1]));
    CU_OK(cuMemFree(pointers[3]));
    cr_assert_eq(simcuda_test_free(), 4 * GiB);
}

Test(memory, used_by_others_and_context_overhead)
{
    setenv("SIMCUDA_USED", "1GiB", 1);
    CUcontext primary = simcuda_test_start("8GiB", "100MiB");
    CUcontext created;
    const size_t expected = 8 * GiB - 1 * GiB - 100 * MiB;
    cr_assert_eq(simcuda_test_free(), expected);
    /* The overhead is taken once per device, not per context. */
    CU_OK(cuCtxCreate(&created, NULL, 0, 0));
    cr_assert_eq(simcuda_test_free(), expected);
    CUdeviceptr pointer;
    CU_OK(cuMemAlloc(&pointer, 10 * MiB));
    cr_assert_eq(simcuda_test_free(), expected - 10 * MiB);
    /* Destroying a context frees what it allocated. */
    CU_OK(cuCtxDestroy(created));
    CU_OK(cuCtxSetCurrent(primary));
    cr_assert_eq(simcuda_test_free(), expected);
    CU_FAILS(cuMemFree(pointer), CUDA_ERROR_INVALID_VALUE);
}

Test(memory, overhead_returns_with_the_last_context)
{
    simcuda_test_start("2GiB", "512MiB");
    CUcontext created;
    CU_OK(cuDevicePrimaryCtxRelease(0));
    CU_OK(cuCtxCreate(&created, NULL, 0, 0));
    cr_assert_eq(simcuda_test_free(), 2 * GiB - 512 * MiB);
    CU_OK(cuCtxDestroy(created));
    /* No context: memory calls fail, and a context too big for the device fails to start. */
    size_t free_bytes, total_bytes;
    CU_FAILS(cuMemGetInfo(&free_bytes, &total_bytes), CUDA_ERROR_INVALID_CONTEXT);
}

Test(memory, context_larger_than_device_fails)
{
    CUcontext ctx;
    setenv("SIMCUDA_MEMORY", "128MiB", 1);
    CU_OK(cuInit(0));
    CU_FAILS(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_ERROR_OUT_OF_MEMORY);
    CU_FAILS(cuCtxCreate(&ctx, NULL, 0, 0), CUDA_ERROR_OUT_OF_MEMORY);
}

Test(memory, errors_before_init_without_context_and_bad_arguments)
{
    CUdeviceptr pointer;
    size_t free_bytes, total_bytes;
    CU_FAILS(cuMemAlloc(&pointer, 1), CUDA_ERROR_NOT_INITIALIZED);
    CU_FAILS(cuMemGetInfo(&free_bytes, &total_bytes), CUDA_ERROR_NOT_INITIALIZED);
    CU_OK(cuInit(0));
    CU_FAILS(cuMemAlloc(&pointer, 1), CUDA_ERROR_INVALID_CONTEXT);
    CU_FAILS(cuMemGetInfo(&free_bytes, &total_bytes), CUDA_ERROR_INVALID_CONTEXT);
    CUcontext ctx;
    CU_OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CU_OK(cuCtxSetCurrent(ctx));
    CU_FAILS(cuMemAlloc(&pointer, 0), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemAlloc(NULL, 1), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemGetInfo(NULL, &total_bytes), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemGetInfo(&free_bytes, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemFree(0x1234), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemAlloc(&pointer, 4 * MiB));
    CU_FAILS(cuMemFree(pointer + 16), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(pointer));
    CU_FAILS(cuMemFree(pointer), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuInit(1), CUDA_ERROR_INVALID_VALUE);
}

Test(memory, addresses_are_first_fit_aligned_reused_and_coalesced)
{
    simcuda_test_start(NULL, NULL);
    CUdeviceptr a, b, c, d, joined;
    CU_OK(cuMemAlloc(&a, 100));
    cr_assert_eq(a, 0x7f0000000000ull);
    CU_OK(cuMemAlloc(&b, PAGE + 1));
    cr_assert_eq(b, a + PAGE);
    CU_OK(cuMemAlloc(&c, PAGE));
    cr_assert_eq(c, b + 2 * PAGE);
    CU_OK(cuMemAlloc(&d, PAGE));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
    /* a and b's ranges coalesce into one hole of three pages. */
    CU_OK(cuMemAlloc(&joined, 3 * PAGE));
    cr_assert_eq(joined, a);
    CUdeviceptr base;
    size_t size;
    CU_OK(cuMemGetAddressRange(&base, &size, d + 5));
    cr_assert_eq(base, d);
    cr_assert_eq(size, PAGE);
    CU_FAILS(cuMemGetAddressRange(&base, &size, 0x10), CUDA_ERROR_NOT_FOUND);
}

Test(memory, size_suffixes)
{
    static const struct {
        const char *text;
        uint64_t bytes;
    } cases[] = {{"4096", 4096},      {"2k", 2 * KiB},       {"3K", 3 * KiB}, {"5KiB", 5 * KiB},
                 {"512M", 512 * MiB}, {"640MiB", 640 * MiB}, {"3G", 3 * GiB}, {"80GiB", 80 * GiB}};
    /* Parsing happens once per process, so each case runs in a child. */
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        fflush(NULL);
        pid_t child = fork();
        if (child == 0) {
            size_t total = 0;
            setenv("SIMCUDA_MEMORY", cases[i].text, 1);
            _exit(cuInit(0) == CUDA_SUCCESS && cuDeviceTotalMem(&total, 0) == CUDA_SUCCESS &&
                          total == cases[i].bytes
                      ? 0
                      : 1);
        }
        int status;
        cr_assert_eq(waitpid(child, &status, 0), child);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "SIMCUDA_MEMORY=%s",
                  cases[i].text);
    }
}

Test(memory, bad_size_falls_back_with_one_line, .init = cr_redirect_stderr)
{
    size_t total;
    setenv("SIMCUDA_MEMORY", "12XB", 1);
    CU_OK(cuInit(0));
    CU_OK(cuDeviceTotalMem(&total, 0));
    cr_assert_eq(total, 24 * GiB);
    fflush(stderr);
    cr_assert_stderr_eq_str("simcuda: SIMCUDA_MEMORY=\"12XB\" is not a size (bytes, or a "
                            "K/M/G/KiB/MiB/GiB suffix); using 24GiB\n");
}

Test(memory, two_devices_keep_separate_books)
{
    CUcontext ctx0, ctx1;
    CUdeviceptr on0, on1;
    int count;
    char name[64];
    setenv("SIMCUDA_DEVICES", "2", 1);
    setenv("SIMCUDA_MEMORY", "1GiB", 1);
    setenv("SIMCUDA_CONTEXT_OVERHEAD", "0", 1);
    CU_OK(cuInit(0));
    CU_OK(cuDeviceGetCount(&count));
    cr_assert_eq(count, 2);
    CU_OK(cuDeviceGetName(name, sizeof(name), 1));
    cr_assert_str_eq(name, "simcuda GPU 1 (simulated)");
    CU_OK(cuDevicePrimaryCtxRetain(&ctx0, 0));
    CU_OK(cuDevicePrimaryCtxRetain(&ctx1, 1));
    CU_OK(cuCtxSetCurrent(ctx1));
    CU_OK(cuMemAlloc(&on1, 100 * MiB));
    cr_assert_eq(on1, 0x7f0000000000ull + 0x10000000000ull);
    cr_assert_eq(simcuda_test_free(), 1 * GiB - 100 * MiB);
    CU_OK(cuCtxSetCurrent(ctx0));
    cr_assert_eq(simcuda_test_free(), 1 * GiB);
    CU_OK(cuMemAlloc(&on0, 10 * MiB));
    cr_assert_eq(on0, 0x7f0000000000ull);
    CUdevice device;
    CU_OK(cuCtxGetDevice(&device));
    cr_assert_eq(device, 0);
    CU_FAILS(cuDeviceGet(&device, 2), CUDA_ERROR_INVALID_DEVICE);
}

Test(memory, zero_devices_fail_init)
{
    setenv("SIMCUDA_DEVICES", "0", 1);
    CU_FAILS(cuInit(0), CUDA_ERROR_NO_DEVICE);
}

Test(memory, ipc_open_maps_the_same_pages)
{
    simcuda_test_start("1GiB", "0");
    CUdeviceptr original, opened;
    CUipcMemHandle handle;
    CU_OK(cuMemAlloc(&original, 10 * MiB));
    CU_OK(cuIpcGetMemHandle(&handle, original));
    CU_OK(cuIpcOpenMemHandle(&opened, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    cr_assert_neq(opened, original);
    cr_assert_eq(simcuda_test_free(), 1 * GiB - 10 * MiB);
    CU_OK(cuMemcpyHtoD(opened + 8 * MiB, "x", 1));
    /* The pages stay while the opened mapping exists. */
    CU_OK(cuMemFree(original));
    cr_assert_eq(simcuda_test_free(), 1 * GiB - 10 * MiB);
    CU_FAILS(cuMemFree(opened), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuIpcCloseMemHandle(opened));
    cr_assert_eq(simcuda_test_free(), 1 * GiB);
    CU_FAILS(cuIpcCloseMemHandle(opened), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuIpcOpenMemHandle(&opened, handle, 0), CUDA_ERROR_INVALID_VALUE);
}

Test(memory, host_memory_is_real_and_not_counted)
{
    simcuda_test_start("1GiB", "0");
    void *pinned, *mapped;
    CU_OK(cuMemAllocHost(&pinned, 1 * MiB));
    CU_OK(cuMemHostAlloc(&mapped, 4096, CU_MEMHOSTALLOC_DEVICEMAP));
    memset(pinned, 0xab, 1 * MiB);
    cr_assert_eq(simcuda_test_free(), 1 * GiB);
    CU_OK(cuMemFreeHost(pinned));
    CU_OK(cuMemFreeHost(mapped));
    CU_FAILS(cuMemFreeHost(pinned), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemHostAlloc(&mapped, 4096, 0x80), CUDA_ERROR_INVALID_VALUE);
}

Test(memory, pitched_managed_and_legacy_allocations_take_pages)
{
    simcuda_test_start("1GiB", "0");
    CUdeviceptr pitched, managed;
    size_t pitch;
    CU_OK(cuMemAllocPitch(&pitched, &pitch, 1000, 1024, 4));
    cr_assert_eq(pitch, 1024);
    CU_OK(cuMemAllocManaged(&managed, 3 * MiB, CU_MEM_ATTACH_GLOBAL));
    cr_assert_eq(simcuda_test_free(), 1 * GiB - 3 * PAGE);
    CU_FAILS(cuMemAllocPitch(&pitched, &pitch, 1000, 1024, 3), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemAllocManaged(&managed, 1, 7), CUDA_ERROR_INVALID_VALUE);
}

Test(memory, primary_reset_frees_its_memory)
{
    CUcontext ctx = simcuda_test_start("1GiB", "0");
    CUdeviceptr pointer;
    CU_OK(cuMemAlloc(&pointer, 100 * MiB));
    CU_OK(cuDevicePrimaryCtxReset(0));
    CU_FAILS(cuMemAlloc(&pointer, 1), CUDA_ERROR_INVALID_CONTEXT);
    CU_OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    cr_assert_eq(simcuda_test_free(), 1 * GiB);
}

Test(memory, copies_validate_the_device_range)
{
    simcuda_test_start(NULL, NULL);
    CUdeviceptr pointer;
    char buffer[16];
    CU_OK(cuMemAlloc(&pointer, 1000));
    CU_OK(cuMemcpyHtoD(pointer, buffer, sizeof(buffer)));
    CU_OK(cuMemcpyDtoH(buffer, pointer + 984, 16));
    CU_FAILS(cuMemcpyDtoH(buffer, pointer + 985, 16), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemcpyHtoD(0x42, buffer, 1), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemsetD8(pointer, 0, 1000));
    CU_FAILS(cuMemsetD8(pointer, 0, 1001), CUDA_ERROR_INVALID_VALUE);
}

Test(memory, devices_and_errors_describe_themselves)
{
    const char *text;
    int value, version;
    CU_OK(cuDriverGetVersion(&version));
    cr_assert_eq(version, 13000);
    CU_OK(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &text));
    cr_assert_str_eq(text, "simcuda: out of memory");
    CU_OK(cuGetErrorName(CUDA_ERROR_INVALID_CONTEXT, &text));
    cr_assert_str_eq(text, "CUDA_ERROR_INVALID_CONTEXT");
    CU_FAILS(cuGetErrorName((CUresult)12345, &text), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuInit(0));
    CU_OK(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
    cr_assert_eq(value, 9);
    CU_OK(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0));
    cr_assert_eq(value, 1);
    CU_OK(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
    cr_assert_eq(value, 1);
}

static CUcontext shared_context;

static void *churn(void *unused)
{
    CUdeviceptr pointers[8];
    CU_OK(cuCtxSetCurrent(shared_context));
    for (int round = 0; round < 200; round++) {
        for (int i = 0; i < 8; i++)
            CU_OK(cuMemAlloc(&pointers[i], (size_t)(i + 1) * MiB));
        for (int i = 0; i < 8; i++)
            CU_OK(cuMemFree(pointers[i]));
    }
    return NULL;
}

Test(memory, threads_share_one_consistent_book)
{
    pthread_t threads[4];
    shared_context = simcuda_test_start("4GiB", "0");
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pthread_create(&threads[i], NULL, churn, NULL), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(threads[i], NULL);
    cr_assert_eq(simcuda_test_free(), 4 * GiB);
}

Test(memory, host_registration_pins_the_programs_memory)
{
    simcuda_test_start("1GiB", "0");
    void *buf = aligned_alloc(4096, 3 * 4096);
    cr_assert_not_null(buf);
    CU_OK(cuMemHostRegister(buf, 2 * 4096, CU_MEMHOSTREGISTER_PORTABLE));
    CU_FAILS(cuMemHostRegister((char *)buf + 4096, 4096, 0),
             CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    CU_FAILS(cuMemFreeHost(buf), CUDA_ERROR_INVALID_VALUE); /* not the driver's to free */
    CU_FAILS(cuMemHostRegister(buf, 4096, 0x100), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemHostUnregister(buf));
    CU_FAILS(cuMemHostUnregister(buf), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    CU_OK(cuMemHostRegister((char *)buf + 4096, 4096, 0)); /* free again after unregistering */
    CU_OK(cuMemHostUnregister((char *)buf + 4096));
    cr_assert_eq(simcuda_test_free(), 1 * GiB); /* host memory: not counted */
    free(buf);
}

Test(memory, addresses_are_reused_first_fit_by_default)
{
    simcuda_test_start("1GiB", "0");
    CUdeviceptr a, b, c;
    CU_OK(cuMemAlloc(&a, 10 * MiB));
    CU_OK(cuMemAlloc(&b, 10 * MiB));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemAlloc(&c, 4 * MiB));
    cr_assert_eq(c, a);
}

Test(memory, never_reused_addresses_lie_above_every_earlier_one)
{
    setenv("SIMCUDA_REUSE_ADDRESSES", "0", 1);
    simcuda_test_start("1GiB", "0");
    CUdeviceptr a, b, c, d;
    CU_OK(cuMemAlloc(&a, 10 * MiB));
    CU_OK(cuMemAlloc(&b, 10 * MiB));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
    CU_OK(cuMemAlloc(&c, 4 * MiB));
    cr_assert_geq(c, b + 10 * MiB);
    CU_OK(cuMemAlloc(&d, 4 * MiB));
    cr_assert_geq(d, c + 4 * MiB);
}

Test(memory, memset_d32_async_and_write_value_check_the_range)
{
    simcuda_test_start("1GiB", "0");
    CUdeviceptr a;
    CU_OK(cuMemAlloc(&a, 2 * MiB));
    CU_OK(cuMemsetD32Async(a, 7, 2 * MiB / 4, NULL));
    CU_FAILS(cuMemsetD32Async(a, 7, 2 * MiB / 4 + 1, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamWriteValue32(NULL, a + 2 * MiB - 4, 1, 0));
    CU_FAILS(cuStreamWriteValue32(NULL, a + 2 * MiB - 2, 1, 0), CUDA_ERROR_INVALID_VALUE);
}
