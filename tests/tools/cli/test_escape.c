/* Tests of escape.c (issue 24 items 3 to 5): the JSON string routine every JSON writer uses,
 * the terminal's text, the CSV formula test; then a trace whose names are UTF-8
 * ("función_日本"), bytes that are not UTF-8 and terminal escapes, through each writer. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "commands.h"
#include "escape.h"
#include "trace_builder.h"

#define NAME "funci\xc3\xb3n_\xe6\x97\xa5\xe6\x9c\xac" /* función_日本 */
#define FFFD "\xef\xbf\xbd"

struct mem {
    char buf[512];
    size_t n;
};

static void mem_sink(void *ctx, const char *p, size_t n)
{
    struct mem *m = ctx;
    cr_assert_lt(m->n + n, sizeof m->buf);
    memcpy(m->buf + m->n, p, n);
    m->n += n;
    m->buf[m->n] = 0;
}

static const char *json(const char *s, unsigned flags, struct mem *m)
{
    m->n = 0;
    m->buf[0] = 0;
    cmt__json_escape(s, flags, mem_sink, m);
    return m->buf;
}

Test(escape, utf8_length_accepts_shortest_forms_only)
{
    cr_expect_eq(cmt__utf8_length((const unsigned char *)"a"), 1);
    cr_expect_eq(cmt__utf8_length((const unsigned char *)"\xc3\xb3"), 2);
    cr_expect_eq(cmt__utf8_length((const unsigned char *)"\xe6\x97\xa5"), 3);
    cr_expect_eq(cmt__utf8_length((const unsigned char *)"\xf0\x9f\x98\x80"), 4);
    cr_expect_eq(cmt__utf8_length((const unsigned char *)"\xc0\xaf"), 0, "overlong");
    cr_expect_eq(cmt__utf8_length((const unsigned char *)"\xe0\x80\xaf"), 0, "overlong");
    cr_expect_eq(cmt__utf8_length((const unsigned char *)"\xed\xa0\x80"), 0, "surrogate");
    cr_expect_eq(cmt__utf8_length((const unsigned char *)"\xf4\x90\x80\x80"), 0, "> U+10FFFF");
    cr_expect_eq(cmt__utf8_length((const unsigned char *)"\xe6\x97"), 0, "cut by the NUL");
    cr_expect_eq(cmt__utf8_length((const unsigned char *)"\x80"), 0, "a continuation byte");
    cr_expect_eq(cmt__utf8_length((const unsigned char *)"\xff"), 0);
}

Test(escape, json_keeps_utf8_and_replaces_invalid_bytes)
{
    struct mem m;
    cr_expect_str_eq(json(NAME, 0, &m), "\"" NAME "\"");
    cr_expect_str_eq(json("plain ascii", 0, &m), "\"plain ascii\"");
    cr_expect_str_eq(json(NULL, 0, &m), "\"\"");
    cr_expect_str_eq(json("a\xff"
                          "b\xe6\x97"
                          "c\xc3",
                          0, &m),
                     "\"a" FFFD "b" FFFD FFFD "c" FFFD "\"");
    cr_expect_str_eq(json("\xed\xa0\x80", 0, &m), "\"" FFFD FFFD FFFD "\"", "a surrogate");
}

Test(escape, json_escapes_quotes_and_control_characters)
{
    struct mem m;
    cr_expect_str_eq(json("q\"b\\n\nt\tr\r", 0, &m), "\"q\\\"b\\\\n\\nt\\tr\\r\"");
    cr_expect_str_eq(json("\x1b[31m\x01\x7f", 0, &m), "\"\\u001b[31m\\u0001\\u007f\"");
    cr_expect_str_eq(json("</script>", 0, &m), "\"</script>\"", "'<' only for HTML");
    cr_expect_str_eq(json("</script><!--", CMT__JSON_ESCAPE_HTML, &m),
                     "\"\\u003c/script>\\u003c!--\"");
}

Test(escape, json_plain_length_stops_where_escaping_starts)
{
    cr_expect_eq(cmt__json_plain_length("cuMemAlloc_v2", 0), 13);
    cr_expect_eq(cmt__json_plain_length("ab\"c", 0), 2);
    cr_expect_eq(cmt__json_plain_length("ab\\c", 0), 2);
    cr_expect_eq(cmt__json_plain_length("ab\nc", 0), 2);
    cr_expect_eq(cmt__json_plain_length("ab" NAME, 0), 7, "UTF-8 goes the long way");
    cr_expect_eq(cmt__json_plain_length("a<b", 0), 3);
    cr_expect_eq(cmt__json_plain_length("a<b", CMT__JSON_ESCAPE_HTML), 1);
    cr_expect_eq(cmt__json_plain_length(NULL, 0), 0);
}

