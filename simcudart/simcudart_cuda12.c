/* The CUDA 12 entry points of libcudart.so.12 (the CUDA 12 build only; simcudart_abi12.h
 * renames the CUDA 13 forms they replace): CUDA 12.4's device properties, capture query,
 * advice and prefetch, each calling the CUDA 13 function that does the work. */
#include "simcudart_cuda12.h"

#include <stddef.h>
#include <string.h>

/* The fields CUDA 12.4's and CUDA 13's struct cudaDeviceProp share, by name (all of 13's but
 * those it added after unifiedFunctionPointers, and reserved). */
/* clang-format off */
#define SIMCUDART12_SHARED_FIELDS(X)                                                          \
    X(name) X(uuid) X(luid) X(luidDeviceNodeMask) X(totalGlobalMem) X(sharedMemPerBlock)      \
    X(regsPerBlock) X(warpSize) X(memPitch) X(maxThreadsPerBlock) X(maxThreadsDim)            \
    X(maxGridSize) X(totalConstMem) X(major) X(minor) X(textureAlignment)                     \
    X(texturePitchAlignment) X(multiProcessorCount) X(integrated) X(canMapHostMemory)         \
    X(maxTexture1D) X(maxTexture1DMipmap) X(maxTexture2D) X(maxTexture2DMipmap)               \
    X(maxTexture2DLinear) X(maxTexture2DGather) X(maxTexture3D) X(maxTexture3DAlt)            \
    X(maxTextureCubemap) X(maxTexture1DLayered) X(maxTexture2DLayered)                        \
    X(maxTextureCubemapLayered) X(maxSurface1D) X(maxSurface2D) X(maxSurface3D)               \
    X(maxSurface1DLayered) X(maxSurface2DLayered) X(maxSurfaceCubemap)                        \
    X(maxSurfaceCubemapLayered) X(surfaceAlignment) X(concurrentKernels) X(ECCEnabled)        \
    X(pciBusID) X(pciDeviceID) X(pciDomainID) X(tccDriver) X(asyncEngineCount)                \
    X(unifiedAddressing) X(memoryBusWidth) X(l2CacheSize) X(persistingL2CacheMaxSize)         \
    X(maxThreadsPerMultiProcessor) X(streamPrioritiesSupported) X(globalL1CacheSupported)     \
    X(localL1CacheSupported) X(sharedMemPerMultiprocessor) X(regsPerMultiprocessor)           \
    X(managedMemory) X(isMultiGpuBoard) X(multiGpuBoardGroupID) X(hostNativeAtomicSupported)  \
    X(pageableMemoryAccess) X(concurrentManagedAccess) X(computePreemptionSupported)          \
    X(canUseHostPointerForRegisteredMem) X(cooperativeLaunch) X(sharedMemPerBlockOptin)       \
    X(pageableMemoryAccessUsesHostPageTables) X(directManagedMemAccessFromHost)               \
    X(maxBlocksPerMultiProcessor) X(accessPolicyMaxWindowSize) X(reservedSharedMemPerBlock)   \
    X(hostRegisterSupported) X(sparseCudaArraySupported) X(hostRegisterReadOnlySupported)     \
    X(timelineSemaphoreInteropSupported) X(memoryPoolsSupported) X(gpuDirectRDMASupported)    \
    X(gpuDirectRDMAFlushWritesOptions) X(gpuDirectRDMAWritesOrdering)                         \
    X(memoryPoolSupportedHandleTypes) X(deferredMappingCudaArraySupported)                    \
    X(ipcEventSupported) X(clusterLaunch) X(unifiedFunctionPointers)

/* The CUDA 12 fields CUDA 13 dropped, from the driver attribute each one reads. */
#define SIMCUDART12_ONLY_FIELDS(X)                                                            \
    X(clockRate, CU_DEVICE_ATTRIBUTE_CLOCK_RATE)                                              \
    X(deviceOverlap, CU_DEVICE_ATTRIBUTE_GPU_OVERLAP)                                         \
    X(kernelExecTimeoutEnabled, CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT)                      \
    X(computeMode, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE)                                          \
    X(maxTexture1DLinear, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH)                 \
    X(memoryClockRate, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)                                 \
    X(singleToDoublePrecisionPerfRatio, CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO) \
    X(cooperativeMultiDeviceLaunch, CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH)
/* clang-format on */

/* CUDA 12.4's layout, as its driver_types.h gives it on x86-64. */
_Static_assert(sizeof(struct simcudart12_device_prop) == 1032, "CUDA 12.4's cudaDeviceProp");
_Static_assert(offsetof(struct simcudart12_device_prop, multiProcessorCount) == 388,
               "CUDA 12.4's cudaDeviceProp");
_Static_assert(offsetof(struct simcudart12_device_prop, unifiedFunctionPointers) == 776,
               "CUDA 12.4's cudaDeviceProp");

