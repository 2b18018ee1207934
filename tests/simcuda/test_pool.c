/* simcuda: memory pools and stream-ordered allocation. */
#include "simcuda_test_util.h"

/* Per-thread-stream variants are only prototyped for per-thread builds. */
CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream);

static uint64_t pool_attribute(CUmemoryPool pool, CUmemPool_attribute attribute)
{
    cuuint64_t value = 0;
    CU_OK(cuMemPoolGetAttribute(pool, attribute, &value));
    return value;
}

Test(pool, freed_blocks_are_retained_until_synchronize)
{
    simcuda_test_start("1GiB", "0");
    CUstream stream;
    CUdeviceptr pointer;
    CU_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemAllocAsync(&pointer, 10 * MiB + 1, stream));
    cr_assert_eq(simcuda_test_free(), 1 * GiB - 12 * MiB);
    CU_OK(cuMemFreeAsync(pointer, stream));
    cr_assert_eq(simcuda_test_free(), 1 * GiB - 12 * MiB, "retained memory still counts");
    CU_FAILS(cuMemFreeAsync(pointer, stream), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamSynchronize(stream));
    cr_assert_eq(simcuda_test_free(), 1 * GiB);
    CU_OK(cuStreamDestroy(stream));
}

Test(pool, context_synchronize_releases_too)
{
    simcuda_test_start("1GiB", "0");
    CUdeviceptr pointer;
    CU_OK(cuMemAllocAsync(&pointer, 4 * MiB, NULL));
    CU_OK(cuMemFreeAsync(pointer, NULL));
    cr_assert_eq(simcuda_test_free(), 1 * GiB - 4 * MiB);
    CU_OK(cuCtxSynchronize());
    cr_assert_eq(simcuda_test_free(), 1 * GiB);
}

Test(pool, release_threshold_and_trim)
{
    simcuda_test_start("1GiB", "0");
    CUmemoryPool pool;
    CUdeviceptr a, b;
    cuuint64_t threshold = 64 * MiB;
    CU_OK(cuDeviceGetDefaultMemPool(&pool, 0));
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
    cr_assert_eq(pool_attribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD), 64 * MiB);
    CU_OK(cuMemAllocAsync(&a, 32 * MiB, NULL));
    CU_OK(cuMemAllocAsync(&b, 48 * MiB, NULL));
    CU_OK(cuMemFreeAsync(a, NULL));
    CU_OK(cuMemFreeAsync(b, NULL));
    cr_assert_eq(pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 80 * MiB);
    cr_assert_eq(pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0);
    /* Reserved memory above the threshold goes back; at most the threshold stays. */
    CU_OK(cuCtxSynchronize());
    cr_assert_leq(pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 64 * MiB);
    cr_assert_gt(pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);
    cr_assert_eq(simcuda_test_free(),
                 1 * GiB - pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT));
    CU_OK(cuMemPoolTrimTo(pool, 0));
    cr_assert_eq(pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);
    cr_assert_eq(simcuda_test_free(), 1 * GiB);
    cr_assert_eq(pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 80 * MiB);
}

Test(pool, retained_blocks_are_reused)
{
    simcuda_test_start("1GiB", "0");
    CUdeviceptr first, second;
    CU_OK(cuMemAllocAsync(&first, 10 * MiB, NULL));
    CU_OK(cuMemFreeAsync(first, NULL));
    CU_OK(cuMemAllocAsync(&second, 8 * MiB, NULL));
    cr_assert_eq(second, first);
    cr_assert_eq(simcuda_test_free(), 1 * GiB - 10 * MiB, "no new pages");
    CUdeviceptr base;
    size_t size;
    CU_OK(cuMemGetAddressRange(&base, &size, second + 1));
    cr_assert_eq(size, 8 * MiB);
}

Test(pool, allocation_trims_retained_memory_before_oom)
{
    simcuda_test_start("1GiB", "0");
    CUmemoryPool pool;
    CUdeviceptr a, b, c;
    cuuint64_t keep_everything = UINT64_MAX;
    CU_OK(cuDeviceGetMemPool(&pool, 0));
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_everything));
    CU_OK(cuMemAllocAsync(&a, 800 * MiB, NULL));
    CU_OK(cuMemFreeAsync(a, NULL));
    CU_OK(cuStreamSynchronize(NULL));
    cr_assert_eq(simcuda_test_free(), 224 * MiB, "kept under the threshold");
    CU_OK(cuMemAllocAsync(&b, 900 * MiB, NULL));
    cr_assert_eq(simcuda_test_free(), 124 * MiB);
    CU_FAILS(cuMemAllocAsync(&c, 200 * MiB, NULL), CUDA_ERROR_OUT_OF_MEMORY);
    CU_FAILS(cuMemAllocAsync(&c, 0, NULL), CUDA_ERROR_INVALID_VALUE);
}

