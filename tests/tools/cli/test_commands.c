/* Tests of the analysis commands' interfaces: options, JSON keys, errors, exit codes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "cmt_format.h"
#include "commands.h"
#include "trace_builder.h"

/* A device filled by this process, one failed request, frees, a failed retry. */
static const char *oom_trace(int index, uint64_t segment_bytes)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB - 300 * TB_MIB);
    uint32_t s = tb_stack(&b, "segment_alloc", 3);
    for (int i = 0; i < 20; i++)
        tb_alloc(&b, 0x700000000000 + (uint64_t)i * 2 * TB_GIB, segment_bytes, s);
    uint64_t seq = tb_alloc_fail(&b, 12345678ull * 1000, s);
    tb_meminfo(&b, CMT_MEMINFO_OOM, 24 * TB_GIB - 300 * TB_MIB - 20 * segment_bytes, 24 * TB_GIB,
               seq);
    tb_free(&b, 0x700000000000);
    seq = tb_alloc_fail(&b, 12345678ull * 1000, s);
    tb_finish(&b, 0);
    const char *path = temp_trace(b.buf.data, b.buf.len, index);
    tb_free_builder(&b);
    return path;
}

Test(commands, oom_json_has_the_contract_keys)
{
    const char *path = oom_trace(0, TB_GIB);
    const char *argv[] = {"oom", "--json", path, NULL};
    struct captured c = capture_run(cmt_cmd_oom, argv);
    cr_expect_eq(c.status, 0);
    static const char *keys[] = {"\"episodes\":[",
                                 "\"request_bytes\":12345678000",
                                 "\"api\":\"cuMemAlloc_v2\"",
                                 "\"dev\":0",
                                 "\"t_ns\":",
                                 "\"attempts\":2",
                                 "\"frees_between\":1",
                                 "\"released_bytes\":1073741824",
                                 "\"fatal\":true",
                                 "\"free_bytes\":",
                                 "\"total_bytes\":25769803776",
                                 "\"process_bytes\":21474836480",
                                 "\"others_bytes\":314572800",
                                 "\"verdict\":\"exhausted_by_process\"",
                                 "\"stack\":[\"segment_alloc_0\"",
                                 "\"holders\":[{\"bytes\":21474836480,\"count\":20"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        cr_expect(strstr(c.out, keys[i]), "missing %s in %s", keys[i], c.out);
    cr_expect_str_eq(c.err, "");
    captured_free(&c);
}

Test(commands, oom_text_leads_with_one_sentence)
{
    const char *path = oom_trace(0, TB_GIB);
    const char *argv[] = {"oom", path, NULL};
    struct captured c = capture_run(cmt_cmd_oom, argv);
    cr_expect_eq(c.status, 0);
    cr_expect(strstr(c.out, "out of memory #1: cuMemAlloc_v2 of 11.50 GiB"), "%s", c.out);
    cr_expect(strstr(c.out, "exhausted_by_process"));
    cr_expect(strstr(c.out, "segment_alloc_0"));
    captured_free(&c);
}

Test(commands, report_and_timeline_agree_on_the_peak)
{
    const char *path = oom_trace(0, TB_GIB);
    const char *rargv[] = {"report", "--json", path, NULL};
    struct captured r = capture_run(cmt_cmd_report, rargv);
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.out, "\"peak_live_bytes\":21474836480"), "%s", r.out);
    const char *targv[] = {"timeline", "--csv", "--points", "4", path, NULL};
    struct captured t = capture_run(cmt_cmd_timeline, targv);
    cr_expect_eq(t.status, 0);
    cr_expect(strstr(t.out, "t_ns,dev,live_bytes"));
    cr_expect(strstr(t.out, ",0,21474836480,"), "%s", t.out);
    captured_free(&r);
    captured_free(&t);
}

