/* The CUDA 12 build of simcudart (libcudart.so.12, SIMCUDART_CUDA_MAJOR 12): the exports whose
 * CUDA 13 form, the one the toolkit's header declares and every other source is written
 * against, means something else under the same name in CUDA 12 (another signature, another
 * struct layout, or no such call in CUDA 12.4). simcudart_internal.h includes this file before
 * the toolkit's headers, so each is declared and defined as simcudart13_<name>: an internal
 * function (the version script exports only cuda* and __cuda*) that simcudart_cuda12.c calls
 * from the CUDA 12 function it defines under the exported name.
 *
 * Adding a call to simcudart: when its CUDA 12.4 declaration differs from the toolkit's (or
 * CUDA 12.4 has no such call), list it here and give simcudart_cuda12.c its CUDA 12 form. */
#ifndef SIMCUDART_ABI12_H
#define SIMCUDART_ABI12_H

/* CUDA 13's struct cudaDeviceProp; CUDA 12's is cudaGetDeviceProperties_v2's (the legacy
 * cudaGetDeviceProperties fills CUDA 11's layout, which simcudart does not serve). */
#define cudaGetDeviceProperties simcudart13_cudaGetDeviceProperties
/* CUDA 13: a struct cudaMemLocation; CUDA 12: a device ordinal (the location is _v2's). */
#define cudaMemAdvise simcudart13_cudaMemAdvise
#define cudaMemPrefetchAsync simcudart13_cudaMemPrefetchAsync
#define cudaMemPrefetchAsync_ptsz simcudart13_cudaMemPrefetchAsync_ptsz
/* CUDA 13: seven parameters with edge data; CUDA 12: three (_v2: six, _v3: CUDA 13's seven). */
#define cudaStreamGetCaptureInfo simcudart13_cudaStreamGetCaptureInfo
#define cudaStreamGetCaptureInfo_ptsz simcudart13_cudaStreamGetCaptureInfo_ptsz
/* CUDA 12.5's; not in 12.4. */
#define cudaGetDriverEntryPointByVersion simcudart13_cudaGetDriverEntryPointByVersion
#define cudaGetDriverEntryPointByVersion_ptsz simcudart13_cudaGetDriverEntryPointByVersion_ptsz

#endif /* SIMCUDART_ABI12_H */
