/* simcuda: cuGetProcAddress selection by version and flags, and its failure modes. */
#include "simcuda_test_util.h"

#include <dlfcn.h>

/* The exact exported symbol, looked up in the library the test is linked with. */
static void *exported(const char *name)
{
    void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    cr_assert_not_null(library, "libcuda.so.1 is not loaded: %s", dlerror());
    void *symbol = dlsym(library, name);
    cr_assert_not_null(symbol, "%s is not exported", name);
    dlclose(library);
    return symbol;
}

static void *lookup(const char *symbol, int version, cuuint64_t flags,
                    CUdriverProcAddressQueryResult *status)
{
    void *pfn = (void *)0x1;
    cr_assert_eq(cuGetProcAddress(symbol, &pfn, version, flags, status), CUDA_SUCCESS,
                 "cuGetProcAddress(%s, %d, %llu)", symbol, version, (unsigned long long)flags);
    return pfn;
}

Test(getproc, newest_variant_at_or_below_the_version)
{
    cr_assert_eq(lookup("cuMemAlloc", 3020, 0, NULL), exported("cuMemAlloc_v2"));
    cr_assert_eq(lookup("cuMemAlloc", 12000, 0, NULL), exported("cuMemAlloc_v2"));
    cr_assert_eq(lookup("cuMemAlloc", 3010, 0, NULL), exported("cuMemAlloc"));
    cr_assert_eq(lookup("cuMemAlloc", 2000, 0, NULL), exported("cuMemAlloc"));
    cr_assert_eq(lookup("cuCtxCreate", 11040, 0, NULL), exported("cuCtxCreate_v3"));
    cr_assert_eq(lookup("cuCtxCreate", 13000, 0, NULL), exported("cuCtxCreate_v4"));
    cr_assert_eq(lookup("cuDevicePrimaryCtxRelease", 10020, 0, NULL),
                 exported("cuDevicePrimaryCtxRelease"));
    cr_assert_eq(lookup("cuDevicePrimaryCtxRelease", 11000, 0, NULL),
                 exported("cuDevicePrimaryCtxRelease_v2"));
    cr_assert_eq(lookup("cuCtxSynchronize", 12090, 0, NULL), exported("cuCtxSynchronize"));
    cr_assert_eq(lookup("cuCtxSynchronize", 13000, 0, NULL), exported("cuCtxSynchronize_v2"));
}

Test(getproc, per_thread_flag_selects_ptsz_and_ptds)
{
    const cuuint64_t per_thread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    cr_assert_eq(lookup("cuMemAllocAsync", 11020, per_thread, NULL),
                 exported("cuMemAllocAsync_ptsz"));
    cr_assert_eq(lookup("cuMemAllocAsync", 11020, 0, NULL), exported("cuMemAllocAsync"));
    cr_assert_eq(lookup("cuMemAllocAsync", 11020, CU_GET_PROC_ADDRESS_LEGACY_STREAM, NULL),
                 exported("cuMemAllocAsync"));
    cr_assert_eq(lookup("cuMemFreeAsync", 12000, per_thread, NULL),
                 exported("cuMemFreeAsync_ptsz"));
    cr_assert_eq(lookup("cuStreamSynchronize", 7000, per_thread, NULL),
                 exported("cuStreamSynchronize_ptsz"));
    cr_assert_eq(lookup("cuStreamSynchronize", 6050, per_thread, NULL),
                 exported("cuStreamSynchronize"));
    cr_assert_eq(lookup("cuMemcpyHtoD", 12000, per_thread, NULL), exported("cuMemcpyHtoD_v2_ptds"));
    cr_assert_eq(lookup("cuMemcpyHtoD", 6000, per_thread, NULL), exported("cuMemcpyHtoD_v2"));
    /* No per-thread variant exists: the regular one. */
    cr_assert_eq(lookup("cuMemAlloc", 12000, per_thread, NULL), exported("cuMemAlloc_v2"));
}

