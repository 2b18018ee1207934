/* test_symbolize.c — cmt_symbolize_file on traces that point into this very executable. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmt_error.h"
#include "commands.h"
#include "reader.h"
#include "stack_fixture.h"
#include "symbolize.h"
#include "writer.h"

#define OUTSIDE_IP 0x10 /* an ip that lies in no module */

static char trace_path[64];
static char exe_path[4096];
static uint8_t build_id[64];
static struct cmt_module self;
static struct chain chain;

static void setup(void)
{
    strcpy(trace_path, "/tmp/cmt_symbolize_XXXXXX");
    int fd = mkstemp(trace_path);
    cr_assert_geq(fd, 0);
    close(fd);
    fixture_self_module(&self, exe_path, sizeof exe_path, build_id);
    cr_assert_gt(self.size, 0);
    fixture_capture_chain(&chain);
}

static void teardown(void)
{
    unlink(trace_path);
}

TestSuite(symbolize, .init = setup, .fini = teardown);

/* Writes a trace: `strings` as STRING 1..n, `module`, a STACK_NODE per ip (node i+1 is the
 * child of node i, so ips[0] is the outermost frame). */
static void write_trace(const struct cmt_module *module, const uint64_t *ips, int n,
                        const char *const *strings, int nstrings)
{
    struct cmt_membuf buf = {0};
    cmt_writer *w;
    cr_assert_eq(cmt_writer_create(&w, cmt_membuf_sink, &buf, NULL), 0);
    for (int i = 0; i < nstrings; i++)
        cr_assert_eq(cmt_writer_string(w, (uint32_t)i + 1, strings[i]), 0);
    if (module)
        cr_assert_eq(cmt_writer_module(w, module), 0);
    for (int i = 0; i < n; i++)
        cr_assert_eq(cmt_writer_stack_node(
                         w, &(struct cmt_stack_node){(uint32_t)i + 1, (uint32_t)i, ips[i]}),
                     0);
    cr_assert_eq(cmt_writer_end(w, &(struct cmt_end){1, 0, 0}), 0);
    cr_assert_eq(cmt_writer_flush(w), 0);
    cmt_writer_destroy(w);
    FILE *f = fopen(trace_path, "wb");
    cr_assert(f);
    cr_assert_eq(fwrite(buf.data, 1, buf.len, f), buf.len);
    fclose(f);
    cmt_membuf_free(&buf);
}

/* The chain, outermost first, then an ip outside every module. */
static void write_chain_trace(const struct cmt_module *module)
{
    uint64_t ips[CHAIN_DEPTH + 1];
    for (int i = 0; i < CHAIN_DEPTH; i++)
        ips[i] = chain.ip[CHAIN_DEPTH - 1 - i];
    ips[CHAIN_DEPTH] = OUTSIDE_IP;
    write_trace(module, ips, CHAIN_DEPTH + 1, NULL, 0);
}