Test(commands, timeline_svg_writes_a_chart)
{
    const char *path = oom_trace(0, TB_GIB);
    char svg[128];
    struct captured c = capture_svg(cmt_cmd_timeline, path, svg, sizeof svg);
    cr_expect_eq(c.status, 0);
    FILE *f = fopen(svg, "r");
    cr_assert_not_null(f);
    char head[64] = {0};
    cr_expect(fread(head, 1, sizeof head - 1, f) > 0);
    fclose(f);
    cr_expect(strncmp(head, "<svg", 4) == 0);
    remove(svg);
    captured_free(&c);
}

Test(commands, diff_tells_runs_apart_and_gates_on_peak_growth)
{
    const char *a = oom_trace(1, TB_GIB / 2);
    const char *b = oom_trace(2, TB_GIB);
    const char *argv[] = {"diff", "--json", "--fail-if-peak-grows", "10", a, b, NULL};
    struct captured c = capture_run(cmt_cmd_diff, argv);
    cr_expect_eq(c.status, 1, "B's peak doubled");
    cr_expect(strstr(c.out, "\"a\":{"));
    cr_expect(strstr(c.out, "\"b\":{"));
    cr_expect(strstr(c.out, "\"delta\":{"));
    cr_expect(strstr(c.out, "\"peak_live_bytes\":10737418240"));
    cr_expect(strstr(c.out, "\"oom_episodes\":1"));
    cr_expect(strstr(c.err, "peak grew"));
    captured_free(&c);
    const char *same[] = {"diff", "--fail-if-peak-grows", "10", a, a, NULL};
    c = capture_run(cmt_cmd_diff, same);
    cr_expect_eq(c.status, 0);
    captured_free(&c);
}

Test(commands, help_and_bad_usage)
{
    int (*fns[])(int, char **) = {cmt_cmd_report, cmt_cmd_oom, cmt_cmd_timeline, cmt_cmd_diff};
    const char *names[] = {"report", "oom", "timeline", "diff"};
    for (int i = 0; i < 4; i++) {
        const char *help[] = {names[i], "--help", NULL};
        struct captured c = capture_run(fns[i], help);
        cr_expect_eq(c.status, 0);
        cr_expect(strstr(c.out, "usage: cumemtrace"));
        captured_free(&c);
        const char *bad[] = {names[i], "--bogus", "x.cmt", NULL};
        c = capture_run(fns[i], bad);
        cr_expect_neq(c.status, 0);
        cr_expect(strstr(c.err, "unknown option '--bogus'"), "%s", c.err);
        captured_free(&c);
        const char *missing[] = {names[i], "/nonexistent/trace.cmt", "/nonexistent/trace.cmt",
                                 NULL};
        if (i != 3)
            missing[2] = NULL;
        c = capture_run(fns[i], missing);
        cr_expect_eq(c.status, 1);
        cr_expect(strstr(c.err, "/nonexistent/trace.cmt: No such file"), "%s", c.err);
        cr_expect_eq(strchr(c.err, '\n') - c.err + 1, (long)strlen(c.err), "one line");
        captured_free(&c);
    }
}

Test(commands, version_long_and_short)
{
    const char *flags[] = {"--version", "-V"};
    for (int i = 0; i < 2; i++) {
        const char *argv[] = {"cumemtrace", flags[i], NULL};
        struct captured c = capture_run(cmt_cli_main, argv);
        cr_expect_eq(c.status, 0, "%s", flags[i]);
        cr_expect(!strncmp(c.out, "cumemtrace " CMT_VERSION " (trace format ",
                           strlen("cumemtrace " CMT_VERSION " (trace format ")),
                  "%s: %s", flags[i], c.out);
        cr_expect_str_eq(c.err, "");
        captured_free(&c);
    }
}

