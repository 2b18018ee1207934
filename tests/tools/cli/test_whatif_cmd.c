/* Tests of the `cumemtrace whatif` command: output, JSON keys, capacity,
 * bad arguments. */
#include "commands.h"
#include "json_query.h"
#include "whatif_fixture.h"

static struct captured c;

/* The JSON value at `path` in c.out (json_query.h) is `want`: a string's contents, or a
 * number's, true's, false's or null's text. Keys are found wherever they are. */
static void expect_json(const char *path, const char *want)
{
    char got[512];
    cr_assert(jq_valid(c.out), "not one JSON value:\n%s", c.out);
    cr_assert(jq_text(c.out, path, got, sizeof got), "no %s in\n%s", path, c.out);
    cr_assert_str_eq(got, want, "%s", path);
}

/* The closed trace b as a temporary file (b's buffer freed). @return its path (malloc'ed). */
static char *file_of(struct tb *b)
{
    char *path = tb_file(b);
    cmt_membuf_free(&b->buf);
    return path;
}

/* Runs whatif with argv (into c) and asserts that it succeeded. */
static void whatif_ok(const char *const *argv)
{
    capture(&c, cmt_cmd_whatif, argv);
    cr_assert_eq(c.status, 0, "%s", c.err);
}

static char *writeup_file(void)
{
    struct tb b;
    tb_writeup(&b);
    char *path = file_of(&b);
    return path;
}

Test(whatif_cmd, default_sweep_prints_the_writeup_table_and_recommends_6144)
{
    char *path = writeup_file();
    const char *argv[] = {"whatif", path, NULL};
    whatif_ok(argv);
    cr_assert_str_empty(c.err);
    const char *rows[] = {"default (max_split_size_mb unlimited)  OOM at 6.18 GiB",
                          "max_split_size_mb:4096                 ok",
                          "max_split_size_mb:5120                 ok",
                          "max_split_size_mb:6144                 ok",
                          "max_split_size_mb:7168                 OOM at 6.18 GiB",
                          "max_split_size_mb:8192                 OOM at 6.18 GiB"};
    for (int i = 0; i < 6; i++)
        cr_assert(strstr(c.out, rows[i]), "missing row '%s' in\n%s", rows[i], c.out);
    /* PyTorch 2.x's wording by default (issue 16 item 5; was the 1.x one, below). */
    cr_assert(strstr(c.out, "Tried to allocate 6.18 GiB. GPU 0 has a total capacity of 24.00 GiB "
                            "of which 3.43 GiB is free. Of the allocated memory 11.39 GiB is "
                            "allocated by PyTorch, and 6.23 GiB is reserved by PyTorch but "
                            "unallocated."),
              "%s", c.out);
    cr_assert(strstr(c.out, "from vae_decode demo.c:211"), "%s", c.out);
    cr_assert(strstr(c.out, "export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:6144\n"), "%s",
              c.out);
    cr_assert(strstr(c.out, "at or below 6330"), "%s", c.out);
    cr_assert_null(strstr(c.out, "WARNING"));
    unlink(path);
    free(path);
}

