/* Hostile traces (issue 12 item 9): built with the trace builder, each must leave every command
 * standing, in bounded memory, with a clear line when something is refused. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture.h"
#include "commands.h"
#include "trace_builder.h"

static const char *saved(struct tb *b, int index)
{
    tb_finish(b, 1);
    const char *path = temp_trace(b->buf.data, b->buf.len, index);
    tb_free_builder(b);
    return path;
}

/* One allocation of 2^64 - 2630 bytes after one of 1 KiB: live bytes wrap to 2^64 - 1606, far
 * above the peak (the replay counts no peak for a size that does not fit an int64). */
static const char *huge_size_trace(int index)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t s = tb_stack(&b, "huge", 2);
    tb_alloc(&b, 0x700000000000, 1024, s);
    tb_alloc(&b, 0x710000000000, UINT64_MAX - 2629, s);
    return saved(&b, index);
}

Test(hostile, a_size_near_2_64_does_not_crash_timeline)
{
    const char *path = huge_size_trace(0);
    const char *formats[][2] = {{"--points", "60"}, {"--csv", NULL}, {"--json", NULL}};
    for (size_t i = 0; i < sizeof formats / sizeof *formats; i++) {
        const char *argv[] = {"timeline", formats[i][0], formats[i][1], path, NULL};
        if (!formats[i][1]) {
            argv[2] = path;
            argv[3] = NULL;
        }
        struct captured c = capture_run(cmt_cmd_timeline, argv);
        cr_expect_eq(c.status, 0, "%s: %s", formats[i][0], c.err);
        captured_free(&c);
    }
}

/* Runs `timeline --csv path` in a child. @return the most address space it held (VmPeak, KiB):
 * what it allocated, touched or not. */
static long timeline_vm_kib(const char *path)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        char *argv[] = {"timeline", "--csv", (char *)path, NULL};
        int rc = cmt_cmd_timeline(3, argv);
        long kib = -1;
        char line[256];
        FILE *f = fopen("/proc/self/status", "r");
        while (f && fgets(line, sizeof line, f))
            if (strncmp(line, "VmPeak:", 7) == 0)
                kib = strtol(line + 7, NULL, 10);
        if (f)
            fclose(f);
        (void)!write(fds[1], &kib, sizeof kib);
        _exit(rc);
    }
    close(fds[1]);
    long kib = -1;
    cr_assert_eq(read(fds[0], &kib, sizeof kib), (ssize_t)sizeof kib);
    close(fds[0]);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
    return kib;
}

static const char *one_event_on(int32_t dev, int index)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint64_t v[] = {0x700000000000, TB_MIB};
    tb_event(&b, TB_ALLOC, 0, dev, 0, CMT_F(PTR) | CMT_F(SIZE), v);
    return saved(&b, index);
}

Test(hostile, memory_follows_devices_seen_not_the_highest_ordinal)
{
    long base = timeline_vm_kib(one_event_on(0, 1));
    /* 1023: the last ordinal CMT_MAX_DEVICES allows */
    for (int32_t dev = 1022; dev <= 1023; dev++) {
        long high = timeline_vm_kib(one_event_on(dev, 2));
        cr_expect_lt(high - base, 4096, "VmPeak with dev 0: %ld KiB, dev %d: %ld KiB", base, dev,
                     high);
        fprintf(stderr, "timeline VmPeak: dev 0 %ld KiB, dev %d %ld KiB\n", base, dev, high);
    }
    /* and the last ordinal is a device like the others */
    const char *argv[] = {"timeline", "--csv", one_event_on(1023, 3), NULL};
    struct captured c = capture_run(cmt_cmd_timeline, argv);
    cr_expect(strstr(c.out, "\n1000,1023,1048576,"), "%s", c.out);
    captured_free(&c);
}

/* Ordinals past the device table (1024, 5000) and below -1 (-7): their bytes are counted with
 * those of no device, and report says so, text and JSON. */
