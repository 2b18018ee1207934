/* api_fields.h — the end-to-end list of intercepted calls. Every entry of interpose/calls.def is
 * in exactly one of the two tables below (tests/recipes/test_recipes.c checks it, so a new line
 * in calls.def fails recipes/every_call_is_checked_end_to_end until it is listed here):
 * - e2e_apis: called by `scenarios all-apis`, with the fields its first successful call must
 *   record (test_apis.c, apis/every_memory_entry_point_is_recorded);
 * - e2e_twins: another exported name of a listed call (an older version, a _ptsz form) with the
 *   same op, or a call checked by another e2e test, which `where` names. */
#ifndef CMT_E2E_API_FIELDS_H
#define CMT_E2E_API_FIELDS_H

#include <stdint.h>

#include "cmt_format.h"

struct e2e_api {
    const char *api;
    uint32_t fields; /* must all be present on the (first) successful call */
};

struct e2e_twin {
    const char *api;
    const char *twin;  /* an e2e_apis entry with the same op, or NULL */
    const char *where; /* where it is checked, or why not */
};

static const struct e2e_api e2e_apis[] = {
    {"cuMemAlloc_v2", CMT_F(PTR) | CMT_F(SIZE)},
    {"cuMemFree_v2", CMT_F(PTR)},
    {"cuMemAllocPitch_v2", CMT_F(PTR) | CMT_F(SIZE) | CMT_F(PITCH) | CMT_F(WIDTH) | CMT_F(HEIGHT)},
    {"cuMemAllocManaged", CMT_F(PTR) | CMT_F(SIZE) | CMT_F(FLAGS)},
    {"cuMemGetInfo_v2", CMT_F(FREE) | CMT_F(TOTAL)},
    {"cuMemAllocAsync", CMT_F(PTR) | CMT_F(SIZE) | CMT_F(STREAM)},
    {"cuMemFreeAsync", CMT_F(PTR) | CMT_F(STREAM)},
    {"cuMemAllocFromPoolAsync", CMT_F(PTR) | CMT_F(SIZE) | CMT_F(STREAM) | CMT_F(POOL)},
    {"cuMemPoolCreate", CMT_F(POOL)},
    {"cuMemPoolTrimTo", CMT_F(POOL) | CMT_F(SIZE)},
    {"cuDeviceSetMemPool", CMT_F(POOL)},
    {"cuMemPoolDestroy", CMT_F(POOL)},
    {"cuStreamSynchronize", CMT_F(STREAM)},
    {"cuMemCreate", CMT_F(HANDLE) | CMT_F(SIZE)},
    {"cuMemAddressReserve", CMT_F(PTR) | CMT_F(SIZE) | CMT_F(ALIGN)},
    {"cuMemMap", CMT_F(PTR) | CMT_F(SIZE) | CMT_F(OFFSET) | CMT_F(HANDLE)},
    {"cuMemSetAccess", CMT_F(PTR) | CMT_F(SIZE) | CMT_F(COUNT)},
    {"cuMemRetainAllocationHandle", CMT_F(PTR) | CMT_F(HANDLE)},
    {"cuMemExportToShareableHandle", CMT_F(HANDLE) | CMT_F(FLAGS)},
    {"cuMemImportFromShareableHandle", CMT_F(HANDLE) | CMT_F(FLAGS)},
    {"cuMemUnmap", CMT_F(PTR) | CMT_F(SIZE)},
    {"cuMemRelease", CMT_F(HANDLE)},
    {"cuMemAddressFree", CMT_F(PTR) | CMT_F(SIZE)},
    {"cuIpcOpenMemHandle_v2", CMT_F(PTR) | CMT_F(FLAGS)},
    {"cuIpcCloseMemHandle", CMT_F(PTR)},
    {"cuMemAllocHost_v2", CMT_F(PTR) | CMT_F(SIZE)},
    {"cuMemHostAlloc", CMT_F(PTR) | CMT_F(SIZE) | CMT_F(FLAGS)},
    {"cuMemFreeHost", CMT_F(PTR)},
    {"cuMemHostRegister_v2", CMT_F(PTR) | CMT_F(SIZE) | CMT_F(FLAGS)},
    {"cuMemHostUnregister", CMT_F(PTR)},
    {"cuCtxSynchronize", 0},
    {"cuCtxCreate_v4", CMT_F(CTX)},
    {"cuCtxDestroy_v2", CMT_F(CTX)},
    {"cuDevicePrimaryCtxRetain", CMT_F(CTX)},
    {"cuDevicePrimaryCtxRelease_v2", 0},
    {"cuArrayCreate_v2", CMT_F(PTR) | CMT_F(SIZE) | CMT_F(WIDTH) | CMT_F(HEIGHT)},
    {"cuArray3DCreate_v2", CMT_F(PTR) | CMT_F(SIZE) | CMT_F(WIDTH) | CMT_F(HEIGHT)},
    {"cuMipmappedArrayCreate", CMT_F(PTR) | CMT_F(SIZE) | CMT_F(COUNT)},
    {"cuArrayDestroy", CMT_F(PTR)},
    {"cuMulticastGetGranularity", CMT_F(SIZE) | CMT_F(FLAGS)},
    {"cuMulticastCreate", CMT_F(HANDLE) | CMT_F(SIZE) | CMT_F(COUNT)},
    {"cuMulticastAddDevice", CMT_F(HANDLE)},
    {"cuMulticastBindMem", CMT_F(HANDLE) | CMT_F(PTR) | CMT_F(OFFSET) | CMT_F(SIZE)},
    {"cuMulticastBindAddr", CMT_F(HANDLE) | CMT_F(PTR) | CMT_F(OFFSET) | CMT_F(SIZE)},
    {"cuMulticastUnbind", CMT_F(HANDLE) | CMT_F(OFFSET) | CMT_F(SIZE)},
    {"cuMipmappedArrayDestroy", CMT_F(PTR)},
    {"cuMemSetMemPool", CMT_F(POOL)},
    {"cuMemPoolSetAttribute", CMT_F(POOL) | CMT_F(FLAGS) | CMT_F(SIZE)},
    {"cuGraphAddMemAllocNode", CMT_F(PTR) | CMT_F(SIZE) | CMT_F(HANDLE)},
    {"cuGraphAddMemFreeNode", CMT_F(PTR) | CMT_F(HANDLE)},
    {"cuGraphInstantiateWithFlags", CMT_F(PTR) | CMT_F(HANDLE) | CMT_F(FLAGS)},
    {"cuGraphLaunch", CMT_F(PTR) | CMT_F(STREAM)},
    {"cuGraphExecDestroy", CMT_F(PTR)},
    {"cuGraphDestroy", CMT_F(HANDLE)},
    {"cuDeviceGraphMemTrim", 0},
    {"cuStreamBeginCapture_v2", CMT_F(STREAM) | CMT_F(FLAGS)},
    {"cuStreamEndCapture", CMT_F(STREAM) | CMT_F(HANDLE)},
    {"cuGraphInstantiate_v2", CMT_F(PTR) | CMT_F(HANDLE)},
    {"cuDeviceSetGraphMemAttribute", CMT_F(FLAGS) | CMT_F(SIZE)},
    {"cuMemPoolExportToShareableHandle", CMT_F(POOL) | CMT_F(FLAGS) | CMT_F(HANDLE)},
    {"cuMemPoolImportFromShareableHandle", CMT_F(POOL) | CMT_F(FLAGS)},
    {"cuMemPoolExportPointer", CMT_F(PTR)},
    {"cuMemPoolImportPointer", CMT_F(PTR) | CMT_F(POOL)},
    {"cuDeviceGetDefaultMemPool", CMT_F(POOL)},
    {"cuDeviceGetMemPool", CMT_F(POOL)},
    {"cuMemGetDefaultMemPool", CMT_F(POOL)},
    {"cuMemGetMemPool", CMT_F(POOL)},
    {"cuMemGetHandleForAddressRange", CMT_F(PTR) | CMT_F(SIZE) | CMT_F(FLAGS) | CMT_F(HANDLE)},
};

