/* Modules, functions, launches and occupancy. No code is ever loaded or run: a module is a
 * handle whose every function name resolves to one placeholder function, a launch checks its
 * function and stream and runs nothing, and the occupancy calls answer from the device's
 * limits (1024 threads a block, 2048 a multiprocessor) as if no kernel used shared memory or
 * registers beyond what the caller names. */
#include "simcuda_internal.h"

#include <stdio.h>
#include <stdlib.h>

static bool module_valid(const struct CUmod_st *module)
{
    return module && module->magic == SIMCUDA__MODULE_MAGIC && module->alive;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image)
{
    struct CUctx_st *ctx;
    simcuda__lock();
    CUresult result = simcuda__require_context(&ctx);
    if (result == CUDA_SUCCESS && (!module || !image))
        result = CUDA_ERROR_INVALID_VALUE;
    struct CUmod_st *loaded = NULL;
    if (result == CUDA_SUCCESS && !(loaded = calloc(1, sizeof(*loaded))))
        result = CUDA_ERROR_OUT_OF_MEMORY;
    if (result == CUDA_SUCCESS) {
        loaded->magic = SIMCUDA__MODULE_MAGIC;
        loaded->alive = true;
        loaded->function.module = loaded;
        loaded->next_all = simcuda__state.modules;
        simcuda__state.modules = loaded;
        *module = loaded;
    }
    simcuda__unlock();
    return result;
}

/* Every name resolves to the module's one placeholder function. */
SIMCUDA_EXPORT CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod,
                                                    const char *name)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!hfunc || !name)
        return CUDA_ERROR_INVALID_VALUE;
    simcuda__lock();
    if (module_valid(hmod))
        *hfunc = &hmod->function;
    else
        result = CUDA_ERROR_INVALID_HANDLE;
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuModuleUnload(CUmodule hmod)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    simcuda__lock();
    if (module_valid(hmod))
        hmod->alive = false;
    else
        result = CUDA_ERROR_INVALID_HANDLE;
    simcuda__unlock();
    return result;
}

static CUresult launch_kernel(CUfunction f, CUstream hStream)
{
    struct CUctx_st *ctx;
    simcuda__lock();
    CUresult result = simcuda__stream_context(hStream, &ctx);
    if (result == CUDA_SUCCESS && (!f || !module_valid(f->module)))
        result = CUDA_ERROR_INVALID_HANDLE;
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX,
                                               unsigned int gridDimY, unsigned int gridDimZ,
                                               unsigned int blockDimX, unsigned int blockDimY,
                                               unsigned int blockDimZ, unsigned int sharedMemBytes,
                                               CUstream hStream, void **kernelParams, void **extra)
{
    return launch_kernel(f, hStream);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                                    unsigned int gridDimY, unsigned int gridDimZ,
                                                    unsigned int blockDimX, unsigned int blockDimY,
                                                    unsigned int blockDimZ,
                                                    unsigned int sharedMemBytes, CUstream hStream,
                                                    void **kernelParams, void **extra)
{
    return launch_kernel(f, hStream);
}

/* JIT options are accepted and ignored (nothing is compiled); outputs stay as they are. */
SIMCUDA_EXPORT CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image,
                                                   unsigned int numOptions, CUjit_option *options,
                                                   void **optionValues)
{
    if (numOptions > 0 && (!options || !optionValues)) {
        CUresult result = simcuda__require_init();
        return result != CUDA_SUCCESS ? result : CUDA_ERROR_INVALID_VALUE;
    }
    return cuModuleLoadData(module, image);
}

/* The file must exist and be readable; its contents are not looked at. */
SIMCUDA_EXPORT CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *fname)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!fname)
        return CUDA_ERROR_INVALID_VALUE;
    FILE *file = fopen(fname, "rb");
    if (!file)
        return CUDA_ERROR_FILE_NOT_FOUND;
    fclose(file);
    return cuModuleLoadData(module, fname);
}

#define SIMCUDA__MAX_BLOCK 1024
#define SIMCUDA__MAX_THREADS_PER_SM 2048
#define SIMCUDA__MULTIPROCESSORS 132

static CUresult function_ok(CUfunction f)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    simcuda__lock();
    if (!f || !module_valid(f->module))
        result = CUDA_ERROR_INVALID_HANDLE;
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks,
                                                                            CUfunction func,
                                                                            int blockSize,
                                                                            size_t dynamicSMemSize)
{
    CUresult result = function_ok(func);
    if (result == CUDA_SUCCESS && (!numBlocks || blockSize <= 0))
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS)
        *numBlocks = blockSize > SIMCUDA__MAX_BLOCK ? 0 : SIMCUDA__MAX_THREADS_PER_SM / blockSize;
    return result;
}

/* The largest block (a multiple of the warp, within blockSizeLimit) that fills a
 * multiprocessor; minGridSize = blocks a multiprocessor holds x multiprocessors. The callback,
 * if any, is asked for each candidate's shared memory, and its answer is not held against it. */
SIMCUDA_EXPORT CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(
    int *minGridSize, int *blockSize, CUfunction func,
    CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize, int blockSizeLimit)
{
    CUresult result = function_ok(func);
    if (result == CUDA_SUCCESS && (!minGridSize || !blockSize || blockSizeLimit < 0))
        result = CUDA_ERROR_INVALID_VALUE;
    if (result != CUDA_SUCCESS)
        return result;
    int limit = blockSizeLimit == 0 || blockSizeLimit > SIMCUDA__MAX_BLOCK ? SIMCUDA__MAX_BLOCK
                                                                           : blockSizeLimit;
    int best = limit >= 32 ? limit / 32 * 32 : limit;
    if (blockSizeToDynamicSMemSize)
        (void)blockSizeToDynamicSMemSize(best);
    *blockSize = best;
    *minGridSize = SIMCUDA__MAX_THREADS_PER_SM / best * SIMCUDA__MULTIPROCESSORS;
    return CUDA_SUCCESS;
}
