/* simcudart: the runtime API over simcuda (implicit initialisation, memory, errors, devices,
 * streams and events). Criterion runs each test in its own process, so each sets simcuda's
 * environment before the first runtime call. */
#include <criterion/criterion.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)

#define RT_OK(call) cr_assert_eq((call), cudaSuccess, "%s failed", #call)

static void start(const char *memory)
{
    setenv("SIMCUDA_MEMORY", memory, 1);
    setenv("SIMCUDA_CONTEXT_OVERHEAD", "0", 1);
}

Test(runtime, malloc_initialises_and_counts_against_the_device)
{
    start("1GiB");
    void *a = NULL;
    size_t free_bytes, total_bytes;
    RT_OK(cudaMalloc(&a, 100 * MiB));
    cr_assert_not_null(a);
    RT_OK(cudaMemGetInfo(&free_bytes, &total_bytes));
    cr_assert_eq(total_bytes, 1 * GiB);
    cr_assert_eq(free_bytes, 1 * GiB - 100 * MiB);
    RT_OK(cudaFree(a));
    RT_OK(cudaMemGetInfo(&free_bytes, &total_bytes));
    cr_assert_eq(free_bytes, 1 * GiB);
}

Test(runtime, size_zero_and_null_free_succeed)
{
    start("1GiB");
    void *a = (void *)1;
    RT_OK(cudaMalloc(&a, 0));
    cr_assert_null(a);
    RT_OK(cudaFree(NULL));
}