static uint8_t *slurp(size_t *len)
{
    FILE *f = fopen(trace_path, "rb");
    cr_assert(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    uint8_t *data = malloc(*len + 1);
    cr_assert_eq(fread(data, 1, *len, f), *len);
    fclose(f);
    return data;
}

static cmt_reader *reopen(void)
{
    cmt_reader *r;
    cr_assert_eq(cmt_reader_open_file(&r, trace_path, NULL), 0);
    cr_assert_eq(cmt_reader_preload(r), 0, "symbolized trace must read cleanly: %s",
                 cmt_reader_damage(r));
    return r;
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

/* Node of chain frame i (0 = innermost). */
static uint32_t chain_node(int i)
{
    return (uint32_t)(CHAIN_DEPTH - i);
}

Test(symbolize, names_static_functions_with_exact_lines)
{
    write_chain_trace(&self);
    struct cmt_symbolize_stats st;
    struct cmt_err err = {0};
    cr_assert_eq(cmt_symbolize_file(trace_path, &st, &err), 0, "%s", err.text);
    cr_expect_eq(st.nodes, CHAIN_DEPTH + 1);
    cr_expect_eq(st.named, CHAIN_DEPTH);
    cr_expect_eq(st.with_line, CHAIN_DEPTH);
    cr_expect_eq(st.outside_modules, 1);
    cr_expect_eq(st.modules_missing, 0);
    cr_expect_eq(st.modules_changed, 0);
    cmt_reader *r = reopen();
    for (int i = 0; i < CHAIN_DEPTH; i++) {
        const struct cmt_symbol *s = cmt_reader_symbol(r, chain_node(i));
        cr_assert(s, "frame %d has no SYMBOL", i);
        cr_expect_str_eq(cmt_reader_string(r, s->function), chain.function[i]);
        const char *file = cmt_reader_string(r, s->file);
        cr_assert(file);
        cr_expect(ends_with(file, "/stack_fixture.c"), "file %s", file);
        cr_expect_eq(s->line, chain.line[i], "frame %d: line %u, want %u", i, s->line,
                     chain.line[i]);
        cr_expect_eq(s->module, self.id);
    }
    cr_expect_null(cmt_reader_symbol(r, CHAIN_DEPTH + 1), "an ip outside modules stays bare");
    char frame[256], want[256];
    cmt_reader_format_frame(r, chain_node(0), frame, sizeof frame);
    snprintf(want, sizeof want, "middle_frame stack_fixture.c:%u", chain.line[0]);
    cr_expect_str_eq(frame, want);
    cmt_reader_close(r);
}

Test(symbolize, second_run_appends_nothing)
{
    write_chain_trace(&self);
    struct cmt_symbolize_stats st;
    struct cmt_err err = {0};
    cr_assert_eq(cmt_symbolize_file(trace_path, &st, &err), 0, "%s", err.text);
    cr_assert_gt(st.symbols_added, 0);
    size_t len1, len2;
    uint8_t *before = slurp(&len1);
    cr_assert_eq(cmt_symbolize_file(trace_path, &st, &err), 0, "%s", err.text);
    uint8_t *after = slurp(&len2);
    cr_expect_eq(st.nodes, 1, "only the bare node is tried again");
    cr_expect_eq(st.symbols_added, 0);
    cr_expect_eq(st.strings_added, 0);
    cr_assert_eq(len1, len2);
    cr_expect_eq(memcmp(before, after, len1), 0);
    free(before);
    free(after);
}

Test(symbolize, new_strings_get_ids_above_existing_and_reuse_equal_text)
{
    const char *strings[] = {"unrelated", "outer_frame", "x", "y", "z"};
    uint64_t ips[] = {chain.ip[1], chain.ip[0]}; /* outer_frame, then middle_frame */
    write_trace(&self, ips, 2, strings, 5);
    struct cmt_symbolize_stats st;
    struct cmt_err err = {0};
    cr_assert_eq(cmt_symbolize_file(trace_path, &st, &err), 0, "%s", err.text);
    cr_expect_eq(st.strings_added, 2, "middle_frame and the file name are new");
    cmt_reader *r = reopen();
    cr_expect_eq(cmt_reader_symbol(r, 1)->function, 2, "existing STRING reused");
    const struct cmt_symbol *inner = cmt_reader_symbol(r, 2);
    cr_expect_gt(inner->function, 5);
    cr_expect_gt(inner->file, 5);
    cr_expect_eq(inner->file, cmt_reader_symbol(r, 1)->file, "one STRING per file name");
    cr_expect_str_eq(cmt_reader_string(r, 1), "unrelated");
    cr_expect_eq(cmt_reader_string_count(r), 7);
    cmt_reader_close(r);
}

Test(symbolize, skips_module_whose_build_id_changed)
{
    cr_assert_gt(self.build_id_len, 0, "test executable has no GNU build-id");
    struct cmt_module m = self;
    uint8_t other[64];
    memcpy(other, build_id, sizeof other);
    other[0] ^= 0xff;
    m.build_id = other;
    write_chain_trace(&m);
    size_t len1, len2;
    free(slurp(&len1));
    struct cmt_symbolize_stats st;
    struct cmt_err err = {0};
    cr_assert_eq(cmt_symbolize_file(trace_path, &st, &err), 0, "%s", err.text);
    cr_expect_eq(st.modules_changed, 1);
    cr_expect_eq(st.named, 0);
    cr_expect_eq(st.symbols_added, 0);
    free(slurp(&len2));
    cr_expect_eq(len1, len2, "nothing to append");
}

Test(symbolize, counts_missing_module_file)
{
    struct cmt_module m = self;
    m.path = "/nonexistent/cumemtrace/libgone.so";
    write_chain_trace(&m);
    struct cmt_symbolize_stats st;
    struct cmt_err err = {0};
    cr_assert_eq(cmt_symbolize_file(trace_path, &st, &err), 0, "%s", err.text);
    cr_expect_eq(st.modules_missing, 1);
    cr_expect_eq(st.nodes, CHAIN_DEPTH + 1);
    cr_expect_eq(st.named, 0);
}

static void damage_and_check(long offset_from_end, const uint8_t *junk, size_t junk_len)
{
    write_chain_trace(&self);
    int fd = open(trace_path, O_WRONLY);
    cr_assert_geq(fd, 0);
    struct stat sb;
    fstat(fd, &sb);
    cr_assert_eq(pwrite(fd, junk, junk_len, sb.st_size - offset_from_end), (ssize_t)junk_len);
    close(fd);
    size_t len1, len2;
    uint8_t *before = slurp(&len1);
    struct cmt_symbolize_stats st;
    struct cmt_err err = {0};
    int rc = cmt_symbolize_file(trace_path, &st, &err);
    cr_expect(rc == CMT_ECORRUPT || rc == CMT_ETRUNCATED, "rc %d", rc);
    cr_expect(strstr(err.text, trace_path) && strstr(err.text, "not symbolized"), "err: %s",
              err.text);
    uint8_t *after = slurp(&len2);
    cr_assert_eq(len1, len2, "a damaged trace must not grow");
    cr_expect_eq(memcmp(before, after, len1), 0);
    free(before);
    free(after);
}

Test(symbolize, refuses_trace_with_flipped_bits)
{
    uint8_t junk[4] = {0xa5, 0x5a, 0xa5, 0x5a};
    damage_and_check(8, junk, sizeof junk); /* inside the frame's checksum/payload */
}

Test(symbolize, refuses_truncated_trace)
{
    uint8_t partial_header[] = {0x43, 0x4d, 0x54, 0x4b, 1, 0}; /* an appended, cut chunk */
    damage_and_check(0, partial_header, sizeof partial_header);
}

Test(symbolize, reports_unreadable_file)
{
    unlink(trace_path);
    struct cmt_symbolize_stats st;
    struct cmt_err err = {0};
    cr_expect_eq(cmt_symbolize_file(trace_path, &st, &err), CMT_EIO);
    cr_expect_eq(err.code, CMT_EIO);
    cr_expect(strstr(cmt_err_message(&err), trace_path), "err names the file: %s", err.text);
}

Test(symbolize, demangles_cxx_names)
{
    const char *name;
    unsigned line;
    uint64_t ip = fixture_cxx_frame(&name, &line);
    if (!ip)
        cr_skip_test("built without a C++ compiler");
    write_trace(&self, &ip, 1, NULL, 0);
    struct cmt_symbolize_stats st;
    struct cmt_err err = {0};
    cr_assert_eq(cmt_symbolize_file(trace_path, &st, &err), 0, "%s", err.text);
    cmt_reader *r = reopen();
    const struct cmt_symbol *s = cmt_reader_symbol(r, 1);
    cr_assert(s);
    cr_expect_str_eq(cmt_reader_string(r, s->function), name);
    cr_expect(ends_with(cmt_reader_string(r, s->file), "/stack_fixture_cxx.cpp"));
    cr_expect_eq(s->line, line);
    cmt_reader_close(r);
}

Test(symbolize, names_innermost_inlined_function_to_match_its_line)
{
    const char *name;
    unsigned line;
    uint64_t ip = fixture_inlined_frame(&name, &line);
    write_trace(&self, &ip, 1, NULL, 0);
    struct cmt_symbolize_stats st;
    struct cmt_err err = {0};
    cr_assert_eq(cmt_symbolize_file(trace_path, &st, &err), 0, "%s", err.text);
    cmt_reader *r = reopen();
    const struct cmt_symbol *s = cmt_reader_symbol(r, 1);
    cr_assert(s);
    cr_expect_str_eq(cmt_reader_string(r, s->function), name);
    cr_expect_eq(s->line, line);
    cmt_reader_close(r);
}

Test(symbolize, many_nodes_share_lookups)
{
    enum { N = 20000 };
    uint64_t *ips = malloc(N * sizeof *ips);
    for (int i = 0; i < N; i++)
        ips[i] = chain.ip[i % CHAIN_DEPTH];
    write_trace(&self, ips, N, NULL, 0);
    free(ips);
    struct cmt_symbolize_stats st;
    struct cmt_err err = {0};
    cr_assert_eq(cmt_symbolize_file(trace_path, &st, &err), 0, "%s", err.text);
    cr_expect_eq(st.named, N);
    cr_expect_eq(st.with_line, N);
    cr_expect_eq(st.strings_added, CHAIN_DEPTH + 1);
}

Test(symbolize_cmd, exit_statuses)
{
    char *help[] = {"symbolize", "--help", NULL};
    char *bad_flag[] = {"symbolize", "--frobnicate", "x.cmt", NULL};
    char *none[] = {"symbolize", NULL};
    char *missing[] = {"symbolize", "--quiet", "/nonexistent/trace.cmt", NULL};
    cr_redirect_stdout();
    cr_redirect_stderr();
    cr_expect_eq(cmt_cmd_symbolize(2, help), 0);
    cr_expect_eq(cmt_cmd_symbolize(3, bad_flag), 2);
    cr_expect_eq(cmt_cmd_symbolize(1, none), 2);
    cr_expect_eq(cmt_cmd_symbolize(3, missing), 1);
}

Test(symbolize, command_prints_one_line_per_file)
{
    write_chain_trace(&self);
    char *argv[] = {"symbolize", trace_path, NULL};
    cr_redirect_stdout();
    cr_assert_eq(cmt_cmd_symbolize(2, argv), 0);
    fflush(stdout);
    char want[256];
    snprintf(want, sizeof want, "cumemtrace: symbolized %s: 4 frames, 3 named, 3 with file:line\n",
             trace_path);
    cr_assert_stdout_eq_str(want);
}

/* A trace names the files symbolize opens: only regular files are read (issue 12 item 9). A
 * FIFO would block open() for ever, a device or /dev/stdin would be read. */
Test(symbolize, opens_only_regular_files, .timeout = 20)
{
    char fifo[96];
    snprintf(fifo, sizeof fifo, "%s.fifo", trace_path);
    unlink(fifo);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    const char *paths[] = {fifo, "/dev/stdin", "/dev/zero"};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        struct cmt_module m = self;
        m.path = paths[i];
        write_chain_trace(&m);
        struct cmt_symbolize_stats st;
        struct cmt_err err = {0};
        cr_assert_eq(cmt_symbolize_file(trace_path, &st, &err), 0, "%s", err.text);
        cr_expect_eq(st.modules_missing, 1, "%s", paths[i]);
        cr_expect_eq(st.named, 0, "%s", paths[i]);
    }
    unlink(fifo);
}
