/* Streams and events: the driver's (a cudaStream_t is a CUstream, a cudaEvent_t a CUevent, as
 * in the real runtime). No work ever runs on simcuda, so every stream is always idle and an
 * event is complete as soon as it is recorded. */
#include "simcudart_internal.h"

#include <cuda_profiler_api.h>

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *stream, unsigned int flags, int priority)
{
    if (!stream)
        return simcudart__result(cudaErrorInvalidValue);
    SIMCUDART_ENTER();
    return simcudart__driver_result(
        cuStreamCreateWithPriority((CUstream *)stream, flags, priority));
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags)
{
    return cudaStreamCreateWithPriority(stream, flags, 0);
}

cudaError_t cudaStreamCreate(cudaStream_t *stream)
{
    return cudaStreamCreateWithPriority(stream, cudaStreamDefault, 0);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    SIMCUDART_ENTER();
    return simcudart__driver_result(cuStreamDestroy((CUstream)stream));
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    SIMCUDART_ENTER();
    return simcudart__driver_result(cuStreamSynchronize((CUstream)stream));
}

cudaError_t cudaStreamQuery(cudaStream_t stream)
{
    SIMCUDART_ENTER();
    return simcudart__driver_result(cuStreamQuery(stream));
}

cudaError_t cudaStreamGetFlags(cudaStream_t stream, unsigned int *flags)
{
    if (!flags)
        return simcudart__result(cudaErrorInvalidValue);
    *flags = cudaStreamDefault;
    return cudaSuccess;
}

cudaError_t cudaStreamGetPriority(cudaStream_t stream, int *priority)
{
    if (!priority)
        return simcudart__result(cudaErrorInvalidValue);
    *priority = 0;
    return cudaSuccess;
}

static _Thread_local enum cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;

cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
    if (!mode)
        return simcudart__result(cudaErrorInvalidValue);
    enum cudaStreamCaptureMode previous = capture_mode;
    capture_mode = *mode;
    *mode = previous;
    return cudaSuccess;
}

/* A cudaEvent_t is the driver's CUevent, as in the real runtime; the flags share their bits. */
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    if (!event)
        return simcudart__result(cudaErrorInvalidValue);
    SIMCUDART_ENTER();
    return simcudart__driver_result(cuEventCreate((CUevent *)event, flags));
}

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    SIMCUDART_ENTER();
    return simcudart__driver_result(cuEventDestroy((CUevent)event));
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    SIMCUDART_ENTER();
    return simcudart__driver_result(cuEventRecord((CUevent)event, stream));
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags)
{
    SIMCUDART_ENTER();
    return simcudart__driver_result(cuEventRecordWithFlags((CUevent)event, stream, flags));
}

cudaError_t cudaEventQuery(cudaEvent_t event)
{
    SIMCUDART_ENTER();
    return simcudart__driver_result(cuEventQuery((CUevent)event));
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    SIMCUDART_ENTER();
    return simcudart__driver_result(cuEventSynchronize((CUevent)event));
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    SIMCUDART_ENTER();
    return simcudart__driver_result(cuStreamWaitEvent(stream, (CUevent)event, flags));
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    SIMCUDART_ENTER();
    return simcudart__driver_result(cuEventElapsedTime(ms, (CUevent)start, (CUevent)end));
}

/* Events are not shared between processes here (simcuda's events are process-local tokens). */
cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t *handle, cudaEvent_t event)
{
    return simcudart__result(cudaErrorNotSupported);
}

cudaError_t cudaIpcOpenEventHandle(cudaEvent_t *event, cudaIpcEventHandle_t handle)
{
    return simcudart__result(cudaErrorNotSupported);
}

/* Nothing is profiled. */
cudaError_t cudaProfilerStart(void)
{
    return cudaSuccess;
}

cudaError_t cudaProfilerStop(void)
{
    return cudaSuccess;
}