Test(escape, terminal_text_shows_controls_and_invalid_bytes)
{
    char buf[128];
    cr_expect_str_eq(cmt__text(NAME, buf, sizeof buf), NAME, "valid UTF-8 kept");
    cr_expect_str_eq(cmt__text("a\x1b[2Jb\x07", buf, sizeof buf), "a\\x1b[2Jb\\x07");
    cr_expect_str_eq(cmt__text("x\xff\xc3", buf, sizeof buf), "x\\xff\\xc3");
    cr_expect_str_eq(cmt__text("csi\xc2\x9b"
                               "1m",
                               buf, sizeof buf),
                     "csi\\u009b1m", "C1");
    cr_expect_str_eq(cmt__text("\xe2\x80\xae"
                               "evil",
                               buf, sizeof buf),
                     "\\u202eevil", "RLO");
    cr_expect_str_eq(cmt__text(NULL, buf, sizeof buf), "");
}

Test(escape, terminal_text_is_cut_between_characters)
{
    char buf[10];
    /* 5 bytes stay spare: "日本" (6 bytes) fits after 3 bytes; the third character does not */
    cmt__text("\xe6\x97\xa5\xe6\x9c\xac\xe6\x97\xa5", buf, sizeof buf);
    cr_expect_str_eq(buf, "\xe6\x97\xa5\xe6\x9c\xac", "%s", buf);
    cmt__text("abcdefghij", buf, sizeof buf);
    cr_expect_str_eq(buf, "abcde", "ASCII cut where it always was");
    cmt__text("\x1b\x1b\x1b", buf, sizeof buf);
    cr_expect_str_eq(buf, "\\x1b\\x1b", "never inside an escape");
}

Test(escape, csv_formula_cells)
{
    const char *formula[] = {"=1+1", "+cmd", "-2+3", "@SUM(A1)", "\tx", "\rx"};
    for (size_t i = 0; i < sizeof formula / sizeof *formula; i++)
        cr_expect(cmt__csv_is_formula(formula[i]), "%s", formula[i]);
    const char *text[] = {"host-1", "a=b", "", NULL, " =x"};
    for (size_t i = 0; i < sizeof text / sizeof *text; i++)
        cr_expect(!cmt__csv_is_formula(text[i]), "%s", text[i] ? text[i] : "NULL");
}

/* ---- through the writers ---- */

/* A run on host NAME whose thread NAME allocates from function NAME (site 1) and from
 * "bad\xff\x01" (site 2, a byte that is not UTF-8 and a control byte), and fails a 30 GiB
 * request from NAME (an OOM episode); a note with "</script>". */
/* Starts a trace of process 4242 on `host`, running `exe` with argv[0..1]. */
static void begin_named(struct tb *b, const char *host, const char *exe, const char *const *argv)
{
    struct cmt_process p = {.pid = 4242,
                            .start_mono_ns = 1,
                            .hostname = host,
                            .exe = exe,
                            .argc = 2,
                            .argv = argv,
                            .rank = -1,
                            .local_rank = -1,
                            .world_size = -1};
    tb_begin_process(b, &p, 24 * TB_GIB, 24 * TB_GIB);
}

/* A failed request of 30 GiB from `stack` (an OOM episode), then END; the trace saved.
 * @return its path. */
static const char *saved_with_oom(struct tb *b, uint32_t stack, int index)
{
    uint64_t seq = tb_alloc_fail(b, 30 * TB_GIB, stack);
    tb_meminfo(b, CMT_MEMINFO_OOM, 21 * TB_GIB, 24 * TB_GIB, seq);
    tb_finish(b, 1);
    const char *path = temp_trace(b->buf.data, b->buf.len, index);
    tb_free_builder(b);
    return path;
}

