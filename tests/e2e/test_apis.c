/* Every intercepted memory entry point, called once by a real program, is recorded with the
 * values its op needs. */
#include "api_fields.h"
#include "e2e_util.h"

TestSuite(apis, .init = e2e_setup, .fini = e2e_teardown);

/* Records `scenarios MODE` and loads its trace into t. */
static void record_mode(const char *mode, struct trace *t)
{
    static struct run r;
    const char *args[] = {mode, NULL};
    char path[NAME_MAX + 1];
    e2e_record_one(&r, path, NULL, "tests/progs/scenarios", args, 0);
    trace_load(t, path);
    cr_assert_eq(t->rc, 0);
}

Test(apis, every_memory_entry_point_is_recorded)
{
    struct trace t;
    record_mode("all-apis", &t);
    const struct e2e_api *want = e2e_apis;
    for (size_t k = 0; k < sizeof e2e_apis / sizeof *e2e_apis; k++) {
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

/* A CUDA array's bytes are width × its element size; the sizes here are this test's own
 * (CUDA's programming guide), not the tracer's or simcuda's table, so a wrong size in either
 * shows. In scenarios.c's array_formats order. */
Test(apis, array_sizes_are_width_times_the_element_size)
{
    struct trace t;
    record_mode("array-formats", &t);
    static const uint64_t element[] = {
        1,  /* UNSIGNED_INT8 × 1 */
        2,  /* SIGNED_INT8 × 2 */
        8,  /* UNSIGNED_INT16 × 4 */
        2,  /* HALF × 1 */
        8,  /* FLOAT × 2 */
        16, /* SIGNED_INT32 × 4 */
        1,  /* UNORM_INT8X1 */
        2,  /* SNORM_INT8X2 */
        2,  /* UNORM_INT16X1 */
        4,  /* UNORM_INT8X4 */
        4,  /* UNORM_INT_101010_2 */
        8,  /* SNORM_INT16X4 */
    };
    size_t k = 0;
    for (size_t i = 0; i < t.n; i++) {
        if (strcmp(api_of(&t, &t.ev[i]), "cuArrayCreate_v2") || t.ev[i].result != 0)
            continue;
        cr_assert_lt(k, sizeof element / sizeof *element, "more arrays than formats");
        cr_expect_eq(t.ev[i].v[CMT_FIELD_SIZE], 1000 * element[k], "array %zu: %llu bytes", k,
                     (unsigned long long)t.ev[i].v[CMT_FIELD_SIZE]);
        k++;
    }
    cr_assert_eq(k, sizeof element / sizeof *element, "one array per format");
    trace_free(&t);
}
