/* Tests of what the commands show from allocator-level records (oom, report, timeline, diff,
 * whatif) on the write-up's case (alloc_fixture.h). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_fixture.h"
#include "alloc_run.h"
#include "capture.h"
#include "commands.h"

/* The write-up's case as a trace file (with_driver: as the shim records it). */
static const char *writeup(int index, int with_driver, const char *conf)
{
    struct tb b;
    wu_fragmentation(&b, with_driver, conf);
    const char *path = temp_trace(b.buf.data, b.buf.len, index);
    if (getenv("CMT_KEEP_FIXTURE")) /* for a look by hand */
        tb_save(&b, with_driver ? "/tmp/cmt_writeup_shim.cmt" : "/tmp/cmt_writeup_snapshot.cmt");
    tb_free_builder(&b);
    return path;
}

/* The JSON text `"key":N` for N = mib MiB in bytes, written into buf. @return buf */
static const char *mib_field(char buf[96], const char *key, unsigned long long mib)
{
    snprintf(buf, 96, "\"%s\":%llu", key, mib << 20);
    return buf;
}

static const char *saved_hostile(struct tb *b)
{
    tb_finish(b, 1);
    if (getenv("CMT_KEEP_FIXTURE"))
        tb_save(b, "/tmp/cmt_hostile_alloc.cmt");
    const char *path = temp_trace(b->buf.data, b->buf.len, 3);
    tb_free_builder(b);
    return path;
}

static void expect_in(const char *text, const char *const *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cr_expect(strstr(text, want[i]), "missing \"%s\" in:\n%s", want[i], text);
}

Test(allocator_cmds, oom_on_the_writeup_case_says_fragmentation_with_its_figures)
{
    for (int with_driver = 0; with_driver < 2; with_driver++) {
        const char *argv[] = {"oom", writeup(0, with_driver, ""), NULL};
        struct captured c = capture_run(cmt_cmd_oom, argv);
        cr_expect_eq(c.status, 0);
        static const char *want[] = {
            "verdict    fragmentation",
            "the allocator held 6.23 GiB reserved but unallocated, more than the 6.18 GiB "
            "request, yet its largest free block was 3.50 GiB",
            "allocated 11.39 GiB, reserved 17.62 GiB",
            "free 3.43 GiB",
            "total 24.00 GiB",
            "2 split (6.23 GiB",
            "forward unet.py:412",
            "decode vae.py:120",
            "max_split_size_mb:6144"};
        expect_in(c.out, want, sizeof want / sizeof *want);
        if (with_driver)
            cr_expect(strstr(c.out, "ncclCommInitRank"), "%s", c.out);
        captured_free(&c);
    }
}

Test(allocator_cmds, oom_json_has_an_allocator_object)
{
    const char *argv[] = {"oom", "--json", writeup(0, 1, "max_split_size_mb:8192"), NULL};
    struct captured c = capture_run(cmt_cmd_oom, argv);
    cr_expect_eq(c.status, 0);
    char buf[4][96];
    const char *want[] = {
        "\"verdict\":\"fragmentation\"",
        "\"allocator\":{\"id\":1,\"name\":\"pytorch-cuda-caching\"",
        "\"conf\":\"max_split_size_mb:8192\"",
        "\"max_split_size_bytes\":8589934592",
        "\"split_cached_blocks\":2",
        "\"site\":\"forward unet.py:412\"",
        "\"site\":\"ncclCommInitRank\"",
        "\"suggest_max_split_size_mb\":6144",
        mib_field(buf[0], "unallocated_bytes", WU_RESERVED_MIB - WU_ALLOCATED_MIB),
        mib_field(buf[1], "request_bytes", WU_REQUEST_MIB),
        mib_field(buf[2], "largest_free_block_bytes", WU_GAP1_MIB),
        mib_field(buf[3], "outside_bytes", WU_OUTSIDE_MIB)};
    expect_in(c.out, want, sizeof want / sizeof *want);
    captured_free(&c);
}

