/* Multicast objects in NCCL's NVLS shape (tests/e2e/progs/nvls.c) and the legacy ABI by every
 * route (progs/legacy.c), recorded on simcuda: against simcuda's own log, field by field, and
 * through the analyses. */
#include "e2e_util.h"

TestSuite(multicast, .init = e2e_setup, .fini = e2e_teardown);

/* SIMCUDA_LOG in the scratch directory (an absolute path). */
static const char *log_path(void)
{
    static char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/simcuda.log", e2e_dir);
    setenv("SIMCUDA_LOG", path, 1);
    return path;
}

static void record(const char *prog, char path[NAME_MAX + 1])
{
    static struct run r;
    e2e_record_one(&r, path, NULL, prog, NULL, 0);
}

Test(multicast, every_call_simcuda_served_is_recorded_and_nothing_else)
{
    char path[NAME_MAX + 1];
    const char *log = log_path();
    record("tests/progs/nvls", path);
    e2e_check_simcuda_log(log, NULL);
    /* the comparison covered the multicast calls: simcuda logged each kind of them */
    static char text[1 << 16];
    slurp(log, text, sizeof text);
    const char *entries[] = {"entry=cuMulticastCreate ", "entry=cuMulticastBindMem ",
                             "entry=cuMulticastBindAddr ", "entry=cuMulticastUnbind "};
    for (size_t i = 0; i < sizeof entries / sizeof *entries; i++)
        cr_assert(strstr(text, entries[i]), "simcuda logged no %s", entries[i]);
}

struct expect {
    const char *api;
    uint32_t fields; /* all present on every successful call */
    size_t calls;
};

Test(multicast, the_calls_carry_their_objects_and_the_memory_bound)
{
    char path[NAME_MAX + 1];
    record("tests/progs/nvls", path);
    struct trace t;
    trace_load(&t, path);
    cr_assert_eq(t.rc, 0);
    static const struct expect want[] = {
        {"cuMulticastGetGranularity", CMT_F(SIZE) | CMT_F(FLAGS), 4},
        {"cuMulticastCreate", CMT_F(HANDLE) | CMT_F(SIZE) | CMT_F(COUNT) | CMT_F(FLAGS), 6},
        {"cuMulticastAddDevice", CMT_F(HANDLE), 6},
        {"cuMulticastBindMem", CMT_F(HANDLE) | CMT_F(PTR) | CMT_F(OFFSET) | CMT_F(SIZE), 4},
        {"cuMulticastBindAddr", CMT_F(HANDLE) | CMT_F(PTR) | CMT_F(OFFSET) | CMT_F(SIZE), 2},
        {"cuMulticastUnbind", CMT_F(HANDLE) | CMT_F(OFFSET) | CMT_F(SIZE), 6},
        {"cuMemExportToShareableHandle", CMT_F(HANDLE) | CMT_F(FLAGS), 4},
        {"cuMemImportFromShareableHandle", CMT_F(HANDLE) | CMT_F(FLAGS), 4},
    };
    for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
        size_t calls = 0;
        for (size_t i = 0; i < t.n; i++) {
            const struct cmt_event *e = &t.ev[i];
            if (strcmp(api_of(&t, e), want[k].api) != 0)
                continue;
            calls++;
            cr_assert_eq(e->result, 0, "%s failed", want[k].api);
            cr_assert_eq(e->fields & want[k].fields, want[k].fields, "%s lacks fields: %#x",
                         want[k].api, (unsigned)(want[k].fields & ~e->fields));
            if (!strncmp(want[k].api, "cuMulticast", 11) && !strstr(want[k].api, "Granularity"))
                cr_assert_eq(e->dev, 0, "%s names device 0", want[k].api);
        }
        cr_assert_eq(calls, want[k].calls, "%s: %zu calls", want[k].api, calls);
    }
    /* each bind names the object made before it and the memory made (or mapped) for it */
    uint64_t object = 0, memory = 0, mapped_at = 0, last_map_handle = 0;
    size_t binds = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct cmt_event *e = &t.ev[i];
        const char *api = api_of(&t, e);
        if (!strcmp(api, "cuMulticastCreate")) {
            object = e->v[CMT_FIELD_HANDLE];
            cr_assert_eq(e->v[CMT_FIELD_COUNT], 1, "a team of one device");
        } else if (!strcmp(api, "cuMemCreate")) {
            memory = e->v[CMT_FIELD_HANDLE];
        } else if (!strcmp(api, "cuMemMap")) {
            mapped_at = e->v[CMT_FIELD_PTR];
            last_map_handle = e->v[CMT_FIELD_HANDLE];
        } else if (!strcmp(api, "cuMulticastBindMem")) {
            cr_assert_eq(e->v[CMT_FIELD_HANDLE], object);
            cr_assert_eq(e->v[CMT_FIELD_PTR], memory, "ptr: the physical handle bound");
            cr_assert_eq(last_map_handle, memory, "bound after its own mapping (NCCL's order)");
            binds++;
        } else if (!strcmp(api, "cuMulticastBindAddr")) {
            cr_assert_eq(e->v[CMT_FIELD_HANDLE], object);
            cr_assert_neq(e->v[CMT_FIELD_PTR], 0, "ptr: the address of the memory bound");
            cr_assert_neq(e->v[CMT_FIELD_PTR], mapped_at, "a buffer mapped earlier");
            binds++;
        }
    }
    cr_assert_eq(binds, 6);
    trace_free(&t);
}

