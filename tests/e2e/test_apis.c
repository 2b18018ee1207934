/* Every intercepted memory entry point, called once by a real program, is recorded with the
 * values its op needs. */
#include "e2e_util.h"

TestSuite(apis, .init = e2e_setup, .fini = e2e_teardown);

struct expect {
    const char *api;
    uint32_t fields; /* must all be present on the (first) successful call */
};

Test(apis, every_memory_entry_point_is_recorded)
{
    static struct run r;
    const char *args[] = {"all-apis", NULL};
    char path[NAME_MAX + 1];
    e2e_record_one(&r, path, NULL, "tests/progs/scenarios", args, 0);
    struct trace t;
    trace_load(&t, path);
    cr_assert_eq(t.rc, 0);
    static const struct expect want[] = {
        {"cuMemAlloc_v2", CMT_F(PTR) | CMT_F(SIZE)},
        {"cuMemFree_v2", CMT_F(PTR)},
        {"cuMemAllocPitch_v2",
         CMT_F(PTR) | CMT_F(SIZE) | CMT_F(PITCH) | CMT_F(WIDTH) | CMT_F(HEIGHT)},
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
    for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
        const struct cmt_event *hit = NULL;
        for (size_t i = 0; i < t.n && !hit; i++)
            if (!strcmp(api_of(&t, &t.ev[i]), want[k].api) && t.ev[i].result == 0)
                hit = &t.ev[i];
        cr_assert_not_null(hit, "%s not recorded", want[k].api);
        cr_assert_eq(hit->fields & want[k].fields, want[k].fields, "%s: fields %#x", want[k].api,
                     hit->fields);
    }
    /* Values, not just presence. */
    for (size_t i = 0; i < t.n; i++) {
        const struct cmt_event *e = &t.ev[i];
        const char *api = api_of(&t, e);
        if (!strcmp(api, "cuMemAllocPitch_v2")) {
            cr_assert_eq(e->v[CMT_FIELD_WIDTH], 1000);
            cr_assert_eq(e->v[CMT_FIELD_HEIGHT], 100);
            cr_assert_eq(e->v[CMT_FIELD_SIZE], e->v[CMT_FIELD_PITCH] * 100);
        } else if (!strcmp(api, "cuMemCreate")) {
            cr_assert_eq(e->v[CMT_FIELD_SIZE], 4 << 20);
            cr_assert_eq(e->dev, 0);
        } else if (!strcmp(api, "cuMemFree_v2") && e->v[CMT_FIELD_PTR] == 0xdead0000) {
            cr_assert_neq(e->result, 0, "a free of an unknown pointer passes through, failing");
        } else if (!strcmp(api, "cuMemHostRegister_v2")) {
            cr_assert_eq(e->v[CMT_FIELD_SIZE], 3 << 20);
            cr_assert_eq(e->v[CMT_FIELD_FLAGS], 1); /* CU_MEMHOSTREGISTER_PORTABLE */
            cr_assert_eq(e->dev, -1, "registered host memory is no device's");
        } else if (!strcmp(api, "cuArrayCreate_v2")) {
            cr_assert_eq(e->v[CMT_FIELD_SIZE], 1024 * 512 * 16, "width × height × float4");
            cr_assert_eq(e->dev, 0);
        } else if (!strcmp(api, "cuMemPoolSetAttribute")) {
            cr_assert_eq(e->v[CMT_FIELD_FLAGS], 4, "CU_MEMPOOL_ATTR_RELEASE_THRESHOLD");
            cr_assert_eq(e->v[CMT_FIELD_SIZE], 64 << 20, "the threshold set");
        } else if (!strcmp(api, "cuDeviceGetDefaultMemPool") ||
                   !strcmp(api, "cuMemGetDefaultMemPool")) {
            cr_assert_eq(e->dev, 0, "a query is recorded with its device");
        } else if (!strcmp(api, "cuMemGetHandleForAddressRange")) {
            cr_assert_eq(e->v[CMT_FIELD_SIZE], 2 << 20);
            cr_assert_eq(e->v[CMT_FIELD_FLAGS], 1, "CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD");
        } else if (!strcmp(api, "cuMemSetMemPool")) {
            cr_assert_eq(e->dev, 0, "a device location is that device");
        } else if (!strcmp(api, "cuArray3DCreate_v2")) {
            cr_assert_eq(e->v[CMT_FIELD_SIZE], 64 * 64 * 64 * 4, "a 3D array counts its depth");
        } else if (!strcmp(api, "cuMipmappedArrayCreate")) {
            uint64_t levels = 0;
            for (uint64_t n = 64; n >= 1; n /= 2)
                levels += n * n * n * 4;
            cr_assert_eq(e->v[CMT_FIELD_SIZE], levels, "mip levels are summed");
            cr_assert_eq(e->v[CMT_FIELD_COUNT], 7);
        } else if (!strcmp(api, "cuGraphAddMemAllocNode")) {
            cr_assert_eq(e->v[CMT_FIELD_SIZE], 4 << 20);
            cr_assert_eq(e->dev, 0, "the node's location");
        } else if (!strcmp(api, "cuGraphAddMemFreeNode") ||
                   !strcmp(api, "cuGraphInstantiateWithFlags")) {
            const struct cmt_event *node = NULL; /* the same graph as the allocation node */
            for (size_t k = 0; k < t.n && !node; k++)
                if (!strcmp(api_of(&t, &t.ev[k]), "cuGraphAddMemAllocNode"))
                    node = &t.ev[k];
            cr_assert_not_null(node);
            cr_assert_eq(e->v[CMT_FIELD_HANDLE], node->v[CMT_FIELD_HANDLE]);
            if (!strcmp(api, "cuGraphAddMemFreeNode")) /* it frees the node's address */
                cr_assert_eq(e->v[CMT_FIELD_PTR], node->v[CMT_FIELD_PTR]);
        } else if (!strcmp(api, "cuMemAllocHost_v2")) {
            cr_assert_eq(e->dev, -1, "host memory is no device's");
        }
    }
    trace_free(&t);
}
