/* rec_context.c — what the wrappers record of contexts and synchronisations: the calls that
 * free memory implicitly (a context's teardown, a sync's pool release) (record.h). */
#include "record.h"

void cmt__rec_cuStreamSynchronize(struct cmt_event *e, int ok, CUstream stream)
{
    CMT__SET(e, STREAM, (uintptr_t)stream);
}

CMT__REC_SAME(cuStreamSynchronize_ptsz, cuStreamSynchronize);

void cmt__rec_cuCtxSynchronize_v2(struct cmt_event *e, int ok, CUcontext ctx)
{
    if (ctx)
        CMT__SET(e, CTX, (uintptr_t)ctx);
}

void cmt__rec_cuCtxSynchronize(struct cmt_event *e, int ok)
{
}

static void rec_ctx_create(struct cmt_event *e, int ok, CUcontext *pctx, unsigned int flags,
                           CUdevice dev)
{
    e->dev = dev;
    CMT__SET(e, FLAGS, flags);
    if (ok && pctx)
        CMT__SET(e, CTX, (uintptr_t)*pctx);
}

void cmt__rec_cuCtxCreate_v2(struct cmt_event *e, int ok, CUcontext *pctx, unsigned int flags,
                             CUdevice dev)
{
    rec_ctx_create(e, ok, pctx, flags, dev);
}

void cmt__rec_cuCtxCreate_v3(struct cmt_event *e, int ok, CUcontext *pctx,
                             CUexecAffinityParam *params, int n, unsigned int flags, CUdevice dev)
{
    rec_ctx_create(e, ok, pctx, flags, dev);
}

void cmt__rec_cuCtxCreate_v4(struct cmt_event *e, int ok, CUcontext *pctx,
                             CUctxCreateParams *params, unsigned int flags, CUdevice dev)
{
    rec_ctx_create(e, ok, pctx, flags, dev);
}

void cmt__rec_cuCtxDestroy_v2(struct cmt_event *e, int ok, CUcontext ctx)
{
    CMT__SET(e, CTX, (uintptr_t)ctx);
}

void cmt__rec_cuDevicePrimaryCtxRetain(struct cmt_event *e, int ok, CUcontext *pctx, CUdevice dev)
{
    rec_ctx_create(e, ok, pctx, 0, dev);
    e->fields &= ~CMT_F(FLAGS);
}

void cmt__rec_cuDevicePrimaryCtxRelease_v2(struct cmt_event *e, int ok, CUdevice dev)
{
    e->dev = dev;
}

CMT__REC_SAME(cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxRelease_v2);
CMT__REC_SAME(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2);
CMT__REC_SAME(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxRelease_v2);