static const struct e2e_twin e2e_twins[] = {
    {"cuMemAlloc", "cuMemAlloc_v2", "test_multicast.c (legacy: the CUDA 3.x names)"},
    {"cuMemFree", "cuMemFree_v2", "test_multicast.c (legacy)"},
    {"cuMemAllocPitch", "cuMemAllocPitch_v2", "test_multicast.c (legacy)"},
    {"cuMemAllocHost", "cuMemAllocHost_v2", "test_multicast.c (legacy)"},
    {"cuMemGetInfo", "cuMemGetInfo_v2", "test_multicast.c (legacy)"},
    {"cuArrayCreate", "cuArrayCreate_v2", "test_multicast.c (legacy)"},
    {"cuArray3DCreate", "cuArray3DCreate_v2", "test_multicast.c (legacy)"},
    {"cuMemAllocAsync_ptsz", "cuMemAllocAsync", "test_routes.c (per-thread stream forms)"},
    {"cuMemAllocFromPoolAsync_ptsz", "cuMemAllocFromPoolAsync", "test_routes.c"},
    {"cuMemFreeAsync_ptsz", "cuMemFreeAsync", "test_routes.c"},
    {"cuGetProcAddress", NULL, "test_routes.c (the cuGetProcAddress route)"},
    {"cuGetProcAddress_v2", NULL, "test_routes.c (the cuGetProcAddress route)"},
    {"cuCtxCreate_v2", "cuCtxCreate_v4", "the same recording as v4; no e2e program calls it"},
    {"cuCtxCreate_v3", "cuCtxCreate_v4", "the same recording as v4; no e2e program calls it"},
    {"cuCtxSynchronize_v2", "cuCtxSynchronize", "no e2e program calls it"},
    {"cuStreamSynchronize_ptsz", "cuStreamSynchronize", "no e2e program calls it"},
    {"cuIpcOpenMemHandle", "cuIpcOpenMemHandle_v2", "no e2e program calls it"},
    {"cuGraphInstantiate", "cuGraphInstantiateWithFlags", "no e2e program calls it"},
    {"cuGraphInstantiateWithParams", "cuGraphInstantiateWithFlags", "no e2e program calls it"},
    {"cuGraphInstantiateWithParams_ptsz", "cuGraphInstantiateWithFlags", "no e2e program calls it"},
    {"cuGraphLaunch_ptsz", "cuGraphLaunch", "no e2e program calls it"},
    {"cuStreamBeginCapture", "cuStreamBeginCapture_v2", "no e2e program calls it"},
    {"cuStreamBeginCapture_ptsz", "cuStreamBeginCapture_v2", "no e2e program calls it"},
    {"cuStreamBeginCapture_v2_ptsz", "cuStreamBeginCapture_v2", "no e2e program calls it"},
    {"cuStreamEndCapture_ptsz", "cuStreamEndCapture", "no e2e program calls it"},
    {"cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2", "the legacy name"},
    {"cuDevicePrimaryCtxReset", NULL, "as cuDevicePrimaryCtxReset_v2, its legacy name"},
    {"cuDevicePrimaryCtxReset_v2", NULL,
     "not end to end (a reset at the end of all-apis would change test_ledger's end); the "
     "replay's RESET: test_replay.c"},
};

#endif