#define SIMCUDART12__SAME_SIZE(field)                                      \
    _Static_assert(sizeof(((struct simcudart12_device_prop *)0)->field) == \
                       sizeof(((struct cudaDeviceProp *)0)->field),        \
                   #field " has one type in CUDA 12 and 13");
SIMCUDART12_SHARED_FIELDS(SIMCUDART12__SAME_SIZE)
#undef SIMCUDART12__SAME_SIZE

cudaError_t cudaGetDeviceProperties_v2(struct simcudart12_device_prop *prop, int device)
{
    struct cudaDeviceProp current;
    if (!prop)
        return simcudart__result(cudaErrorInvalidValue);
    cudaError_t error = simcudart13_cudaGetDeviceProperties(&current, device);
    if (error != cudaSuccess)
        return error;
    memset(prop, 0, sizeof(*prop));
#define SIMCUDART12__COPY(field) memcpy(&prop->field, &current.field, sizeof(prop->field));
    SIMCUDART12_SHARED_FIELDS(SIMCUDART12__COPY)
#undef SIMCUDART12__COPY
    CUdevice handle;
    CUresult result = cuDeviceGet(&handle, device);
    SIMCUDART12_ONLY_FIELDS(SIMCUDART_READ_ATTRIBUTE)
    return simcudart__driver_result(result);
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream,
                                     enum cudaStreamCaptureStatus *captureStatus_out,
                                     unsigned long long *id_out)
{
    return simcudart13_cudaStreamGetCaptureInfo(stream, captureStatus_out, id_out, NULL, NULL, NULL,
                                                NULL);
}

SIMCUDART_PER_THREAD(cudaStreamGetCaptureInfo, cudaStreamGetCaptureInfo_ptsz,
                     (cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
                      unsigned long long *id_out),
                     (stream, captureStatus_out, id_out))

cudaError_t cudaStreamGetCaptureInfo_v2(cudaStream_t stream,
                                        enum cudaStreamCaptureStatus *captureStatus_out,
                                        unsigned long long *id_out, cudaGraph_t *graph_out,
                                        const cudaGraphNode_t **dependencies_out,
                                        size_t *numDependencies_out)
{
    return simcudart13_cudaStreamGetCaptureInfo(stream, captureStatus_out, id_out, graph_out,
                                                dependencies_out, NULL, numDependencies_out);
}

SIMCUDART_PER_THREAD(cudaStreamGetCaptureInfo_v2, cudaStreamGetCaptureInfo_v2_ptsz,
                     (cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
                      unsigned long long *id_out, cudaGraph_t *graph_out,
                      const cudaGraphNode_t **dependencies_out, size_t *numDependencies_out),
                     (stream, captureStatus_out, id_out, graph_out, dependencies_out,
                      numDependencies_out))

cudaError_t cudaStreamGetCaptureInfo_v3(cudaStream_t stream, enum cudaStreamCaptureStatus *status,
                                        unsigned long long *id, cudaGraph_t *graph,
                                        const cudaGraphNode_t **dependencies,
                                        const cudaGraphEdgeData **edges, size_t *count)
{
    return simcudart13_cudaStreamGetCaptureInfo(stream, status, id, graph, dependencies, edges,
                                                count);
}

SIMCUDART_PER_THREAD(cudaStreamGetCaptureInfo_v3, cudaStreamGetCaptureInfo_v3_ptsz,
                     (cudaStream_t stream, enum cudaStreamCaptureStatus *status,
                      unsigned long long *id, cudaGraph_t *graph,
                      const cudaGraphNode_t **dependencies, const cudaGraphEdgeData **edges,
                      size_t *count),
                     (stream, status, id, graph, dependencies, edges, count))

/* CUDA 12's device ordinal as a location: cudaCpuDeviceId (-1) is the host. */
static struct cudaMemLocation location_of(int device)
{
    struct cudaMemLocation location = {0};
    location.type = device == cudaCpuDeviceId ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
    location.id = device == cudaCpuDeviceId ? 0 : device;
    return location;
}

cudaError_t cudaMemAdvise(const void *devPtr, size_t count, enum cudaMemoryAdvise advice,
                          int device)
{
    return simcudart13_cudaMemAdvise(devPtr, count, advice, location_of(device));
}

cudaError_t cudaMemAdvise_v2(const void *devPtr, size_t count, enum cudaMemoryAdvise advice,
                             struct cudaMemLocation location)
{
    return simcudart13_cudaMemAdvise(devPtr, count, advice, location);
}

cudaError_t cudaMemPrefetchAsync(const void *devPtr, size_t count, int dstDevice,
                                 cudaStream_t stream)
{
    return simcudart13_cudaMemPrefetchAsync(devPtr, count, location_of(dstDevice), 0, stream);
}

SIMCUDART_PER_THREAD(cudaMemPrefetchAsync, cudaMemPrefetchAsync_ptsz,
                     (const void *devPtr, size_t count, int dstDevice, cudaStream_t stream),
                     (devPtr, count, dstDevice, stream))

cudaError_t cudaMemPrefetchAsync_v2(const void *devPtr, size_t count,
                                    struct cudaMemLocation location, unsigned int flags,
                                    cudaStream_t stream)
{
    return simcudart13_cudaMemPrefetchAsync(devPtr, count, location, flags, stream);
}

SIMCUDART_PER_THREAD(cudaMemPrefetchAsync_v2, cudaMemPrefetchAsync_v2_ptsz,
                     (const void *devPtr, size_t count, struct cudaMemLocation location,
                      unsigned int flags, cudaStream_t stream),
                     (devPtr, count, location, flags, stream))
