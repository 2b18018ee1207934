/* test_snapshot_views.c — a PyTorch snapshot (allocator-level records only, no driver calls)
 * through every command's headline, text and JSON: the allocator's figures are spoken, never
 * "no memory" or "peak 0 B" for a file with memory (issue 23, item 1). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "commands.h"
#include "json_query.h"
#include "snapshot_test.h"

static const char *out_path(const char *ext, char *buf, size_t size)
{
    snprintf(buf, size, "/tmp/cmt-test-snapviews-%d.%s", (int)getpid(), ext);
    return buf;
}

Test(snapshot_views, report_headline_speaks_the_allocator)
{
    /* full.pickle: GPU 0 peaks at 14 MiB allocated, 40 MiB reserved; 12 + 3 MiB at the end */
    const char *path = fixture_path("full.pickle");
    const char *text[] = {"report", path, NULL};
    struct captured c = capture_run(cmt_cmd_report, text);
    cr_expect_eq(c.status, 0, "%s", c.err);
    const char *nl = strchr(c.out, '\n');
    cr_assert_not_null(nl);
    char head[512];
    snprintf(head, sizeof head, "%.*s", (int)(nl - c.out), c.out);
    cr_expect(!strstr(head, "peak 0 B"), "%s", head);
    cr_expect(strstr(head, "allocator peak 14.00 MiB allocated"), "%s", head);
    cr_expect(strstr(head, "40.00 MiB reserved"), "%s", head);
    cr_expect(strstr(head, "15.00 MiB allocated at the end"), "%s", head);
    cr_expect(strstr(head, "no driver calls"), "%s", head);
    cr_expect(strstr(c.out, "allocator events"), "%s", c.out);
    captured_free(&c);
    const char *json[] = {"report", "--json", path, NULL};
    c = capture_run(cmt_cmd_report, json);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "\"allocator\":{\"peak_allocated_bytes\":14680064"), "%s", c.out);
    cr_expect(strstr(c.out, "\"allocated_bytes_at_end\":15728640"), "%s", c.out);
    captured_free(&c);
}

Test(snapshot_views, html_summary_speaks_the_allocator)
{
    char out[128];
    const char *path = fixture_path("history.pickle");
    const char *argv[] = {"html", "-o", out_path("html", out, sizeof out), path, NULL};
    struct captured c = capture_run(cmt_cmd_html, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(!strstr(c.out, "No device memory"), "%s", c.out);
    cr_expect(strstr(c.out, "allocator"), "%s", c.out);
    captured_free(&c);
    char *page = capture_file(out, NULL);
    cr_assert_not_null(page);
    cr_expect(!strstr(page, "\"summary\":\"No device memory"), "the page's summary");
    cr_expect(strstr(page, "\"summary\":\"No out-of-memory failure: allocator peak 40.00 MiB"),
              "the page's summary");
    /* the view at the reserved peak shows the blocks placed in it, not the empty segments */
    const char *peak = strstr(page, "\"at\":\"peak\"");
    cr_assert_not_null(peak);
    const char *alloc = strstr(peak, "\"allocated_bytes\":");
    cr_assert_not_null(alloc);
    cr_expect(strtoull(alloc + strlen("\"allocated_bytes\":"), NULL, 10) > 0, "%.200s", peak);
    free(page);
    unlink(out);
}

/* The weight of the folded line whose leaf frame is `leaf` (0 when none). */
static unsigned long long folded_weight(const char *out, const char *leaf)
{
    for (const char *l = out; *l;) {
        const char *nl = strchr(l, '\n'), *end = nl ? nl : l + strlen(l);
        const char *sp = end;
        while (sp > l && sp[-1] != ' ')
            sp--;
        const char *semi = sp;
        while (semi > l && semi[-1] != ';')
            semi--;
        if (sp > semi && (size_t)(sp - 1 - semi) == strlen(leaf) &&
            strncmp(semi, leaf, strlen(leaf)) == 0)
            return strtoull(sp, NULL, 10);
        l = nl ? nl + 1 : end;
    }
    return 0;
}

Test(snapshot_views, collapsed_stacks_from_a_snapshot_are_its_blocks_by_python_frame)
{
    /* history.pickle: its blocks' stacks are Python frames; 40 MiB live at the end */
    const char *path = fixture_path("history.pickle");
    const char *leaked[] = {"export", "-f", "collapsed", "--weight", "leaked", path, NULL};
    struct captured c = capture_run(cmt_cmd_export, leaked);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_assert(*c.out, "an empty export: %s", c.err);
    unsigned long long sum = 0;
    for (const char *l = c.out; (l = strchr(l, ' ')); l++)
        if (!strchr(l + 1, ' ') || strchr(l + 1, '\n') < strchr(l + 1, ' '))
            sum += strtoull(l + 1, NULL, 10);
    cr_expect_eq(sum, 40ull << 20, "%s", c.out);
    cr_expect(strstr(c.out, ".py:"), "Python frames: %s", c.out);
    captured_free(&c);
    const char *peak[] = {"export", "-f", "collapsed", path, NULL};
    c = capture_run(cmt_cmd_export, peak);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(*c.out, "an empty export: %s", c.err);
    captured_free(&c);
    const char *count[] = {"export", "-f", "collapsed", "--weight", "count", path, NULL};
    c = capture_run(cmt_cmd_export, count);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(*c.out, "an empty export: %s", c.err);
    (void)folded_weight;
    captured_free(&c);
}

Test(snapshot_views, perfetto_of_a_snapshot_has_the_allocators_counters)
{
    /* history.pickle: its state (42 MiB reserved, 40 MiB allocated) all comes at 0 ns, without
     * figures recorded with its actions: one counter at that moment, as the pass rebuilt it */
    const char *path = fixture_path("history.pickle");
    const char *argv[] = {"export", "-f", "perfetto", path, NULL};
    struct captured c = capture_run(cmt_cmd_export, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "\"name\":\"GPU 0 allocator\",\"pid\":0,\"tid\":0,\"ts\":0.000,"
                            "\"args\":{\"allocated\":41943040,\"reserved\":44040192,"
                            "\"inactive_split\":"),
              "%s", c.out);
    int counters = 0;
    for (const char *s = c.out; (s = strstr(s, "\"GPU 0 allocator\"")); s++)
        counters++;
    cr_expect_eq(counters, 1, "one counter per moment: %s", c.out);
    captured_free(&c);
}