Test(commands, record_help_and_usage_errors)
{
    const char *help[] = {"record", "--help", NULL};
    struct captured c = capture_run(cmt_cmd_record, help);
    cr_expect_eq(c.status, 0);
    cr_expect(strstr(c.out, "%p = process id (default cumemtrace.%p.cmt)"), "%s", c.out);
    cr_expect(!strstr(c.out, "%%"), "%s", c.out);
    captured_free(&c);
    const char *nothing[] = {"record", "--", NULL};
    c = capture_run(cmt_cmd_record, nothing);
    cr_expect_eq(c.status, 2);
    cr_expect(strstr(c.err, "cumemtrace record: nothing after '--': give the COMMAND to run"), "%s",
              c.err);
    captured_free(&c);
    /* one past the shim's cap (cmt_format.h), in both spellings; the help names the cap */
    char over[16], joined[32], want[96];
    snprintf(over, sizeof over, "%d", CMT_MAX_STACK_DEPTH + 1);
    snprintf(joined, sizeof joined, "--stack-depth=%s", over);
    snprintf(want, sizeof want, "--stack-depth %s is more than the tracer's cap of %d frames", over,
             CMT_MAX_STACK_DEPTH);
    const char *deep[][5] = {{"record", "--stack-depth", over, "--", "/bin/true"},
                             {"record", joined, "--", "/bin/true", NULL}};
    for (int i = 0; i < 2; i++) {
        const char *argv[6] = {0};
        memcpy(argv, deep[i], sizeof deep[i]);
        c = capture_run(cmt_cmd_record, argv);
        cr_expect_eq(c.status, 2);
        cr_expect(strstr(c.err, want), "%s", c.err);
        captured_free(&c);
    }
    c = capture_run(cmt_cmd_record, help);
    snprintf(want, sizeof want, "(default 64, at most %d)", CMT_MAX_STACK_DEPTH);
    cr_expect(strstr(c.out, want), "%s", c.out);
    captured_free(&c);
}

/* Every command of commands.def words a usage error the same way, on one line. */
Test(commands, one_hint_style_for_usage_errors)
{
    static const char *const names[] = {
#define X(name, fn, summary) #name,
#include "commands.def"
#undef X
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *argv[] = {"cumemtrace", names[i], "--bogus", "x.cmt", NULL};
        struct captured c = capture_run(cmt_cli_main, argv);
        char want[256];
        snprintf(want, sizeof want,
                 "cumemtrace %s: unknown option '--bogus' (see 'cumemtrace %s --help')\n", names[i],
                 names[i]);
        cr_expect_eq(c.status, 2, "%s", names[i]);
        cr_expect_str_eq(c.err, want);
        captured_free(&c);
    }
    const char *missing[][3] = {{"dump", NULL}, {"symbolize", NULL}, {"report", NULL}};
    for (size_t i = 0; i < 3; i++) {
        const char *argv[] = {"cumemtrace", missing[i][0], NULL};
        struct captured c = capture_run(cmt_cli_main, argv);
        char want[256];
        snprintf(want, sizeof want,
                 "cumemtrace %s: missing trace FILE (see 'cumemtrace %s --help')\n", missing[i][0],
                 missing[i][0]);
        cr_expect_str_eq(c.err, want);
        captured_free(&c);
    }
}

