/* Streams (driver streams; a cudaStream_t is a CUstream, as in the real runtime) and events.
 * No work ever runs on simcuda, so every stream is always idle and an event is a host token
 * that is complete as soon as it is recorded; it keeps the host time of its last record. */
#include "simcudart_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

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
    return cudaSuccess;
}

cudaError_t cudaStreamGetPriority(cudaStream_t stream, int *priority)
{
    if (!priority)
        return simcudart__result(cudaErrorInvalidValue);
    *priority = 0;
    return cudaSuccess;
}

/* Graphs are not simulated: no stream is ever capturing. */
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *status)
{
    if (!status)
        return simcudart__result(cudaErrorInvalidValue);
    *status = cudaStreamCaptureStatusNone;
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

#define SIMCUDART__EVENT_MAGIC 0x53494d45u /* "SIME" */

/* cudaEvent_t points to this host token. */
struct CUevent_st {
    uint32_t magic;
    unsigned flags;
    bool recorded;
    struct timespec time;
};

static bool valid_event(cudaEvent_t event)
{
    return event && event->magic == SIMCUDART__EVENT_MAGIC;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    if (!event || (flags & ~(unsigned)(cudaEventBlockingSync | cudaEventDisableTiming |
                                       cudaEventInterprocess)))
        return simcudart__result(cudaErrorInvalidValue);
    SIMCUDART_ENTER();
    struct CUevent_st *token = calloc(1, sizeof(*token));
    if (!token)
        return simcudart__result(cudaErrorMemoryAllocation);
    token->magic = SIMCUDART__EVENT_MAGIC;
    token->flags = flags;
    *event = token;
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    if (!valid_event(event))
        return simcudart__result(cudaErrorInvalidResourceHandle);
    event->magic = 0;
    free(event);
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    if (!valid_event(event))
        return simcudart__result(cudaErrorInvalidResourceHandle);
    event->recorded = true;
    clock_gettime(CLOCK_MONOTONIC, &event->time);
    return cudaSuccess;
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags)
{
    return cudaEventRecord(event, stream);
}

cudaError_t cudaEventQuery(cudaEvent_t event)
{
    return valid_event(event) ? cudaSuccess : simcudart__result(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    return cudaEventQuery(event);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    return cudaEventQuery(event);
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    if (!ms)
        return simcudart__result(cudaErrorInvalidValue);
    if (!valid_event(start) || !valid_event(end))
        return simcudart__result(cudaErrorInvalidResourceHandle);
    if (((start->flags | end->flags) & cudaEventDisableTiming) || !start->recorded ||
        !end->recorded)
        return simcudart__result(cudaErrorInvalidResourceHandle);
    double seconds = (double)(end->time.tv_sec - start->time.tv_sec) +
                     (double)(end->time.tv_nsec - start->time.tv_nsec) * 1e-9;
    *ms = (float)(seconds * 1e3);
    return cudaSuccess;
}
