/* The commands on the hostile files of issue 24 (tests/fuzz/hostile_traces.c): the lines a user
 * reads and the exit status. Repeated records are folded and counted; a repeated or moved
 * chunk is named and read once, in order; damage that leaves no event is an error; the
 * reader's own failed allocation is "out of memory" with exit 1; symbolize names the damage. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "commands.h"
#include "hostile_traces.h"

#include "malloc_failure.h"

static const char *saved(struct cmt_membuf *b, size_t len, int index)
{
    const char *path = temp_trace(b->data, len, index);
    cmt_membuf_free(b);
    return path;
}

static size_t lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

Test(hostile_files, repeated_records_are_folded_and_counted)
{
    struct cmt_membuf b;
    uint64_t repeats;
    hostile_repeated(&b, 3000, &repeats);
    const char *path = saved(&b, b.len, 0);
    char want[128];
    snprintf(want, sizeof want, "%llu repeated THREAD, NOTE and ENV records folded",
             (unsigned long long)repeats);
    const char *report[] = {"report", path, NULL};
    struct captured c = capture_run(cmt_cmd_report, report);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.err, want), "%s", c.err);
    cr_expect_eq(lines(c.err), 1, "one warning: %s", c.err);
    captured_free(&c);
    const char *dump[] = {"dump", "--all", path, NULL};
    c = capture_run(cmt_cmd_dump, dump);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.err, want), "%s", c.err);
    size_t notes = 0;
    for (const char *p = c.out; (p = strstr(p, "\"text\"")); p++)
        notes++;
    cr_expect_eq(notes, 1, "the NOTE once");
    captured_free(&c);
}

Test(hostile_files, a_repeated_chunk_is_named_and_read_once)
{
    struct cmt_membuf b;
    hostile_chunked(&b, 4);
    hostile_duplicate_chunk(&b, 1);
    const char *path = saved(&b, b.len, 0);
    const char *dump[] = {"dump", path, NULL};
    struct captured c = capture_run(cmt_cmd_dump, dump);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect_eq(lines(c.out), 4 * HOSTILE_CHUNK_EVENTS, "each event once");
    cr_expect(strstr(c.err, "warning"), "%s", c.err);
    cr_expect(strstr(c.err, "1 chunk repeating an earlier one byte for byte left out"), "%s",
              c.err);
    cr_expect_eq(lines(c.err), 1, "%s", c.err);
    captured_free(&c);
}

Test(hostile_files, moved_chunks_are_named_and_read_in_seq_order)
{
    struct cmt_membuf b;
    hostile_chunked(&b, 4);
    hostile_swap_chunks(&b, 0, 3); /* the header records and the first events last */
    const char *path = saved(&b, b.len, 0);
    const char *report[] = {"report", "--json", path, NULL};
    struct captured c = capture_run(cmt_cmd_report, report);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.err, "chunks out of seq order read in seq order"), "%s", c.err);
    /* in file order the frees of the moved chunk's blocks come before their allocations */
    cr_expect(strstr(c.out, "\"alloc_calls\":400"), "%s", c.out);
    cr_expect(strstr(c.out, "\"unknown_frees\":0"), "%s", c.out);
    captured_free(&c);
}

Test(hostile_files, damage_before_any_event_is_an_error)
{
    struct cmt_membuf b;
    hostile_chunked(&b, 1);
    const char *path = saved(&b, 16 + 16 + 40, 0);
    int (*fns[])(int, char **) = {cmt_cmd_report, cmt_cmd_oom, cmt_cmd_timeline, cmt_cmd_dump};
    const char *names[] = {"report", "oom", "timeline", "dump"};
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
        const char *argv[] = {names[i], path, NULL};
        struct captured c = capture_run(fns[i], argv);
        cr_expect_eq(c.status, 1, "%s: %s", names[i], c.err);
        cr_expect(strstr(c.err, "trace is truncated at byte 16 (chunk cut short); no event "
                                "before it\n"),
                  "%s: %s", names[i], c.err);
        cr_expect_eq(lines(c.err), 1, "%s: %s", names[i], c.err);
        captured_free(&c);
    }
}

Test(hostile_files, a_relabelled_major_is_refused_not_empty)
{
    struct cmt_membuf b;
    hostile_chunked(&b, 2);
    hostile_relabel(&b, 2);
    const char *path = saved(&b, b.len, 0);
    const char *report[] = {"report", path, NULL};
    struct captured c = capture_run(cmt_cmd_report, report);
    cr_expect_eq(c.status, 1, "%s", c.err);
    cr_expect(strstr(c.err, "event blocks of major 3 in a file that says an older major"), "%s",
              c.err);
    captured_free(&c);
}

Test(hostile_files, symbolize_names_the_damage_of_a_cut_trace)
{
    struct cmt_membuf b;
    hostile_chunked(&b, 1);
    const char *path = saved(&b, 16 + 16 + 40, 0);
    const char *argv[] = {"symbolize", path, NULL};
    struct captured c = capture_run(cmt_cmd_symbolize, argv);
    cr_expect_eq(c.status, 1, "%s", c.err);
    cr_expect_null(strstr(c.err, ": ;"), "an empty reason: %s", c.err);
    cr_expect(strstr(c.err, "trace is truncated at byte 16 (chunk cut short); not symbolized"),
              "%s", c.err);
    captured_free(&c);
}

Test(hostile_files, the_readers_failed_allocation_is_out_of_memory_exit_1)
{
#ifdef CMT_TEST_NO_MALLOC_HOOK
    cr_skip_test("the sanitizer owns malloc: no failure can be injected");
#else
    struct cmt_membuf b;
    hostile_big_chunk(&b, (size_t)60 << 20);
    const char *path = saved(&b, b.len, 0);
    int (*fns[])(int, char **) = {cmt_cmd_report, cmt_cmd_dump};
    const char *names[] = {"report", "dump"};
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
        const char *argv[] = {names[i], path, NULL};
        fail_above = (size_t)32 << 20; /* the 60 MiB chunk cannot be decompressed */
        struct captured c = capture_run(fns[i], argv);
        fail_above = 0;
        cr_expect_eq(c.status, 1, "%s: %s", names[i], c.err);
        cr_expect(strstr(c.err, "out of memory reading the chunk at byte 16"), "%s: %s", names[i],
                  c.err);
        cr_expect_null(strstr(c.err, "damaged"), "%s: %s", names[i], c.err);
        captured_free(&c);
    }
#endif
}