/* The JSON number after "key": in text (0 when absent). */
static uint64_t json_number(const char *text, const char *key)
{
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *at = strstr(text, pattern);
    return at ? strtoull(at + strlen(pattern), NULL, 10) : 0;
}

/* report, oom and timeline count the bound memory once: the peak is the physical memory's,
 * replayed here from the trace by its own rule (a handle's bytes from cuMemCreate to its
 * cuMemRelease: the program unbinds and unmaps before it releases). */
Test(multicast, the_analyses_count_bound_memory_once)
{
    char path[NAME_MAX + 1];
    record("tests/progs/nvls", path);
    struct trace t;
    trace_load(&t, path);
    uint64_t handles[16] = {0}, sizes[16] = {0}, live = 0, peak = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct cmt_event *e = &t.ev[i];
        const char *api = api_of(&t, e);
        if (!strcmp(api, "cuMemCreate")) {
            for (int h = 0; h < 16; h++)
                if (!handles[h]) {
                    handles[h] = e->v[CMT_FIELD_HANDLE];
                    sizes[h] = e->v[CMT_FIELD_SIZE];
                    live += sizes[h];
                    break;
                }
        } else if (!strcmp(api, "cuMemRelease")) {
            for (int h = 0; h < 16; h++)
                if (handles[h] && handles[h] == e->v[CMT_FIELD_HANDLE]) {
                    handles[h] = 0;
                    live -= sizes[h];
                }
        }
        if (live > peak)
            peak = live;
    }
    trace_free(&t);
    cr_assert_gt(peak, 0);
    char exe[PATH_MAX];
    static struct run r;
    char *report[] = {(char *)e2e_path(exe, "bin/cumemtrace"), "report", "--json", path, NULL};
    e2e_run(&r, report);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(json_number(r.out, "peak_live_bytes"), peak, "report: %s", r.out);
    cr_assert_eq(json_number(r.out, "live_bytes_at_end"), 0);
    cr_assert_eq(json_number(r.out, "cuMulticastCreate"), 6);
    char *oom[] = {exe, "oom", path, NULL};
    e2e_run(&r, oom);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char figure[64];
    snprintf(figure, sizeof figure, "peak %.2f MiB", (double)peak / (1 << 20));
    cr_assert(strstr(r.out, figure), "oom says %s: %s", figure, r.out);
}

/* The unsuffixed names (32-bit sizes and pointers, v1 descriptors) by each route: linked,
 * dlsym, cuGetProcAddress at CUDA 2.0. Route r allocates (r + 1) MiB, (r + 1) × 64 KiB of
 * host memory, arrays of (r + 1) × 256 × 64 floats and (r + 1) × 32 × 32 × 8 uchar4. */
Test(multicast, legacy_entry_points_record_by_every_route)
{
    char path[NAME_MAX + 1];
    const char *log = log_path();
    record("tests/progs/legacy", path);
    e2e_check_simcuda_log(log, NULL);
    struct trace t;
    trace_load(&t, path);
    for (uint64_t scale = 1; scale <= 3; scale++) {
        cr_assert_eq(count_api(&t, "cuMemAlloc", scale << 20), 1, "route %d", (int)scale - 1);
        cr_assert_eq(count_api(&t, "cuMemAllocHost", scale << 16), 1);
        cr_assert_eq(count_api(&t, "cuArrayCreate", scale * 256 * 64 * 4), 1);
        cr_assert_eq(count_api(&t, "cuArray3DCreate", scale * 32 * 32 * 8 * 4), 1);
    }
    cr_assert_eq(count_api(&t, "cuMemAllocPitch", 0), 3);
    cr_assert_eq(count_api(&t, "cuMemFree", 0), 6);
    cr_assert_eq(count_api(&t, "cuMemGetInfo", 0), 3);
    cr_assert_eq(count_api(&t, "cuMemAlloc_v2", 0), 0, "no route reached the _v2 names");
    for (size_t i = 0; i < t.n; i++) {
        const struct cmt_event *e = &t.ev[i];
        const char *api = api_of(&t, e);
        if (!strcmp(api, "cuMemGetInfo")) {
            cr_assert_eq(e->fields & (CMT_F(FREE) | CMT_F(TOTAL)), CMT_F(FREE) | CMT_F(TOTAL));
            cr_assert_gt(e->v[CMT_FIELD_TOTAL], 0);
        } else if (!strcmp(api, "cuMemAlloc")) {
            cr_assert_lt(e->v[CMT_FIELD_PTR], UINT64_C(1) << 32, "a 32-bit device pointer");
        } else if (!strcmp(api, "cuMemAllocPitch")) {
            cr_assert(e->fields & CMT_F(PITCH));
            cr_assert_eq(e->v[CMT_FIELD_SIZE], e->v[CMT_FIELD_PITCH] * 100, "pitch × height");
        } else if (!strcmp(api, "cuMemAllocHost")) {
            cr_assert_eq(e->dev, -1, "host memory is no device's");
        }
    }
    trace_free(&t);
}