Test(snapshot_views, the_processes_table_has_the_allocators_columns)
{
    const char *path = fixture_path("full.pickle");
    const char *argv[] = {"export", "-f", "jsonl", "--table", "processes", path, NULL};
    struct captured c = capture_run(cmt_cmd_export, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "\"allocator_peak_allocated_bytes\":14680064,"
                            "\"allocator_peak_reserved_bytes\":41943040"),
              "%s", c.out);
    cr_expect(strstr(c.out, "\"allocator_allocated_bytes_at_end\":15728640"), "%s", c.out);
    captured_free(&c);
}

Test(snapshot_views, oom_and_diff_headlines_speak_the_allocator)
{
    const char *path = fixture_path("history.pickle"); /* no OOM; 40 MiB allocated at its peak */
    const char *oom[] = {"oom", path, NULL};
    struct captured c = capture_run(cmt_cmd_oom, oom);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(!strstr(c.out, "peak 0 B"), "%s", c.out);
    cr_expect(strstr(c.out, "no out-of-memory failures (allocator peak 40.00 MiB allocated"), "%s",
              c.out);
    captured_free(&c);
    char both[2][4096]; /* fixture_path's buffer is static */
    snprintf(both[0], sizeof both[0], "%s", path);
    snprintf(both[1], sizeof both[1], "%s", fixture_path("expandable.pickle")); /* 20 MiB */
    const char *diff[] = {"diff", both[0], both[1], NULL};
    c = capture_run(cmt_cmd_diff, diff);
    cr_expect_eq(c.status, 0, "%s", c.err);
    const char *nl = strchr(c.out, '\n');
    cr_assert_not_null(nl);
    cr_expect(!strstr(c.out, "peak 0 B -> 0 B"), "%.*s", (int)(nl - c.out), c.out);
    cr_expect(strncmp(c.out, "allocator peak allocated 40.00 MiB -> 20.00 MiB (-50.0%)", 56) == 0,
              "%.*s", (int)(nl - c.out), c.out);
    cr_expect(!strstr(c.out, "peak live "), "no driver rows without driver calls: %s", c.out);
    captured_free(&c);
    /* the gate weighs the allocator's peak where there are no driver calls */
    const char *gate[] = {"diff", "--fail-if-peak-grows", "0", both[1], both[0], NULL};
    c = capture_run(cmt_cmd_diff, gate);
    const char *gate_back[] = {"diff", "--fail-if-peak-grows", "0", both[0], both[1], NULL};
    struct captured d = capture_run(cmt_cmd_diff, gate_back);
    cr_expect_eq(c.status, 1, "20 MiB -> 40 MiB grows: %s", c.err);
    cr_expect(strstr(c.err, "peak grew from 20.00 MiB to 40.00 MiB"), "%s", c.err);
    cr_expect_eq(d.status, 0, "40 MiB -> 20 MiB does not: %s", d.err);
    captured_free(&c);
    captured_free(&d);
}