Test(hostile, ordinals_outside_the_device_table_are_named_by_report)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    const int32_t devs[] = {0, 5000, 1024, -7};
    for (size_t i = 0; i < sizeof devs / sizeof *devs; i++) {
        uint64_t v[] = {0x700000000000 + i * TB_GIB, TB_MIB << i};
        tb_event(&b, TB_ALLOC, 0, devs[i], 0, CMT_F(PTR) | CMT_F(SIZE), v);
    }
    const char *path = saved(&b, 0);
    const struct {
        const char *option, *want;
    } checks[] = {
        {NULL, "device     3 events on ordinals outside 0..1023 (the first 5000) are counted as "
               "device ?\n"},
        {NULL, "device ?: peak 14.00 MiB"}, /* 2 + 4 + 8 MiB on no device */
        {NULL, "GPU 0 (Simulated GPU): peak 1.00 MiB"},
        {"--json", "\"odd_device_events\":3,\"odd_device_first\":5000"},
    };
    for (size_t i = 0; i < sizeof checks / sizeof *checks; i++) {
        const char *o = checks[i].option, *argv[] = {"report", o ? o : path, o ? path : NULL, NULL};
        struct captured c = capture_run(cmt_cmd_report, argv);
        cr_expect_eq(c.status, 0, "%s", c.err);
        cr_expect(strstr(c.out, checks[i].want), "%s", c.out);
        captured_free(&c);
    }
}

/* Strings from the trace carry ESC (a terminal escape: clear the screen) and bytes that are not
 * UTF-8: device name, function name, API name. */
static const char *hostile_strings_trace(int index)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    struct cmt_device d = {0, "GPU\x1b[2J\xff\xfe name", 24 * TB_GIB, 24 * TB_GIB, 0};
    cr_assert_eq(cmt_writer_device(b.w, &d), 0);
    struct cmt_api api = {TB_API_COUNT, CMT_OP_ALLOC, "cuMemAlloc\x1b]0;owned\x07"};
    cr_assert_eq(cmt_writer_api(b.w, &api), 0);
    uint32_t s = tb_frame(&b, 0, "main\x1b[31m\xc3");
    uint64_t v[] = {0x700000000000, TB_MIB};
    tb_event(&b, TB_API_COUNT, 0, 0, s, CMT_F(PTR) | CMT_F(SIZE), v);
    uint64_t f[] = {TB_GIB};
    tb_event(&b, TB_API_COUNT, 2, 0, s, CMT_F(SIZE), f);
    return saved(&b, index);
}

Test(hostile, text_output_escapes_control_bytes_from_the_trace)
{
    const char *path = hostile_strings_trace(4);
    struct {
        int (*fn)(int, char **);
        const char *argv[4];
    } runs[] = {{cmt_cmd_report, {"report", path, NULL}},
                {cmt_cmd_oom, {"oom", path, NULL}},
                {cmt_cmd_timeline, {"timeline", path, NULL}}};
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        struct captured c = capture_run(runs[i].fn, runs[i].argv);
        cr_expect_eq(c.status, 0, "%s", runs[i].argv[0]);
        cr_expect(!strchr(c.out, '\x1b') && !strchr(c.out, '\x07'), "%s: %s", runs[i].argv[0],
                  c.out);
        cr_expect(strstr(c.out, "\\x1b"), "%s shows the byte: %s", runs[i].argv[0], c.out);
        captured_free(&c);
    }
}

/* @return whether s is well-formed UTF-8. */
static int utf8_ok(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        size_t len = c < 0x80             ? 1
                     : (c & 0xe0) == 0xc0 ? 2
                     : (c & 0xf0) == 0xe0 ? 3
                     : (c & 0xf8) == 0xf0 ? 4
                                          : 0;
        if (!len || i + len > n)
            return 0;
        for (size_t k = 1; k < len; k++)
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
        i += len;
    }
    return 1;
}

