/* Tests of `cumemtrace html` (cmd_html.c, html_page.c): the page is self-contained, holds the
 * run's data, stays well-formed whatever the trace's strings, and the usage errors. The page's
 * drawing is tested in a browser (tests/tools/cli/html_browser.sh). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "commands.h"
#include "alloc_fixture.h"
#include "trace_builder.h"

/* A 24 GiB device: 6 GiB from `function`, samples saying 4 GiB are free (14 GiB held by
 * others), then a 12 GiB request that fails. */
static const char *oom_trace(int index, const char *function)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t s = tb_frame(&b, tb_frame(&b, 0, "main"), function);
    tb_alloc(&b, 0x100000000, 6 * TB_GIB, s);
    tb_meminfo(&b, CMT_MEMINFO_BASELINE, 4 * TB_GIB, 24 * TB_GIB, b.seq);
    uint64_t seq = tb_alloc_fail(&b, 12 * TB_GIB, s);
    tb_meminfo(&b, CMT_MEMINFO_OOM, 4 * TB_GIB, 24 * TB_GIB, seq);
    tb_finish(&b, 1);
    const char *path = temp_trace(b.buf.data, b.buf.len, index);
    tb_free_builder(&b);
    return path;
}

static char *slurp(const char *path)
{
    char *s = capture_file(path, NULL);
    cr_assert_not_null(s, "%s", path);
    return s;
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (; (s = strstr(s, what)); s += strlen(what))
        n++;
    return n;
}

static const char *out_path(char *buf, size_t size)
{
    snprintf(buf, size, "/tmp/cmt-test-html-%d.html", (int)getpid());
    return buf;
}

Test(html_cmd, writes_one_self_contained_page_with_the_runs_data)
{
    char out[128];
    const char *trace = oom_trace(0, "train_step");
    const char *argv[] = {"html", "-o", out_path(out, sizeof out), trace, NULL};
    struct captured c = capture_run(cmt_cmd_html, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "Out of memory") && strstr(c.out, "wrote "), "%s", c.out);
    char *page = slurp(out);
    cr_expect_eq(strncmp(page, "<!DOCTYPE html>", 15), 0);
    cr_expect(!strstr(page, "/*@CMT_DATA@*/"), "the marker is replaced");
    cr_expect(!strstr(page, "http://") && !strstr(page, "https://") && !strstr(page, " src="),
              "nothing is fetched");
    cr_expect(strstr(page, "\"schema\":1"));
    cr_expect(strstr(page, "\"peak_bytes\":6442450944"), "the peak");
    cr_expect(strstr(page, "\"verdict\":\"held_by_others\""), "the episode's verdict");
    cr_expect(strstr(page, "\"others\":[15032385536"), "14 GiB held by others, from the samples");
    cr_expect(strstr(page, "\"name\":\"train_step\""), "the call site's group");
    cr_expect(strstr(page, "\"total_bytes\":25769803776"), "the capacity");
    cr_expect(!strstr(page, "\"diff\""), "one run: no diff");
    free(page);
    remove(out);
    captured_free(&c);
}

