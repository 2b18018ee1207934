/* An analysis pass that runs out of host memory (issue 12 item 9): the commands say "results are
 * partial" and exit non-zero. The test binary's own malloc fails large requests while armed,
 * so the replay's growth fails part way. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "cmt_format.h"
#include "commands.h"
#include "trace_builder.h"

#include "malloc_failure.h"

/* A trace cut right after its file header (the process died before its first write): no
 * event salvaged is an error in every command, with one line saying so. */
Test(partial, a_trace_with_no_event_salvaged_exits_non_zero)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    tb_alloc(&b, 0x100000000, TB_GIB, tb_stack(&b, "main", 1));
    tb_finish(&b, 1);
    const char *path = temp_trace(b.buf.data, CMT_FILE_HEADER_SIZE, 0); /* the header alone */
    tb_free_builder(&b);
    char html[96];
    snprintf(html, sizeof html, "%s.html", path);
    struct {
        int (*fn)(int, char **);
        const char *argv[6];
    } runs[] = {{cmt_cmd_report, {"report", path, NULL}},
                {cmt_cmd_oom, {"oom", path, NULL}},
                {cmt_cmd_timeline, {"timeline", path, NULL}},
                {cmt_cmd_dump, {"dump", path, NULL}},
                {cmt_cmd_html, {"html", "-o", html, path, NULL}},
                {cmt_cmd_export, {"export", "-f", "csv", path, NULL}}};
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        struct captured c = capture_run(runs[i].fn, runs[i].argv);
        cr_expect_neq(c.status, 0, "%s exits non-zero: %s", runs[i].argv[0], c.err);
        cr_expect(strstr(c.err, "no event"), "%s: %s", runs[i].argv[0], c.err);
        captured_free(&c);
    }
    unlink(html);
}

#ifndef CMT_TEST_NO_MALLOC_HOOK
/* 200k live allocations: the replay's tables grow past 1 MiB, the reader's buffers do not. */
static const char *many_live_trace(void)
{
    static char path[64];
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t s = tb_stack(&b, "many", 2);
    for (uint64_t i = 0; i < 200000; i++)
        tb_alloc(&b, 0x700000000000 + i * 4096, 4096, s);
    tb_finish(&b, 1);
    snprintf(path, sizeof path, "%s", temp_trace(b.buf.data, b.buf.len, 0));
    tb_free_builder(&b);
    return path;
}

static struct captured run_armed(int (*fn)(int, char **), const char *const *argv)
{
    fail_above = (size_t)1 << 20;
    struct captured c = capture_run(fn, argv);
    fail_above = 0;
    return c;
}

Test(partial, out_of_memory_in_the_pass_exits_non_zero)
{
    const char *path = many_live_trace();
    struct {
        int (*fn)(int, char **);
        const char *argv[5];
    } runs[] = {{cmt_cmd_report, {"report", path, NULL}},
                {cmt_cmd_oom, {"oom", path, NULL}},
                {cmt_cmd_timeline, {"timeline", path, NULL}},
                {cmt_cmd_diff, {"diff", path, path, NULL}}};
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        struct captured c = run_armed(runs[i].fn, runs[i].argv);
        cr_expect(strstr(c.err, "results are partial"), "%s: %s", runs[i].argv[0], c.err);
        cr_expect_neq(c.status, 0, "%s exits non-zero: %s", runs[i].argv[0], c.err);
        captured_free(&c);
    }
}
#endif
