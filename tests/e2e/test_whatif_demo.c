/* End to end: the demo program recorded on simcuda, whatif over its
 * tensor-level trace, and `cumemtrace demo` as a whole. */
#include "e2e_util.h"

TestSuite(whatif_demo, .init = e2e_setup, .fini = e2e_teardown);

#define DEMO "libexec/cumemtrace/demo_diffusion"

Test(whatif_demo, default_run_fails_with_the_writeup_message)
{
    static struct run r;
    const char *args[] = {"-o", "sd-oom.cmt", NULL};
    unsetenv("PYTORCH_CUDA_ALLOC_CONF");
    unsetenv("PYTORCH_NO_CUDA_MEMORY_CACHING");
    e2e_record(&r, args, DEMO, NULL);
    cr_assert_eq(r.status, 1, "stderr: %s", r.err);
    cr_assert(strstr(r.err, "Tried to allocate 6.18 GiB (GPU 0; 24.00 GiB total capacity; "
                            "11.39 GiB already allocated; 3.43 GiB free; 17.62 GiB reserved in "
                            "total by PyTorch)"),
              "stderr: %s", r.err);
    cr_assert(strstr(r.err, "wrote sd-oom.cmt"), "stderr: %s", r.err);
}

Test(whatif_demo, tensor_level_trace_recommends_6144)
{
    static struct run r;
    const char *args[] = {"-o", "sd-tensors.cmt", NULL};
    unsetenv("PYTORCH_CUDA_ALLOC_CONF");
    setenv("PYTORCH_NO_CUDA_MEMORY_CACHING", "1", 1);
    e2e_record(&r, args, DEMO, NULL);
    unsetenv("PYTORCH_NO_CUDA_MEMORY_CACHING");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    char cli[PATH_MAX];
    char *argv[] = {(char *)e2e_path(cli, "bin/cumemtrace"), "whatif", "--json", "sd-tensors.cmt",
                    NULL};
    e2e_run(&r, argv);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    /* 24 GiB - 2764 MiB used elsewhere - 256 MiB context = 21556 MiB */
    cr_assert(strstr(r.out, "\"capacity_bytes\":22603104256"), "%s", r.out);
    cr_assert(strstr(r.out, "\"caching_allocator_detected\":false"), "%s", r.out);
    cr_assert(strstr(r.out, "\"pytorch_cuda_alloc_conf\":\"PYTORCH_CUDA_ALLOC_CONF="
                            "max_split_size_mb:6144\""),
              "%s", r.out);
    cr_assert(strstr(r.out, "\"call_site\":\"vae_decode demo_diffusion.c:"), "%s", r.out);
    /* The write-up's table: OOM above the request, none below. */
    const char *rows[] = {"\"max_split_size_mb\":null,\"expandable_segments\":false,"
                          "\"roundup_power2_divisions\":0,\"garbage_collection_threshold\":0,"
                          "\"oom\":true",
                          "\"max_split_size_mb\":4096,\"expandable_segments\":false,"
                          "\"roundup_power2_divisions\":0,\"garbage_collection_threshold\":0,"
                          "\"oom\":false",
                          "\"max_split_size_mb\":6144,\"expandable_segments\":false,"
                          "\"roundup_power2_divisions\":0,\"garbage_collection_threshold\":0,"
                          "\"oom\":false",
                          "\"max_split_size_mb\":7168,\"expandable_segments\":false,"
                          "\"roundup_power2_divisions\":0,\"garbage_collection_threshold\":0,"
                          "\"oom\":true",
                          "\"max_split_size_mb\":8192,\"expandable_segments\":false,"
                          "\"roundup_power2_divisions\":0,\"garbage_collection_threshold\":0,"
                          "\"oom\":true"};
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        cr_assert(strstr(r.out, rows[i]), "missing %s in %s", rows[i], r.out);
    /* The caching-on trace of the same run carries the allocator's block events (annotate.h):
     * whatif replays those, not the driver's segments, and recommends the same. */
    const char *cached[] = {"-o", "sd-cached.cmt", NULL};
    e2e_record(&r, cached, DEMO, NULL);
    char *argv2[] = {(char *)e2e_path(cli, "bin/cumemtrace"), "whatif", "--json", "sd-cached.cmt",
                     NULL};
    e2e_run(&r, argv2);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cr_assert(strstr(r.out, "\"caching_allocator_detected\":false"), "%s", r.out);
    cr_assert(strstr(r.out, "\"pytorch_cuda_alloc_conf\":\"PYTORCH_CUDA_ALLOC_CONF="
                            "max_split_size_mb:6144\""),
              "%s", r.out);
}

Test(whatif_demo, recommended_setting_fixes_the_run)
{
    static struct run r;
    const char *args[] = {"-o", "sd-fixed.cmt", NULL};
    setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:6144", 1);
    e2e_record(&r, args, DEMO, NULL);
    unsetenv("PYTORCH_CUDA_ALLOC_CONF");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cr_assert(strstr(r.out, "done: 2 images inpainted"), "%s", r.out);
}

Test(whatif_demo, demo_command_tells_the_whole_story)
{
    static struct run r;
    char cli[PATH_MAX];
    char *argv[] = {(char *)e2e_path(cli, "bin/cumemtrace"), "demo", "--dir", "story", NULL};
    e2e_run(&r, argv);
    cr_assert_eq(r.status, 0, "stdout: %s\nstderr: %s", r.out, r.err);
    const char *want[] = {"Step 1 of 5", "Step 2 of 5", "Step 3 of 5", "Step 4 of 5", "Step 5 of 5",
                          "$ cumemtrace oom sd-oom.cmt",
                          /* the ordinary (caching-on) run alone tells the story */
                          "  verdict    fragmentation",
                          /* the program names its phases (annotate.h ranges) */
                          "  phase      vae_decode\n",
                          /* the ledger at the failure: the cache and the tensors add up */
                          "  ledger of GPU 0 (simcuda GPU 0 (simulated)) at the failure: capacity "
                          "24.00 GiB, free measured",
                          "    cached      6.23 GiB  26.0%  cached, free in segments "
                          "(pytorch-cuda-caching)",
                          "    residual  0 B", "by phase (allocator blocks;",
                          "$ cumemtrace whatif --oom-message 1.x sd-oom.cmt",
                          "the model reproduces 7 of 7 segment allocations of this run",
                          /* the caching-off re-run is an aside, and agrees */
                          "Aside: ", "$ PYTORCH_NO_CUDA_MEMORY_CACHING=1 cumemtrace record",
                          "recommends max_split_size_mb:6144: the same as the ordinary run's",
                          "export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:6144",
                          "$ cumemtrace diff sd-oom.cmt sd-fixed.cmt", "Done in"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        cr_assert(strstr(r.out, want[i]), "missing '%s' in\n%s", want[i], r.out);
    /* the failing stack starts at the program's call site, not in the caching allocator */
    const char *stack = strstr(r.out, "failing stack, from the call site (5 allocator frames");
    cr_assert(stack, "the failing stack does not start at the call site:\n%s", r.out);
    const char *first = strchr(stack, '#');
    cr_assert(first && strncmp(first, "#5  vae_decode demo_diffusion.c:", 32) == 0, "%s", stack);
    struct stat st;
    cr_assert_eq(stat("story/sd-oom.svg", &st), 0);
    cr_assert_gt(st.st_size, 100);
}