Test(hostile, invalid_utf8_leaves_the_svg_well_formed)
{
    const char *path = hostile_strings_trace(5);
    char svg[128];
    struct captured c = capture_svg(cmt_cmd_timeline, path, svg, sizeof svg);
    cr_expect_eq(c.status, 0);
    captured_free(&c);
    FILE *f = fopen(svg, "rb");
    cr_assert_not_null(f);
    static unsigned char body[1 << 16];
    size_t n = fread(body, 1, sizeof body - 1, f);
    fclose(f);
    remove(svg);
    body[n] = 0;
    cr_expect(utf8_ok(body, n), "%s", body);
    /* the device's label is the terminal's text (cmt__text): the bytes shown, not replaced */
    cr_expect(strstr((char *)body, "GPU\\x1b[2J\\xff\\xfe name"), "%s", body);
}

/* A size the model cannot hold (2^64 - 2630 bytes): whatif names the event and what is wrong in
 * one line, and exits non-zero. */
Test(hostile, whatif_names_the_event_with_a_size_near_2_64)
{
    const char *path = huge_size_trace(6);
    const char *argv[] = {"whatif", "--capacity", "20GiB", "--max-split-size-mb",
                          "inf",    path,         NULL};
    struct captured c = capture_run(cmt_cmd_whatif, argv);
    cr_expect_neq(c.status, 0, "%s", c.out);
    cr_expect(strstr(c.err, "event seq 2:"), "names the event: %s", c.err);
    cr_expect(strstr(c.err, "18446744073709548986 bytes"), "names the size: %s", c.err);
    cr_expect_eq(strchr(c.err, '\n'), c.err + strlen(c.err) - 1, "one line: %s", c.err);
    captured_free(&c);
}

/* Pinned host memory, recorded with dev -1 (issue 12 item 7): no "device ?" line of its own. */
/* Copies the lines of out's section `title` (up to the next blank line) into buf; "" when
 * there is none. */
static void section(const char *out, const char *title, char *buf, size_t size)
{
    buf[0] = 0;
    const char *at = strstr(out, title);
    if (!at || !(at = strchr(at, '\n')))
        return;
    const char *end = strstr(at, "\n\n");
    size_t n = end ? (size_t)(end - at) : strlen(at);
    snprintf(buf, size, "%.*s", (int)n, at);
}

Test(hostile, pinned_host_memory_makes_no_phantom_device)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t s = tb_stack(&b, "pinned", 2);
    uint64_t v[] = {0x10000000, 100 * TB_MIB};
    tb_event(&b, TB_HOST, 0, -1, s, CMT_F(PTR) | CMT_F(SIZE), v);
    tb_alloc(&b, 0x700000000000, TB_MIB, s);
    const char *path = saved(&b, 7);
    const char *argv[] = {"report", path, NULL};
    struct captured c = capture_run(cmt_cmd_report, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect_null(strstr(c.out, "device ?"), "%s", c.out);
    /* the site holds 1 MiB of device memory and 100 MiB of pinned host memory: its device
     * figures are the 1 MiB, the host memory has its own section */
    char text[1024];
    section(c.out, "top call sites at the peak", text, sizeof text);
    cr_expect(strstr(text, "  1.00 MiB"), "%s", c.out);
    cr_expect_null(strstr(text, "101.00 MiB"), "%s", c.out);
    section(c.out, "still allocated at the end (leaks), by call site", text, sizeof text);
    cr_expect(strstr(text, "  1.00 MiB"), "%s", c.out);
    cr_expect_null(strstr(text, "101.00 MiB"), "%s", c.out);
    section(c.out, "pinned host memory", text, sizeof text);
    cr_expect(strstr(text, "100.00 MiB"), "%s", c.out);
    captured_free(&c);
    const char *jargv[] = {"report", "--json", path, NULL};
    c = capture_run(cmt_cmd_report, jargv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "\"peak_sites\":[{\"bytes\":1048576,"), "%s", c.out);
    cr_expect(strstr(c.out, "\"leaks\":[{\"bytes\":1048576,"), "%s", c.out);
    cr_expect(strstr(c.out, "\"host_pinned_peak_bytes\":104857600"), "%s", c.out);
    cr_expect(strstr(c.out, "\"host_pinned_sites\":[{\"bytes\":104857600,"), "%s", c.out);
    captured_free(&c);
}