static const char *names_trace(int index, const char *name, const char *bad)
{
    struct tb b;
    const char *argv[] = {name, bad};
    begin_named(&b, name, name, argv);
    struct cmt_thread th = {78, name};
    cr_assert_eq(cmt_writer_thread(b.w, &th), 0);
    struct cmt_note note = {1, "</script><!-- note"};
    cr_assert_eq(cmt_writer_note(b.w, &note), 0);
    b.tid = 78;
    uint32_t root = tb_frame(&b, 0, "main");
    uint32_t good = tb_frame(&b, root, name), other = tb_frame(&b, root, bad);
    tb_alloc(&b, 0x700000000000, TB_GIB, good);
    tb_alloc(&b, 0x710000000000, 2 * TB_GIB, other);
    return saved_with_oom(&b, good, index);
}

static char *slurp(const char *path, unsigned long *len)
{
    char *s = capture_file(path, len);
    cr_assert_not_null(s, "%s", path);
    return s;
}

/* What a JSON writer must have made of the names: NAME as it is, the bad name with U+FFFD and
 * \u0001, no byte that is not UTF-8 and no raw control byte. */
static void expect_json_names(const char *what, const char *out, int thread, int site)
{
    cr_expect(strstr(out, "\"" NAME) && !strstr(out, "\\u00c3"), "%s: %s", what, out);
    if (site)
        cr_expect(strstr(out, "bad" FFFD "\\u0001"), "%s: the bad name: %s", what, out);
    if (thread)
        cr_expect(strstr(out, "\"" NAME "\""), "%s: %s", what, out);
    cr_expect(!strchr(out, '\xff') && !strchr(out, '\x01'), "%s: raw bytes: %s", what, out);
}

Test(escape, json_writers_keep_utf8_names)
{
    const char *path = names_trace(0, NAME, "bad\xff\x01");
    struct {
        int (*fn)(int, char **);
        const char *argv[8];
        int thread, site;
    } runs[] = {
        {cmt_cmd_dump, {"dump", "--stacks", path, NULL}, 0, 1},
        {cmt_cmd_report, {"report", "--json", path, NULL}, 1, 1},
        {cmt_cmd_oom, {"oom", "--json", path, NULL}, 0, 0},
        {cmt_cmd_export, {"export", "-f", "jsonl", "--table", "processes", path, NULL}, 0, 0},
        {cmt_cmd_export, {"export", "-f", "jsonl", "--table", "sites", path, NULL}, 0, 1},
        {cmt_cmd_export, {"export", "-f", "perfetto", path, NULL}, 1, 1},
        {cmt_cmd_whatif, {"whatif", "--json", path, NULL}, 0, 0},
        {cmt_cmd_report, {"report", "--json", path, path, NULL}, 0, 0},
    };
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        struct captured c = capture_run(runs[i].fn, runs[i].argv);
        char what[64];
        snprintf(what, sizeof what, "%s %s", runs[i].argv[0], runs[i].argv[2]);
        cr_expect_eq(c.status, 0, "%s: %s", what, c.err);
        expect_json_names(what, c.out, runs[i].thread, runs[i].site);
        captured_free(&c);
    }
}

