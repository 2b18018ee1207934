/* simcudart's shared helpers: the error mapping, the last error, the current device and its
 * primary context. Every exported function is a runtime API call from cuda_runtime_api.h, so the
 * compiler checks each signature against NVIDIA's header. */
#ifndef SIMCUDART_INTERNAL_H
#define SIMCUDART_INTERNAL_H

/* The CUDA 12 build (libcudart.so.12) renames the exports whose CUDA 13 form means something
 * else in CUDA 12 before the toolkit's headers declare them (simcudart_abi12.h). */
#if SIMCUDART_CUDA_MAJOR == 12
#include "simcudart_abi12.h"
#endif

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdbool.h>

/* The runtime version simcudart answers with (cudaRuntimeGetVersion): the toolkit's, and for the
 * CUDA 12 build 12.4, the runtime Debian's PyTorch 2.6 is built with. */
#if SIMCUDART_CUDA_MAJOR == 12
#define SIMCUDART_RUNTIME_VERSION 12040
#else
#define SIMCUDART_RUNTIME_VERSION CUDART_VERSION
#endif

/* The runtime error for a driver result: the numbers coincide for the errors simcuda returns,
 * anything else is cudaErrorUnknown. */
cudaError_t simcudart__from_driver(CUresult result);

/* Records error as the thread's last error (unless cudaSuccess) and returns it: every exported
 * call ends with `return simcudart__result(...)`, as the real runtime keeps the last error until
 * cudaGetLastError reads it. */
cudaError_t simcudart__result(cudaError_t error);

/* simcudart__result(simcudart__from_driver(result)). */
cudaError_t simcudart__driver_result(CUresult result);

/* Initialises the driver once (cuInit) and makes the calling thread's current device's primary
 * context current, retaining it the first time. The runtime's implicit initialisation.
 * @return cudaSuccess, or the error of cuInit / cuDevicePrimaryCtxRetain (not recorded). */
cudaError_t simcudart__enter(void);

/* Runs the implicit initialisation; on failure returns from the calling function. */
#define SIMCUDART_ENTER()                             \
    do {                                              \
        cudaError_t enter_error = simcudart__enter(); \
        if (enter_error != cudaSuccess)               \
            return simcudart__result(enter_error);    \
    } while (0)

/* X(field, attribute) for a table of device properties: while `result` is CUDA_SUCCESS, reads
 * the driver attribute of device `handle` into `prop->field` (the caller's variables go by these
 * names). cudaGetDeviceProperties and CUDA 12's cudaGetDeviceProperties_v2 use it. */
#define SIMCUDART_READ_ATTRIBUTE(field, attribute) \
    if (result == CUDA_SUCCESS)                    \
        result = cuDeviceGetAttribute(&prop->field, attribute, handle);

/* Declares variant with name's type (the compiler checks the definition against it) and
 * defines it as a call of name: the per-thread-default-stream variants (`_ptds`, `_ptsz`),
 * which behave as their legacy-stream function on simcuda (simcudart_per_thread.c). */
#define SIMCUDART_PER_THREAD(name, variant, params, args) \
    __typeof__(name) variant;                             \
    cudaError_t variant params                            \
    {                                                     \
        return name args;                                 \
    }

/* The calling thread's current device (0 until cudaSetDevice). */
int simcudart__current_device(void);

/* Number of devices, 0 if the driver cannot start. */
int simcudart__device_count(void);

#endif /* SIMCUDART_INTERNAL_H */