Test(snapshot_views, import_recognises_what_it_was_given)
{
    /* a trace: import converts snapshots, a trace is read as it is */
    char trace[128], text[128], out[128];
    out_path("cmt", trace, sizeof trace);
    out_path("txt", text, sizeof text);
    out_path("out.cmt", out, sizeof out);
    const char *imp[] = {"import", "-o", out, fixture_path("full.pickle"), NULL};
    struct captured c = capture_run(cmt_cmd_import, imp);
    cr_assert_eq(c.status, 0, "%s", c.err);
    captured_free(&c);
    rename(out, trace);
    const char *again[] = {"import", "-o", out, trace, NULL};
    c = capture_run(cmt_cmd_import, again);
    cr_expect_eq(c.status, 1);
    cr_expect(strstr(c.err, "already a cumemtrace trace"), "%s", c.err);
    cr_expect(!strstr(c.err, "pickle"), "%s", c.err);
    cr_expect(access(out, F_OK) != 0, "nothing written");
    captured_free(&c);
    FILE *f = fopen(text, "w");
    fputs("hello\n", f);
    fclose(f);
    const char *txt[] = {"import", "-o", out, text, NULL};
    c = capture_run(cmt_cmd_import, txt);
    cr_expect_eq(c.status, 1);
    cr_expect(strstr(c.err, "not a PyTorch memory snapshot"), "%s", c.err);
    cr_expect(!strstr(c.err, "memo key"), "%s", c.err);
    captured_free(&c);
    unlink(trace);
    unlink(text);
    unlink(out);
}

Test(snapshot_views, the_runs_table_has_the_allocators_peaks)
{
    char dir[128], runs[256];
    snprintf(dir, sizeof dir, "/tmp/cmt-test-snapviews-%d-parts", (int)getpid());
    const char *argv[] = {"export", "-f",
                          "jsonl",  "--partitioned",
                          dir,      "--compress",
                          "none",   "--run",
                          "r1",     fixture_path("full.pickle"),
                          NULL};
    struct captured c = capture_run(cmt_cmd_export, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    captured_free(&c);
    snprintf(runs, sizeof runs, "%s/runs/run=r1/part-0.jsonl", dir);
    char *text = capture_file(runs, NULL);
    cr_assert_not_null(text, "%s", runs);
    cr_expect(strstr(text, "\"max_allocator_peak_allocated_bytes\":14680064,"
                           "\"sum_allocator_peak_allocated_bytes\":14680064"),
              "%s", text);
    free(text);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

Test(snapshot_views, html_of_three_snapshots_draws_each_as_a_rank)
{
    static const char *const names[] = {"history.pickle", "expandable.pickle", "full.pickle"};
    char paths[3][4096], out[128]; /* fixture_path's buffer is static */
    for (int i = 0; i < 3; i++)
        snprintf(paths[i], sizeof paths[i], "%s", fixture_path(names[i]));
    const char *argv[] = {"html",   "-o", out_path("html", out, sizeof out), paths[0], paths[1],
                          paths[2], NULL};
    struct captured c = capture_run(cmt_cmd_html, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    char *page = capture_file(out, NULL);
    cr_assert_not_null(page);
    char *data = strstr(page, "<script id=\"cmt-data\" type=\"application/json\">");
    cr_assert_not_null(data);
    data = strchr(data, '>') + 1;
    *strstr(data, "</script>") = 0;
    cr_expect_eq(jq_count(data, "ranks.ranks"), 3, "a rank per snapshot");
    for (int i = 0; i < 3; i++) { /* in the fleet's order (by file name here), as given */
        char key[64], file[4096], source[32], want_file[4096];
        uint64_t peak = 0, want = 1;
        snprintf(key, sizeof key, "ranks.ranks.%d.file", i);
        cr_expect(jq_text(data, key, file, sizeof file));
        int k = 0;
        while (k < 3 && strcmp(paths[k], file))
            k++;
        cr_expect(k < 3, "the snapshot's own path, not its conversion's: %s", file);
        snprintf(want_file, sizeof want_file, "%s", k < 3 ? paths[k] : "");
        snprintf(key, sizeof key, "ranks.ranks.%d.source", i);
        cr_expect(jq_text(data, key, source, sizeof source) && !strcmp(source, "allocator"));
        const char *rep[] = {"report", "--json", want_file, NULL};
        struct captured r = capture_run(cmt_cmd_report, rep);
        cr_expect(jq_u64(r.out, "allocator.peak_reserved_bytes", &want), "%s", r.out);
        snprintf(key, sizeof key, "ranks.ranks.%d.peak_bytes", i);
        cr_expect(jq_u64(data, key, &peak) && peak == want, "%s: %lu, report's %lu", file,
                  (unsigned long)peak, (unsigned long)want);
        captured_free(&r);
    }
    free(page);
    remove(out);
    captured_free(&c);
}
