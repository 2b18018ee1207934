/* gpu_alloc.cu — the CUDA program tests/gpu/run.sh records on a real GPU.
 *
 * Runtime API: cudaMalloc/cudaFree, cudaMallocAsync/cudaFreeAsync on a stream; driver API
 * (linked symbols, -lcuda): a VMM sequence cuMemCreate → cuMemAddressReserve → cuMemMap →
 * cuMemSetAccess → cuMemUnmap → cuMemRelease → cuMemAddressFree; then a deliberate OOM: a
 * cudaMalloc of 1 GiB more than the device has. Prints one "gpu_alloc: key=value" line per
 * fact the checker compares with the trace, and exits non-zero if a step did not behave. */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>

static int failures;

#define RT(call)                                                                              \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            fprintf(stderr, "gpu_alloc: %s failed: %s\n", #call, cudaGetErrorString(e_));     \
            failures++;                                                                       \
        }                                                                                     \
    } while (0)

#define DRV(call)                                                                             \
    do {                                                                                      \
        CUresult r_ = (call);                                                                 \
        if (r_ != CUDA_SUCCESS) {                                                             \
            const char *s_ = "?";                                                             \
            cuGetErrorString(r_, &s_);                                                        \
            fprintf(stderr, "gpu_alloc: %s failed: %d %s\n", #call, (int)r_, s_);             \
            failures++;                                                                       \
        }                                                                                     \
    } while (0)

/* noinline so the recorded stacks name these functions (checked after symbolization). */
static __attribute__((noinline)) void runtime_allocations(void)
{
    const size_t sizes[] = {1 << 20, 64 << 20, 256 << 20};
    void *p[3] = {0};
    for (int i = 0; i < 3; i++) {
        RT(cudaMalloc(&p[i], sizes[i]));
        printf("gpu_alloc: cudaMalloc size=%zu ptr=%llu\n", sizes[i], (unsigned long long)(uintptr_t)p[i]);
    }
    for (int i = 0; i < 3; i++)
        RT(cudaFree(p[i]));
}

static __attribute__((noinline)) void stream_ordered_allocations(void)
{
    cudaStream_t s;
    RT(cudaStreamCreate(&s));
    void *a = 0, *b = 0;
    RT(cudaMallocAsync(&a, 16 << 20, s));
    RT(cudaMallocAsync(&b, 32 << 20, s));
    RT(cudaFreeAsync(a, s));
    RT(cudaFreeAsync(b, s));
    RT(cudaStreamSynchronize(s));
    RT(cudaStreamDestroy(s));
    printf("gpu_alloc: cudaMallocAsync sizes=16777216,33554432\n");
}

static __attribute__((noinline)) void vmm_sequence(void)
{
    CUdevice dev;
    DRV(cuDeviceGet(&dev, 0));
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    size_t gran = 0;
    DRV(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    if (!gran)
        gran = 2 << 20;
    size_t size = 4 * gran;
    CUmemGenericAllocationHandle h = 0;
    CUdeviceptr va = 0;
    DRV(cuMemCreate(&h, size, &prop, 0));
    DRV(cuMemAddressReserve(&va, size, 0, 0, 0));
    DRV(cuMemMap(va, size, 0, h, 0));
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    DRV(cuMemSetAccess(va, size, &access, 1));
    DRV(cuMemUnmap(va, size));
    DRV(cuMemRelease(h));
    DRV(cuMemAddressFree(va, size));
    printf("gpu_alloc: vmm size=%zu va=%llu\n", size, (unsigned long long)va);
}

static __attribute__((noinline)) void deliberate_oom(void)
{
    size_t free = 0, total = 0;
    RT(cudaMemGetInfo(&free, &total));
    size_t want = total + ((size_t)1 << 30);
    void *p = 0;
    cudaError_t e = cudaMalloc(&p, want);
    (void)cudaGetLastError(); /* clear the sticky-free error state for what follows */
    printf("gpu_alloc: oom size=%zu error=%d\n", want, (int)e);
    if (e != cudaErrorMemoryAllocation) {
        fprintf(stderr, "gpu_alloc: expected cudaErrorMemoryAllocation, got %d\n", (int)e);
        failures++;
        if (e == cudaSuccess)
            cudaFree(p);
    }
}

int main(void)
{
    RT(cudaSetDevice(0));
    RT(cudaFree(0)); /* creates the primary context */
    runtime_allocations();
    stream_ordered_allocations();
    vmm_sequence();
    deliberate_oom();
    printf("gpu_alloc: failures=%d\n", failures);
    return failures ? 1 : 0;
}