Test(runtime, out_of_memory_is_sticky_until_get_last_error)
{
    start("1GiB");
    void *a = (void *)1;
    cr_assert_eq(cudaMalloc(&a, 2 * GiB), cudaErrorMemoryAllocation);
    cr_assert_null(a);
    cr_assert_eq(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
    cr_assert_eq(cudaGetLastError(), cudaErrorMemoryAllocation);
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    cr_assert_str_eq(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory");
    cr_assert_str_eq(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation");
}

Test(runtime, freeing_an_unknown_pointer_fails)
{
    start("1GiB");
    RT_OK(cudaFree(NULL));
    cr_assert_eq(cudaFree((void *)(uintptr_t)0x1234), cudaErrorInvalidValue);
}

Test(runtime, devices_and_properties)
{
    start("16GiB");
    setenv("SIMCUDA_DEVICES", "2", 1);
    int count = 0, device = -1, value = 0, version = 0;
    struct cudaDeviceProp prop;
    RT_OK(cudaGetDeviceCount(&count));
    cr_assert_eq(count, 2);
    RT_OK(cudaGetDevice(&device));
    cr_assert_eq(device, 0);
    RT_OK(cudaSetDevice(1));
    RT_OK(cudaGetDevice(&device));
    cr_assert_eq(device, 1);
    cr_assert_eq(cudaSetDevice(2), cudaErrorInvalidDevice);
    RT_OK(cudaGetDeviceProperties(&prop, 1));
    cr_assert_eq(prop.totalGlobalMem, 16 * GiB);
    cr_assert_eq(prop.major, 9);
    cr_assert(strstr(prop.name, "simcuda") != NULL);
    RT_OK(cudaDeviceGetAttribute(&value, cudaDevAttrComputeCapabilityMajor, 0));
    cr_assert_eq(value, 9);
    RT_OK(cudaDriverGetVersion(&version));
    cr_assert_eq(version, 13000);
    RT_OK(cudaRuntimeGetVersion(&version));
    cr_assert_eq(version, CUDART_VERSION);
}

Test(runtime, no_device)
{
    setenv("SIMCUDA_DEVICES", "0", 1);
    int count = 1;
    void *a;
    cr_assert_eq(cudaGetDeviceCount(&count), cudaErrorNoDevice);
    cr_assert_eq(count, 0);
    cr_assert_eq(cudaMalloc(&a, 1), cudaErrorNoDevice);
}

Test(runtime, current_device_is_per_thread_and_selects_its_memory)
{
    start("1GiB");
    setenv("SIMCUDA_DEVICES", "2", 1);
    void *a;
    size_t free_bytes, total_bytes;
    RT_OK(cudaSetDevice(1));
    RT_OK(cudaMalloc(&a, 200 * MiB));
    RT_OK(cudaMemGetInfo(&free_bytes, &total_bytes));
    cr_assert_eq(free_bytes, 1 * GiB - 200 * MiB);
    RT_OK(cudaSetDevice(0));
    RT_OK(cudaMemGetInfo(&free_bytes, &total_bytes));
    cr_assert_eq(free_bytes, 1 * GiB);
}

Test(runtime, streams_and_stream_ordered_allocations)
{
    start("1GiB");
    cudaStream_t stream;
    enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
    void *a;
    RT_OK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, -1));
    RT_OK(cudaMallocAsync(&a, 10 * MiB, stream));
    RT_OK(cudaFreeAsync(a, stream));
    RT_OK(cudaStreamSynchronize(stream));
    RT_OK(cudaStreamQuery(stream));
    RT_OK(cudaStreamIsCapturing(stream, &status));
    cr_assert_eq(status, cudaStreamCaptureStatusNone);
    RT_OK(cudaStreamDestroy(stream));
    RT_OK(cudaDeviceSynchronize());
}

Test(runtime, events_are_complete_host_tokens)
{
    start("1GiB");
    cudaEvent_t start_event, end_event, untimed;
    float ms = -1;
    RT_OK(cudaEventCreateWithFlags(&start_event, cudaEventDefault));
    RT_OK(cudaEventCreateWithFlags(&end_event, cudaEventDefault));
    RT_OK(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming));
    cr_assert_eq(cudaEventElapsedTime(&ms, start_event, end_event), cudaErrorInvalidResourceHandle);
    RT_OK(cudaEventRecord(start_event, 0));
    RT_OK(cudaEventRecord(end_event, 0));
    RT_OK(cudaEventQuery(end_event));
    RT_OK(cudaEventSynchronize(end_event));
    RT_OK(cudaStreamWaitEvent(0, end_event, 0));
    RT_OK(cudaEventElapsedTime(&ms, start_event, end_event));
    cr_assert(ms >= 0);
    RT_OK(cudaEventRecord(untimed, 0));
    cr_assert_eq(cudaEventElapsedTime(&ms, start_event, untimed), cudaErrorInvalidResourceHandle);
    RT_OK(cudaEventDestroy(untimed));
    RT_OK(cudaEventDestroy(end_event));
    RT_OK(cudaEventDestroy(start_event));
}

Test(runtime, capture_mode_exchange_round_trips)
{
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    RT_OK(cudaThreadExchangeStreamCaptureMode(&mode));
    cr_assert_eq(mode, cudaStreamCaptureModeGlobal);
    RT_OK(cudaThreadExchangeStreamCaptureMode(&mode));
    cr_assert_eq(mode, cudaStreamCaptureModeRelaxed);
}

Test(runtime, default_pool_and_copies)
{
    start("1GiB");
    cudaMemPool_t pool;
    uint64_t threshold = 64 * MiB, read = 0;
    void *a;
    char host[64] = {0};
    RT_OK(cudaDeviceGetDefaultMemPool(&pool, 0));
    RT_OK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    RT_OK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &read));
    cr_assert_eq(read, 64 * MiB);
    RT_OK(cudaMemPoolTrimTo(pool, 0));
    RT_OK(cudaMalloc(&a, 4 * MiB));
    RT_OK(cudaMemcpy(a, host, sizeof(host), cudaMemcpyHostToDevice));
    RT_OK(cudaMemcpyAsync(host, a, sizeof(host), cudaMemcpyDeviceToHost, 0));
    cr_assert_eq(cudaMemcpy((char *)a + 4 * MiB, host, 1, cudaMemcpyHostToDevice),
                 cudaErrorInvalidValue);
    RT_OK(cudaMemset(a, 0, 4 * MiB));
}
