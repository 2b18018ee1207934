/* Tests of call-site naming and grouping past allocator internals (tools/analysis/frames.c,
 * sites.c, and the holders of oom.c). */
#include <criterion/criterion.h>
#include <string.h>

#include "capture.h"
#include "commands.h"
#include "frames.h"
#include "trace_builder.h"

Test(frames, glob_matches_the_documented_patterns)
{
    cr_expect(cmt_glob("cuMem*", "cuMemAlloc_v2"));
    cr_expect(cmt_glob("c10::cuda::*Allocator*",
                       "c10::cuda::CUDAMallocAsyncAllocator::CudaMallocAsyncAllocator::malloc"));
    cr_expect(cmt_glob("c10::cuda::CUDACachingAllocator*",
                       "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc"));
    cr_expect(cmt_glob("device_alloc", "device_alloc"));
    cr_expect(cmt_glob("libcuda.so*", "libcuda.so.1"));
    cr_expect_not(cmt_glob("device_alloc", "device_alloc_all"));
    cr_expect_not(cmt_glob("cuMem*", "main"));
    cr_expect_not(cmt_glob("c10::cuda::*Allocator*", "c10::cuda::getCurrentStream"));
    cr_expect_not(cmt_glob("libcuda.so*", "libcudnn.so.9"));
}

/* Four allocations, all made through allocator frames: three from load_weights (two of them
 * through the caching allocator model, one through PyTorch's), one from load_encoder. */
static const char *allocator_trace(void)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB - 300 * TB_MIB);
    uint32_t main_frame = tb_frame(&b, 0, "main");
    uint32_t weights = tb_frame(&b, main_frame, "load_weights");
    uint32_t encoder = tb_frame(&b, main_frame, "load_encoder");
    uint32_t via_model = tb_frame(
        &b, tb_frame(&b, tb_frame(&b, weights, "cached_alloc"), "cmt_model_alloc"), "device_alloc");
    uint32_t via_torch = tb_frame(
        &b,
        tb_frame(&b, weights,
                 "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc"),
        "cudaMalloc");
    uint32_t encoder_leaf = tb_frame(&b, tb_frame(&b, encoder, "cached_alloc"), "device_alloc");
    tb_alloc(&b, 0x700000000000, TB_GIB, via_model);
    tb_alloc(&b, 0x700080000000, TB_GIB, via_model);
    tb_alloc(&b, 0x700100000000, TB_GIB, via_torch);
    tb_alloc(&b, 0x700180000000, 2 * TB_GIB, encoder_leaf);
    tb_alloc_fail(&b, 30 * TB_GIB, via_model);
    tb_finish(&b, 1); /* symbols come last, as in a recorded trace */
    const char *path = temp_trace(b.buf.data, b.buf.len, 7);
    tb_free_builder(&b);
    return path;
}

Test(frames, oom_holders_are_named_and_grouped_past_allocator_frames)
{
    const char *path = allocator_trace();
    const char *text[] = {"oom", path, NULL};
    struct captured c = capture_run(cmt_cmd_oom, text);
    cr_expect_eq(c.status, 0);
    cr_expect(strstr(c.out, "3.00 GiB       3 allocs  load_weights"), "%s", c.out);
    cr_expect(strstr(c.out, "2.00 GiB       1 alloc   load_encoder"), "%s", c.out);
    const char *holders = strstr(c.out, "top holders");
    cr_assert(holders, "%s", c.out);
    cr_expect_null(strstr(holders, "device_alloc"), "%s", c.out);
    captured_free(&c);

    const char *json[] = {"oom", "--json", path, NULL};
    c = capture_run(cmt_cmd_oom, json);
    cr_expect_eq(c.status, 0);
    /* one holder per call site, and its stack still lists every frame from the leaf */
    cr_expect(strstr(c.out, "\"holders\":[{\"bytes\":3221225472,\"count\":3,\"stack\":["
                            "\"device_alloc\",\"cmt_model_alloc\",\"cached_alloc\","
                            "\"load_weights\",\"main\"]}"),
              "%s", c.out);
    cr_expect(strstr(c.out, "{\"bytes\":2147483648,\"count\":1,\"stack\":[\"device_alloc\","
                            "\"cached_alloc\",\"load_encoder\",\"main\"]}]"),
              "%s", c.out);
    captured_free(&c);
}

Test(frames, report_sites_are_named_and_grouped_past_allocator_frames)
{
    const char *path = allocator_trace();
    const char *argv[] = {"report", path, NULL};
    struct captured c = capture_run(cmt_cmd_report, argv);
    cr_expect_eq(c.status, 0);
    const char *sites = strstr(c.out, "top call sites at the peak");
    cr_assert(sites, "%s", c.out);
    cr_expect(strstr(sites, "3.00 GiB        3 allocs  load_weights"), "%s", c.out);
    cr_expect(strstr(sites, "2.00 GiB        1 alloc   load_encoder"), "%s", c.out);
    captured_free(&c);
}
