/* The CUDA 12 entry points of simcudart's libcudart.so.12 whose form the toolkit's (CUDA 13)
 * header does not declare, with CUDA 12.4's struct cudaDeviceProp, written from CUDA 12.4's
 * runtime API documentation (the field order of "cudaDeviceProp Struct Reference"). Only the
 * CUDA 12 build compiles simcudart_cuda12.c, which defines them. */
#ifndef SIMCUDART_CUDA12_H
#define SIMCUDART_CUDA12_H

#include "simcudart_internal.h"

/* From here on, the names simcudart_abi12.h gave to the CUDA 13 forms are CUDA 12's again. */
#undef cudaGetDeviceProperties
#undef cudaMemAdvise
#undef cudaMemPrefetchAsync
#undef cudaMemPrefetchAsync_ptsz
#undef cudaStreamGetCaptureInfo
#undef cudaStreamGetCaptureInfo_ptsz
#undef cudaGetDriverEntryPointByVersion
#undef cudaGetDriverEntryPointByVersion_ptsz

/* CUDA 12.4's struct cudaDeviceProp (1032 bytes on x86-64), which cudaGetDeviceProperties_v2
 * fills. Its differences from CUDA 13's: clockRate, deviceOverlap, kernelExecTimeoutEnabled,
 * computeMode, maxTexture1DLinear, memoryClockRate, singleToDoublePrecisionPerfRatio and
 * cooperativeMultiDeviceLaunch are there, and the fields CUDA 13 added after
 * unifiedFunctionPointers (deviceNumaConfig ... hostNumaMultinodeIpcSupported) are not. */
struct simcudart12_device_prop {
    char name[256];
    cudaUUID_t uuid;
    char luid[8];
    unsigned int luidDeviceNodeMask;
    size_t totalGlobalMem;
    size_t sharedMemPerBlock;
    int regsPerBlock;
    int warpSize;
    size_t memPitch;
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    int clockRate;
    size_t totalConstMem;
    int major;
    int minor;
    size_t textureAlignment;
    size_t texturePitchAlignment;
    int deviceOverlap;
    int multiProcessorCount;
    int kernelExecTimeoutEnabled;
    int integrated;
    int canMapHostMemory;
    int computeMode;
    int maxTexture1D;
    int maxTexture1DMipmap;
    int maxTexture1DLinear;
    int maxTexture2D[2];
    int maxTexture2DMipmap[2];
    int maxTexture2DLinear[3];
    int maxTexture2DGather[2];
    int maxTexture3D[3];
    int maxTexture3DAlt[3];
    int maxTextureCubemap;
    int maxTexture1DLayered[2];
    int maxTexture2DLayered[3];
    int maxTextureCubemapLayered[2];
    int maxSurface1D;
    int maxSurface2D[2];
    int maxSurface3D[3];
    int maxSurface1DLayered[2];
    int maxSurface2DLayered[3];
    int maxSurfaceCubemap;
    int maxSurfaceCubemapLayered[2];
    size_t surfaceAlignment;
    int concurrentKernels;
    int ECCEnabled;
    int pciBusID;
    int pciDeviceID;
    int pciDomainID;
    int tccDriver;
    int asyncEngineCount;
    int unifiedAddressing;
    int memoryClockRate;
    int memoryBusWidth;
    int l2CacheSize;
    int persistingL2CacheMaxSize;
    int maxThreadsPerMultiProcessor;
    int streamPrioritiesSupported;
    int globalL1CacheSupported;
    int localL1CacheSupported;
    size_t sharedMemPerMultiprocessor;
    int regsPerMultiprocessor;
    int managedMemory;
    int isMultiGpuBoard;
    int multiGpuBoardGroupID;
    int hostNativeAtomicSupported;
    int singleToDoublePrecisionPerfRatio;
    int pageableMemoryAccess;
    int concurrentManagedAccess;
    int computePreemptionSupported;
    int canUseHostPointerForRegisteredMem;
    int cooperativeLaunch;
    int cooperativeMultiDeviceLaunch;
    size_t sharedMemPerBlockOptin;
    int pageableMemoryAccessUsesHostPageTables;
    int directManagedMemAccessFromHost;
    int maxBlocksPerMultiProcessor;
    int accessPolicyMaxWindowSize;
    size_t reservedSharedMemPerBlock;
    int hostRegisterSupported;
    int sparseCudaArraySupported;
    int hostRegisterReadOnlySupported;
    int timelineSemaphoreInteropSupported;
    int memoryPoolsSupported;
    int gpuDirectRDMASupported;
    unsigned int gpuDirectRDMAFlushWritesOptions;
    int gpuDirectRDMAWritesOrdering;
    unsigned int memoryPoolSupportedHandleTypes;
    int deferredMappingCudaArraySupported;
    int ipcEventSupported;
    int clusterLaunch;
    int unifiedFunctionPointers;
    int reserved2[2];
    int reserved1[1];
    int reserved[60];
};

/* Fills prop (CUDA 12.4's layout) for device: every field CUDA 13's cudaGetDeviceProperties
 * fills, and the CUDA 12 fields from the driver's attributes.
 * @return cudaSuccess, cudaErrorInvalidValue (prop NULL), cudaErrorInvalidDevice. */
cudaError_t cudaGetDeviceProperties_v2(struct simcudart12_device_prop *prop, int device);

/* CUDA 12's three-parameter capture query: the capture status and id of stream. Each _ptsz
 * variant (the per-thread default stream) behaves as its function. */
cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream,
                                     enum cudaStreamCaptureStatus *captureStatus_out,
                                     unsigned long long *id_out);
__typeof__(cudaStreamGetCaptureInfo) cudaStreamGetCaptureInfo_ptsz;
/* CUDA 12's six-parameter query (no edge data); graph and dependencies as CUDA 13's gives
 * them (simcudart_graph.c). */
cudaError_t cudaStreamGetCaptureInfo_v2(cudaStream_t stream,
                                        enum cudaStreamCaptureStatus *captureStatus_out,
                                        unsigned long long *id_out, cudaGraph_t *graph_out,
                                        const cudaGraphNode_t **dependencies_out,
                                        size_t *numDependencies_out);
__typeof__(cudaStreamGetCaptureInfo_v2) cudaStreamGetCaptureInfo_v2_ptsz;
/* CUDA 12.3's edge-data query: CUDA 13's cudaStreamGetCaptureInfo under its CUDA 12 name. */
__typeof__(simcudart13_cudaStreamGetCaptureInfo) cudaStreamGetCaptureInfo_v3;
__typeof__(simcudart13_cudaStreamGetCaptureInfo) cudaStreamGetCaptureInfo_v3_ptsz;

/* CUDA 12's advice and prefetch take a device ordinal (cudaCpuDeviceId for the host); their
 * _v2 take CUDA 13's location and flags. */
cudaError_t cudaMemAdvise(const void *devPtr, size_t count, enum cudaMemoryAdvise advice,
                          int device);
__typeof__(simcudart13_cudaMemAdvise) cudaMemAdvise_v2;
cudaError_t cudaMemPrefetchAsync(const void *devPtr, size_t count, int dstDevice,
                                 cudaStream_t stream);
__typeof__(cudaMemPrefetchAsync) cudaMemPrefetchAsync_ptsz;
__typeof__(simcudart13_cudaMemPrefetchAsync) cudaMemPrefetchAsync_v2;
__typeof__(simcudart13_cudaMemPrefetchAsync) cudaMemPrefetchAsync_v2_ptsz;

#endif /* SIMCUDART_CUDA12_H */