Test(allocator_cmds, report_json_has_the_allocator_figures_per_device)
{
    for (int with_driver = 0; with_driver < 2; with_driver++) {
        const char *argv[] = {"report", "--json", writeup(0, with_driver, "max_split_size_mb:8192"),
                              NULL};
        struct captured c = capture_run(cmt_cmd_report, argv);
        cr_expect_eq(c.status, 0);
        char buf[4][96];
        const char *want[] = {"\"allocator\":{",
                              "\"segments_at_end\":2",
                              "\"allocator_settings\":[{\"id\":1,",
                              "\"conf\":\"max_split_size_mb:8192\",\"source\":\"allocator\"",
                              mib_field(buf[0], "allocated_bytes_at_end", WU_ALLOCATED_MIB),
                              mib_field(buf[1], "reserved_bytes_at_end", WU_RESERVED_MIB),
                              mib_field(buf[2], "peak_allocated_bytes", WU_ALLOCATED_MIB),
                              mib_field(buf[3], "peak_reserved_bytes", WU_RESERVED_MIB)};
        expect_in(c.out, want, sizeof want / sizeof *want);
        captured_free(&c);
    }
}

Test(allocator_cmds, report_and_diff_show_the_settings_each_run_used)
{
    const char *a = strdup(writeup(0, 1, "max_split_size_mb:8192"));
    const char *b = writeup(1, 1, "expandable_segments:True");
    const char *argv[] = {"report", a, NULL};
    struct captured c = capture_run(cmt_cmd_report, argv);
    static const char *want[] = {"settings   pytorch-cuda-caching 2.6.0: max_split_size_mb:8192",
                                 "allocator  GPU 0 (Simulated GPU): allocated 11.39 GiB at the "
                                 "end (peak 11.39 GiB), reserved 17.62 GiB"};
    expect_in(c.out, want, 2);
    captured_free(&c);
    const char *dargv[] = {"diff", a, b, NULL};
    c = capture_run(cmt_cmd_diff, dargv);
    static const char *dwant[] = {
        "settings A: pytorch-cuda-caching 2.6.0: max_split_size_mb:8192",
        "settings B: pytorch-cuda-caching 2.6.0: expandable_segments:True", "peak reserved"};
    expect_in(c.out, dwant, 3);
    captured_free(&c);
    free((void *)a);
}

Test(allocator_cmds, without_allocator_records_report_says_nothing_of_them)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    tb_alloc(&b, 0x700000000000, TB_GIB, tb_stack(&b, "f", 2));
    tb_finish(&b, 1);
    const char *path = temp_trace(b.buf.data, b.buf.len, 0);
    tb_free_builder(&b);
    const char *argv[] = {"report", "--json", path, NULL};
    struct captured c = capture_run(cmt_cmd_report, argv);
    cr_expect_null(strstr(c.out, "allocator"), "%s", c.out);
    captured_free(&c);
    const char *targv[] = {"report", path, NULL};
    c = capture_run(cmt_cmd_report, targv);
    cr_expect_null(strstr(c.out, "settings"), "%s", c.out);
    captured_free(&c);
}

Test(allocator_cmds, timeline_has_allocated_reserved_and_inactive_split_series)
{
    const char *path = writeup(0, 1, "");
    const char *argv[] = {"timeline", "--csv", path, NULL};
    struct captured c = capture_run(cmt_cmd_timeline, argv);
    cr_expect_eq(c.status, 0);
    cr_expect(strstr(c.out, "last_live_bytes,allocated_bytes,reserved_bytes,inactive_split_bytes,"
                            "last_allocated_bytes,last_reserved_bytes\n"),
              "%s", c.out);
    char end[96]; /* the last row ends with the allocator's figures at the end */
    snprintf(end, sizeof end, ",%llu,%llu\n", (unsigned long long)WU_ALLOCATED_MIB << 20,
             (unsigned long long)WU_RESERVED_MIB << 20);
    size_t n = strlen(c.out), m = strlen(end);
    cr_expect(n > m && strcmp(c.out + n - m, end) == 0, "%s", c.out);
    captured_free(&c);
    const char *jargv[] = {"timeline", "--json", path, NULL};
    c = capture_run(cmt_cmd_timeline, jargv);
    cr_expect(strstr(c.out, "\"inactive_split_bytes\":"), "%s", c.out);
    cr_expect(strstr(c.out, "\"peak_reserved_bytes\":"), "%s", c.out);
    captured_free(&c);
    const char *targv[] = {"timeline", writeup(0, 0, ""), NULL};
    c = capture_run(cmt_cmd_timeline, targv);
    cr_expect(strstr(c.out, "allocator: allocated peak 11.39 GiB (11.39 GiB at the end), reserved "
                            "peak 17.62 GiB"),
              "%s", c.out);
    cr_expect(strstr(c.out, "  reserved  "), "%s", c.out);
    captured_free(&c);
}

