/* test_snapshot_cli.c — the commands on a snapshot: `import` writes a trace the reader opens,
 * every analysis command opens a snapshot where it opens a trace, and a broken snapshot gives
 * one line naming the file and what is wrong, with a non-zero exit. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "commands.h"
#include "reader.h"
#include "snapshot_test.h"

static int lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

Test(snapshot_cli, dump_and_report_read_a_snapshot)
{
    const char *path = fixture_path("full.pickle");
    const char *dump[] = {"dump", "--stacks", path, NULL};
    struct captured c = capture_run(cmt_cmd_dump, dump);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "\"record\":\"allocator\""), "%s", c.out);
    cr_expect(strstr(c.out, "\"action\":\"oom\""));
    cr_expect(strstr(c.out, "\"device_free\":10485760"));
    cr_expect(strstr(c.out, "\"forward model.py:42\""), "frames print as function file:line");
    cr_expect_str_eq(c.err, "");
    captured_free(&c);
    const char *report[] = {"report", path, NULL};
    c = capture_run(cmt_cmd_report, report);
    cr_expect_eq(c.status, 0, "%s", c.err);
    captured_free(&c);
}

Test(snapshot_cli, every_analysis_command_opens_a_snapshot)
{
    const char *path = fixture_path("full.pickle");
    const char *oom[] = {"oom", "--json", path, NULL};
    const char *timeline[] = {"timeline", path, NULL};
    const char *report[] = {"report", "--json", path, NULL};
    const char *diff[] = {"diff", path, path, NULL};
    const char *whatif[] = {"whatif", path, NULL};
    struct {
        int (*fn)(int, char **);
        const char *const *argv;
    } runs[] = {{cmt_cmd_oom, oom},
                {cmt_cmd_timeline, timeline},
                {cmt_cmd_report, report},
                {cmt_cmd_diff, diff},
                {cmt_cmd_whatif, whatif}};
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        struct captured c = capture_run(runs[i].fn, runs[i].argv);
        cr_expect(!strstr(c.err, "magic"), "%s: %s", runs[i].argv[0], c.err);
        cr_expect_eq(c.status, 0, "%s: %s", runs[i].argv[0], c.err);
        captured_free(&c);
    }
}

Test(snapshot_cli, whatif_without_a_capacity_compares_settings_by_what_they_reserve)
{
    /* no_time.pickle has no `oom` entry: nothing says how much memory the device had free */
    const char *path = fixture_path("no_time.pickle");
    const char *text[] = {"whatif", path, NULL};
    struct captured c = capture_run(cmt_cmd_whatif, text);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "capacity  unknown"), "%s", c.out);
    cr_expect(strstr(c.out, "reserves the least"), "%s", c.out);
    cr_expect(!strstr(c.out, "export PYTORCH_CUDA_ALLOC_CONF"), "no recommendation without one");
    captured_free(&c);
    const char *json[] = {"whatif", "--json", path, NULL};
    c = capture_run(cmt_cmd_whatif, json);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "\"capacity_source\":\"unknown\""), "%s", c.out);
    captured_free(&c);
    const char *given[] = {"whatif", "--capacity", "1GiB", path, NULL};
    c = capture_run(cmt_cmd_whatif, given);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "(--capacity)"), "%s", c.out);
    captured_free(&c);
}

Test(snapshot_cli, oom_reports_the_snapshots_device_request_and_free_memory)
{
    /* full.pickle's `oom` entry: device 0, size 41943040 (40 MiB), device_free 10485760 */
    const char *path = fixture_path("full.pickle");
    const char *json[] = {"oom", "--json", path, NULL};
    struct captured c = capture_run(cmt_cmd_oom, json);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "\"dev\":0,"), "%s", c.out);
    cr_expect(strstr(c.out, "\"request_bytes\":41943040,"), "%s", c.out);
    cr_expect(strstr(c.out, "\"free_bytes\":10485760,"), "%s", c.out);
    captured_free(&c);
    const char *text[] = {"oom", path, NULL};
    c = capture_run(cmt_cmd_oom, text);
    cr_expect(strstr(c.out, "total not recorded (--capacity gives it), free 10.00 MiB"), "%s",
              c.out);
    cr_expect(!strstr(c.out, "of the 0 B device"), "%s", c.out);
    captured_free(&c);
}

