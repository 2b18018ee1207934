/* What nvcc-generated host code calls (fat binary and symbol registration, launch
 * configuration, kernel handles, launches) and the runtime's function and symbol calls.
 *
 * No kernel ever runs on simcuda: a launch checks its kernel and stream and returns
 * cudaSuccess, so the program goes on and frees its memory (its results are then wrong). The
 * fat binary is never loaded. A __device__ variable is its host shadow, which nvcc registers:
 * cudaMemcpyToSymbol and cudaMemcpyFromSymbol copy to and from it, and cudaGetSymbolAddress
 * gives its host address (a "device" pointer simcuda treats as host memory). A __managed__
 * variable gets managed memory from the driver at its registration. The prototypes of the
 * __cuda* calls are in simcudart_nvcc.h. */
#include "simcudart_internal.h"
#include "simcudart_nvcc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A registered kernel or variable, keyed by its host address. The list only grows (programs
 * register a few dozen at start-up); a record's address is the kernel's cudaKernel_t. */
struct CUkern_st {
    const void *host;
    const char *name;
    size_t size; /* variables: bytes of the host shadow; kernels: 0 */
    bool variable;
    struct CUkern_st *next;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUkern_st *registry;

static void registry_add(const void *host, const char *name, size_t size, bool variable)
{
    struct CUkern_st *entry = calloc(1, sizeof(*entry));
    if (!entry)
        return; /* its launches then fail with cudaErrorInvalidDeviceFunction */
    *entry = (struct CUkern_st){.host = host, .name = name, .size = size, .variable = variable};
    pthread_mutex_lock(&registry_lock);
    entry->next = registry;
    registry = entry;
    pthread_mutex_unlock(&registry_lock);
}

static struct CUkern_st *registry_find(const void *host, bool variable)
{
    pthread_mutex_lock(&registry_lock);
    struct CUkern_st *entry = registry;
    while (entry && (entry->host != host || entry->variable != variable))
        entry = entry->next;
    pthread_mutex_unlock(&registry_lock);
    return entry;
}

/* The handle is only ever given back to the calls below. */
void **__cudaRegisterFatBinary(void *fatCubin)
{
    static void *handle;
    return &handle;
}

void __cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
}

void __cudaUnregisterFatBinary(void **fatCubinHandle)
{
}

char __cudaInitModule(void **fatCubinHandle)
{
    return 1;
}

void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                            const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
                            dim3 *bDim, dim3 *gDim, int *wSize)
{
    registry_add(hostFun, deviceName, 0, false);
}

void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                       const char *deviceName, int ext, size_t size, int constant, int global)
{
    registry_add(hostVar, deviceName, size, true);
}

void __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress, char *deviceAddress,
                              const char *deviceName, int ext, size_t size, int constant,
                              int global)
{
    if (hostVarPtrAddress &&
        cudaMallocManaged(hostVarPtrAddress, size, cudaMemAttachGlobal) == cudaSuccess)
        registry_add(*hostVarPtrAddress, deviceName, size, true);
}

/* The <<<...>>> configuration, one per thread between push and pop. */
static _Thread_local struct {
    dim3 grid, block;
    size_t shared;
    cudaStream_t stream;
} configuration;

unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                     struct CUstream_st *stream)
{
    configuration.grid = gridDim;
    configuration.block = blockDim;
    configuration.shared = sharedMem;
    configuration.stream = stream;
    return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                       void *stream)
{
    *gridDim = configuration.grid;
    *blockDim = configuration.block;
    *sharedMem = configuration.shared;
    *(cudaStream_t *)stream = configuration.stream;
    return cudaSuccess;
}

cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *function)
{
    struct CUkern_st *entry = registry_find(function, false);
    if (!kernel || !entry)
        return simcudart__result(cudaErrorInvalidDeviceFunction);
    *kernel = entry;
    return cudaSuccess;
}

/* Checks what a launch can check and runs nothing. */
static cudaError_t launch(bool known, dim3 grid, dim3 block, cudaStream_t stream)
{
    SIMCUDART_ENTER();
    if (!known)
        return simcudart__result(cudaErrorInvalidDeviceFunction);
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0 ||
        (uint64_t)block.x * block.y * block.z > 1024)
        return simcudart__result(cudaErrorInvalidConfiguration);
    return simcudart__driver_result(cuStreamQuery(stream));
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                               size_t sharedMem, cudaStream_t stream)
{
    return launch(kernel != NULL, gridDim, blockDim, stream);
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                    size_t sharedMem, cudaStream_t stream)
{
    return launch(kernel != NULL, gridDim, blockDim, stream);
}

cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                             size_t sharedMem, cudaStream_t stream)
{
    return launch(registry_find(func, false) != NULL, gridDim, blockDim, stream);
}

/* The launch attributes (cluster shape, priority, ...) change nothing where no kernel runs. */
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args)
{
    if (!config)
        return simcudart__result(cudaErrorInvalidValue);
    return launch(registry_find(func, false) != NULL, config->gridDim, config->blockDim,
                  config->stream);
}

cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                        size_t sharedMem, cudaStream_t stream)
{
    return cudaLaunchKernel(func, gridDim, blockDim, args, sharedMem, stream);
}

/* Runs now, on the calling thread (streams never hold work). */
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    SIMCUDART_ENTER();
    return simcudart__driver_result(cuLaunchHostFunc(stream, fn, userData));
}

/* A kernel as the device limits allow: no registers, no static shared memory. */
cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func)
{
    if (!attr)
        return simcudart__result(cudaErrorInvalidValue);
    if (!registry_find(func, false))
        return simcudart__result(cudaErrorInvalidDeviceFunction);
    memset(attr, 0, sizeof(*attr));
    attr->maxThreadsPerBlock = 1024;
    attr->ptxVersion = 90;
    attr->binaryVersion = 90;
    attr->maxDynamicSharedSizeBytes = 49152;
    return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value)
{
    return registry_find(func, false) ? cudaSuccess
                                      : simcudart__result(cudaErrorInvalidDeviceFunction);
}

cudaError_t cudaFuncSetCacheConfig(const void *func, enum cudaFuncCache cacheConfig)
{
    return registry_find(func, false) ? cudaSuccess
                                      : simcudart__result(cudaErrorInvalidDeviceFunction);
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, const void *func,
                                                                   int blockSize,
                                                                   size_t dynamicSMemSize,
                                                                   unsigned int flags)
{
    if (!numBlocks || blockSize <= 0)
        return simcudart__result(cudaErrorInvalidValue);
    if (!registry_find(func, false))
        return simcudart__result(cudaErrorInvalidDeviceFunction);
    *numBlocks = blockSize > 1024 ? 0 : 2048 / blockSize;
    return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, const void *func,
                                                          int blockSize, size_t dynamicSMemSize)
{
    return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize,
                                                                  dynamicSMemSize, 0);
}

/* The registered host shadow of symbol, checked against [offset, offset + count). */
static cudaError_t symbol_bytes(const void *symbol, size_t count, size_t offset, char **out)
{
    struct CUkern_st *entry = registry_find(symbol, true);
    if (!entry)
        return simcudart__result(cudaErrorInvalidSymbol);
    if (offset > entry->size || entry->size - offset < count)
        return simcudart__result(cudaErrorInvalidValue);
    *out = (char *)entry->host + offset;
    return cudaSuccess;
}

cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset,
                               enum cudaMemcpyKind kind)
{
    char *bytes = NULL;
    cudaError_t error = symbol_bytes(symbol, count, offset, &bytes);
    if (error != cudaSuccess)
        return error;
    return cudaMemcpy(bytes, src, count,
                      kind == cudaMemcpyHostToDevice ? cudaMemcpyHostToHost : cudaMemcpyDefault);
}

cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset,
                                 enum cudaMemcpyKind kind)
{
    char *bytes = NULL;
    cudaError_t error = symbol_bytes(symbol, count, offset, &bytes);
    if (error != cudaSuccess)
        return error;
    return cudaMemcpy(dst, bytes, count,
                      kind == cudaMemcpyDeviceToHost ? cudaMemcpyHostToHost : cudaMemcpyDefault);
}

cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t count,
                                    size_t offset, enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return cudaMemcpyToSymbol(symbol, src, count, offset, kind);
}

cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol, size_t count, size_t offset,
                                      enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return cudaMemcpyFromSymbol(dst, symbol, count, offset, kind);
}

cudaError_t cudaGetSymbolAddress(void **devPtr, const void *symbol)
{
    char *bytes = NULL;
    if (!devPtr)
        return simcudart__result(cudaErrorInvalidValue);
    cudaError_t error = symbol_bytes(symbol, 0, 0, &bytes);
    if (error == cudaSuccess)
        *devPtr = bytes;
    return error;
}

cudaError_t cudaGetSymbolSize(size_t *size, const void *symbol)
{
    struct CUkern_st *entry = registry_find(symbol, true);
    if (!size)
        return simcudart__result(cudaErrorInvalidValue);
    if (!entry)
        return simcudart__result(cudaErrorInvalidSymbol);
    *size = entry->size;
    return cudaSuccess;
}