Test(pool, created_pools_and_the_current_pool)
{
    simcuda_test_start("1GiB", "0");
    CUmemoryPool pool, current, default_pool;
    CUmemPoolProps props = {0};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    CU_OK(cuMemPoolCreate(&pool, &props));
    CU_OK(cuDeviceGetDefaultMemPool(&default_pool, 0));
    cr_assert_neq(pool, default_pool);
    CU_OK(cuDeviceSetMemPool(0, pool));
    CU_OK(cuDeviceGetMemPool(&current, 0));
    cr_assert_eq(current, pool);
    CUdeviceptr from_current, from_pool;
    CU_OK(cuMemAllocAsync(&from_current, 2 * MiB, NULL));
    CU_OK(cuMemAllocFromPoolAsync(&from_pool, 2 * MiB, default_pool, NULL));
    cr_assert_eq(pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 2 * MiB);
    cr_assert_eq(pool_attribute(default_pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 2 * MiB);
    CU_OK(cuMemFreeAsync(from_current, NULL));
    CU_OK(cuMemPoolDestroy(pool));
    cr_assert_eq(simcuda_test_free(), 1 * GiB - 2 * MiB, "destroy releases retained memory");
    CU_OK(cuDeviceGetMemPool(&current, 0));
    cr_assert_eq(current, default_pool);
    CU_FAILS(cuMemPoolDestroy(default_pool), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuMemAllocFromPoolAsync(&from_pool, 2 * MiB, pool, NULL), CUDA_ERROR_INVALID_VALUE);
    props.location.type = CU_MEM_LOCATION_TYPE_HOST;
    CU_FAILS(cuMemPoolCreate(&pool, &props), CUDA_ERROR_INVALID_VALUE);
}

Test(pool, per_thread_variants_and_plain_free)
{
    simcuda_test_start("1GiB", "0");
    CUdeviceptr pointer, classic;
    CU_OK(cuMemAllocAsync_ptsz(&pointer, 6 * MiB, CU_STREAM_PER_THREAD));
    CU_OK(cuMemFree(pointer));
    cr_assert_eq(simcuda_test_free(), 1 * GiB - 6 * MiB, "returned to the pool");
    CU_OK(cuStreamSynchronize_ptsz(CU_STREAM_PER_THREAD));
    cr_assert_eq(simcuda_test_free(), 1 * GiB);
    CU_OK(cuMemAlloc(&classic, 4 * MiB));
    CU_OK(cuMemFreeAsync_ptsz(classic, NULL));
    cr_assert_eq(simcuda_test_free(), 1 * GiB);
    CU_FAILS(cuMemFreeAsync(0x99, NULL), CUDA_ERROR_INVALID_VALUE);
}

Test(pool, async_needs_a_context)
{
    CUdeviceptr pointer;
    CU_OK(cuInit(0));
    CU_FAILS(cuMemAllocAsync(&pointer, 1, NULL), CUDA_ERROR_INVALID_CONTEXT);
}

Test(pool, location_based_pools_are_the_device_pools)
{
    simcuda_test_start("1GiB", "0");
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemoryPool pool, def, got;
    CUmemLocation device = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    CUmemLocation host = {.type = CU_MEM_LOCATION_TYPE_HOST, .id = 0};
    CU_OK(cuMemPoolCreate(&pool, &props));
    CU_OK(cuDeviceGetDefaultMemPool(&def, 0));
    CU_OK(cuMemGetDefaultMemPool(&got, &device, CU_MEM_ALLOCATION_TYPE_PINNED));
    cr_assert_eq(got, def);
    CU_OK(cuMemSetMemPool(&device, CU_MEM_ALLOCATION_TYPE_PINNED, pool));
    CU_OK(cuDeviceGetMemPool(&got, 0));
    cr_assert_eq(got, pool, "the location's pool is the device's current pool");
    CU_OK(cuMemGetMemPool(&got, &device, CU_MEM_ALLOCATION_TYPE_PINNED));
    cr_assert_eq(got, pool);
    CU_FAILS(cuMemGetMemPool(&got, &host, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_ERROR_NOT_SUPPORTED);
    CU_FAILS(cuMemSetMemPool(NULL, CU_MEM_ALLOCATION_TYPE_PINNED, pool), CUDA_ERROR_INVALID_VALUE);
    CUmemLocation bad = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 7};
    CU_FAILS(cuMemSetMemPool(&bad, CU_MEM_ALLOCATION_TYPE_PINNED, pool), CUDA_ERROR_INVALID_DEVICE);
}
