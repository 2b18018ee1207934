/* Events and the stream calls that involve host work or waiting. No work is ever queued on a
 * simcuda stream, so every stream is idle: an event is complete as soon as it is recorded (it
 * keeps the host time of its last record, for cuEventElapsedTime), waits return at once, and a
 * host function or callback runs on the calling thread before the call returns. An event
 * recorded on a capturing stream also joins the streams that wait on it into that capture
 * (simcuda_capture.c). */
#include "simcuda_internal.h"

#include <stdlib.h>
#include <time.h>

#define SIMCUDA__EVENT_MAGIC 0x45564e54u

struct CUevent_st {
    uint32_t magic;
    unsigned flags;
    bool recorded;
    struct timespec time;
    struct simcuda__capture_mark capture; /* its last record's capture (simcuda_capture.c) */
};

__typeof__(cuEventRecord) cuEventRecord_ptsz;
__typeof__(cuEventRecordWithFlags) cuEventRecordWithFlags_ptsz;
__typeof__(cuStreamWaitEvent) cuStreamWaitEvent_ptsz;
__typeof__(cuStreamQuery) cuStreamQuery_ptsz;
__typeof__(cuLaunchHostFunc) cuLaunchHostFunc_ptsz;
__typeof__(cuStreamAddCallback) cuStreamAddCallback_ptsz;

static bool event_valid(CUevent event)
{
    return event && event->magic == SIMCUDA__EVENT_MAGIC;
}

/* The context check every event and stream call makes first. */
static CUresult stream_ok(CUstream stream)
{
    struct CUctx_st *ctx;
    simcuda__lock();
    CUresult result = simcuda__stream_context(stream, &ctx);
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    CUresult result = stream_ok(NULL);
    if (result != CUDA_SUCCESS)
        return result;
    if (!phEvent || (Flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
                                         CU_EVENT_INTERPROCESS)))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUevent_st *event = calloc(1, sizeof(*event));
    if (!event)
        return CUDA_ERROR_OUT_OF_MEMORY;
    event->magic = SIMCUDA__EVENT_MAGIC;
    event->flags = Flags;
    *phEvent = event;
    return CUDA_SUCCESS;
}

static CUresult event_destroy(CUevent event)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!event_valid(event))
        return CUDA_ERROR_INVALID_HANDLE;
    event->magic = 0;
    free(event);
    return CUDA_SUCCESS;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuEventDestroy(CUevent hEvent)
{
    return event_destroy(hEvent);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuEventDestroy_v2(CUevent hEvent)
{
    return event_destroy(hEvent);
}

static CUresult event_record(CUevent event, CUstream stream)
{
    CUresult result = stream_ok(stream);
    if (result != CUDA_SUCCESS)
        return result;
    if (!event_valid(event))
        return CUDA_ERROR_INVALID_HANDLE;
    event->recorded = true;
    clock_gettime(CLOCK_MONOTONIC, &event->time);
    simcuda__capture_record(stream, &event->capture);
    return CUDA_SUCCESS;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream)
{
    return event_record(hEvent, hStream);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
    return event_record(hEvent, hStream);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuEventRecordWithFlags(CUevent hEvent, CUstream hStream,
                                                       unsigned int flags)
{
    return event_record(hEvent, hStream);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream,
                                                            unsigned int flags)
{
    return event_record(hEvent, hStream);
}

/* Complete once recorded, and also before any record (as the real driver says). */
SIMCUDA_EXPORT CUresult CUDAAPI cuEventQuery(CUevent hEvent)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    return event_valid(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuEventSynchronize(CUevent hEvent)
{
    return cuEventQuery(hEvent);
}

static CUresult elapsed(float *ms, CUevent start, CUevent end)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!ms)
        return CUDA_ERROR_INVALID_VALUE;
    /* As the real driver: an event never recorded, or without timing, is an invalid handle. */
    if (!event_valid(start) || !event_valid(end) ||
        ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING) || !start->recorded ||
        !end->recorded)
        return CUDA_ERROR_INVALID_HANDLE;
    double seconds = (double)(end->time.tv_sec - start->time.tv_sec) +
                     (double)(end->time.tv_nsec - start->time.tv_nsec) * 1e-9;
    *ms = (float)(seconds * 1e3);
    return CUDA_SUCCESS;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart,
                                                   CUevent hEnd)
{
    return elapsed(pMilliseconds, hStart, hEnd);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart,
                                                      CUevent hEnd)
{
    return elapsed(pMilliseconds, hStart, hEnd);
}

static CUresult wait_event(CUstream stream, CUevent event, unsigned int flags)
{
    CUresult result = stream_ok(stream);
    if (result != CUDA_SUCCESS)
        return result;
    if (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!event_valid(event))
        return CUDA_ERROR_INVALID_HANDLE;
    return simcuda__capture_wait(stream, &event->capture); /* may join a capture */
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent,
                                                  unsigned int Flags)
{
    return wait_event(hStream, hEvent, Flags);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent,
                                                       unsigned int Flags)
{
    return wait_event(hStream, hEvent, Flags);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamQuery(CUstream hStream)
{
    return stream_ok(hStream);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamQuery_ptsz(CUstream hStream)
{
    return stream_ok(hStream);
}

/* The function runs now, outside the simulator's lock (it may call the driver). */
static CUresult host_func(CUstream stream, CUhostFn fn, void *user_data)
{
    CUresult result = stream_ok(stream);
    if (result == CUDA_SUCCESS && !fn)
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS)
        fn(user_data);
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    return host_func(hStream, fn, userData);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData)
{
    return host_func(hStream, fn, userData);
}

static CUresult add_callback(CUstream stream, CUstreamCallback callback, void *user_data,
                             unsigned int flags)
{
    CUresult result = stream_ok(stream);
    if (result == CUDA_SUCCESS && (!callback || flags != 0))
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS)
        callback(stream, CUDA_SUCCESS, user_data);
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamAddCallback(CUstream hStream, CUstreamCallback callback,
                                                    void *userData, unsigned int flags)
{
    return add_callback(hStream, callback, userData, flags);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamAddCallback_ptsz(CUstream hStream,
                                                         CUstreamCallback callback, void *userData,
                                                         unsigned int flags)
{
    return add_callback(hStream, callback, userData, flags);
}