Test(escape, the_html_data_keeps_utf8_names_and_cannot_end_its_script)
{
    const char *path = names_trace(1, NAME, "bad\xff\x01</script>");
    char out[64];
    snprintf(out, sizeof out, "/tmp/cmt_escape_%d.html", (int)getpid());
    const char *argv[] = {"html", "-o", out, path, NULL};
    struct captured c = capture_run(cmt_cmd_html, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    captured_free(&c);
    char *page = slurp(out, NULL);
    unlink(out);
    expect_json_names("html", page, 0, 1);
    cr_expect(strstr(page, "bad" FFFD "\\u0001\\u003c/script>"), "escaped once, for HTML");
    const char *data = strstr(page, "<script id=\"cmt-data\" type=\"application/json\">");
    cr_assert_not_null(data);
    data = strchr(data, '>') + 1;
    const char *end = strstr(data, "</script>\n<script>");
    cr_assert_not_null(end);
    cr_expect_null(memchr(data, '<', (size_t)(end - data)), "no '<' in the data");
    free(page);
}

Test(escape, the_memory_viz_pickle_holds_the_names_as_utf8)
{
    const char *path = names_trace(2, NAME, "bad\xff\x01");
    char out[64];
    snprintf(out, sizeof out, "/tmp/cmt_escape_%d.pickle", (int)getpid());
    const char *argv[] = {"export", "-f", "memory-viz", "-o", out, path, NULL};
    struct captured c = capture_run(cmt_cmd_export, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    captured_free(&c);
    unsigned long n;
    char *pickle = slurp(out, &n);
    unlink(out);
    cr_expect(memmem(pickle, n, NAME, strlen(NAME)), "the name's UTF-8 bytes");
    cr_expect(memmem(pickle, n, "bad" FFFD "\x01", 7), "the bad byte replaced");
    free(pickle);
}

/* ---- csv: formula cells ---- */

/* Host, program, arguments, function and the allocator setting start like formulas; one call
 * has no device (dev -1, a number). */
static const char *formula_trace(int index)
{
    struct tb b;
    const char *argv[] = {"+cmd|' /C calc'!A0", "-x"};
    begin_named(&b, "=HYPERLINK(\"http://x\",\"y\")", "@SUM(1+1)", argv);
    cr_assert_eq(cmt_writer_env(b.w, "PYTORCH_CUDA_ALLOC_CONF", "=1+1"), 0);
    uint32_t s = tb_frame(&b, tb_frame(&b, 0, "main"), "-2+3");
    /* a phase named like a formula: the events table's phase column is text from the trace */
    cr_assert_eq(cmt_writer_range(b.w, &(struct cmt_range){.action = CMT_RA_PUSH,
                                                           .t_ns = ++b.t_ns,
                                                           .tid = b.tid,
                                                           .message = "=1+1 phase"}),
                 0);
    tb_alloc(&b, 0x700000000000, TB_GIB, s);
    uint64_t v[] = {0x7f0000000000, TB_MIB};
    tb_event(&b, TB_HOST, 0, -1, s, CMT_F(PTR) | CMT_F(SIZE), v);
    return saved_with_oom(&b, s, index);
}

static char *table(const char *path, const char *format, const char *name)
{
    const char *argv[] = {"export", "-f", format, "--table", name, path, NULL};
    struct captured c = capture_run(cmt_cmd_export, argv);
    cr_expect_eq(c.status, 0, "%s: %s", name, c.err);
    char *out = c.out;
    free(c.err);
    return out;
}

Test(escape, csv_text_cells_that_start_like_formulas_get_a_quote_mark)
{
    const char *path = formula_trace(3);
    char *processes = table(path, "csv", "processes");
    cr_expect(strstr(processes, "\n4242,\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\","), "%s",
              processes);
    cr_expect(strstr(processes, ",'@SUM(1+1),'+cmd|' /C calc'!A0 -x,'=1+1,"), "%s", processes);
    free(processes);
    char *sites = table(path, "csv", "sites");
    cr_expect(strstr(sites, ",'-2+3,'-2+3 <- main,"), "call_site, site_key: %s", sites);
    cr_expect(strstr(sites, ",'-2+3 <- main\n"), "frames: %s", sites);
    free(sites);
    char *episodes = table(path, "csv", "episodes");
    cr_expect(strstr(episodes, ",'-2+3,'-2+3 <- main\n"), "%s", episodes);
    free(episodes);
    char *events = table(path, "csv", "events");
    cr_expect(strstr(events, ",-1,cuMemAllocHost_v2,"), "numbers stay numbers: %s", events);
    cr_expect(!strstr(events, "'-"), "%s", events);
    cr_expect(strstr(events, ",'=1+1 phase\n"), "phase: %s", events);
    free(events);
    char *jsonl = table(path, "jsonl", "processes");
    cr_expect(strstr(jsonl, "\"exe\":\"@SUM(1+1)\""), "jsonl is not for spreadsheets: %s", jsonl);
    free(jsonl);
}

/* ---- the terminal ---- */

#define ESC_THREAD   \
    "thr\x1b[2J\x9b" \
    "31m"
#define ESC_FUNCTION "fn\x1b]0;owned\x07\xc2\x9b"

/* Every byte a terminal would act on, and what the text must show instead. */
static void expect_terminal_safe(const char *what, const char *out)
{
    cr_expect(!strchr(out, '\x1b') && !strchr(out, '\x07') && !strchr(out, '\x9b'),
              "%s: raw control bytes: %s", what, out);
    cr_expect(!strstr(out, "\xc2\x9b"), "%s: a raw C1 control: %s", what, out);
}

Test(escape, report_shows_escapes_in_thread_and_function_names)
{
    const char *path = names_trace(4, ESC_THREAD, ESC_FUNCTION);
    const char *argv[] = {"report", path, NULL};
    struct captured c = capture_run(cmt_cmd_report, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    expect_terminal_safe("report", c.out);
    expect_terminal_safe("report's stderr", c.err);
    cr_expect(strstr(c.out, "thr\\x1b[2J\\x9b31m"), "the thread: %s", c.out);
    cr_expect(strstr(c.out, "fn\\x1b]0;owned\\x07\\u009b"), "the function: %s", c.out);
    captured_free(&c);
}

Test(escape, whatif_shows_escapes_in_function_names)
{
    const char *path = names_trace(5, ESC_THREAD, ESC_FUNCTION);
    /* the failing request comes from the thread's function: make it the escaped one */
    const char *bad_first = names_trace(6, ESC_FUNCTION, ESC_FUNCTION);
    const char *paths[] = {path, bad_first};
    for (int i = 0; i < 2; i++) {
        const char *argv[] = {"whatif", paths[i], NULL};
        struct captured c = capture_run(cmt_cmd_whatif, argv);
        cr_expect_eq(c.status, 0, "%s", c.err);
        expect_terminal_safe("whatif", c.out);
        expect_terminal_safe("whatif's stderr", c.err);
        if (i == 1)
            cr_expect(strstr(c.out, "from fn\\x1b]0;owned\\x07\\u009b"), "%s", c.out);
        captured_free(&c);
    }
}

/* The allocator's settings as the run wrote them, escapes and all: the self-check quotes them
 * and the model's refusal of them, each once through the terminal rule. */
Test(escape, whatif_self_check_shows_escapes_in_the_run_settings)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    tb_allocator(&b, 1, "\x1b]0;pwn\x07\x1b[2J");
    uint32_t s = tb_frame(&b, 0, "main");
    tb_alloc(&b, 0x700000000000, 2 * TB_MIB, s);
    tb_segment(&b, 0x700000000000, 2 * TB_MIB, 0);
    tb_block(&b, 0x700000000000, 512, 4, s, 0);
    tb_finish(&b, 1);
    const char *path = temp_trace(b.buf.data, b.buf.len, 9);
    tb_free_builder(&b);
    const char *argv[] = {"whatif", path, NULL};
    struct captured c = capture_run(cmt_cmd_whatif, argv);
    expect_terminal_safe("whatif", c.out);
    expect_terminal_safe("whatif's stderr", c.err);
    cr_expect(strstr(c.out, "(\\x1b]0;pwn\\x07\\x1b[2J)"), "the settings once escaped: %s", c.out);
    captured_free(&c);
}

/* An OOM through an API whose name holds escapes, from ESC_FUNCTION on thread ESC_THREAD. */
static const char *escaped_api_trace(int index)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    struct cmt_api api = {TB_API_COUNT, CMT_OP_ALLOC, "cuMemAlloc\x1b]0;owned\x07"};
    cr_assert_eq(cmt_writer_api(b.w, &api), 0);
    struct cmt_thread th = {78, ESC_THREAD};
    cr_assert_eq(cmt_writer_thread(b.w, &th), 0);
    b.tid = 78;
    uint32_t s = tb_frame(&b, tb_frame(&b, 0, "main"), ESC_FUNCTION);
    tb_alloc(&b, 0x700000000000, TB_GIB, s);
    uint64_t v[] = {30 * TB_GIB};
    tb_event(&b, TB_API_COUNT, 2, 0, s, CMT_F(SIZE), v);
    return saved_with_oom(&b, s, index);
}

Test(escape, other_text_commands_show_escapes)
{
    const char *path = escaped_api_trace(7);
    char html[64];
    snprintf(html, sizeof html, "/tmp/cmt_escape_%d_t.html", (int)getpid());
    struct {
        int (*fn)(int, char **);
        const char *argv[6];
        int shows; /* prints a string from the trace (timeline and the fleet view print none) */
    } runs[] = {{cmt_cmd_oom, {"oom", path, NULL}, 1},
                {cmt_cmd_timeline, {"timeline", path, NULL}, 0},
                {cmt_cmd_diff, {"diff", path, path, NULL}, 1},
                {cmt_cmd_html, {"html", "-o", html, path, NULL}, 1},
                {cmt_cmd_report, {"report", path, path, NULL}, 0}};
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        struct captured c = capture_run(runs[i].fn, runs[i].argv);
        expect_terminal_safe(runs[i].argv[0], c.out);
        expect_terminal_safe(runs[i].argv[0], c.err);
        if (runs[i].shows)
            cr_expect(strstr(c.out, "\\x1b"), "%s shows it: %s", runs[i].argv[0], c.out);
        captured_free(&c);
    }
    unlink(html);
}
