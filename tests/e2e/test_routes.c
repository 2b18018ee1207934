/* Every route a real program takes to the driver reaches the wrappers. */
#include "e2e_util.h"

TestSuite(routes, .init = e2e_setup, .fini = e2e_teardown);

static void record_one(struct trace *t, const char *prog)
{
    static struct run r;
    char path[NAME_MAX + 1];
    e2e_record_one(&r, path, NULL, prog, NULL, 0);
    trace_load(t, path);
    cr_assert_eq(t->rc, 0);
}

Test(routes, linked_symbols)
{
    struct trace t;
    record_one(&t, "tests/progs/alloc_deep");
    cr_assert_eq(count_api(&t, "cuMemAlloc_v2", 12345678), 1);
    trace_free(&t);
}

Test(routes, dlopen_and_dlsym_of_handle_default_and_next)
{
    struct trace t;
    record_one(&t, "tests/progs/route_dlsym");
    cr_assert_eq(count_api(&t, "cuMemAlloc_v2", 1000001), 1, "dlsym(handle)");
    cr_assert_eq(count_api(&t, "cuMemAlloc_v2", 1000002), 1, "dlsym(RTLD_DEFAULT)");
    cr_assert_eq(count_api(&t, "cuMemAlloc_v2", 1000003), 1, "dlsym(RTLD_NEXT)");
    cr_assert_eq(count_api(&t, "cuMemFree_v2", 0), 3);
    trace_free(&t);
}

Test(routes, dlopen_by_absolute_path)
{
    char lib[PATH_MAX], prog[PATH_MAX];
    static struct run r;
    const char *args[] = {e2e_path(lib, "lib/simcuda/libcuda.so.1"), NULL};
    char path[NAME_MAX + 1];
    e2e_record_one(&r, path, NULL, e2e_path(prog, "tests/progs/route_dlsym"), args, 0);
    struct trace t;
    trace_load(&t, path);
    cr_assert_eq(count_api(&t, "cuMemAlloc_v2", 0), 3);
    trace_free(&t);
}

Test(routes, get_proc_address_as_libcudart_does)
{
    struct trace t;
    record_one(&t, "tests/progs/route_getproc"); /* the program checks the returned pointers */
    cr_assert_eq(count_api(&t, "cuMemAlloc_v2", 2000001), 1);
    cr_assert_eq(count_api(&t, "cuMemAllocAsync", 2000002), 1);
    cr_assert_eq(count_api(&t, "cuMemAllocAsync_ptsz", 2000003), 1, "flags 2 → _ptsz wrapper");
    cr_assert_eq(count_api(&t, "cuMemFreeAsync", 0), 1);
    cr_assert_eq(count_api(&t, "cuMemFreeAsync_ptsz", 0), 1);
    cr_assert_geq(count_api(&t, "cuGetProcAddress_v2", 0), 8);
    cr_assert_eq(count_api(&t, "cuGetProcAddress", 0), 1, "lookups through the v1 wrapper");
    trace_free(&t);
}

/* libcudart (shared and static) on simcuda: its init fails at cuGetExportTable (no real GPU
 * driver), after it has obtained every driver entry point; each memory one must be ours. */
static void cudart(const char *prog)
{
    if (!CMT_HAVE_CUDART)
        cr_skip_test("the CUDA toolkit's libcudart was not found at build time");
    struct trace t;
    record_one(&t, prog);
    static const char *const expected[] = {"cuMemAlloc_v2",
                                           "cuMemFree_v2",
                                           "cuMemAllocPitch_v2",
                                           "cuMemAllocManaged",
                                           "cuMemGetInfo_v2",
                                           "cuMemAllocAsync",
                                           "cuMemAllocAsync_ptsz",
                                           "cuMemFreeAsync",
                                           "cuMemFreeAsync_ptsz",
                                           "cuMemAllocFromPoolAsync",
                                           "cuMemAllocFromPoolAsync_ptsz",
                                           "cuMemPoolCreate",
                                           "cuMemPoolDestroy",
                                           "cuMemPoolTrimTo",
                                           "cuDeviceSetMemPool",
                                           "cuMemHostAlloc",
                                           "cuMemFreeHost",
                                           "cuIpcOpenMemHandle_v2",
                                           "cuIpcCloseMemHandle",
                                           "cuDevicePrimaryCtxRetain",
                                           "cuGetProcAddress_v2"};
    int seen[sizeof expected / sizeof *expected] = {0};
    size_t lookups = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct cmt_event *e = &t.ev[i];
        if (strncmp(api_of(&t, e), "cuGetProcAddress", 16))
            continue;
        lookups++;
        cr_assert_neq(e->v[CMT_FIELD_TARGET], 0, "a wrapped entry point was handed out raw");
        const struct cmt_api *target = cmt_reader_api(t.r, (uint32_t)e->v[CMT_FIELD_TARGET]);
        cr_assert_not_null(target);
        for (size_t k = 0; k < sizeof expected / sizeof *expected; k++)
            seen[k] |= !strcmp(target->name, expected[k]);
    }
    cr_assert_geq(lookups, 20);
    for (size_t k = 0; k < sizeof expected / sizeof *expected; k++)
        cr_assert(seen[k], "cudart never obtained %s through the shim", expected[k]);
    trace_free(&t);
}

Test(routes, libcudart_shared_gets_only_wrappers)
{
    cudart("tests/progs/cudart_malloc");
}

Test(routes, libcudart_static_gets_only_wrappers)
{
    cudart("tests/progs/cudart_static_malloc");
}

/* The dlopen override must not change whose RUNPATH glibc uses. */
Test(routes, dlopen_keeps_the_callers_runpath)
{
    static struct run r;
    e2e_record(&r, NULL, "tests/progs/origin_main", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.err, "no trace written"), "no CUDA, no trace: %s", r.err);
}

/* A library preloaded after the shim runs its constructor first; its dlsym and dlopen must
 * reach glibc although the shim's constructor has not run yet, and the program is traced. */
Test(routes, dlsym_and_dlopen_before_the_shims_constructor)
{
    static struct run r;
    char lib[PATH_MAX], path[NAME_MAX + 1];
    setenv("LD_PRELOAD", e2e_path(lib, "tests/progs/libearly_dlsym.so"), 1);
    e2e_record_one(&r, path, NULL, "tests/progs/alloc_deep", NULL, 0);
    unsetenv("LD_PRELOAD");
    struct trace t;
    trace_load(&t, path);
    cr_assert_geq(t.n, 2, "the allocation and its free are traced");
    trace_free(&t);
}