/* A snapshot's OOM is an allocator event (no driver call failed in it): report counts it. */
Test(snapshot_cli, report_counts_the_snapshots_out_of_memory_events)
{
    const char *path = fixture_path("full.pickle"); /* one `oom` entry, on device 0 */
    const char *text[] = {"report", path, NULL};
    struct captured c = capture_run(cmt_cmd_report, text);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "failures   1 (out of memory 1)"), "%s", c.out);
    captured_free(&c);
    const char *json[] = {"report", "--json", path, NULL};
    c = capture_run(cmt_cmd_report, json);
    cr_expect(strstr(c.out, "\"failures\":{\"total\":1,\"out_of_memory\":1,"), "%s", c.out);
    cr_expect(strstr(c.out, "\"failures\":1,\"oom_failures\":1,"), "%s", c.out);
    captured_free(&c);
}

/* `oom` on path: its --json verdict, a text its report must hold, and texts it must not. */
static void expect_oom(const char *path, const char *verdict, const char *must,
                       const char *const *must_not)
{
    const char *json[] = {"oom", "--json", path, NULL};
    struct captured c = capture_run(cmt_cmd_oom, json);
    cr_expect_eq(c.status, 0, "%s", c.err);
    char want[96];
    snprintf(want, sizeof want, "\"verdict\":\"%s\"", verdict);
    cr_expect(strstr(c.out, want), "%s: %s", want, c.out);
    captured_free(&c);
    const char *text[] = {"oom", path, NULL};
    c = capture_run(cmt_cmd_oom, text);
    cr_expect(strstr(c.out, must), "%s: %s", must, c.out);
    for (; *must_not; must_not++)
        cr_expect(!strstr(c.out, *must_not), "%s: %s", *must_not, c.out);
    captured_free(&c);
}

static const char *const no_fragmentation[] = {"max_split_size_mb", "fragment", NULL};

/* Real torch's OOM with expandable segments on (tests/torch/fixtures/expandable_holes: 739 MiB
 * reserved but unallocated in 19 MiB holes, none of them a whole page c10 could unmap, a
 * 400 MiB request, 312 MiB free): no place in the cache holds the request, so it is not the
 * cache's fragmentation, and neither max_split_size_mb nor expandable_segments (on) is the
 * hint; the snapshot gives no device total, so the verdict is total_unknown. */
Test(snapshot_cli, expandable_segments_without_a_block_as_large_as_the_request_are_no_fragmentation)
{
    expect_oom(torch_fixture_path("expandable_holes.pickle"), "total_unknown",
               "largest 19.00 MiB (request 400.00 MiB)", no_fragmentation);
}

/* The same run: without expandable segments c10 gives each 19 MiB tensor a whole 20 MiB
 * segment it can release, and the defaults avoid the OOM. The run had set expandable segments:
 * "nothing to set" would keep them. */
Test(snapshot_cli, whatif_says_to_drop_the_runs_own_settings_when_the_defaults_avoid_its_oom)
{
    const char *text[] = {"whatif", torch_fixture_path("expandable_holes.pickle"), NULL};
    struct captured c = capture_run(cmt_cmd_whatif, text);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "unset PYTORCH_CUDA_ALLOC_CONF"), "%s", c.out);
    cr_expect(strstr(c.out, "(expandable_segments:True) ran out of memory"), "%s", c.out);
    cr_expect(!strstr(c.out, "nothing to set"), "%s", c.out);
    captured_free(&c);
}

/* Real torch under set_per_process_memory_fraction(0.5) (tests/torch/fixtures/fraction_oom:
 * 800 MiB allocated, 0 B unallocated, a 600 MiB request, 992 MiB free, 1 GiB allowed): the
 * device had the request free and the cache held nothing, so the allocator's own cap refused
 * it: the process exhausted what it may use, no fragmentation and no max_split_size_mb. */
Test(snapshot_cli, an_allocator_refusing_what_the_device_had_free_is_the_process_exhausting_its_cap)
{
    expect_oom(torch_fixture_path("fraction_oom.pickle"), "exhausted_by_process",
               "set_per_process_memory_fraction", no_fragmentation);
}

/* segment_rounding.pickle: a 3 MiB request, 15 MiB free, but c10 asks the driver for a 20 MiB
 * segment: no cap refused it; the snapshot gives no device total, so whether others or the
 * process held the rest is not told until --capacity gives it. */