Test(allocator_cmds, whatif_replays_the_block_events_and_checks_itself)
{
    const char *path = writeup(0, 1, "max_split_size_mb:8192");
    const char *argv[] = {"whatif", path, NULL};
    struct captured c = capture_run(cmt_cmd_whatif, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    static const char *want[] = {
        "4 allocations and 1 frees on GPU 0 (Simulated GPU); 1 failed allocation replayed",
        "capacity  21.05 GiB", /* free at the failure + reserved: the write-up's 3.43 + 17.62 */
        "stream    the allocator's own block events",
        "self-check  with the run's settings (max_split_size_mb:8192) the model reproduces 0 of 2 "
        "segment allocations and 0 of 0 segment frees of this run",
        "segment #1: run 6.40 GiB, model 2.90 GiB, for a 2.90 GiB request",
        /* the model's OOM path gave back a segment the run never did */
        "segment free #1: run none, model 3.50 GiB, for a 6.18 GiB request",
        "(forward unet.py:412)"};
    expect_in(c.out, want, sizeof want / sizeof *want);
    cr_expect_null(strstr(c.out, "WARNING"), "%s", c.out); /* not a caching-on stream */
    captured_free(&c);
    const char *jargv[] = {"whatif", "--json", path, NULL};
    c = capture_run(cmt_cmd_whatif, jargv);
    static const char *jwant[] = {
        "\"self_check\":{\"source\":\"allocator_events\",\"conf\":\"max_split_size_mb:8192\","
        "\"ran\":true",
        "\"recorded_segments\":2", "\"agreeing_segments\":0", "\"recorded_ooms\":1",
        "\"disagreements\":[{\"index\":0,\"recorded\":{\"bytes\":6872367104"};
    expect_in(c.out, jwant, sizeof jwant / sizeof *jwant);
    captured_free(&c);
}

/* Allocator records that make no sense: overlapping and unknown segments and blocks, sizes near
 * 2^64, unmaps larger than what is mapped, devices that do not exist, unknown actions. Every
 * command must stay standing. */
Test(allocator_cmds, hostile_allocator_records_leave_every_command_standing)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 20 * TB_GIB);
    tb_allocator(&b, 1, "max_split_size_mb:bogus,expandable_segments:True");
    uint64_t x = 0x9e3779b97f4a7c15ull;
    static const int32_t devs[] = {0, 0, 0, 1, -1, -7, 4096, 2000000000};
    static const uint64_t sizes[] = {0,          512,        20ull << 20,
                                     6ull << 30, UINT64_MAX, UINT64_MAX - 4095};
    for (int i = 0; i < 3000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t v[CMT_NAFIELDS];
        for (int f = 0; f < CMT_NAFIELDS; f++)
            v[f] = (x >> (f * 5)) & 1 ? sizes[(x >> (f * 3)) % 6]
                                      : 0x7f0000000000ull + ((x >> (f * 2)) % 16) * (16ull << 20);
        uint32_t fields = (uint32_t)(x >> 20) & ((1u << CMT_NAFIELDS) - 1);
        uint32_t action = (uint32_t)((x >> 40) % 11); /* 0 and 10: not actions */
        tb_alloc_event(&b, action, devs[(x >> 50) % 8], 0, fields, v);
        if (i % 500 == 0)
            tb_alloc(&b, 0x7f0000000000ull + (uint64_t)i * (32ull << 20), 64ull << 20, 0);
    }
    const char *path = saved_hostile(&b);
    const char *cmds[][4] = {{"oom", NULL},        {"oom", "--json"},     {"report", NULL},
                             {"report", "--json"}, {"timeline", "--csv"}, {"timeline", "--json"},
                             {"timeline", NULL},   {"whatif", NULL},      {"whatif", "--json"}};
    int (*fns[])(int, char **) = {cmt_cmd_oom,      cmt_cmd_oom,      cmt_cmd_report,
                                  cmt_cmd_report,   cmt_cmd_timeline, cmt_cmd_timeline,
                                  cmt_cmd_timeline, cmt_cmd_whatif,   cmt_cmd_whatif};
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
        const char *argv[] = {cmds[i][0], cmds[i][1] ? cmds[i][1] : path, cmds[i][1] ? path : NULL,
                              NULL};
        struct captured c = capture_run(fns[i], argv);
        cr_expect(c.status == 0 || c.status == 1, "%s %s: status %d: %s", cmds[i][0],
                  cmds[i][1] ? cmds[i][1] : "", c.status, c.err);
        captured_free(&c);
    }
    char html[256];
    snprintf(html, sizeof html, "%s.html", path);
    const char *hargv[] = {"html", "-o", html, path, NULL};
    struct captured h = capture_run(cmt_cmd_html, hargv);
    cr_expect(h.status == 0 || h.status == 1, "html: %d: %s", h.status, h.err);
    captured_free(&h);
    remove(html);
    const char *dargv[] = {"diff", path, path, NULL};
    struct captured c = capture_run(cmt_cmd_diff, dargv);
    cr_expect(c.status == 0 || c.status == 1, "diff: %d", c.status);
    captured_free(&c);
}

