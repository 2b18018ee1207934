/* The per-thread-default-stream variants (`_ptds`, `_ptsz`) that a program built with
 * `nvcc --default-stream per-thread` calls, each with its legacy-stream function's type (as
 * the runtime header declares them) and calling that function. simcuda's streams never hold
 * work, so the two behave the same: only the stream a trace records differs (0 where the real
 * runtime would pass the per-thread stream). */
#include "simcudart_internal.h"

/* Deprecated in the header, still exported by the real runtime. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

SIMCUDART_PER_THREAD(cudaEventRecord, cudaEventRecord_ptsz,
                     (cudaEvent_t event, cudaStream_t stream), (event, stream))
SIMCUDART_PER_THREAD(cudaEventRecordWithFlags, cudaEventRecordWithFlags_ptsz,
                     (cudaEvent_t event, cudaStream_t stream, unsigned int flags),
                     (event, stream, flags))
SIMCUDART_PER_THREAD(cudaFreeAsync, cudaFreeAsync_ptsz, (void *devPtr, cudaStream_t hStream),
                     (devPtr, hStream))
SIMCUDART_PER_THREAD(cudaGetDriverEntryPoint, cudaGetDriverEntryPoint_ptsz,
                     (const char *symbol, void **funcPtr, unsigned long long flags,
                      enum cudaDriverEntryPointQueryResult *driverStatus),
                     (symbol, funcPtr, flags, driverStatus))
SIMCUDART_PER_THREAD(cudaGetDriverEntryPointByVersion, cudaGetDriverEntryPointByVersion_ptsz,
                     (const char *symbol, void **funcPtr, unsigned int cudaVersion,
                      unsigned long long flags, enum cudaDriverEntryPointQueryResult *driverStatus),
                     (symbol, funcPtr, cudaVersion, flags, driverStatus))
SIMCUDART_PER_THREAD(cudaGraphLaunch, cudaGraphLaunch_ptsz,
                     (cudaGraphExec_t graphExec, cudaStream_t stream), (graphExec, stream))
SIMCUDART_PER_THREAD(cudaLaunchCooperativeKernel, cudaLaunchCooperativeKernel_ptsz,
                     (const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                      cudaStream_t stream),
                     (func, gridDim, blockDim, args, sharedMem, stream))
SIMCUDART_PER_THREAD(cudaLaunchHostFunc, cudaLaunchHostFunc_ptsz,
                     (cudaStream_t stream, cudaHostFn_t fn, void *userData), (stream, fn, userData))
SIMCUDART_PER_THREAD(cudaLaunchKernelExC, cudaLaunchKernelExC_ptsz,
                     (const cudaLaunchConfig_t *config, const void *func, void **args),
                     (config, func, args))
SIMCUDART_PER_THREAD(cudaLaunchKernel, cudaLaunchKernel_ptsz,
                     (const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                      cudaStream_t stream),
                     (func, gridDim, blockDim, args, sharedMem, stream))
SIMCUDART_PER_THREAD(cudaMallocAsync, cudaMallocAsync_ptsz,
                     (void **devPtr, size_t size, cudaStream_t hStream), (devPtr, size, hStream))
SIMCUDART_PER_THREAD(cudaMallocFromPoolAsync, cudaMallocFromPoolAsync_ptsz,
                     (void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream),
                     (ptr, size, memPool, stream))
SIMCUDART_PER_THREAD(cudaMemPrefetchAsync, cudaMemPrefetchAsync_ptsz,
                     (const void *devPtr, size_t count, struct cudaMemLocation location,
                      unsigned int flags, cudaStream_t stream),
                     (devPtr, count, location, flags, stream))
SIMCUDART_PER_THREAD(cudaMemcpy, cudaMemcpy_ptds,
                     (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind),
                     (dst, src, count, kind))
SIMCUDART_PER_THREAD(cudaMemcpy2D, cudaMemcpy2D_ptds,
                     (void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                      size_t height, enum cudaMemcpyKind kind),
                     (dst, dpitch, src, spitch, width, height, kind))
SIMCUDART_PER_THREAD(cudaMemcpy2DAsync, cudaMemcpy2DAsync_ptsz,
                     (void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                      size_t height, enum cudaMemcpyKind kind, cudaStream_t stream),
                     (dst, dpitch, src, spitch, width, height, kind, stream))
SIMCUDART_PER_THREAD(cudaMemcpy3D, cudaMemcpy3D_ptds, (const struct cudaMemcpy3DParms *p), (p))
SIMCUDART_PER_THREAD(cudaMemcpy3DAsync, cudaMemcpy3DAsync_ptsz,
                     (const struct cudaMemcpy3DParms *p, cudaStream_t stream), (p, stream))
SIMCUDART_PER_THREAD(cudaMemcpyAsync, cudaMemcpyAsync_ptsz,
                     (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                      cudaStream_t stream),
                     (dst, src, count, kind, stream))
SIMCUDART_PER_THREAD(cudaMemcpyFromSymbol, cudaMemcpyFromSymbol_ptds,
                     (void *dst, const void *symbol, size_t count, size_t offset,
                      enum cudaMemcpyKind kind),
                     (dst, symbol, count, offset, kind))
SIMCUDART_PER_THREAD(cudaMemcpyFromSymbolAsync, cudaMemcpyFromSymbolAsync_ptsz,
                     (void *dst, const void *symbol, size_t count, size_t offset,
                      enum cudaMemcpyKind kind, cudaStream_t stream),
                     (dst, symbol, count, offset, kind, stream))
SIMCUDART_PER_THREAD(cudaMemcpyToSymbol, cudaMemcpyToSymbol_ptds,
                     (const void *symbol, const void *src, size_t count, size_t offset,
                      enum cudaMemcpyKind kind),
                     (symbol, src, count, offset, kind))
SIMCUDART_PER_THREAD(cudaMemcpyToSymbolAsync, cudaMemcpyToSymbolAsync_ptsz,
                     (const void *symbol, const void *src, size_t count, size_t offset,
                      enum cudaMemcpyKind kind, cudaStream_t stream),
                     (symbol, src, count, offset, kind, stream))
SIMCUDART_PER_THREAD(cudaMemset, cudaMemset_ptds, (void *devPtr, int value, size_t count),
                     (devPtr, value, count))
SIMCUDART_PER_THREAD(cudaMemset2D, cudaMemset2D_ptds,
                     (void *devPtr, size_t pitch, int value, size_t width, size_t height),
                     (devPtr, pitch, value, width, height))
SIMCUDART_PER_THREAD(cudaMemset2DAsync, cudaMemset2DAsync_ptsz,
                     (void *devPtr, size_t pitch, int value, size_t width, size_t height,
                      cudaStream_t stream),
                     (devPtr, pitch, value, width, height, stream))
SIMCUDART_PER_THREAD(cudaMemset3D, cudaMemset3D_ptds,
                     (struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent),
                     (pitchedDevPtr, value, extent))
SIMCUDART_PER_THREAD(cudaMemset3DAsync, cudaMemset3DAsync_ptsz,
                     (struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent,
                      cudaStream_t stream),
                     (pitchedDevPtr, value, extent, stream))
SIMCUDART_PER_THREAD(cudaMemsetAsync, cudaMemsetAsync_ptsz,
                     (void *devPtr, int value, size_t count, cudaStream_t stream),
                     (devPtr, value, count, stream))
SIMCUDART_PER_THREAD(cudaStreamAttachMemAsync, cudaStreamAttachMemAsync_ptsz,
                     (cudaStream_t stream, void *devPtr, size_t length, unsigned int flags),
                     (stream, devPtr, length, flags))
SIMCUDART_PER_THREAD(cudaStreamBeginCapture, cudaStreamBeginCapture_ptsz,
                     (cudaStream_t stream, enum cudaStreamCaptureMode mode), (stream, mode))
SIMCUDART_PER_THREAD(cudaStreamEndCapture, cudaStreamEndCapture_ptsz,
                     (cudaStream_t stream, cudaGraph_t *pGraph), (stream, pGraph))
SIMCUDART_PER_THREAD(cudaStreamGetCaptureInfo, cudaStreamGetCaptureInfo_ptsz,
                     (cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
                      unsigned long long *id_out, cudaGraph_t *graph_out,
                      const cudaGraphNode_t **dependencies_out,
                      const cudaGraphEdgeData **edgeData_out, size_t *numDependencies_out),
                     (stream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                      numDependencies_out))
SIMCUDART_PER_THREAD(cudaStreamGetFlags, cudaStreamGetFlags_ptsz,
                     (cudaStream_t hStream, unsigned int *flags), (hStream, flags))
SIMCUDART_PER_THREAD(cudaStreamGetPriority, cudaStreamGetPriority_ptsz,
                     (cudaStream_t hStream, int *priority), (hStream, priority))
SIMCUDART_PER_THREAD(cudaStreamIsCapturing, cudaStreamIsCapturing_ptsz,
                     (cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus),
                     (stream, pCaptureStatus))
SIMCUDART_PER_THREAD(cudaStreamQuery, cudaStreamQuery_ptsz, (cudaStream_t stream), (stream))
SIMCUDART_PER_THREAD(cudaStreamSynchronize, cudaStreamSynchronize_ptsz, (cudaStream_t stream),
                     (stream))
SIMCUDART_PER_THREAD(cudaStreamWaitEvent, cudaStreamWaitEvent_ptsz,
                     (cudaStream_t stream, cudaEvent_t event, unsigned int flags),
                     (stream, event, flags))
