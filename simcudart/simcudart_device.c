/* Devices: implicit initialisation (cuInit and one retained primary context per device), the
 * per-thread current device, device queries and properties. */
#include "simcudart_internal.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* simcuda's device limit; the real runtime has none this small, but simcuda has 8. */
#define SIMCUDART__MAX_DEVICES 64

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static CUresult init_result = CUDA_ERROR_NOT_INITIALIZED;
static int device_count;
static pthread_mutex_t context_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext primary[SIMCUDART__MAX_DEVICES];
static _Thread_local int current_device;
static unsigned device_flags; /* cudaSetDeviceFlags; cudaDeviceMapHost always holds */

static void init_driver(void)
{
    init_result = cuInit(0);
    if (init_result == CUDA_SUCCESS && cuDeviceGetCount(&device_count) != CUDA_SUCCESS)
        device_count = 0;
    if (device_count > SIMCUDART__MAX_DEVICES)
        device_count = SIMCUDART__MAX_DEVICES;
}

int simcudart__device_count(void)
{
    pthread_once(&init_once, init_driver);
    return init_result == CUDA_SUCCESS ? device_count : 0;
}

int simcudart__current_device(void)
{
    return current_device;
}

/* The device's primary context, retained the first time it is asked for. */
static cudaError_t primary_context(int device, CUcontext *out)
{
    cudaError_t error = cudaSuccess;
    pthread_once(&init_once, init_driver);
    if (init_result != CUDA_SUCCESS)
        return init_result == CUDA_ERROR_NO_DEVICE ? cudaErrorNoDevice
                                                   : simcudart__from_driver(init_result);
    if (device < 0 || device >= device_count)
        return cudaErrorInvalidDevice;
    pthread_mutex_lock(&context_lock);
    if (!primary[device]) {
        CUdevice handle;
        CUresult result = cuDeviceGet(&handle, device);
        if (result == CUDA_SUCCESS)
            result = cuDevicePrimaryCtxRetain(&primary[device], handle);
        error = simcudart__from_driver(result);
    }
    *out = primary[device];
    pthread_mutex_unlock(&context_lock);
    return error;
}

cudaError_t simcudart__enter(void)
{
    CUcontext context = NULL, current = NULL;
    cudaError_t error = primary_context(current_device, &context);
    if (error != cudaSuccess)
        return error;
    if (cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == context)
        return cudaSuccess;
    return simcudart__from_driver(cuCtxSetCurrent(context));
}

cudaError_t cudaGetDeviceCount(int *count)
{
    if (!count)
        return simcudart__result(cudaErrorInvalidValue);
    *count = simcudart__device_count();
    return simcudart__result(*count ? cudaSuccess : cudaErrorNoDevice);
}

cudaError_t cudaGetDevice(int *device)
{
    if (!device)
        return simcudart__result(cudaErrorInvalidValue);
    *device = current_device;
    return cudaSuccess;
}

/* As the runtime since CUDA 12: selecting a device also initialises its primary context. */
cudaError_t cudaSetDevice(int device)
{
    if (simcudart__device_count() == 0)
        return simcudart__result(cudaErrorNoDevice);
    if (device < 0 || device >= simcudart__device_count())
        return simcudart__result(cudaErrorInvalidDevice);
    current_device = device;
    return simcudart__result(simcudart__enter());
}

cudaError_t cudaDeviceSynchronize(void)
{
    cudaError_t error = simcudart__enter();
    if (error != cudaSuccess)
        return simcudart__result(error);
    return simcudart__driver_result(cuCtxSynchronize());
}

cudaError_t cudaDriverGetVersion(int *version)
{
    if (!version)
        return simcudart__result(cudaErrorInvalidValue);
    return simcudart__driver_result(cuDriverGetVersion(version));
}

cudaError_t cudaRuntimeGetVersion(int *version)
{
    if (!version)
        return simcudart__result(cudaErrorInvalidValue);
    *version = SIMCUDART_RUNTIME_VERSION;
    return cudaSuccess;
}

/* cudaDeviceAttr and CUdevice_attribute share their numbers. */
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    CUdevice handle;
    if (!value)
        return simcudart__result(cudaErrorInvalidValue);
    if (device < 0 || device >= simcudart__device_count())
        return simcudart__result(cudaErrorInvalidDevice);
    CUresult result = cuDeviceGet(&handle, device);
    if (result == CUDA_SUCCESS)
        result = cuDeviceGetAttribute(value, (CUdevice_attribute)attr, handle);
    return simcudart__driver_result(result);
}