Test(html_cmd, a_traces_strings_cannot_end_the_data_script)
{
    char out[128];
    const char *trace = oom_trace(0, "evil</script><script>alert(1)</script>");
    const char *argv[] = {"html", "-o", out_path(out, sizeof out), trace, NULL};
    struct captured c = capture_run(cmt_cmd_html, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    char *page = slurp(out);
    int scripts = count(page, "<script");
    cr_expect_eq(count(page, "</script>"), scripts, "only the page's own scripts close");
    cr_expect(strstr(page, "evil\\u003c/script>"), "the name is kept, escaped");
    free(page);
    remove(out);
    captured_free(&c);
}

Test(html_cmd, two_runs_carry_the_diff)
{
    char out[128];
    const char *a = oom_trace(0, "before"), *b = oom_trace(1, "after");
    const char *argv[] = {"html", "-o", out_path(out, sizeof out), a, b, NULL};
    struct captured c = capture_run(cmt_cmd_html, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    char *page = slurp(out);
    cr_expect_eq(count(page, "\"summary\":"), 2, "two runs");
    cr_expect(strstr(page, "\"diff\":{\"sites\":["), "the diff");
    cr_expect(strstr(page, "\"name\":\"after"), "B's call site");
    free(page);
    remove(out);
    captured_free(&c);
}

Test(html_cmd, usage_errors_say_what_is_wrong)
{
    const char *none[] = {"html", NULL};
    struct captured c = capture_run(cmt_cmd_html, none);
    cr_expect_eq(c.status, 2);
    cr_expect(strstr(c.err, "missing trace FILE"), "%s", c.err);
    captured_free(&c);
    const char *three[] = {"html",
                           "-o",
                           "/tmp/cmt-never.html",
                           "/nonexistent/a.cmt",
                           "/nonexistent/b.cmt",
                           "/nonexistent/c.cmt",
                           NULL};
    c = capture_run(cmt_cmd_html, three); /* three traces: the ranks view, of none here */
    cr_expect_eq(c.status, 1);
    cr_expect(strstr(c.err, "/nonexistent/b.cmt: ") && strstr(c.err, "none of the 3 traces"), "%s",
              c.err);
    cr_expect(access("/tmp/cmt-never.html", F_OK) != 0, "no page");
    captured_free(&c);
    const char *both[] = {"html", "--whatif", "--no-whatif", "a.cmt", NULL};
    c = capture_run(cmt_cmd_html, both);
    cr_expect_eq(c.status, 2);
    cr_expect(strstr(c.err, "conflict"), "%s", c.err);
    captured_free(&c);
    const char *points[] = {"html", "--points", "1", "a.cmt", NULL};
    c = capture_run(cmt_cmd_html, points);
    cr_expect_eq(c.status, 2);
    captured_free(&c);
    const char *missing[] = {"html", "-o", "/tmp/cmt-never.html", "/nonexistent/x.cmt", NULL};
    c = capture_run(cmt_cmd_html, missing);
    cr_expect_eq(c.status, 1);
    cr_expect(strstr(c.err, "/nonexistent/x.cmt"), "%s", c.err);
    cr_expect(access("/tmp/cmt-never.html", F_OK) != 0, "no page for a trace that cannot be read");
    captured_free(&c);
}

Test(html_cmd, the_default_output_is_the_trace_name_with_html)
{
    const char *trace = oom_trace(2, "step");
    char expect[512];
    snprintf(expect, sizeof expect, "%s", trace);
    char *dot = strrchr(expect, '.');
    if (dot && strcmp(dot, ".cmt") == 0)
        *dot = 0;
    strcat(expect, ".html");
    const char *argv[] = {"html", trace, NULL};
    struct captured c = capture_run(cmt_cmd_html, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(access(expect, F_OK) == 0, "%s: %s", expect, c.out);
    remove(expect);
    captured_free(&c);
}

Test(html_cmd, one_call_site_from_two_callers_gets_two_names)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t root = tb_frame(&b, 0, "main");
    uint32_t a = tb_frame(&b, tb_frame(&b, root, "encoder"), "make_buffer");
    uint32_t c = tb_frame(&b, tb_frame(&b, root, "decoder"), "make_buffer");
    tb_alloc(&b, 0x100000000, 2 * TB_GIB, a);
    tb_alloc(&b, 0x200000000, TB_GIB, c);
    tb_finish(&b, 1);
    const char *trace = temp_trace(b.buf.data, b.buf.len, 0);
    tb_free_builder(&b);
    char out[128];
    const char *argv[] = {"html", "-o", out_path(out, sizeof out), trace, NULL};
    struct captured cap = capture_run(cmt_cmd_html, argv);
    cr_expect_eq(cap.status, 0, "%s", cap.err);
    char *page = slurp(out);
    cr_expect(strstr(page, "\"name\":\"make_buffer \\u003c- encoder\""), "%.2000s", page);
    cr_expect(strstr(page, "\"name\":\"make_buffer \\u003c- decoder\""));
    free(page);
    remove(out);
    captured_free(&cap);
}

/* A trace of a 24 GiB device with caching allocator 1 (settings conf). @return the stack
 * "main <- forward". */
static uint32_t allocator_begin(struct tb *b, const char *conf)
{
    tb_begin(b, 24 * TB_GIB, 24 * TB_GIB);
    tb_allocator(b, 1, conf);
    return tb_frame(b, tb_frame(b, 0, "main"), "forward");
}

/* Ends the trace b and saves it. @return its path. */
static const char *allocator_end(struct tb *b, int index)
{
    tb_finish(b, 1);
    const char *path = temp_trace(b->buf.data, b->buf.len, index);
    tb_free_builder(b);
    return path;
}

/* The page `html` writes of `trace` (at out). */
static char *html_page(const char *trace, char *out, size_t size)
{
    const char *argv[] = {"html", "-o", out_path(out, size), trace, NULL};
    struct captured c = capture_run(cmt_cmd_html, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    captured_free(&c);
    return slurp(out);
}

/* A caching allocator's records: two 20 MiB segments, a block in each, the first freed, then
 * the allocator's OOM for 30 MiB (allocator_view's fragmentation case). */
static const char *allocator_trace(int index)
{
    struct tb b;
    uint32_t s = allocator_begin(&b, "max_split_size_mb:16");
    uint64_t A = 0x7f0000000000ull, B = 0x7f0010000000ull, MIB = 1ull << 20;
    tb_alloc(&b, A, 20 * MIB, s); /* the segments' driver allocations */
    tb_segment(&b, A, 20 * MIB, 0);
    tb_alloc(&b, B, 20 * MIB, s);
    tb_segment(&b, B, 20 * MIB, 0);
    tb_block(&b, A, 4 * MIB, 4 * MIB - 100, s, 0);
    tb_block(&b, B + 2 * MIB, 2 * MIB, 2 * MIB, s, 0);
    tb_block(&b, A + 4 * MIB, 8 * MIB, 8 * MIB, s, 0);
    tb_block_free(&b, A + 4 * MIB, 8 * MIB);
    uint64_t v[] = {30 * MIB};
    tb_alloc_event(&b, CMT_AA_OOM, 0, s, CMT_AF(SIZE), v);
    return allocator_end(&b, index);
}

Test(html_cmd, allocator_records_give_lines_and_the_view_at_the_oom)
{
    char out[128];
    char *page = html_page(allocator_trace(0), out, sizeof out);
    cr_expect(strstr(page, "\"lines\":[{\"name\":\"allocated\""), "the allocated line");
    cr_expect(strstr(page, "{\"name\":\"reserved\",\"t\":["), "the reserved line");
    cr_expect(strstr(page, "\"v\":[20971520,41943040"), "reserved steps by segment");
    cr_expect(strstr(page, "\"at\":\"oom\""), "a view at the OOM");
    cr_expect(strstr(page, "\"oom\":0"), "... that names its episode");
    cr_expect(strstr(page, "\"segment_count\":2,\"block_count\":2"), "two segments, two blocks");
    /* segment A: the block, the 16 MiB freed range (oversize with max_split_size_mb:16);
     * segment B: a 2 MiB split gap, the block, the 16 MiB rest */
    cr_expect(strstr(page, "\"blocks\":[[0,4194304,4194204,\"active\",0],"
                           "[4194304,16777216,0,\"oversize\",-1]]"),
              "segment A's blocks");
    cr_expect(strstr(page, "[[0,2097152,0,\"split\",-1],[2097152,2097152,2097152,\"active\",0]"),
              "segment B's blocks");
    cr_expect(strstr(page, "\"stacks\":[[\"forward\""), "the blocks' stack");
    free(page);
    remove(out);
}

/* Allocator records alone whose peaks come at different times: a 20 MiB block in a 20 MiB
 * segment (the allocated peak, at 2 us), freed, then a second segment (the reserved peak,
 * 40 MiB at 5 us) and a 10 MiB block in it (at 6 us). */
static const char *two_peaks_trace(int index)
{
    struct tb b;
    uint32_t s = allocator_begin(&b, "");
    uint64_t A = 0x7f0000000000ull, B = 0x7f0010000000ull;
    tb_segment(&b, A, 20 * TB_MIB, 0);
    tb_block(&b, A, 20 * TB_MIB, 20 * TB_MIB, s, 0);
    tb_block_free(&b, A, 20 * TB_MIB);
    tb_segment(&b, B, 20 * TB_MIB, 0);
    tb_block(&b, B, 10 * TB_MIB, 10 * TB_MIB, s, 0);
    return allocator_end(&b, index);
}

Test(html_cmd, each_allocator_peak_has_its_own_time_in_the_line_and_the_view)
{
    char out[128];
    char *page = html_page(two_peaks_trace(0), out, sizeof out);
    cr_expect(strstr(page, "\"line\":\"allocator peak 20.00 MiB allocated at 2.00 us, 40.00 MiB "
                           "reserved at 5.00 us, 10.00 MiB allocated at the end (no driver calls "
                           "recorded)\""),
              "the run's line gives each peak its time");
    /* the view at the reserved peak holds the block placed after the segment, but is dated
     * when the peak was reached; it is the end's state, so no view at the end follows */
    cr_expect(strstr(page, "\"at\":\"peak\",\"t_ns\":5000,"), "the view at the reserved peak");
    cr_expect(strstr(page, "\"segment_count\":2,\"block_count\":1"), "...with the block after it");
    cr_expect(!strstr(page, "\"at\":\"end\""), "no second view of the same state");
    free(page);
    remove(out);
}

Test(html_cmd, the_write_ups_run_reads_as_oom_and_whatif_read_it)
{
    /* the write-up's failure as the shim records it: the summary is `oom`'s sentence (the
     * cache is fragmented), and the what-if runs on the allocator's block events */
    struct tb b;
    wu_fragmentation(&b, 1, "");
    const char *trace = temp_trace(b.buf.data, b.buf.len, 0);
    tb_free_builder(&b);
    char out[128];
    const char *argv[] = {"html", "-o", out_path(out, sizeof out), trace, NULL};
    struct captured c = capture_run(cmt_cmd_html, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    char *page = slurp(out);
    cr_expect(strstr(page, "reserved but unallocated, more than the 6.18 GiB request"),
              "the allocator's fragmentation sentence");
    cr_expect(!strstr(page, "enough for it"), "not the driver-level free-memory sentence");
    cr_expect(strstr(page, "\"whatif\":{\"available\":true"), "a what-if from the block events");
    cr_expect(strstr(page, "\"conf\":\"max_split_size_mb:6144\",\"oom\":false"),
              "the write-up's fix replays without OOM");
    free(page);
    remove(out);
    captured_free(&c);
}

Test(html_cmd, without_allocator_records_there_is_no_view)
{
    char out[128];
    const char *argv[] = {"html", "-o", out_path(out, sizeof out), oom_trace(0, "f"), NULL};
    struct captured c = capture_run(cmt_cmd_html, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    char *page = slurp(out);
    cr_expect(strstr(page, "\"allocator\":null"));
    cr_expect(strstr(page, "\"lines\":[]"));
    free(page);
    remove(out);
    captured_free(&c);
}

/* The rows of a what-if as "conf=peak_reserved/oom;" in order: the rows lie between `from` and
 * `to`, `key` names each row's setting ("conf" in the page, "setting" in whatif --json), its
 * own figures follow it. */
static void whatif_rows(const char *json, const char *from, const char *to, const char *key,
                        char *out, size_t len)
{
    char pattern[32];
    snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
    size_t used = 0;
    out[0] = 0;
    const char *start = strstr(json, from), *stop = start ? strstr(start, to) : NULL;
    cr_assert(start && stop, "no rows between %s and %s", from, to);
    for (const char *p = strstr(start, pattern); p && p < stop; p = strstr(p, pattern)) {
        p += strlen(pattern);
        const char *end = strchr(p, '"');
        const char *oom = strstr(end, "\"oom\":"), *peak = strstr(end, "\"peak_reserved_bytes\":");
        cr_assert(end && oom && peak, "a row without its figures");
        used += (size_t)snprintf(out + used, len - used, "%.*s=%llu/%c;", (int)(end - p), p,
                                 strtoull(peak + 22, NULL, 10), oom[6]);
        cr_assert_lt(used, len);
    }
}

/* `text` with every run of white space as one space. */
static void squeeze(const char *text, char *out, size_t len)
{
    size_t n = 0;
    for (; *text && n + 1 < len; text++)
        if (*text != ' ' && *text != '\n')
            out[n++] = *text;
        else if (n && out[n - 1] != ' ')
            out[n++] = ' ';
    out[n] = 0;
}

/* A trace whose device figures say nothing (0 free of 0): 1 GiB, then 3 GiB, then 1 GiB. */
static const char *no_capacity_trace(int index)
{
    struct tb b;
    tb_begin(&b, 0, 0);
    uint32_t s = tb_frame(&b, tb_frame(&b, 0, "main"), "step");
    tb_alloc(&b, 0x100000000, 1 * TB_GIB, s);
    tb_free(&b, 0x100000000);
    tb_alloc(&b, 0x200000000, 3 * TB_GIB, s);
    tb_alloc(&b, 0x400000000, 1 * TB_GIB, s);
    tb_finish(&b, 1);
    const char *path = temp_trace(b.buf.data, b.buf.len, index);
    tb_free_builder(&b);
    return path;
}

Test(html_cmd, the_what_if_has_whatifs_rows_capacity_and_wording)
{
    /* one capacity choice: a trace whose failure other processes caused (what it had then),
     * one that does not say what was free (whatif then replays without a limit, "capacity
     * unknown"), and --capacity given to both commands */
    const char *traces[] = {oom_trace(0, "f"), no_capacity_trace(1), no_capacity_trace(2)};
    const char *sources[] = {"oom", "unknown", "option"};
    for (int t = 0; t < 3; t++) {
        char out[128];
        const char *given = t == 2 ? "--capacity" : "--points", *value = t == 2 ? "2GiB" : "100";
        const char *html[] = {"html",    "-o", out_path(out, sizeof out), given, value,
                              traces[t], NULL};
        struct captured h = capture_run(cmt_cmd_html, html);
        cr_assert_eq(h.status, 0, "%s", h.err);
        const char *json[] = {"whatif", "--json", traces[t], t == 2 ? given : NULL, value, NULL};
        struct captured w = capture_run(cmt_cmd_whatif, json);
        cr_assert_eq(w.status, 0, "%s", w.err);
        const char *text[] = {"whatif", traces[t], t == 2 ? given : NULL, value, NULL};
        struct captured x = capture_run(cmt_cmd_whatif, text);
        cr_assert_eq(x.status, 0, "%s", x.err);
        char *page = slurp(out);
        cr_expect(strstr(page, "\"whatif\":{\"available\":true"), "%s: a what-if", sources[t]);

        char want[4096], got[4096];
        whatif_rows(w.out, "\"results\":[", "\"recommendation\":", "setting", want, sizeof want);
        whatif_rows(page, "\"whatif\":{", "]}", "conf", got, sizeof got);
        cr_expect(want[0], "whatif has rows");
        cr_expect_str_eq(got, want, "%s: the page's rows are whatif's", sources[t]);
        char source[64];
        snprintf(source, sizeof source, "\"capacity_source\":\"%s\"", sources[t]);
        cr_expect(strstr(w.out, source), "%s", w.out);
        cr_expect(strstr(page, source), "%s: the page's capacity source", sources[t]);
        const char *wcap = strstr(w.out, "\"capacity_bytes\":");
        const char *hcap = strstr(strstr(page, "\"whatif\":{"), "\"capacity_bytes\":");
        cr_assert(wcap && hcap);
        cr_expect_eq(strtoull(hcap + 17, NULL, 10), strtoull(wcap + 17, NULL, 10),
                     "%s: the same capacity", sources[t]);

        /* the capacity sentence: whatif's text line (wrapped), the page's capacity_text */
        const char *line = strstr(x.out, "  capacity  ");
        const char *ctext = strstr(page, "\"capacity_text\":\"");
        cr_assert(line && ctext, "%s", x.out);
        char sentence[1024], page_sentence[1024];
        const char *stop = strstr(line, "\n  replayed");
        cr_assert(stop);
        snprintf(sentence, sizeof sentence, "%.*s", (int)(stop - line - 12), line + 12);
        squeeze(sentence, sentence, sizeof sentence);
        ctext += 17;
        snprintf(page_sentence, sizeof page_sentence, "%.*s", (int)(strchr(ctext, '"') - ctext),
                 ctext);
        cr_expect_str_eq(page_sentence, sentence, "%s: the same capacity sentence", sources[t]);
        if (t == 1) {
            cr_expect(strstr(page_sentence, "unknown: the trace does not say"), "%s", page);
            cr_expect(strstr(page, "reserves the least"), "the page's advice without capacity");
        }
        free(page);
        remove(out);
        captured_free(&h);
        captured_free(&w);
        captured_free(&x);
    }
}

/* Moves a test trace to dir/name. */
static void move_into(const char *trace, const char *dir, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_eq(rename(trace, path), 0, "%s", path);
}

/* A directory of ranks: a.cmt 1 GiB without failing, b.cmt oom_trace's 6 GiB and its failure,
 * c.cmt the allocator's records (reserved 40 MiB) and its OOM. */
static const char *ranks_dir(char *dir, size_t size)
{
    snprintf(dir, size, "/tmp/cmt-test-html-ranks-%d", (int)getpid());
    mkdir(dir, 0700);
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    tb_alloc(&b, 0x100000000, TB_GIB, tb_stack(&b, "main", 1));
    tb_finish(&b, 1);
    move_into(temp_trace(b.buf.data, b.buf.len, 5), dir, "a.cmt");
    tb_free_builder(&b);
    move_into(oom_trace(6, "step"), dir, "b.cmt");
    move_into(allocator_trace(7), dir, "c.cmt");
    return dir;
}

static void remove_ranks_dir(const char *dir)
{
    char path[256];
    for (const char *n = "abc"; *n; n++) {
        snprintf(path, sizeof path, "%s/%c.cmt", dir, *n);
        remove(path);
    }
    rmdir(dir);
}

Test(html_cmd, a_directory_of_ranks_draws_every_rank_and_the_failing_ranks_page)
{
    char dir[128], out[160];
    ranks_dir(dir, sizeof dir);
    const char *argv[] = {"html", dir, NULL}; /* the default page: DIR.html */
    struct captured c = capture_run(cmt_cmd_html, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "ranks: 3 traces") && strstr(c.out, "b.cmt (first"), "%s", c.out);
    snprintf(out, sizeof out, "%s.html", dir);
    char *page = slurp(out);
    cr_expect(strstr(page, "\"ranks\":{\"aligned\":"), "the ranks view's data");
    cr_expect(strstr(page, "\"shown\":1,\"shown_why\":\"first"), "b, the one that failed");
    cr_expect_eq(count(page, "\"offset_ns\":"), 3, "one line per rank");
    cr_expect_eq(count(page, "\"summary\":"), 1, "one rank's full page");
    cr_expect(strstr(page, "\"file\":\"") && strstr(page, "/b.cmt\",\"summary\":\"Out of memory"),
              "the full page is b's");
    /* a and b: the driver's live bytes, peaks exact; c: the allocator's reserved 40 MiB */
    cr_expect(strstr(page, "\"peak_bytes\":1073741824,\"peak_t_ns\":"), "a's peak");
    cr_expect(strstr(page, "\"peak_bytes\":6442450944,\"peak_t_ns\":"), "b's peak");
    cr_expect(strstr(page, "\"peak_bytes\":41943040,\"peak_t_ns\":"), "c's reserved peak");
    cr_expect_eq(count(page, "\"source\":\"driver\""), 2, "a and b");
    cr_expect(strstr(page, "\"source\":\"allocator\",\"dev\":0,\"lines\":[{\"name\":\"reserved\""),
              "c's reserved line, then its allocated one");
    cr_expect(strstr(page, "\"ooms\":[{\"t_ns\":") &&
                  strstr(page, "\"verdict\":\"held_by_others\",\"request_bytes\":12884901888}"),
              "b's episode as oom gives it");
    cr_expect(strstr(page, "\"verdict\":\"fragmentation\""), "c's allocator OOM, as oom finds it");
    free(page);
    remove(out);
    captured_free(&c);
    remove_ranks_dir(dir);
}

Test(html_cmd, three_traces_are_ranks_and_two_stay_the_diff)
{
    char dir[128], out[128], a[256], b[256], cc[256];
    ranks_dir(dir, sizeof dir);
    snprintf(a, sizeof a, "%s/a.cmt", dir);
    snprintf(b, sizeof b, "%s/b.cmt", dir);
    snprintf(cc, sizeof cc, "%s/c.cmt", dir);
    const char *three[] = {"html", "-o", out_path(out, sizeof out), cc, a, b, NULL};
    struct captured c = capture_run(cmt_cmd_html, three);
    cr_expect_eq(c.status, 0, "%s", c.err);
    char *page = slurp(out);
    cr_expect_eq(count(page, "\"offset_ns\":"), 3, "one line per rank");
    cr_expect(!strstr(page, "\"diff\""), "no diff");
    free(page);
    captured_free(&c);
    const char *two[] = {"html", "-o", out, a, b, NULL};
    c = capture_run(cmt_cmd_html, two);
    cr_expect_eq(c.status, 0, "%s", c.err);
    page = slurp(out);
    cr_expect(strstr(page, "\"diff\":{") && !strstr(page, "\"ranks\":{"), "two runs: the diff");
    free(page);
    remove(out);
    captured_free(&c);
    remove_ranks_dir(dir);
}

#define MS UINT64_C(1000000)

/* Rank r of a job on node-a started at wall + start, holding peak from 1 ms to 10 ms; fails at
 * fail_t (its own clock) when set; in dir/name. (The builder adds 1 us to each event's time.) */
static void job_rank(const char *dir, const char *name, int32_t rank, uint64_t start, uint64_t peak,
                     uint64_t fail_t)
{
    static const char *argv[] = {"python", "train.py"};
    struct cmt_process p = {.pid = 300 + (uint64_t)rank + (name[0] == 'd' ? 10 : 0),
                            .ppid = 1,
                            .start_wall_ns = UINT64_C(1700000000000000000) + start,
                            .start_mono_ns = 1000 + start,
                            .hostname = "node-a",
                            .exe = "/usr/bin/python3",
                            .argc = 2,
                            .argv = argv,
                            .rank = rank,
                            .local_rank = rank,
                            .world_size = 3,
                            .job_id = "job-7"};
    struct tb b;
    tb_begin_process(&b, &p, 16 * TB_GIB, 16 * TB_GIB);
    tb_hold(&b, peak, fail_t);
    tb_finish(&b, 1);
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_eq(tb_save(&b, path), 0);
    tb_free_builder(&b);
}

Test(html_cmd, directories_that_hold_one_trace_between_them_give_its_page)
{
    char dir[128], out[128], empty1[160], empty2[160];
    ranks_dir(dir, sizeof dir);
    char a[256], b[256];
    snprintf(a, sizeof a, "%s/a.cmt", dir);
    snprintf(b, sizeof b, "%s/b.cmt", dir);
    remove(a);
    remove(b); /* dir holds c.cmt alone */
    snprintf(empty1, sizeof empty1, "%s-e1", dir);
    snprintf(empty2, sizeof empty2, "%s-e2", dir);
    mkdir(empty1, 0700);
    mkdir(empty2, 0700);
    const char *argv[] = {"html", "-o", out_path(out, sizeof out), dir, empty1, empty2, NULL};
    struct captured c = capture_run(cmt_cmd_html, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    char *page = slurp(out);
    cr_expect(page && strstr(page, "/c.cmt\",\"summary\":"), "c's page");
    cr_expect(page && !strstr(page, "\"ranks\":{"), "one trace: no ranks view");
    free(page);
    remove(out);
    captured_free(&c);
    rmdir(empty1);
    rmdir(empty2);
    remove_ranks_dir(dir);
}

Test(html_cmd, a_jobs_ranks_share_the_wall_clock_in_rank_order)
{
    char dir[128], out[128], path[256];
    snprintf(dir, sizeof dir, "/tmp/cmt-test-html-job-%d", (int)getpid());
    mkdir(dir, 0700);
    /* names against the ranks' order; rank 2 starts 2 ms late and fails at 4 ms (6 ms on the
     * wall clock), rank 1 at 5 ms: rank 1 failed first */
    job_rank(dir, "a.cmt", 2, 2 * MS, 3 * TB_GIB, 4 * MS);
    job_rank(dir, "b.cmt", 1, 0, 2 * TB_GIB, 5 * MS);
    job_rank(dir, "c.cmt", 0, 0, TB_GIB, 0);
    job_rank(dir, "d.cmt", 0, 3 * MS, TB_GIB, 0); /* rank 0 again (pid 310): a restart */
    const char *argv[] = {"html", "-o", out_path(out, sizeof out), dir, NULL};
    struct captured c = capture_run(cmt_cmd_html, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "on the wall clock") && strstr(c.out, "/b.cmt (first to fail)"), "%s",
              c.out);
    char *page = slurp(out);
    cr_expect(
        strstr(page, "\"ranks\":{\"aligned\":true,\"shown\":2,\"shown_why\":\"first to fail\""),
        "rank 1's page");
    const char *r0 = strstr(page, "\"label\":\"rank 0 (pid 300)\"");
    const char *r1 = strstr(page, "\"label\":\"rank 1\"");
    cr_expect(strstr(page, "\"label\":\"rank 0 (pid 310)\""), "the restart told apart");
    const char *r2 = strstr(page,
                            "\"label\":\"rank 2\",\"rank\":2,\"host\":\"node-a\",\"pid\":302");
    cr_expect(r0 && r1 && r2 && r0 < r1 && r1 < r2, "by rank, not by file name");
    cr_expect(r2 && strstr(r2, "\"offset_ns\":2000000,\"duration_ns\":10002000,"
                               "\"peak_bytes\":3221225472,\"peak_t_ns\":1001000"),
              "rank 2 two milliseconds after the others, its peak on its own clock");
    cr_expect(r2 && strstr(r2, "\"failure\":\"out_of_memory\""), "rank 2 failed too");
    cr_expect(r1 && strstr(r1, "\"ooms\":[{\"t_ns\":5001000,\"dev\":0,"), "rank 1's OOM at 5 ms");
    free(page);
    remove(out);
    captured_free(&c);
    for (const char *n = "abcd"; *n; n++) {
        snprintf(path, sizeof path, "%s/%c.cmt", dir, *n);
        remove(path);
    }
    rmdir(dir);
}