Test(snapshot_cli, a_request_whose_segment_the_free_memory_cannot_hold_names_no_cap)
{
    static const char *const no_cap[] = {"set_per_process_memory_fraction", "fragment", NULL};
    expect_oom(fixture_path("segment_rounding.pickle"), "total_unknown",
               "cannot be told (give the card's size", no_cap);
    const char *given[] = {"oom", "--capacity", "35MiB", fixture_path("segment_rounding.pickle"),
                           NULL};
    struct captured c = capture_run(cmt_cmd_oom, given); /* 20 MiB held, 15 MiB free: no others */
    cr_expect(strstr(c.out, "verdict    exhausted_by_process"), "%s", c.out);
    cr_expect(strstr(c.out, "total 35.00 MiB (--capacity)"), "%s", c.out);
    captured_free(&c);
    const char *bad[] = {"oom", "--capacity", "lots", fixture_path("segment_rounding.pickle"),
                         NULL};
    c = capture_run(cmt_cmd_oom, bad);
    cr_expect_eq(c.status, 2);
    cr_expect(strstr(c.err, "--capacity: 'lots' is not a size"), "%s", c.err);
    captured_free(&c);
}

Test(snapshot_cli, import_writes_a_trace)
{
    char out[] = "/tmp/cmt-import-XXXXXX";
    int fd = mkstemp(out);
    cr_assert(fd >= 0);
    close(fd);
    const char *argv[] = {"import", fixture_path("expandable.pickle"), "-o", out, NULL};
    struct captured c = capture_run(cmt_cmd_import, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "6 allocator events (2 segments and 1 block from before"), "%s", c.out);
    captured_free(&c);
    cmt_reader *r;
    cr_assert_eq(cmt_reader_open_file(&r, out, NULL), 0);
    struct cmt_record rec;
    int rc, events = 0;
    while ((rc = cmt_reader_next(r, &rec)) == 1)
        events += rec.type == CMT_REC_ALLOC_EVENT;
    cr_expect_eq(rc, 0);
    cr_expect_eq(events, 6);
    cr_expect(cmt_reader_clean_exit(r));
    cmt_reader_close(r);
    unlink(out);
}