/* Fields of cudaDeviceProp read from one driver attribute each. */
#define SIMCUDART_PROPERTIES(X)                                                        \
    X(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)                             \
    X(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)                             \
    X(multiProcessorCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)                   \
    X(warpSize, CU_DEVICE_ATTRIBUTE_WARP_SIZE)                                         \
    X(maxThreadsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)                   \
    X(pciBusID, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)                                        \
    X(pciDeviceID, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)                                  \
    X(pciDomainID, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)                                  \
    X(unifiedAddressing, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING)                       \
    X(managedMemory, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)                               \
    X(concurrentManagedAccess, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)          \
    X(memoryPoolsSupported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)                \
    X(integrated, CU_DEVICE_ATTRIBUTE_INTEGRATED)                                      \
    X(canMapHostMemory, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY)                       \
    X(maxThreadsPerMultiProcessor, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR) \
    X(regsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)                       \
    X(concurrentKernels, CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS)                       \
    X(asyncEngineCount, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT)                        \
    X(memoryBusWidth, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)                     \
    X(l2CacheSize, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)                                  \
    X(maxThreadsDim[0], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)                           \
    X(maxThreadsDim[1], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)                           \
    X(maxThreadsDim[2], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)                           \
    X(maxGridSize[0], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)                              \
    X(maxGridSize[1], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)                              \
    X(maxGridSize[2], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    CUdevice handle;
    size_t total = 0;
    if (!prop)
        return simcudart__result(cudaErrorInvalidValue);
    if (device < 0 || device >= simcudart__device_count())
        return simcudart__result(cudaErrorInvalidDevice);
    memset(prop, 0, sizeof(*prop));
    CUresult result = cuDeviceGet(&handle, device);
    if (result == CUDA_SUCCESS)
        result = cuDeviceGetName(prop->name, sizeof(prop->name), handle);
    if (result == CUDA_SUCCESS)
        result = cuDeviceTotalMem(&total, handle);
    prop->totalGlobalMem = total;
    prop->sharedMemPerBlock = 49152;
    prop->totalConstMem = 65536;
    SIMCUDART_PROPERTIES(SIMCUDART_READ_ATTRIBUTE)
    return simcudart__driver_result(result);
}

/* The range of an H100 (simcuda's streams take any priority). */
cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest)
{
    if (least)
        *least = 0;
    if (greatest)
        *greatest = -5;
    return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int *can_access, int device, int peer)
{
    if (!can_access)
        return simcudart__result(cudaErrorInvalidValue);
    if (device < 0 || device >= simcudart__device_count() || peer < 0 ||
        peer >= simcudart__device_count())
        return simcudart__result(cudaErrorInvalidDevice);
    *can_access = 0;
    return cudaSuccess;
}

/* simcuda has no peer access. */
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags)
{
    return simcudart__result(cudaErrorPeerAccessUnsupported);
}

/* cudaDriverEntryPointQueryResult and CUdriverProcAddressQueryResult share their numbers, and so
 * do the flags: the lookup is the driver's cuGetProcAddress, as in the real runtime, so a
 * tracer that answers cuGetProcAddress hands out its own functions here too. */
cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
                                             unsigned int cudaVersion, unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *driverStatus)
{
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (!symbol || !funcPtr)
        return simcudart__result(cudaErrorInvalidValue);
    pthread_once(&init_once, init_driver);
    CUresult result = cuGetProcAddress(symbol, funcPtr, (int)cudaVersion, flags, &status);
    if (driverStatus)
        *driverStatus = (enum cudaDriverEntryPointQueryResult)status;
    if (result == CUDA_SUCCESS && status != CU_GET_PROC_ADDRESS_SUCCESS)
        return simcudart__result(cudaErrorSymbolNotFound);
    return simcudart__driver_result(result);
}

/* The runtime's own version picks the variant, as the real runtime does. */
cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                    enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return cudaGetDriverEntryPointByVersion(symbol, funcPtr, SIMCUDART_RUNTIME_VERSION, flags,
                                            driverStatus);
}

cudaError_t cudaSetDeviceFlags(unsigned int flags)
{
    if (flags & ~(unsigned)(cudaDeviceScheduleMask | cudaDeviceMapHost | cudaDeviceLmemResizeToMax |
                            cudaDeviceSyncMemops))
        return simcudart__result(cudaErrorInvalidValue);
    device_flags = flags;
    return simcudart__result(simcudart__enter());
}

cudaError_t cudaGetDeviceFlags(unsigned int *flags)
{
    if (!flags)
        return simcudart__result(cudaErrorInvalidValue);
    *flags = device_flags | cudaDeviceMapHost;
    return cudaSuccess;
}

/* Releases nothing: the primary context (and with it every allocation) stays, so a program that
 * resets and goes on keeps running; what it freed it freed itself, as the trace shows. */
cudaError_t cudaDeviceReset(void)
{
    cudaError_t error = simcudart__enter();
    if (error != cudaSuccess)
        return simcudart__result(error);
    return simcudart__driver_result(cuCtxSynchronize());
}

cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device)
{
    int bus = 0;
    if (!pciBusId || len <= 0)
        return simcudart__result(cudaErrorInvalidValue);
    cudaError_t error = cudaDeviceGetAttribute(&bus, cudaDevAttrPciBusId, device);
    if (error == cudaSuccess)
        snprintf(pciBusId, (size_t)len, "0000:%02x:00.0", bus);
    return error;
}

cudaError_t cudaDeviceGetLimit(size_t *value, enum cudaLimit limit)
{
    if (!value)
        return simcudart__result(cudaErrorInvalidValue);
    *value = limit == cudaLimitStackSize ? 1024 : limit == cudaLimitMallocHeapSize ? 8 << 20 : 0;
    return cudaSuccess;
}

cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value)
{
    return cudaSuccess;
}

cudaError_t cudaChooseDevice(int *device, const struct cudaDeviceProp *prop)
{
    if (!device || !prop)
        return simcudart__result(cudaErrorInvalidValue);
    *device = 0;
    return simcudart__device_count() ? cudaSuccess : simcudart__result(cudaErrorNoDevice);
}