Test(commands, value_options_take_the_equals_form)
{
    const char *path = oom_trace(3, TB_GIB);
    char svg[128], arg[160];
    snprintf(svg, sizeof svg, "%s.svg", path);
    snprintf(arg, sizeof arg, "--svg=%s", svg);
    const char *argv[] = {"timeline", arg, "--points=50", path, NULL};
    struct captured c = capture_run(cmt_cmd_timeline, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    FILE *f = fopen(svg, "r");
    cr_expect_not_null(f, "--svg=FILE wrote FILE");
    if (f)
        fclose(f);
    remove(svg);
    captured_free(&c);
    const char *gate[] = {"diff", "--fail-if-peak-grows=10", path, path, NULL};
    c = capture_run(cmt_cmd_diff, gate);
    cr_expect_eq(c.status, 0, "%s", c.err);
    captured_free(&c);
    const char *empty[] = {"timeline", "--svg=", path, NULL};
    c = capture_run(cmt_cmd_timeline, empty);
    cr_expect_eq(c.status, 2);
    cr_expect(strstr(c.err, "--svg needs an output file"), "%s", c.err);
    captured_free(&c);
}

Test(commands, conflicting_outputs_are_an_error)
{
    const char *path = oom_trace(4, TB_GIB);
    const char *argv[] = {"timeline", "--csv", "--json", path, NULL};
    struct captured c = capture_run(cmt_cmd_timeline, argv);
    cr_expect_eq(c.status, 2);
    cr_expect_str_eq(c.err, "cumemtrace timeline: --csv and --json conflict: choose one output "
                            "(see 'cumemtrace timeline --help')\n");
    cr_expect_str_eq(c.out, "");
    captured_free(&c);
    const char *svg[] = {"timeline", "--json", "--svg", "x.svg", path, NULL};
    c = capture_run(cmt_cmd_timeline, svg);
    cr_expect_eq(c.status, 2);
    cr_expect(strstr(c.err, "--json and --svg conflict"), "%s", c.err);
    captured_free(&c);
    const char *twice[] = {"timeline", "--csv", "--csv", "--points", "4", path, NULL};
    c = capture_run(cmt_cmd_timeline, twice);
    cr_expect_eq(c.status, 0, "the same option twice is no conflict");
    captured_free(&c);
}

/* Not a trace, for every reason a path can fail to be one: one line that says which. A
 * directory is read as the traces in it (several processes): none there is one line too. */
Test(commands, report_names_what_is_wrong_with_a_non_trace, .timeout = 60)
{
    const char *empty = temp_trace("", 0, 5), *text = temp_trace("hello, world\n", 13, 6);
    char dir[] = "/tmp/cmt-no-traces.XXXXXX", none[64], fifo[96];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(fifo, sizeof fifo, "%s/cmt-fifo.cmt", dir); /* read without waiting for a writer */
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    snprintf(none, sizeof none, "no trace (*.cmt) in %s", dir);
    const struct {
        const char *path, *why;
    } cases[] = {{"/dev/null", "/dev/null: not a regular file"},
                 {fifo, "cmt-fifo.cmt: not a regular file"},
                 {dir, none},
                 {empty, "file is empty"},
                 {text, "not a cumemtrace trace"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *argv[] = {"report", cases[i].path, NULL};
        struct captured c = capture_run(cmt_cmd_report, argv);
        cr_expect_eq(c.status, 1, "%s", cases[i].path);
        cr_expect(strstr(c.err, cases[i].why), "%s", c.err);
        cr_expect(!strstr(c.err, "Success"), "%s", c.err);
        cr_expect_eq(strchr(c.err, '\n') - c.err + 1, (long)strlen(c.err), "one line: %s", c.err);
        captured_free(&c);
        if (i == 1)
            unlink(fifo); /* the directory holds no trace only without it */
    }
    rmdir(dir);
    const char *sym[] = {"symbolize", "/dev/null", NULL};
    struct captured c = capture_run(cmt_cmd_symbolize, sym);
    cr_expect_eq(c.status, 1);
    cr_expect_str_eq(c.err, "cumemtrace symbolize: /dev/null: not a regular file\n");
    captured_free(&c);
}

/* A PyTorch memory snapshot needs no symbolizing: one line that says so, status 0, the file
 * as it was (not "bad magic"). */
Test(commands, symbolize_says_a_snapshot_is_already_symbolic)
{
    static const char snap[] = "\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00}\x94.";
    const char *path = temp_trace(snap, sizeof snap - 1, 9);
    const char *argv[] = {"symbolize", path, NULL};
    struct captured c = capture_run(cmt_cmd_symbolize, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect_str_eq(c.err, "");
    cr_expect(strstr(c.out, "PyTorch memory snapshot: its frames are already symbolic"), "%s",
              c.out);
    cr_expect_eq(strchr(c.out, '\n') - c.out + 1, (long)strlen(c.out), "one line: %s", c.out);
    captured_free(&c);
    FILE *f = fopen(path, "rb");
    char back[64];
    size_t n = f ? fread(back, 1, sizeof back, f) : 0;
    cr_expect(n == sizeof snap - 1 && !memcmp(back, snap, n), "the file as it was");
    if (f)
        fclose(f);
    unlink(path);
}

/* A retry with no free before it: the hint must not say cached memory was released. */
Test(commands, oom_hint_says_nothing_was_released_when_nothing_was)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 4 * TB_GIB);
    uint32_t s = tb_stack(&b, "retry_loop", 2);
    tb_alloc(&b, 0x700000000000, 20 * TB_GIB, s);
    uint64_t seq = tb_alloc_fail(&b, 8 * TB_GIB, s);
    tb_meminfo(&b, CMT_MEMINFO_OOM, 4 * TB_GIB, 24 * TB_GIB, seq);
    tb_alloc_fail(&b, 8 * TB_GIB, s);
    tb_finish(&b, 0);
    const char *path = temp_trace(b.buf.data, b.buf.len, 7);
    tb_free_builder(&b);
    const char *argv[] = {"oom", path, NULL};
    struct captured c = capture_run(cmt_cmd_oom, argv);
    cr_expect_eq(c.status, 0);
    cr_expect(strstr(c.out, "attempts   2, 0 frees between them released 0 B"), "%s", c.out);
    cr_expect(!strstr(c.out, "after releasing cached memory"), "%s", c.out);
    cr_expect(strstr(c.out, "with nothing released between the attempts:"), "%s", c.out);
    cr_expect(strstr(c.out, "run `cumemtrace whatif`"), "the advice stays: %s", c.out);
    captured_free(&c);
    path = oom_trace(0, TB_GIB); /* one free of 1 GiB between the attempts */
    const char *freed[] = {"oom", path, NULL};
    c = capture_run(cmt_cmd_oom, freed);
    cr_expect(strstr(c.out, "retried after releasing cached memory"), "%s", c.out);
    captured_free(&c);
}

/* A trace whose stack nodes have no names: the text says how to get them, once. */
Test(commands, raw_frames_come_with_a_symbolize_hint)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t leaf = b.next_node++; /* written directly: tb_finish gives it an empty name */
    struct cmt_stack_node n = {leaf, 0, 0x401234};
    cr_assert_eq(cmt_writer_stack_node(b.w, &n), 0);
    tb_alloc(&b, 0x700000000000, TB_GIB, leaf);
    tb_finish(&b, 1);
    const char *raw = temp_trace(b.buf.data, b.buf.len, 8);
    tb_free_builder(&b);
    const char *argv[] = {"report", raw, NULL};
    struct captured c = capture_run(cmt_cmd_report, argv);
    cr_expect_eq(c.status, 0);
    char want[256];
    snprintf(want, sizeof want,
             "cumemtrace report: hint: frames without names (module+0xoffset): run `cumemtrace "
             "symbolize %s` where the program ran\n",
             raw);
    cr_expect_str_eq(c.err, want);
    captured_free(&c);
    const char *json[] = {"report", "--json", raw, NULL};
    c = capture_run(cmt_cmd_report, json);
    cr_expect_str_eq(c.err, "", "JSON is for programs: no hint");
    captured_free(&c);
    const char *named = oom_trace(0, TB_GIB);
    const char *nargv[] = {"report", named, NULL};
    c = capture_run(cmt_cmd_report, nargv);
    cr_expect_str_eq(c.err, "", "named frames: no hint");
    captured_free(&c);
    const char *oargv[] = {"oom", named, NULL};
    c = capture_run(cmt_cmd_oom, oargv);
    cr_expect_str_eq(c.err, "");
    captured_free(&c);
}

