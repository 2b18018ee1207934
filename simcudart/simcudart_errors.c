/* Errors: the driver-to-runtime mapping, the per-thread last error, and the error strings. */
#include "simcudart_internal.h"

#include <stddef.h>

static _Thread_local cudaError_t last_error = cudaSuccess;

/* The runtime errors simcudart can return, with cudaGetErrorName's and cudaGetErrorString's
 * text. One list: the driver results with the same number map to these. */
#define SIMCUDART_ERRORS(X)                                                                     \
    X(cudaSuccess, "no error")                                                                  \
    X(cudaErrorInvalidValue, "invalid argument")                                                \
    X(cudaErrorMemoryAllocation, "out of memory")                                               \
    X(cudaErrorInitializationError, "initialization error")                                     \
    X(cudaErrorCudartUnloading, "driver shutting down")                                         \
    X(cudaErrorInvalidDevicePointer, "invalid device pointer")                                  \
    X(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy")                     \
    X(cudaErrorInvalidConfiguration, "invalid configuration argument")                          \
    X(cudaErrorInvalidPitchValue, "invalid pitch argument")                                     \
    X(cudaErrorInvalidSymbol, "invalid device symbol")                                          \
    X(cudaErrorInvalidDeviceFunction, "invalid device function")                                \
    X(cudaErrorFileNotFound, "file not found")                                                  \
    X(cudaErrorOperatingSystem, "OS call failed or operation not supported on this OS")         \
    X(cudaErrorIllegalState, "the operation cannot be performed in the present state")          \
    X(cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing")    \
    X(cudaErrorStreamCaptureInvalidated,                                                        \
      "operation failed due to a previous error during capture")                                \
    X(cudaErrorHostMemoryAlreadyRegistered,                                                     \
      "part or all of the requested memory range is already mapped")                            \
    X(cudaErrorHostMemoryNotRegistered,                                                         \
      "pointer does not correspond to a registered memory region")                              \
    X(cudaErrorNoDevice, "no CUDA-capable device is detected")                                  \
    X(cudaErrorInvalidDevice, "invalid device ordinal")                                         \
    X(cudaErrorDeviceUninitialized, "invalid device context")                                   \
    X(cudaErrorInvalidResourceHandle, "invalid resource handle")                                \
    X(cudaErrorSymbolNotFound, "named symbol not found")                                        \
    X(cudaErrorNotReady, "device not ready")                                                    \
    X(cudaErrorPeerAccessUnsupported, "peer access is not supported between these two devices") \
    X(cudaErrorNotSupported, "operation not supported")                                         \
    X(cudaErrorUnknown, "unknown error")

cudaError_t simcudart__from_driver(CUresult result)
{
    switch ((int)result) {
#define SIMCUDART__SAME(name, text) \
    case name: return name;
        SIMCUDART_ERRORS(SIMCUDART__SAME)
#undef SIMCUDART__SAME
    default: return cudaErrorUnknown;
    }
}

cudaError_t simcudart__result(cudaError_t error)
{
    if (error != cudaSuccess)
        last_error = error;
    return error;
}

cudaError_t simcudart__driver_result(CUresult result)
{
    return simcudart__result(simcudart__from_driver(result));
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t error = last_error;
    last_error = cudaSuccess;
    return error;
}

cudaError_t cudaPeekAtLastError(void)
{
    return last_error;
}

const char *cudaGetErrorName(cudaError_t error)
{
    switch (error) {
#define SIMCUDART__NAME(name, text) \
    case name: return #name;
        SIMCUDART_ERRORS(SIMCUDART__NAME)
#undef SIMCUDART__NAME
    default: return "cudaErrorUnknown";
    }
}

const char *cudaGetErrorString(cudaError_t error)
{
    switch (error) {
#define SIMCUDART__TEXT(name, text) \
    case name: return text;
        SIMCUDART_ERRORS(SIMCUDART__TEXT)
#undef SIMCUDART__TEXT
    default: return "unrecognized error code";
    }
}
