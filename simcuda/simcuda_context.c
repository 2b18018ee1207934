/* Contexts (created and primary), the per-thread context stack and streams.
 * A device's context overhead is taken when its first context comes alive and returned when
 * its last one goes away. */
#include "simcuda_internal.h"

#include <stdlib.h>

static _Thread_local struct CUctx_st *ctx_stack[SIMCUDA__CTX_STACK_MAX];
static _Thread_local int ctx_depth;

struct CUctx_st *simcuda__current_context(void)
{
    return ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : NULL;
}

static bool context_valid(const struct CUctx_st *ctx)
{
    return ctx && ctx->magic == SIMCUDA__CTX_MAGIC && ctx->alive;
}

CUresult simcuda__require_context(struct CUctx_st **out)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    struct CUctx_st *ctx = simcuda__current_context();
    if (!context_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    *out = ctx;
    return CUDA_SUCCESS;
}

CUresult simcuda__stream_context(CUstream stream, struct CUctx_st **out)
{
    if (!stream || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD)
        return simcuda__require_context(out);
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (stream->magic != SIMCUDA__STREAM_MAGIC || !stream->alive)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!context_valid(stream->ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    *out = stream->ctx;
    return CUDA_SUCCESS;
}

/* Lock held. Charges the device's context overhead for its first live context. */
static CUresult context_activate(int device)
{
    struct simcuda__device *dev = &simcuda__state.devices[device];
    if (dev->contexts_alive == 0 && simcuda__free_bytes(device) < simcuda__state.context_overhead)
        return CUDA_ERROR_OUT_OF_MEMORY;
    dev->contexts_alive++;
    return CUDA_SUCCESS;
}

/* Lock held. Frees what the context allocated and returns the overhead with the last one. */
void simcuda__context_went_away(struct CUctx_st *ctx)
{
    simcuda__free_context_memory(ctx);
    simcuda__free_context_arrays(ctx);
    simcuda__free_context_graph_memory(ctx);
    ctx->alive = false;
    simcuda__state.devices[ctx->device].contexts_alive--;
}

static CUresult stack_push(struct CUctx_st *ctx)
{
    if (ctx_depth == SIMCUDA__CTX_STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    ctx_stack[ctx_depth++] = ctx;
    return CUDA_SUCCESS;
}

static void stack_forget(const struct CUctx_st *ctx)
{
    int kept = 0;
    for (int i = 0; i < ctx_depth; i++) {
        if (ctx_stack[i] != ctx)
            ctx_stack[kept++] = ctx_stack[i];
    }
    ctx_depth = kept;
}

static CUresult context_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!pctx || flags > 0xff)
        return CUDA_ERROR_INVALID_VALUE;
    if ((result = simcuda__check_device(dev)) != CUDA_SUCCESS)
        return result;
    struct CUctx_st *ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return CUDA_ERROR_OUT_OF_MEMORY;
    simcuda__lock();
    result = ctx_depth == SIMCUDA__CTX_STACK_MAX ? CUDA_ERROR_OUT_OF_MEMORY : context_activate(dev);
    if (result == CUDA_SUCCESS) {
        ctx->magic = SIMCUDA__CTX_MAGIC;
        ctx->device = dev;
        ctx->alive = true;
        ctx->next_all = simcuda__state.contexts;
        simcuda__state.contexts = ctx;
        ctx_stack[ctx_depth++] = ctx;
        *pctx = ctx;
    }
    simcuda__unlock();
    if (result != CUDA_SUCCESS)
        free(ctx);
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return context_create(pctx, flags, dev);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return context_create(pctx, flags, dev);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray,
                                               int numParams, unsigned int flags, CUdevice dev)
{
    if (numParams < 0 || (numParams > 0 && !paramsArray))
        return simcuda__require_init() != CUDA_SUCCESS ? CUDA_ERROR_NOT_INITIALIZED
                                                       : CUDA_ERROR_INVALID_VALUE;
    return context_create(pctx, flags, dev);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                                               unsigned int flags, CUdevice dev)
{
    return context_create(pctx, flags, dev);
}

static CUresult context_destroy(CUcontext ctx)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    simcuda__lock();
    if (!context_valid(ctx) || ctx->primary) {
        result = CUDA_ERROR_INVALID_CONTEXT;
    } else {
        simcuda__context_went_away(ctx);
        stack_forget(ctx);
    }
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuCtxDestroy(CUcontext ctx)
{
    return context_destroy(ctx);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx)
{
    return context_destroy(ctx);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!ctx) {
        if (ctx_depth > 0)
            ctx_depth--;
        return CUDA_SUCCESS;
    }
    simcuda__lock();
    bool valid = context_valid(ctx);
    simcuda__unlock();
    if (!valid)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx_depth == 0)
        return stack_push(ctx);
    ctx_stack[ctx_depth - 1] = ctx;
    return CUDA_SUCCESS;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = simcuda__current_context();
    return CUDA_SUCCESS;
}

static CUresult context_device(CUdevice *device, CUcontext ctx)
{
    struct CUctx_st *current;
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    simcuda__lock();
    if (!ctx)
        result = simcuda__require_context(&current);
    else
        result = context_valid(ctx) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
    if (result == CUDA_SUCCESS && !device)
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS)
        *device = ctx ? ctx->device : current->device;
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
    return context_device(device, NULL);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    return context_device(device, ctx);
}