/* The write-up's failure as PyTorch's allocator records it with caching on (alloc_run.h). */
static const char *writeup_run(int index, int with_driver)
{
    const struct cmt_model_scenario *sc = cmt_model_scenario_writeup();
    struct tb b;
    alloc_run_record(&b, "", sc->capacity, sc->device_total, sc->events, sc->event_count,
                     sc->id_count, with_driver);
    const char *path = temp_trace(b.buf.data, b.buf.len, index);
    if (getenv("CMT_KEEP_FIXTURE"))
        tb_save(&b, with_driver ? "/tmp/cmt_writeup_run_shim.cmt" : "/tmp/cmt_writeup_run.cmt");
    tb_free_builder(&b);
    return path;
}

Test(allocator_cmds, the_writeup_run_alone_gives_the_verdict_the_table_and_the_self_check)
{
    const char *path = writeup_run(0, 1);
    const char *argv[] = {"oom", path, NULL};
    struct captured c = capture_run(cmt_cmd_oom, argv);
    static const char *want[] = {
        "verdict    fragmentation",
        "the allocator held 6.23 GiB reserved but unallocated, more than the 6.18 GiB request",
        "allocated 11.39 GiB, reserved 17.62 GiB",
        "free 3.43 GiB",
        "total 24.00 GiB",
        "max_split_size_mb:6144"};
    expect_in(c.out, want, sizeof want / sizeof *want);
    cr_expect_null(strstr(c.out, "possible leak"), "%s", c.out);
    captured_free(&c);

    const char *wargv[] = {"whatif", path, NULL};
    c = capture_run(cmt_cmd_whatif, wargv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "capacity  21.05 GiB"), "%s", c.out);
    cr_expect(strstr(c.out, "segment allocations of this run\n"), "%s", c.out);
    unsigned k = 0, n = 0;
    const char *at = strstr(c.out, "the model reproduces ");
    cr_assert(at && sscanf(at, "the model reproduces %u of %u", &k, &n) == 2, "%s", c.out);
    cr_expect(k == n && n >= 7, "%u of %u", k, n);
    /* the write-up's measured table: 4096, 5120, 6144 work; 7168, 8192, unlimited fail */
    static const char *const ok[] = {"max_split_size_mb:4096", "max_split_size_mb:5120",
                                     "max_split_size_mb:6144"};
    static const char *const oom[] = {"max_split_size_mb:7168", "max_split_size_mb:8192",
                                      "default (max_split_size_mb unlimited)"};
    for (int i = 0; i < 3; i++) {
        char line[96];
        snprintf(line, sizeof line, "\n  %s", ok[i]);
        const char *row = strstr(c.out, line);
        cr_expect(
            row && strncmp(strchr(row + 3, ' ') + strspn(strchr(row + 3, ' '), " "), "ok", 2) == 0,
            "%s not ok in:\n%s", ok[i], c.out);
        snprintf(line, sizeof line, "\n  %s", oom[i]);
        row = strstr(c.out, line);
        cr_expect(row && strstr(row, "OOM") && strstr(row, "OOM") < strchr(row + 1, '\n'),
                  "%s not OOM in:\n%s", oom[i], c.out);
    }
    captured_free(&c);
}
