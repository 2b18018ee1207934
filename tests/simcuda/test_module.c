/* Modules, occupancy and the device queries drivers' samples make (simcuda_module.c,
 * simcuda_device.c). */
#include "simcuda_test_util.h"

#include <stdio.h>

static CUfunction some_function(void)
{
    CUmodule module;
    CUfunction function;
    CU_OK(cuModuleLoadDataEx(&module, "image", 0, NULL, NULL));
    CU_OK(cuModuleGetFunction(&function, module, "kernel"));
    return function;
}

static size_t shared_for(int block)
{
    return (size_t)block * 4;
}

Test(module, occupancy_fills_a_multiprocessor)
{
    simcuda_test_start("1GiB", "0");
    CUfunction function = some_function();
    int grid = 0, block = 0, blocks = 0;
    CU_OK(cuOccupancyMaxPotentialBlockSize(&grid, &block, function, shared_for, 0, 0));
    cr_assert_eq(block, 1024);
    cr_assert_eq(grid, 2 * 132);
    CU_OK(cuOccupancyMaxPotentialBlockSize(&grid, &block, function, NULL, 0, 100));
    cr_assert_eq(block, 96, "a multiple of the warp within the limit");
    CU_OK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, function, 256, 0));
    cr_assert_eq(blocks, 8);
    CU_FAILS(cuOccupancyMaxPotentialBlockSize(&grid, &block, NULL, NULL, 0, 0),
             CUDA_ERROR_INVALID_HANDLE);
}

Test(module, load_needs_a_readable_file)
{
    simcuda_test_start("1GiB", "0");
    CUmodule module;
    char path[] = "/tmp/simcuda-module-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    CU_OK(cuModuleLoad(&module, path));
    CU_OK(cuModuleUnload(module));
    remove(path);
    CU_FAILS(cuModuleLoad(&module, path), CUDA_ERROR_FILE_NOT_FOUND);
}

/* Deprecated in the header, still called by NVIDIA's older samples (matrixMulDynlinkJIT). */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

Test(module, compute_capability_and_peers)
{
    setenv("SIMCUDA_DEVICES", "2", 1);
    simcuda_test_start("1GiB", "0");
    int major = 0, minor = -1, can = -1;
    CU_OK(cuDeviceComputeCapability(&major, &minor, 1));
    cr_assert_eq(major, 9);
    cr_assert_eq(minor, 0);
    CU_FAILS(cuDeviceComputeCapability(&major, &minor, 2), CUDA_ERROR_INVALID_DEVICE);
    CU_OK(cuDeviceCanAccessPeer(&can, 0, 1));
    cr_assert_eq(can, 0);
    CUcontext other;
    CU_OK(cuDevicePrimaryCtxRetain(&other, 1));
    CU_FAILS(cuCtxEnablePeerAccess(other, 0), CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
}

Test(module, primary_context_state_follows_retain_and_release)
{
    setenv("SIMCUDA_DEVICES", "2", 1);
    simcuda_test_start("1GiB", "0");
    unsigned int flags = 7;
    int active = -1;
    CU_OK(cuDevicePrimaryCtxGetState(1, &flags, &active));
    cr_assert_eq(flags, 0);
    cr_assert_eq(active, 0, "never retained");
    CUcontext primary;
    CU_OK(cuDevicePrimaryCtxRetain(&primary, 1));
    CU_OK(cuDevicePrimaryCtxGetState(1, &flags, &active));
    cr_assert_eq(active, 1);
    CU_OK(cuDevicePrimaryCtxRelease(1));
    CU_OK(cuDevicePrimaryCtxGetState(1, &flags, &active));
    cr_assert_eq(active, 0, "released by its last reference");
    CU_FAILS(cuDevicePrimaryCtxGetState(2, &flags, &active), CUDA_ERROR_INVALID_DEVICE);
    CU_FAILS(cuDevicePrimaryCtxGetState(0, NULL, &active), CUDA_ERROR_INVALID_VALUE);
}

Test(module, function_attributes_and_cooperative_launch)
{
    simcuda_test_start("1GiB", "0");
    CUfunction function = some_function();
    int value = -1;
    CU_OK(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function));
    cr_assert_eq(value, 1024);
    CU_OK(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_NUM_REGS, function));
    cr_assert_eq(value, 0);
    CU_OK(cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100000));
    CU_FAILS(cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1 << 20),
             CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX, function), CUDA_ERROR_INVALID_VALUE);
    CU_FAILS(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_NUM_REGS, NULL),
             CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuLaunchCooperativeKernel(function, 1, 1, 1, 32, 1, 1, 0, NULL, NULL));
    CU_FAILS(cuLaunchCooperativeKernel(NULL, 1, 1, 1, 32, 1, 1, 0, NULL, NULL),
             CUDA_ERROR_INVALID_HANDLE);
}

Test(module, jit_linking_and_tensor_maps_are_not_supported)
{
    simcuda_test_start("1GiB", "0");
    CUlinkState link = NULL;
    CU_FAILS(cuLinkCreate(0, NULL, NULL, &link), CUDA_ERROR_NOT_SUPPORTED);
    CU_FAILS(cuLinkAddData(link, CU_JIT_INPUT_PTX, "ptx", 3, "k", 0, NULL, NULL),
             CUDA_ERROR_NOT_SUPPORTED);
    CU_FAILS(cuLinkComplete(link, NULL, NULL), CUDA_ERROR_NOT_SUPPORTED);
    CUtensorMap map;
    cuuint64_t dim = 64, stride = 256;
    cuuint32_t box = 16, element = 1;
    CU_FAILS(cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 1, NULL, &dim, &stride,
                                    &box, &element, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                    CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
             CUDA_ERROR_NOT_SUPPORTED);
}