/* @return the process_bytes of the first moment under "key":[ in report's JSON ledger, or -1. */
static long long ledger_bytes(const char *json, const char *key)
{
    char want[64];
    snprintf(want, sizeof want, "\"%s\":[{", key);
    const char *ledger = strstr(json, "\"ledger\":{\"peak\":");
    const char *at = ledger ? strstr(ledger, want) : NULL;
    const char *bytes = at ? strstr(at, "\"process_bytes\":") : NULL;
    return bytes ? atoll(bytes + strlen("\"process_bytes\":")) : -1;
}

/* report's ledger at the peak is the state at the peak, taken in one pass when nothing follows
 * the peak and by a second replay up to it when memory was freed after it. */
Test(commands, report_takes_the_ledger_at_the_peak_and_the_end)
{
    const char *freed = oom_trace(7, TB_GIB); /* 20 GiB at the peak, one freed after it */
    const char *argv[] = {"report", "--json", freed, NULL};
    struct captured c = capture_run(cmt_cmd_report, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect_eq(ledger_bytes(c.out, "peak"), 20 * (long long)TB_GIB, "%s", c.out);
    cr_expect_eq(ledger_bytes(c.out, "end"), 19 * (long long)TB_GIB, "%s", c.out);
    captured_free(&c);
    struct tb b; /* only allocations: the peak is the end */
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB - 300 * TB_MIB);
    uint32_t s = tb_stack(&b, "grow", 2);
    for (int i = 0; i < 3; i++)
        tb_alloc(&b, 0x700000000000 + (uint64_t)i * 2 * TB_GIB, TB_GIB, s);
    tb_finish(&b, 0);
    const char *rising = temp_trace(b.buf.data, b.buf.len, 8);
    tb_free_builder(&b);
    const char *rargv[] = {"report", "--json", rising, NULL};
    c = capture_run(cmt_cmd_report, rargv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect_eq(ledger_bytes(c.out, "peak"), 3 * (long long)TB_GIB, "%s", c.out);
    cr_expect_eq(ledger_bytes(c.out, "end"), 3 * (long long)TB_GIB, "%s", c.out);
    captured_free(&c);
    const char *targv[] = {"report", rising, NULL}; /* text: the peak, then the end */
    c = capture_run(cmt_cmd_report, targv);
    const char *peak = strstr(c.out, "ledger of GPU 0 (Simulated GPU) at the peak (");
    const char *end = strstr(c.out, "ledger of GPU 0 (Simulated GPU) at the end");
    cr_expect(peak && end && peak < end, "%s", c.out);
    captured_free(&c);
}

/* The ledger in oom and report (tools/cli/print/ledger_print.c): its JSON keys, the rows adding up
 * with the other processes of the OOM's sample, report --at, and a bad --at refused. */
Test(commands, oom_and_report_give_the_ledger)
{
    const char *path = oom_trace(6, TB_GIB);
    const char *argv[] = {"oom", "--json", path, NULL};
    struct captured c = capture_run(cmt_cmd_oom, argv);
    cr_expect_eq(c.status, 0);
    static const char *keys[] = {"\"ledger\":{\"dev\":0,",
                                 "\"free_measured\":true",
                                 "\"context_bytes\":314572800",
                                 "\"others_bytes\":0",
                                 "\"residual_bytes\":0",
                                 "\"row\":\"driver\",\"label\":\"user code: segment_alloc_0\""
                                 ",\"bytes\":21474836480,\"owner\":\"user\"",
                                 "\"process_bytes\":21474836480"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        cr_expect(strstr(c.out, keys[i]), "missing %s in %s", keys[i], c.out);
    captured_free(&c);
    const char *report[] = {"report", "--at", "1ms", path, NULL};
    c = capture_run(cmt_cmd_report, report);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "ledger of GPU 0 (Simulated GPU) at the peak ("), "%s", c.out);
    cr_expect(strstr(c.out, "ledger of GPU 0 (Simulated GPU) at 1.00 ms: capacity 24.00 GiB"), "%s",
              c.out);
    cr_expect(strstr(c.out, "ledger of GPU 0 (Simulated GPU) at the end"), "%s", c.out);
    cr_expect(strstr(c.out, "  residual  0 B  (capacity less every row)\n"), "%s", c.out);
    captured_free(&c);
    const char *bad[] = {"report", "--at", "soon", path, NULL};
    c = capture_run(cmt_cmd_report, bad);
    cr_expect_eq(c.status, 2);
    cr_expect(strstr(c.err, "--at wants a time such as 12.5s or 800ms, got 'soon'"), "%s", c.err);
    captured_free(&c);
}
