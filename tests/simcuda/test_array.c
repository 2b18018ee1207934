/* CUDA arrays and mipmapped arrays (simcuda_array.c): the pages they take, their handles. */
#include "simcuda_test_util.h"

Test(array, an_array_takes_the_pages_of_its_texels_until_destroyed)
{
    simcuda_test_start("1GiB", "0");
    size_t before = simcuda_test_free();
    CUarray array;
    /* 1024 × 1024 float4: 16 MiB */
    CUDA_ARRAY_DESCRIPTOR desc = {
        .Width = 1024, .Height = 1024, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4};
    CU_OK(cuArrayCreate(&array, &desc));
    cr_assert_eq(before - simcuda_test_free(), 16 * MiB);
    CU_OK(cuArrayDestroy(array));
    cr_assert_eq(simcuda_test_free(), before);
    CU_FAILS(cuArrayDestroy(array), CUDA_ERROR_INVALID_HANDLE);
}

Test(array, a_3d_array_counts_its_depth_and_a_zero_height_as_one)
{
    simcuda_test_start("1GiB", "0");
    size_t before = simcuda_test_free();
    CUarray volume, line;
    /* 256 × 256 × 33 × 2 bytes: 4.125 MiB, three pages */
    CUDA_ARRAY3D_DESCRIPTOR desc = {
        .Width = 256, .Height = 256, .Depth = 33, .Format = CU_AD_FORMAT_HALF, .NumChannels = 1};
    CU_OK(cuArray3DCreate(&volume, &desc));
    cr_assert_eq(before - simcuda_test_free(), 3 * PAGE);
    CUDA_ARRAY3D_DESCRIPTOR one_d = {
        .Width = 4096, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1};
    CU_OK(cuArray3DCreate(&line, &one_d));
    cr_assert_eq(before - simcuda_test_free(), 4 * PAGE);
    CU_OK(cuArrayDestroy(line));
    CU_OK(cuArrayDestroy(volume));
    cr_assert_eq(simcuda_test_free(), before);
}

Test(array, mip_levels_are_summed_and_handles_are_not_interchangeable)
{
    simcuda_test_start("1GiB", "0");
    size_t before = simcuda_test_free();
    CUmipmappedArray mip;
    /* 2048² × 4 bytes = 16 MiB; + 4 + 1 + ... levels: more than 16 MiB, under 22 MiB */
    CUDA_ARRAY3D_DESCRIPTOR desc = {
        .Width = 2048, .Height = 2048, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 4};
    CU_OK(cuMipmappedArrayCreate(&mip, &desc, 12));
    cr_assert_eq(before - simcuda_test_free(), 11 * PAGE);
    CU_FAILS(cuArrayDestroy((CUarray)(void *)mip), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuMipmappedArrayDestroy(mip));
    cr_assert_eq(simcuda_test_free(), before);
}

Test(array, bad_descriptors_fail_and_a_context_reset_frees_arrays)
{
    simcuda_test_start("1GiB", "0");
    size_t before = simcuda_test_free();
    CUarray array;
    CUDA_ARRAY_DESCRIPTOR empty = {.Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CU_FAILS(cuArrayCreate(&array, &empty), CUDA_ERROR_INVALID_VALUE);
    CUDA_ARRAY_DESCRIPTOR yuv = {
        .Width = 64, .Height = 64, .Format = CU_AD_FORMAT_NV12, .NumChannels = 3};
    CU_FAILS(cuArrayCreate(&array, &yuv), CUDA_ERROR_NOT_SUPPORTED);
    CUDA_ARRAY_DESCRIPTOR huge = {
        .Width = 65536, .Height = 65536, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4};
    CU_FAILS(cuArrayCreate(&array, &huge), CUDA_ERROR_OUT_OF_MEMORY);
    CUDA_ARRAY_DESCRIPTOR small = {
        .Width = 16, .Height = 16, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CU_OK(cuArrayCreate(&array, &small));
    cr_assert_lt(simcuda_test_free(), before);
    CU_OK(cuDevicePrimaryCtxReset(0));
    CUcontext ctx;
    CU_OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CU_OK(cuCtxSetCurrent(ctx));
    cr_assert_eq(simcuda_test_free(), before);
    CU_FAILS(cuArrayDestroy(array), CUDA_ERROR_INVALID_HANDLE);
}