static CUresult context_push(CUcontext ctx)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    simcuda__lock();
    bool valid = context_valid(ctx);
    simcuda__unlock();
    return valid ? stack_push(ctx) : CUDA_ERROR_INVALID_CONTEXT;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx)
{
    return context_push(ctx);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx)
{
    return context_push(ctx);
}

static CUresult context_pop(CUcontext *pctx)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (ctx_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    struct CUctx_st *ctx = ctx_stack[--ctx_depth];
    if (pctx)
        *pctx = ctx;
    return CUDA_SUCCESS;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx)
{
    return context_pop(pctx);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *pctx)
{
    return context_pop(pctx);
}

/* Synchronising releases pool memory retained above each pool's release threshold. */
static CUresult context_synchronize(CUcontext ctx)
{
    struct CUctx_st *current;
    simcuda__lock();
    CUresult result = simcuda__require_init();
    if (result == CUDA_SUCCESS && !ctx)
        result = simcuda__require_context(&current);
    else if (result == CUDA_SUCCESS)
        result = context_valid(ctx) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
    if (result == CUDA_SUCCESS)
        simcuda__pools_synchronize(ctx ? ctx->device : current->device);
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuCtxSynchronize(void)
{
    return context_synchronize(NULL);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx)
{
    return context_synchronize(ctx);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if ((result = simcuda__check_device(dev)) != CUDA_SUCCESS)
        return result;
    simcuda__lock();
    struct CUctx_st *primary = &simcuda__state.devices[dev].primary;
    if (!primary->alive) {
        result = context_activate(dev);
        primary->alive = result == CUDA_SUCCESS;
        primary->primary_refs = 0;
    }
    if (result == CUDA_SUCCESS) {
        primary->primary_refs++;
        *pctx = primary;
    }
    simcuda__unlock();
    return result;
}

/* flags: always 0 (simcuda has no cuDevicePrimaryCtxSetFlags); active: retained now. */
SIMCUDA_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags,
                                                           int *active)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    if ((result = simcuda__check_device(dev)) != CUDA_SUCCESS)
        return result;
    simcuda__lock();
    const struct CUctx_st *primary = &simcuda__state.devices[dev].primary;
    *flags = 0;
    *active = primary->alive && primary->primary_refs > 0;
    simcuda__unlock();
    return CUDA_SUCCESS;
}

/* The primary context is destroyed when its last reference is released. */
static CUresult primary_release(CUdevice dev)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if ((result = simcuda__check_device(dev)) != CUDA_SUCCESS)
        return result;
    simcuda__lock();
    struct CUctx_st *primary = &simcuda__state.devices[dev].primary;
    if (!primary->alive || primary->primary_refs == 0) {
        result = CUDA_ERROR_INVALID_CONTEXT;
    } else if (--primary->primary_refs == 0) {
        simcuda__context_went_away(primary);
    }
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
    return primary_release(dev);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    return primary_release(dev);
}

/* Reset destroys the primary context now and frees all memory it allocated. */
static CUresult primary_reset(CUdevice dev)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if ((result = simcuda__check_device(dev)) != CUDA_SUCCESS)
        return result;
    simcuda__lock();
    struct CUctx_st *primary = &simcuda__state.devices[dev].primary;
    if (primary->alive)
        simcuda__context_went_away(primary);
    primary->primary_refs = 0;
    simcuda__unlock();
    return CUDA_SUCCESS;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{
    return primary_reset(dev);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    return primary_reset(dev);
}

static CUresult stream_create(CUstream *phStream, unsigned int flags, int priority)
{
    struct CUctx_st *ctx;
    simcuda__lock();
    CUresult result = simcuda__require_context(&ctx);
    if (result == CUDA_SUCCESS && (!phStream || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING)))
        result = CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *stream = NULL;
    if (result == CUDA_SUCCESS && !(stream = calloc(1, sizeof(*stream))))
        result = CUDA_ERROR_OUT_OF_MEMORY;
    if (result == CUDA_SUCCESS) {
        stream->magic = SIMCUDA__STREAM_MAGIC;
        stream->alive = true;
        stream->ctx = ctx;
        stream->flags = flags;
        stream->priority = priority < -5 ? -5 : priority > 0 ? 0 : priority;
        stream->next_all = simcuda__state.streams;
        simcuda__state.streams = stream;
        *phStream = stream;
    }
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    return stream_create(phStream, Flags, 0);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags,
                                                           int priority)
{
    return stream_create(phStream, flags, priority);
}

static CUresult stream_destroy(CUstream hStream)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!hStream || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD)
        return CUDA_ERROR_INVALID_HANDLE;
    simcuda__lock();
    if (hStream->magic != SIMCUDA__STREAM_MAGIC || !hStream->alive)
        result = CUDA_ERROR_INVALID_HANDLE;
    else
        hStream->alive = false;
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
    return stream_destroy(hStream);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream)
{
    return stream_destroy(hStream);
}

static CUresult stream_synchronize(CUstream hStream)
{
    struct CUctx_st *ctx;
    simcuda__lock();
    CUresult result = simcuda__stream_context(hStream, &ctx);
    if (result == CUDA_SUCCESS)
        result = simcuda__capture_forbids_sync(hStream);
    if (result == CUDA_SUCCESS)
        simcuda__pools_synchronize(ctx->device);
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream hStream)
{
    return stream_synchronize(hStream);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream)
{
    return stream_synchronize(hStream);
}
