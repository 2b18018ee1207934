/* Modules, functions, launches and occupancy. No code is ever loaded or run: a module is a
 * handle whose every function name resolves to one placeholder function, a launch checks its
 * function and stream and runs nothing, and the occupancy calls answer from the device's
 * limits (1024 threads a block, 2048 a multiprocessor) as if no kernel used shared memory or
 * registers beyond what the caller names; function attributes likewise. JIT linking (cuLink*)
 * and tensor maps (cuTensorMapEncodeTiled) are CUDA_ERROR_NOT_SUPPORTED. */
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

/* Cooperative launches check what cuLaunchKernel checks (no kernel runs). */
SIMCUDA_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
    unsigned int sharedMemBytes, CUstream hStream, void **kernelParams)
{
    return launch_kernel(f, hStream);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
    unsigned int sharedMemBytes, CUstream hStream, void **kernelParams)
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
#define SIMCUDA__SHARED_PER_BLOCK 49152
#define SIMCUDA__SHARED_OPTIN 232448 /* an H100's cudaDevAttrMaxSharedMemoryPerBlockOptin */

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

/* A function's attributes as simcudart's cudaFuncGetAttributes gives them: a kernel as the device
 * limits allow, with no registers and no static memory (nothing was compiled). */
SIMCUDA_EXPORT CUresult CUDAAPI cuFuncGetAttribute(int *pi, CUfunction_attribute attrib,
                                                   CUfunction hfunc)
{
    CUresult result = function_ok(hfunc);
    if (result == CUDA_SUCCESS && (!pi || (int)attrib < 0 || attrib >= CU_FUNC_ATTRIBUTE_MAX))
        result = CUDA_ERROR_INVALID_VALUE;
    if (result != CUDA_SUCCESS)
        return result;
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = SIMCUDA__MAX_BLOCK; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 90; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = SIMCUDA__SHARED_PER_BLOCK; break;
    default: *pi = 0; break;
    }
    return CUDA_SUCCESS;
}

/* Accepted for a valid function and attribute (no kernel runs, so none is held to it), except
 * dynamic shared memory beyond what an H100 block may opt in to. */
SIMCUDA_EXPORT CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib,
                                                   int value)
{
    CUresult result = function_ok(hfunc);
    if (result == CUDA_SUCCESS && ((int)attrib < 0 || attrib >= CU_FUNC_ATTRIBUTE_MAX || value < 0))
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS && attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES &&
        value > SIMCUDA__SHARED_OPTIN)
        result = CUDA_ERROR_INVALID_VALUE;
    return result;
}

/* JIT linking and tensor maps need compiled code and a device that runs it: refused. */
static CUresult not_supported(void)
{
    CUresult result = simcuda__require_init();
    return result != CUDA_SUCCESS ? result : CUDA_ERROR_NOT_SUPPORTED;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuLinkCreate(unsigned int numOptions, CUjit_option *options,
                                             void **optionValues, CUlinkState *stateOut)
{
    return not_supported();
}

SIMCUDA_EXPORT CUresult CUDAAPI cuLinkCreate_v2(unsigned int numOptions, CUjit_option *options,
                                                void **optionValues, CUlinkState *stateOut)
{
    return not_supported();
}

SIMCUDA_EXPORT CUresult CUDAAPI cuLinkAddData(CUlinkState state, CUjitInputType type, void *data,
                                              size_t size, const char *name,
                                              unsigned int numOptions, CUjit_option *options,
                                              void **optionValues)
{
    return not_supported();
}

SIMCUDA_EXPORT CUresult CUDAAPI cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void *data,
                                                 size_t size, const char *name,
                                                 unsigned int numOptions, CUjit_option *options,
                                                 void **optionValues)
{
    return not_supported();
}

SIMCUDA_EXPORT CUresult CUDAAPI cuLinkAddFile(CUlinkState state, CUjitInputType type,
                                              const char *path, unsigned int numOptions,
                                              CUjit_option *options, void **optionValues)
{
    return not_supported();
}

SIMCUDA_EXPORT CUresult CUDAAPI cuLinkAddFile_v2(CUlinkState state, CUjitInputType type,
                                                 const char *path, unsigned int numOptions,
                                                 CUjit_option *options, void **optionValues)
{
    return not_supported();
}

SIMCUDA_EXPORT CUresult CUDAAPI cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut)
{
    return not_supported();
}

SIMCUDA_EXPORT CUresult CUDAAPI cuLinkDestroy(CUlinkState state)
{
    return not_supported();
}

SIMCUDA_EXPORT CUresult CUDAAPI cuTensorMapEncodeTiled(
    CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
    void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
    const cuuint32_t *boxDim, const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill)
{
    return not_supported();
}