Test(getproc, not_found_is_success_with_null)
{
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    cr_assert_null(lookup("cuNoSuchFunction", 12000, 0, &status));
    cr_assert_eq(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    cr_assert_null(lookup("cuMemAllocAsync", 11010, 0, &status));
    cr_assert_eq(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    cr_assert_null(lookup("cuMemAllocAsync", 11010, 0, NULL), "NULL status is allowed");
    cr_assert_null(lookup("cuMem", 12000, 0, NULL), "no prefix matching");
    /* libcudart's probe. */
    cr_assert_null(lookup("", 0, 0, &status));
    cr_assert_eq(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    cr_assert_not_null(lookup("cuMemAllocAsync", 11020, 0, &status));
    cr_assert_eq(status, CU_GET_PROC_ADDRESS_SUCCESS);
}

Test(getproc, invalid_arguments)
{
    void *pfn = (void *)0x1;
    CU_FAILS(cuGetProcAddress("cuMemAlloc", &pfn, 13010, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    cr_assert_null(pfn);
    CU_FAILS(cuGetProcAddress(NULL, &pfn, 12000, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuGetProcAddress("cuMemAlloc", NULL, 12000, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuGetProcAddress("cuMemAlloc", &pfn, 12000, 4, NULL), CUDA_ERROR_INVALID_VALUE);
}

Test(getproc, self_lookup_follows_the_version)
{
    cr_assert_eq(lookup("cuGetProcAddress", 12000, 0, NULL), exported("cuGetProcAddress_v2"));
    cr_assert_eq(lookup("cuGetProcAddress", 11030, 0, NULL), exported("cuGetProcAddress"));
    cr_assert_null(lookup("cuGetProcAddress", 11020, 0, NULL));
    /* The v1 entry point applies the same rules. */
    CUresult (*v1)(const char *, void **, int, cuuint64_t) = exported("cuGetProcAddress");
    void *pfn = NULL;
    CU_OK(v1("cuMemAllocAsync", &pfn, 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM));
    cr_assert_eq(pfn, exported("cuMemAllocAsync_ptsz"));
    CU_FAILS(v1("cuInit", &pfn, 20000, 0), CUDA_ERROR_INVALID_VALUE);
}

Test(getproc, resolved_functions_work_before_and_after_init)
{
    CUresult (*init)(unsigned int) = lookup("cuInit", 2000, 0, NULL);
    CUresult (*get_info)(size_t *, size_t *) = lookup("cuMemGetInfo", 3020, 0, NULL);
    cr_assert_eq(init, exported("cuInit"));
    size_t free_bytes, total_bytes;
    CU_FAILS(get_info(&free_bytes, &total_bytes), CUDA_ERROR_NOT_INITIALIZED);
    simcuda_test_start("2GiB", "0");
    CU_OK(get_info(&free_bytes, &total_bytes));
    cr_assert_eq(total_bytes, 2 * GiB);
}

Test(getproc, export_table_is_not_supported)
{
    const void *table = (const void *)0x1;
    CUuuid id = {{0}};
    CU_FAILS(cuGetExportTable(&table, &id), CUDA_ERROR_NOT_SUPPORTED);
    cr_assert_null(table);
}

Test(getproc, legacy_variants_use_32_bit_addresses)
{
    simcuda_test_start("1GiB", "0");
    CUresult (*alloc_v1)(unsigned int *, unsigned int) = lookup("cuMemAlloc", 2000, 0, NULL);
    CUresult (*free_v1)(unsigned int) = lookup("cuMemFree", 2000, 0, NULL);
    CUresult (*info_v1)(unsigned int *, unsigned int *) = lookup("cuMemGetInfo", 2000, 0, NULL);
    unsigned int pointer = 0, free_bytes = 0, total_bytes = 0;
    CU_OK(alloc_v1(&pointer, 3 * MiB));
    cr_assert_eq(pointer, 0x80000000u);
    CU_OK(info_v1(&free_bytes, &total_bytes));
    cr_assert_eq(free_bytes, 1 * GiB - 4 * MiB);
    cr_assert_eq(simcuda_test_free(), 1 * GiB - 4 * MiB);
    CU_FAILS(alloc_v1(&pointer, 256 * MiB + 1), CUDA_ERROR_OUT_OF_MEMORY);
    CU_OK(free_v1(0x80000000u));
    cr_assert_eq(simcuda_test_free(), 1 * GiB);
}