static const char *write_temp(const void *b, size_t n)
{
    static char path[] = "/tmp/cmt-bad-snapshot-XXXXXX";
    strcpy(path, "/tmp/cmt-bad-snapshot-XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, b, n), (ssize_t)n);
    close(fd);
    return path;
}

static void expect_one_line(int (*fn)(int, char **), const char *cmd, const char *path,
                            const char *what)
{
    const char *argv[] = {cmd, path, NULL};
    struct captured c = capture_run(fn, argv);
    cr_expect_neq(c.status, 0, "%s", cmd);
    cr_expect_eq(lines(c.err), 1, "%s: one line: %s", cmd, c.err);
    cr_expect(strstr(c.err, path), "%s names the file: %s", cmd, c.err);
    cr_expect(strstr(c.err, what), "%s: '%s' lacks '%s'", cmd, c.err, what);
    captured_free(&c);
}

Test(snapshot_cli, a_broken_snapshot_is_one_clear_line)
{
    size_t len;
    unsigned char *b = fixture_bytes("full.pickle", &len);
    const char *cut = write_temp(b, len / 2);
    expect_one_line(cmt_cmd_dump, "dump", cut, "pickle is truncated");
    expect_one_line(cmt_cmd_report, "report", cut, "pickle is truncated");
    expect_one_line(cmt_cmd_import, "import", cut, "pickle is truncated");
    unlink(cut);
    free(b);
    const char *seven = write_temp("\x80\x04K\x07.", 5);
    expect_one_line(cmt_cmd_oom, "oom", seven, "not a PyTorch memory snapshot");
    unlink(seven);
    const char *cls = write_temp("\x80\x04\x93.", 4);
    expect_one_line(cmt_cmd_timeline, "timeline", cls, "STACK_GLOBAL");
    unlink(cls);
}

/* snapshot -> trace -> `export -f memory-viz` -> snapshot again: PyTorch's accounting (active
 * blocks, reserved segments) and the trace entries survive the round trip, with times only
 * where the snapshot had them (no_time.pickle: none). */
Test(snapshot_cli, a_snapshot_survives_export_to_memory_viz)
{
    static const char *const names[] = {"full.pickle", "history.pickle", "bare_list.pickle",
                                        "expandable.pickle", "no_time.pickle"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char out[] = "/tmp/cmt-memviz-XXXXXX";
        int fd = mkstemp(out);
        cr_assert(fd >= 0);
        close(fd);
        const char *argv[] = {"export", "-f", "memory-viz", "-o", out, fixture_path(names[i]),
                              NULL};
        struct captured c = capture_run(cmt_cmd_export, argv);
        cr_expect_eq(c.status, 0, "%s: %s", names[i], c.err);
        captured_free(&c);
        struct cmt_snapshot a, b;
        fixture_parse(names[i], &a);
        FILE *f = fopen(out, "rb");
        cr_assert(f);
        static unsigned char buf[1 << 20];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        unlink(out);
        struct cmt_err err = {0};
        cr_assert_eq(cmt_snapshot_parse(&b, buf, n, &err), 0, "%s: %s", names[i], err.text);
        uint64_t sum[2][2] = {{0}};
        const struct cmt_snapshot *s[2] = {&a, &b};
        for (int k = 0; k < 2; k++) {
            for (size_t g = 0; g < s[k]->nsegments; g++)
                sum[k][0] += s[k]->segments[g].total_size;
            for (size_t j = 0; j < s[k]->nblocks; j++)
                if (s[k]->blocks[j].state != CMT_SNAPSHOT_INACTIVE)
                    sum[k][1] += s[k]->blocks[j].size;
        }
        cr_expect_eq(sum[1][0], sum[0][0], "%s: reserved", names[i]);
        cr_expect_eq(sum[1][1], sum[0][1], "%s: active", names[i]);
        cr_expect_eq(b.nentries, a.nentries, "%s: entries", names[i]);
        for (size_t j = 0; j < a.nentries && j < b.nentries; j++)
            cr_expect_eq(b.entries[j].has_time, a.entries[j].has_time, "%s: entry %zu time",
                         names[i], j);
        cmt_snapshot_free(&a);
        cmt_snapshot_free(&b);
    }
}

/* external_annotations become ranges: the phases of report and oom name them. */
Test(snapshot_cli, annotations_are_the_phases_of_report_and_oom)
{
    const char *path = fixture_path("annotations.pickle");
    const char *dump[] = {"dump", path, NULL};
    struct captured c = capture_run(cmt_cmd_dump, dump);
    cr_expect_eq(c.status, 0, "%s", c.err);
    const char *start = strstr(c.out, "\"action\":\"start\",\"t_ns\":0,"); /* before the window */
    cr_expect(start && strstr(start, "\"message\":\"early\""), "%s", c.out);
    cr_expect(!strstr(c.out, "\"message\":\"lost\""), "an END without its START: %s", c.out);
    cr_expect(!strstr(c.out, "\"message\":\"other\""), "another stage: %s", c.out);
    int starts = 0, ends = 0;
    const char *key = "\"record\":\"range\",\"action\":\"";
    for (const char *p = c.out; (p = strstr(p, key)); p++) {
        starts += !strncmp(p + strlen(key), "start", 5);
        ends += !strncmp(p + strlen(key), "end\"", 4);
    }
    cr_expect_eq(starts, 3);
    cr_expect_eq(ends, 3);
    captured_free(&c);
    const char *report[] = {"report", path, NULL};
    c = capture_run(cmt_cmd_report, report);
    cr_expect_eq(c.status, 0, "%s", c.err);
    const char *by = strstr(c.out, "by phase (allocator blocks;");
    cr_assert(by, "%s", c.out);
    cr_expect(strstr(by, "\n  fwd "), "%s", by);
    const char *step = strstr(by, "\n  Optimizer.step#AdamW.step ");
    cr_assert(step, "%s", by);
    cr_expect(strstr(step, "1 allocs   4.00 MiB"), "the step's one alloc: %s", step);
    captured_free(&c);
    const char *oom[] = {"oom", path, NULL};
    c = capture_run(cmt_cmd_oom, oom);
    cr_expect(strstr(c.out, "  phase      Optimizer.step#AdamW.step\n"), "%s", c.out);
    captured_free(&c);
}
