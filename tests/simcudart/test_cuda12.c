/* simcudart's libcudart.so.12: CUDA 12.4's entry points and struct layouts, through the
 * library's own CUDA 12 declarations (simcudart_cuda12.h), with the layout checked against the
 * offsets NVIDIA's CUDA 12.4 driver_types.h gives (offsetof on x86-64, measured). */
#include "simcudart_cuda12.h"

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define GiB ((size_t)1 << 30)

#define RT_OK(call) cr_assert_eq((call), cudaSuccess, "%s failed", #call)

/* CUDA 12.4's struct cudaDeviceProp: its size and where a few fields are. */
#define PROP12_SIZE 1032
#define PROP12_TOTAL_GLOBAL_MEM 288
#define PROP12_CLOCK_RATE 348
#define PROP12_MAJOR 360
#define PROP12_MINOR 364
#define PROP12_MULTIPROCESSOR_COUNT 388
#define PROP12_MEMORY_CLOCK_RATE 608
#define PROP12_L2_CACHE_SIZE 616
#define PROP12_MAX_THREADS_PER_MULTIPROCESSOR 624
#define PROP12_MANAGED_MEMORY 652
#define PROP12_MEMORY_POOLS_SUPPORTED 744

static void start(void)
{
    setenv("SIMCUDA_MEMORY", "1GiB", 1);
    setenv("SIMCUDA_CONTEXT_OVERHEAD", "0", 1);
}

static int int_at(const unsigned char *bytes, size_t offset)
{
    int value;
    memcpy(&value, bytes + offset, sizeof(value));
    return value;
}

Test(cuda12, device_properties_have_cuda_12_4_layout)
{
    start();
    unsigned char bytes[PROP12_SIZE + 64];
    memset(bytes, 0xab, sizeof(bytes));
    RT_OK(cudaGetDeviceProperties_v2((struct simcudart12_device_prop *)bytes, 0));
    size_t total;
    memcpy(&total, bytes + PROP12_TOTAL_GLOBAL_MEM, sizeof(total));
    cr_assert_eq(total, 1 * GiB);
    cr_assert_eq(int_at(bytes, PROP12_MAJOR), 9);
    cr_assert_eq(int_at(bytes, PROP12_MINOR), 0);
    cr_assert_eq(int_at(bytes, PROP12_MULTIPROCESSOR_COUNT), 132);
    cr_assert_eq(int_at(bytes, PROP12_CLOCK_RATE), 1980000, "a CUDA 12 field from the driver");
    cr_assert_eq(int_at(bytes, PROP12_MEMORY_CLOCK_RATE), 2619000);
    cr_assert_eq(int_at(bytes, PROP12_L2_CACHE_SIZE), 50 << 20);
    cr_assert_eq(int_at(bytes, PROP12_MAX_THREADS_PER_MULTIPROCESSOR), 2048);
    cr_assert_eq(int_at(bytes, PROP12_MANAGED_MEMORY), 1);
    cr_assert_eq(int_at(bytes, PROP12_MEMORY_POOLS_SUPPORTED), 1);
    char name[256];
    CUdevice device;
    cr_assert_eq(cuDeviceGet(&device, 0), CUDA_SUCCESS);
    cr_assert_eq(cuDeviceGetName(name, sizeof(name), device), CUDA_SUCCESS);
    cr_assert_str_eq((const char *)bytes, name);
    for (size_t i = PROP12_SIZE; i < sizeof(bytes); i++)
        cr_assert_eq(bytes[i], 0xab, "byte %zu past CUDA 12.4's struct was written", i);
    cr_assert_eq(cudaGetDeviceProperties_v2(NULL, 0), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetDeviceProperties_v2((struct simcudart12_device_prop *)bytes, 1),
                 cudaErrorInvalidDevice);
}

Test(cuda12, runtime_version_is_12_4)
{
    start();
    int version = 0;
    RT_OK(cudaRuntimeGetVersion(&version));
    cr_assert_eq(version, 12040);
}

Test(cuda12, capture_info_in_the_three_cuda_12_forms)
{
    start();
    cudaStream_t stream;
    RT_OK(cudaStreamCreate(&stream));
    RT_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    unsigned long long id = 0, legacy_id = 0, v3_id = 0;
    cudaGraph_t graph = (cudaGraph_t)1;
    const cudaGraphNode_t *dependencies = (const cudaGraphNode_t *)1;
    size_t count = 99;
    RT_OK(cudaStreamGetCaptureInfo_v2(stream, &status, &id, &graph, &dependencies, &count));
    cr_assert_eq(status, cudaStreamCaptureStatusActive);
    cr_assert_neq(id, 0);
    cr_assert_null(graph);
    cr_assert_eq(count, 0);
    RT_OK(cudaStreamGetCaptureInfo(stream, &status, &legacy_id));
    cr_assert_eq(legacy_id, id);
    RT_OK(cudaStreamGetCaptureInfo_v3(stream, &status, &v3_id, NULL, NULL, NULL, NULL));
    cr_assert_eq(v3_id, id);
    cudaGraph_t captured;
    RT_OK(cudaStreamEndCapture(stream, &captured));
    RT_OK(cudaStreamGetCaptureInfo_v2_ptsz(stream, &status, NULL, NULL, NULL, NULL));
    cr_assert_eq(status, cudaStreamCaptureStatusNone);
    RT_OK(cudaGraphDestroy(captured));
    RT_OK(cudaStreamDestroy(stream));
}

Test(cuda12, advice_and_prefetch_take_a_device_ordinal)
{
    start();
    void *managed = NULL;
    RT_OK(cudaMallocManaged(&managed, 4096, cudaMemAttachGlobal));
    RT_OK(cudaMemAdvise(managed, 4096, cudaMemAdviseSetReadMostly, 0));
    RT_OK(cudaMemAdvise(managed, 4096, cudaMemAdviseSetPreferredLocation, cudaCpuDeviceId));
    RT_OK(cudaMemPrefetchAsync(managed, 4096, 0, NULL));
    struct cudaMemLocation location = {.type = cudaMemLocationTypeDevice, .id = 0};
    RT_OK(cudaMemPrefetchAsync_v2(managed, 4096, location, 0, NULL));
    RT_OK(cudaMemAdvise_v2(managed, 4096, cudaMemAdviseSetReadMostly, location));
    cr_assert_eq(cudaMemPrefetchAsync(NULL, 4096, 0, NULL), cudaErrorInvalidValue);
    RT_OK(cudaFree(managed));
}

Test(cuda12, exports_are_cuda_12s_in_node_libcudart_so_12)
{
    cr_assert_not_null(dlvsym(RTLD_DEFAULT, "cudaGetDeviceProperties_v2", "libcudart.so.12"));
    cr_assert_not_null(dlvsym(RTLD_DEFAULT, "cudaStreamGetCaptureInfo_v2", "libcudart.so.12"));
    cr_assert_not_null(dlvsym(RTLD_DEFAULT, "cudaMalloc", "libcudart.so.12"));
    cr_assert_null(dlsym(RTLD_DEFAULT, "cudaGetDeviceProperties"),
                   "CUDA 12's legacy call fills CUDA 11's layout: not served");
    cr_assert_null(dlsym(RTLD_DEFAULT, "cudaGetDriverEntryPointByVersion"), "CUDA 12.5's");
    cr_assert_null(dlsym(RTLD_DEFAULT, "simcudart13_cudaMemAdvise"),
                   "the CUDA 13 forms stay local");
}