Test(whatif_cmd, json_contract)
{
    char *path = writeup_file();
    const char *argv[] = {"whatif", "--json", "--max-split-size-mb", "inf,6144", path, NULL};
    whatif_ok(argv);
    cr_assert_eq(count_lines(c.out), 1, "one JSON line:\n%s", c.out);
    const char *keys[] = {
        "\"capacity_bytes\":22603104256",
        "\"results\":[",
        "\"max_split_size_mb\":null",
        "\"max_split_size_mb\":6144",
        "\"expandable_segments\":false",
        "\"oom\":true",
        "\"oom\":false",
        "\"peak_reserved_bytes\":18920505344",
        "\"peak_reserved_bytes\":19025362944",
        "\"peak_allocated_bytes\":",
        "\"first_oom\":{",
        "\"first_oom\":null",
        "\"recommendation\":{",
        "\"pytorch_cuda_alloc_conf\":\"PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:6144\"",
        "\"call_site\":\"vae_decode demo.c:211\"",
        "\"exact_max_split_size_mb\":6330",
        "\"caching_allocator_detected\":false"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        cr_assert(strstr(c.out, keys[i]), "missing %s in\n%s", keys[i], c.out);
    unlink(path);
    free(path);
}

Test(whatif_cmd, capacity_override)
{
    char *path = writeup_file();
    const char *argv[] = {"whatif", "--json", "--capacity", "30GiB", "--max-split-size-mb",
                          "inf",    path,     NULL};
    whatif_ok(argv);
    cr_assert(strstr(c.out, "\"capacity_bytes\":32212254720"), "%s", c.out);
    cr_assert(strstr(c.out, "\"capacity_source\":\"option\""), "%s", c.out);
    cr_assert(strstr(c.out, "\"oom\":false"), "%s", c.out);
    expect_json("recommendation.result_index", "0");
    expect_json("recommendation.setting", "");
    unlink(path);
    free(path);
}

Test(whatif_cmd, every_combination_is_replayed)
{
    char *path = writeup_file();
    const char *argv[] = {"whatif",
                          "--json",
                          "--max-split-size-mb",
                          "inf,4096,8192",
                          "--expandable-segments",
                          "false,true",
                          "--roundup-power2-divisions",
                          "0,4",
                          "--gc-threshold",
                          "0,0.6",
                          "--jobs",
                          "2",
                          path,
                          NULL};
    whatif_ok(argv);
    int results = 0;
    for (const char *p = c.out; (p = strstr(p, "\"events_replayed\"")); p++)
        results++;
    cr_assert_eq(results, 3 * 2 * 2 * 2);
    cr_assert(strstr(c.out, "\"setting\":\"max_split_size_mb:8192,roundup_power2_divisions:4,"
                            "garbage_collection_threshold:0.6,expandable_segments:True\""),
              "%s", c.out);
    unlink(path);
    free(path);
}

Test(whatif_cmd, caching_allocator_trace_gets_a_warning)
{
    struct tb b;
    tb_open(&b, 24 * GiB, 20 * GiB);
    uint64_t sizes[] = {3000 * MiB, 3000 * MiB, 2714 * MiB, 1000 * MiB, 6330 * MiB};
    for (int i = 0; i < 5; i++)
        tb_alloc(&b, P(i), sizes[i]);
    tb_event(&b, API_ALLOC, 2, 0, 6330 * MiB, 0, STACK_RAW);
    tb_event(&b, API_ALLOC, 2, 0, 6330 * MiB, 0, STACK_RAW);
    tb_close(&b);
    char *path = tb_file(&b);
    const char *argv[] = {"whatif", path, NULL};
    whatif_ok(argv);
    cr_assert(strstr(c.out, "WARNING: this trace looks like it went through a caching allocator"),
              "%s", c.out);
    cr_assert(strstr(c.out, "PYTORCH_NO_CUDA_MEMORY_CACHING=1"), "%s", c.out);
    const char *json[] = {"whatif", "--json", path, NULL};
    capture(&c, cmt_cmd_whatif, json);
    cr_assert(strstr(c.out, "\"caching_allocator_detected\":true"), "%s", c.out);
    cr_assert_eq(count_lines(c.err), 1, "%s", c.err);
    unlink(path);
    free(path);
    cmt_membuf_free(&b.buf);
}

/* Usage errors: exit 2 and exactly one line on stderr, nothing on stdout. */
Test(whatif_cmd, bad_arguments_exit_2_with_one_line)
{
    char *path = writeup_file();
    const char *cases[][8] = {
        {"whatif", NULL},
        {"whatif", "--bogus", path, NULL},
        {"whatif", path, path, NULL},
        {"whatif", "--capacity", "lots", path, NULL},
        {"whatif", "--capacity", "-5GiB", path, NULL},
        {"whatif", "--capacity", NULL},
        {"whatif", "--max-split-size-mb", "10", path, NULL},
        {"whatif", "--max-split-size-mb", "4096,,x", path, NULL},
        {"whatif", "--max-split-size-mb", "", path, NULL},
        {"whatif", "--expandable-segments", "maybe", path, NULL},
        {"whatif", "--roundup-power2-divisions", "3", path, NULL},
        {"whatif", "--gc-threshold", "1.5", path, NULL},
        {"whatif", "--jobs", "0", path, NULL},
        {"whatif", "--memory-fraction", "0", path, NULL},
        {"whatif", "--memory-fraction", "1.5", path, NULL},
        {"whatif", "--memory-fraction=half", path, NULL},
        {"whatif", "--address-policy", "best-fit", path, NULL},
        {"whatif", "--json=yes", path, NULL},
        {"whatif", "--jobs=", path, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        capture(&c, cmt_cmd_whatif, cases[i]);
        cr_assert_eq(c.status, 2, "case %zu: status %d, stderr %s", i, c.status, c.err);
        cr_assert_eq(count_lines(c.err), 1, "case %zu: %s", i, c.err);
        cr_assert(strncmp(c.err, "cumemtrace whatif: ", 19) == 0, "case %zu: %s", i, c.err);
        cr_assert_str_empty(c.out, "case %zu", i);
    }
    unlink(path);
    free(path);
}

/* Unreadable or unusable traces: exit 1 and one line naming the file. */
Test(whatif_cmd, bad_traces_exit_1_with_one_line)
{
    struct tb b;
    tb_open(&b, 0, 0); /* no DEVICE record: capacity unknown */
    tb_alloc(&b, P(0), 64 * MiB);
    tb_close(&b);
    char *no_device = tb_file(&b);
    cmt_membuf_free(&b.buf);
    tb_open(&b, 8 * GiB, 4 * GiB);
    tb_close(&b);
    char *empty = tb_file(&b);
    cmt_membuf_free(&b.buf);
    char garbage[] = "/tmp/cmt-whatif-garbage.XXXXXX";
    int fd = mkstemp(garbage);
    cr_assert_eq(write(fd, "not a trace at all", 18), 18);
    close(fd);
    const char *paths[] = {"/nonexistent/trace.cmt", garbage, empty};
    for (int i = 0; i < 3; i++) {
        const char *argv[] = {"whatif", paths[i], NULL};
        capture(&c, cmt_cmd_whatif, argv);
        cr_assert_eq(c.status, 1, "%s: status %d", paths[i], c.status);
        cr_assert_eq(count_lines(c.err), 1, "%s: %s", paths[i], c.err);
        cr_assert(strstr(c.err, paths[i]), "%s", c.err);
    }
    /* A trace without device figures replays without a limit, and says so ... */
    const char *bare[] = {"whatif", no_device, NULL};
    whatif_ok(bare);
    cr_assert(strstr(c.out, "capacity  unknown"), "%s", c.out);
    cr_assert(strstr(c.out, "--capacity SIZE"), "%s", c.out);
    /* ... and with a capacity it replays against it. */
    const char *argv[] = {"whatif", "--capacity", "1GiB", no_device, NULL};
    whatif_ok(argv);
    cr_assert(strstr(c.out, "(--capacity)"), "%s", c.out);
    unlink(no_device);
    unlink(empty);
    unlink(garbage);
    free(no_device);
    free(empty);
}

Test(whatif_cmd, help)
{
    const char *argv[] = {"whatif", "--help", NULL};
    capture(&c, cmt_cmd_whatif, argv);
    cr_assert_eq(c.status, 0);
    cr_assert(strstr(c.out, "usage: cumemtrace whatif"));
}

/* Issue 16 item 6: a tensor-level run that itself ran out of memory (the write-up's stream with
 * its last request failed, on a smaller card) replays the failed request and gets a
 * recommendation, not "PyTorch's defaults already avoid out-of-memory here". */
Test(whatif_cmd, a_run_that_ran_out_of_memory_gets_a_recommendation)
{
    struct tb b;
    tb_open(&b, 16 * GiB, 13364 * MiB);
    tb_writeup_blocks(&b);
    tb_alloc(&b, P(10), 100 * MiB);
    tb_event(&b, API_ALLOC, 2, 0, X_SIZE, 0, STACK_VAE); /* the program's own OOM */
    tb_close(&b);
    char *path = file_of(&b);
    const char *argv[] = {"whatif", path, NULL};
    whatif_ok(argv);
    cr_assert(strstr(c.out, "; 1 failed allocation replayed as request\n"), "%s", c.out);
    cr_assert(strstr(c.out, "default (max_split_size_mb unlimited)  OOM at 6.18 GiB"), "%s", c.out);
    cr_assert(strstr(c.out, "from vae_decode demo.c:211"), "%s", c.out);
    cr_assert_null(strstr(c.out, "already avoid"), "%s", c.out);
    cr_assert(strstr(c.out, "No setting tried avoids the OOM"), "%s", c.out);
    unlink(path);
    free(path);
}

Test(whatif_cmd, oom_message_in_1x_wording_by_option)
{
    char *path = writeup_file();
    const char *argv[] = {"whatif", "--oom-message", "1.x", path, NULL};
    whatif_ok(argv);
    cr_assert(strstr(c.out, "Tried to allocate 6.18 GiB (GPU 0; 24.00 GiB total capacity; "
                            "11.39 GiB already allocated; 3.43 GiB free; 17.62 GiB reserved"),
              "%s", c.out);
    const char *json[] = {"whatif", "--json", path, NULL};
    capture(&c, cmt_cmd_whatif, json);
    cr_assert(strstr(c.out, "\"message\":\"CUDA out of memory. Tried to allocate 6.18 GiB. GPU 0 "
                            "has a total capacity of 24.00 GiB of which 3.43 GiB is free."),
              "%s", c.out);
    const char *bad[] = {"whatif", "--oom-message", "3.x", path, NULL};
    capture(&c, cmt_cmd_whatif, bad);
    cr_assert_eq(c.status, 2);
    cr_assert(strstr(c.err, "--oom-message wants 2.x or 1.x, got '3.x'"), "%s", c.err);
    unlink(path);
    free(path);
}

Test(whatif_cmd, max_non_split_rounding_is_swept)
{
    char *path = writeup_file();
    const char *argv[] = {
        "whatif", "--json", "--max-split-size-mb", "4096", "--max-non-split-rounding-mb", "20,64",
        path,     NULL};
    whatif_ok(argv);
    int results = 0;
    for (const char *p = c.out; (p = strstr(p, "\"events_replayed\"")); p++)
        results++;
    cr_assert_eq(results, 2);
    expect_json("results.0.setting", "max_split_size_mb:4096");
    expect_json("results.1.setting", "max_split_size_mb:4096,max_non_split_rounding_mb:64");
    expect_json("results.0.max_non_split_rounding_mb", "20");
    expect_json("results.1.max_non_split_rounding_mb", "64");
    const char *bad[] = {"whatif", "--max-non-split-rounding-mb", "19", path, NULL};
    capture(&c, cmt_cmd_whatif, bad);
    cr_assert_eq(c.status, 2, "%s", c.err);
    cr_assert(strstr(c.err, "--max-non-split-rounding-mb: '19' is not a whole number of MiB >= 20"),
              "%s", c.err);
    const char *help[] = {"whatif", "--help", NULL};
    capture(&c, cmt_cmd_whatif, help);
    cr_assert(strstr(c.out, "  --max-non-split-rounding-mb LIST  e.g. 20,64"), "%s", c.out);
    unlink(path);
    free(path);
}

/* ---- issue 16 items 4, 5 and 7 ---------------------------------------- */

Test(whatif_cmd, options_take_the_equals_form)
{
    char *path = writeup_file();
    const char *argv[] = {"whatif",
                          "--json",
                          "--max-split-size-mb=inf,6144",
                          "--jobs=1",
                          "--capacity=22603104256",
                          "--oom-message=1.x",
                          path,
                          NULL};
    whatif_ok(argv);
    int results = 0;
    for (const char *p = c.out; (p = strstr(p, "\"events_replayed\"")); p++)
        results++;
    cr_assert_eq(results, 2);
    cr_assert(strstr(c.out, "\"capacity_source\":\"option\""), "%s", c.out);
    cr_assert(strstr(c.out, "\"oom_message_style\":\"1.x\""), "%s", c.out);
    const char *bad[] = {"whatif", "--json=1", path, NULL};
    capture(&c, cmt_cmd_whatif, bad);
    cr_assert_eq(c.status, 2);
    cr_assert(strstr(c.err, "--json takes no value"), "%s", c.err);
    unlink(path);
    free(path);
}

Test(whatif_cmd, json_has_memory_stats_names_and_the_address_check)
{
    char *path = writeup_file();
    const char *argv[] = {"whatif", "--json", "--max-split-size-mb", "inf,6144", path, NULL};
    whatif_ok(argv);
    expect_json("address_policy", "never-reuse");
    expect_json("borderline_settings", "0");
    expect_json("pytorch_version", "null");
    expect_json("oom_message_style", "2.x");
    expect_json("memory_fraction", "null");
    for (int r = 0; r < 2; r++) {
        char key[64];
        snprintf(key, sizeof key, "results.%d.addresses_diverged", r);
        expect_json(key, "false");
        snprintf(key, sizeof key, "results.%d.other_address_policy", r);
        expect_json(key, "null");
        snprintf(key, sizeof key, "results.%d.borderline", r);
        expect_json(key, "false");
        snprintf(key, sizeof key, "results.%d.memory_stats", r);
        cr_assert_gt(jq_count(c.out, key), 0, "%s", key);
    }
    /* memory_stats' keys have dots in them (PyTorch's names): found as text */
    const char *keys[] = {"\"allocated_bytes.all.peak\":", "\"reserved_bytes.all.peak\":",
                          "\"num_alloc_retries\":1",       "\"num_ooms\":1",
                          "\"num_device_alloc\":",         "\"num_device_free\":"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        cr_assert(strstr(c.out, keys[i]), "missing %s in %s", keys[i], c.out);
    unlink(path);
    free(path);
}

/* The write-up's trace, with the program's PyTorch named by an ENV record. */
static char *versioned_writeup_file(const char *version)
{
    struct tb b;
    tb_open(&b, 24 * GiB, 21556 * MiB);
    cr_assert_eq(cmt_writer_env(b.w, "PYTORCH_VERSION", version), 0);
    tb_writeup_blocks(&b);
    tb_alloc(&b, P(9), X_SIZE);
    tb_free(&b, P(9));
    tb_alloc(&b, P(10), 100 * MiB);
    tb_event(&b, API_ALLOC, 0, P(11), X_SIZE, 0, STACK_VAE);
    tb_close(&b);
    char *path = file_of(&b);
    return path;
}

Test(whatif_cmd, an_older_pytorch_in_the_trace_gets_the_1x_message)
{
    static const char old[] = "Tried to allocate 6.18 GiB (GPU 0; 24.00 GiB total capacity; "
                              "11.39 GiB already allocated; 3.43 GiB free; 17.62 GiB reserved";
    char *path = versioned_writeup_file("1.13.1");
    const char *argv[] = {"whatif", path, NULL};
    whatif_ok(argv);
    cr_assert(strstr(c.out, old), "%s", c.out);
    cr_assert(strstr(c.out, "PyTorch   1.13.1 (from PYTORCH_VERSION): OOM messages in its 1.x"),
              "%s", c.out);
    const char *json[] = {"whatif", "--json", path, NULL};
    capture(&c, cmt_cmd_whatif, json);
    expect_json("pytorch_version", "1.13.1");
    expect_json("pytorch_version_source", "PYTORCH_VERSION");
    expect_json("oom_message_style", "1.x");
    /* The option wins. */
    const char *forced[] = {"whatif", "--oom-message", "2.x", path, NULL};
    capture(&c, cmt_cmd_whatif, forced);
    cr_assert_null(strstr(c.out, old), "%s", c.out);
    cr_assert(strstr(c.out, "GPU 0 has a total capacity of 24.00 GiB"), "%s", c.out);
    unlink(path);
    free(path);
    path = versioned_writeup_file("2.3.1");
    capture(&c, cmt_cmd_whatif, (const char *[]){"whatif", path, NULL});
    cr_assert(strstr(c.out, "GPU 0 has a total capacity of 24.00 GiB"), "%s", c.out);
    cr_assert(strstr(c.out, "PyTorch   2.3.1 (from PYTORCH_VERSION)\n"), "%s", c.out);
    unlink(path);
    free(path);
}

/* tests/tools/model's release-tie stream as a trace: never-reuse fits, first fit does not. */
Test(whatif_cmd, a_setting_whose_verdict_depends_on_the_addresses_is_borderline)
{
    struct tb b;
    tb_open(&b, 220 * MiB, 220 * MiB);
    tb_alloc(&b, P(0), 40 * MiB);
    tb_alloc(&b, P(1), 40 * MiB);
    tb_alloc(&b, P(2), 100 * MiB);
    tb_free(&b, P(0));
    tb_free(&b, P(1));
    tb_alloc(&b, P(3), 50 * MiB);
    tb_free(&b, P(2));
    tb_alloc(&b, P(4), 50 * MiB);
    tb_free(&b, P(3));
    tb_alloc(&b, P(5), 50 * MiB);
    tb_alloc(&b, P(6), 100 * MiB);
    tb_close(&b);
    char *path = file_of(&b);
    const char *argv[] = {"whatif", "--max-split-size-mb", "inf", path, NULL};
    whatif_ok(argv);
    cr_assert(strstr(c.out, "ok, borderline"), "%s", c.out);
    cr_assert(strstr(c.out, "borderline: default (max_split_size_mb unlimited) fits under "
                            "never-reuse addresses and runs out of memory under first-fit"),
              "%s", c.out);
    cr_assert(strstr(c.out, "1 setting replayed under first-fit too"), "%s", c.out);
    cr_assert(strstr(c.out, "but only under some address reuse (borderline)"), "%s", c.out);
    const char *json[] = {
        "whatif", "--json", "--address-policy=first-fit", "--max-split-size-mb", "inf", path, NULL};
    whatif_ok(json);
    expect_json("address_policy", "first-fit");
    expect_json("borderline_settings", "1");
    expect_json("results.0.oom", "true");
    expect_json("results.0.other_address_policy.address_policy", "never-reuse");
    expect_json("results.0.other_address_policy.oom", "false");
    expect_json("results.0.borderline", "true");
    unlink(path);
    free(path);
}

Test(whatif_cmd, gc_threshold_without_a_fraction_gets_a_note)
{
    char *path = writeup_file();
    const char *argv[] = {"whatif", "--gc-threshold", "0.6", path, NULL};
    whatif_ok(argv);
    cr_assert(strstr(c.err, "garbage_collection_threshold acts only with a memory fraction"), "%s",
              c.err);
    const char *with[] = {"whatif", "--gc-threshold", "0.6", "--memory-fraction", "0.9", path,
                          NULL};
    whatif_ok(with);
    cr_assert_str_empty(c.err);
    cr_assert(strstr(c.out, "fraction  0.9 (--memory-fraction): the allocator may hold 21.60 GiB"),
              "%s", c.out);
    unlink(path);
    free(path);
}
