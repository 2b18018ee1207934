/* cuGetProcAddress with the real driver's selection rules, over the one symbol table. */
#include "simcuda_internal.h"

#include <stdio.h>
#include <string.h>

struct simcuda__symbol {
    const char *base;
    const char *exported;
    void *function;
    int version;
    bool per_thread;
};

#define SIMCUDA__SYMBOL_ENTRY(base, exported, version, per_thread) \
    {#base, #exported, (void *)exported, version, per_thread},

#include "simcuda_symbols.h"

static const struct simcuda__symbol symbols[] = {SIMCUDA_SYMBOLS(SIMCUDA__SYMBOL_ENTRY)};

/* The newest variant introduced at or below version. With the per-thread flag, a per-thread
 * variant (_ptsz/_ptds) wins when one qualifies; otherwise only regular variants count.
 * Not found is success with a NULL pointer; the status says whether the name is unknown or
 * only exists at a higher version. */
static CUresult get_proc_address(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                 CUdriverProcAddressQueryResult *symbolStatus)
{
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    if (flags != CU_GET_PROC_ADDRESS_DEFAULT && flags != CU_GET_PROC_ADDRESS_LEGACY_STREAM &&
        flags != CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
        return CUDA_ERROR_INVALID_VALUE;
    if (cudaVersion > SIMCUDA__DRIVER_VERSION)
        return CUDA_ERROR_INVALID_VALUE;
    bool want_per_thread = flags == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    bool name_known = false;
    const struct simcuda__symbol *regular = NULL, *per_thread = NULL;
    for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
        const struct simcuda__symbol *entry = &symbols[i];
        if (strcmp(entry->base, symbol) != 0)
            continue;
        name_known = true;
        if (entry->version > cudaVersion)
            continue;
        if (entry->per_thread && want_per_thread) {
            if (!per_thread || entry->version > per_thread->version)
                per_thread = entry;
        } else if (!entry->per_thread) {
            if (!regular || entry->version > regular->version)
                regular = entry;
        }
    }
    const struct simcuda__symbol *chosen = per_thread ? per_thread : regular;
    if (chosen)
        *pfn = chosen->function;
    if (symbolStatus)
        *symbolStatus = chosen       ? CU_GET_PROC_ADDRESS_SUCCESS
                        : name_known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                                     : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_SUCCESS;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                                    cuuint64_t flags,
                                                    CUdriverProcAddressQueryResult *symbolStatus)
{
    return get_proc_address(symbol, pfn, cudaVersion, flags, symbolStatus);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                                 cuuint64_t flags)
{
    return get_proc_address(symbol, pfn, cudaVersion, flags, NULL);
}

/* The private tables NVIDIA's runtime (libcudart, and the copy of it linked into cuBLAS, NCCL
 * and the other libraries) asks for are undocumented and not simulated: its initialisation
 * stops here. Said once on stderr, since the program then only reports error 801. */
SIMCUDA_EXPORT CUresult CUDAAPI cuGetExportTable(const void **ppExportTable,
                                                 const CUuuid *pExportTableId)
{
    static bool said;
    if (ppExportTable)
        *ppExportTable = NULL;
    if (!__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
        fprintf(stderr, "simcuda: cuGetExportTable (NVIDIA's private runtime tables) is not "
                        "simulated: NVIDIA's libcudart, and libraries with their own copy of it, "
                        "stop with error 801; programs on the runtime need simcudart\n");
    return CUDA_ERROR_NOT_SUPPORTED;
}
