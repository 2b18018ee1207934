/* Events and the stream calls around them (simcuda_event.c): every stream is idle, an event is
 * complete once recorded, host functions and callbacks run before the call returns. */
#include "simcuda_test_util.h"

Test(event, records_and_times)
{
    simcuda_test_start("1GiB", "0");
    CUevent start, stop, untimed;
    float ms = -1;
    CU_OK(cuEventCreate(&start, CU_EVENT_DEFAULT));
    CU_OK(cuEventCreate(&stop, CU_EVENT_BLOCKING_SYNC));
    CU_OK(cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING));
    CU_FAILS(cuEventElapsedTime(&ms, start, stop), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuEventQuery(start)); /* never recorded: complete */
    CU_OK(cuEventRecord(start, NULL));
    CU_OK(cuEventRecordWithFlags(stop, CU_STREAM_PER_THREAD, 0));
    CU_OK(cuEventSynchronize(stop));
    CU_OK(cuStreamWaitEvent(NULL, stop, 0));
    CU_OK(cuEventElapsedTime(&ms, start, stop));
    cr_assert_geq(ms, 0.0f);
    CU_OK(cuEventRecord(untimed, NULL));
    CU_FAILS(cuEventElapsedTime(&ms, start, untimed), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuEventDestroy(untimed));
    CU_OK(cuEventDestroy(stop));
    CU_OK(cuEventDestroy(start));
    CU_FAILS(cuEventCreate(&start, 0x100), CUDA_ERROR_INVALID_VALUE);
}

Test(event, need_a_context)
{
    CUevent event;
    CU_FAILS(cuEventCreate(&event, 0), CUDA_ERROR_NOT_INITIALIZED);
    CU_OK(cuInit(0));
    CU_FAILS(cuEventCreate(&event, 0), CUDA_ERROR_INVALID_CONTEXT);
}

static void count(void *counter)
{
    ++*(int *)counter;
}

static void callback(CUstream stream, CUresult status, void *counter)
{
    *(int *)counter += status == CUDA_SUCCESS ? 10 : 1000;
}

Test(event, host_work_runs_before_the_call_returns)
{
    simcuda_test_start("1GiB", "0");
    CUstream stream;
    int counter = 0;
    CU_OK(cuStreamCreate(&stream, 0));
    CU_OK(cuLaunchHostFunc(stream, count, &counter));
    cr_assert_eq(counter, 1);
    CU_OK(cuStreamAddCallback(stream, callback, &counter, 0));
    cr_assert_eq(counter, 11);
    CU_OK(cuStreamQuery(stream));
    CU_OK(cuStreamDestroy(stream));
    CU_FAILS(cuStreamQuery(stream), CUDA_ERROR_INVALID_HANDLE);
    CU_FAILS(cuLaunchHostFunc(NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
}
