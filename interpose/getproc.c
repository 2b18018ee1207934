/* getproc.c — the cuGetProcAddress route (libcudart, PyTorch, NCCL, cuda-python).
 *
 * The real driver chooses the variant (base name + cudaVersion + flags); we then map the
 * pointer it returned back to that variant's exact name and hand out that name's wrapper,
 * so _ptsz and legacy variants keep distinct wrappers. Asking for "cuGetProcAddress" itself
 * returns our wrapper, since libcudart makes every later lookup through that pointer.
 * Unknown, too-new or failed lookups pass through unchanged; symbolStatus may be NULL. */
#include <errno.h>
#include <string.h>

#include "shim.h"

/* Is `symbol` the base name of an entry point we wrap (cuMemAlloc → cuMemAlloc_v2)? */
static int wraps_base_name(const char *symbol)
{
    size_t n = strlen(symbol);
    for (uint32_t id = 1; id < CMT__API_COUNT; id++) {
        const char *w = cmt__api_name[id];
        if (!strncmp(w, symbol, n) && (w[n] == 0 || w[n] == '_'))
            return 1;
    }
    return 0;
}

static CUresult substitute(const char *symbol, void **pfn, int version, cuuint64_t flags,
                           uint32_t api, CUresult rc)
{
    if (rc != CUDA_SUCCESS || !pfn || !*pfn || !symbol)
        return rc;
    uint32_t target = 0;
    if (strcmp(symbol, "cuGetProcAddress") == 0)
        target = version >= 12000 ? CMT__API_cuGetProcAddress_v2 : CMT__API_cuGetProcAddress;
    else
        target = cmt__api_by_real(*pfn);
    if (target)
        *pfn = cmt__api_wrapper[target];
    /* Record lookups of what we wrap (a miss, target 0, would be a variant we do not wrap),
     * not the other ~400 entry points a runtime asks for. */
    struct cmt__call c;
    if ((target || wraps_base_name(symbol)) && cmt__begin(&c, api)) {
        c.ev.fields = CMT_F(VERSION) | CMT_F(FLAGS) | CMT_F(TARGET);
        c.ev.v[CMT_FIELD_VERSION] = (uint64_t)version;
        c.ev.v[CMT_FIELD_FLAGS] = flags;
        c.ev.v[CMT_FIELD_TARGET] = target;
        c.errno_saved = errno;
        cmt__finish(&c, rc);
    }
    return rc;
}

CMT_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                     cuuint64_t flags)
{
    if (!cmt__resolve() || !cmt__real.cuGetProcAddress)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult rc = cmt__real.cuGetProcAddress(symbol, pfn, cudaVersion, flags);
    return substitute(symbol, pfn, cudaVersion, flags, CMT__API_cuGetProcAddress, rc);
}

CMT_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                        cuuint64_t flags,
                                        CUdriverProcAddressQueryResult *symbolStatus)
{
    if (!cmt__resolve() || !cmt__real.cuGetProcAddress_v2)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult rc = cmt__real.cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, symbolStatus);
    return substitute(symbol, pfn, cudaVersion, flags, CMT__API_cuGetProcAddress_v2, rc);
}
