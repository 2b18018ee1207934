/* The reader on hostile files (issue 24): repeated records folded, the chunk sequence checked
 * (a chunk repeated, moved or missing), a wrong major version, the reader's own failed
 * allocation told from damage (the test's malloc fails large requests while armed). The files
 * come from tests/fuzz/hostile_traces.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "hostile_traces.h"
#include "reader.h"
#include "trace_builder.h"
#include "writer.h"

#include "malloc_failure.h"

struct counts {
    uint64_t events, notes, threads, envs, allocs, seq_back;
    int rc;
};

/* One pass to the end. */
static struct counts pass(cmt_reader *r)
{
    struct counts c = {0};
    struct cmt_record rec;
    uint64_t last = 0;
    while ((c.rc = cmt_reader_next(r, &rec)) > 0) {
        if (rec.type == CMT_REC_EVENT) {
            c.events++;
            c.allocs += rec.u.event.api == 1; /* the trace builder's cuMemAlloc_v2 */
            c.seq_back += c.events > 1 && rec.u.event.seq <= last;
            last = rec.u.event.seq;
        }
        c.notes += rec.type == CMT_REC_NOTE;
        c.threads += rec.type == CMT_REC_THREAD;
        c.envs += rec.type == CMT_REC_ENV;
    }
    return c;
}

static cmt_reader *open_buf(const struct cmt_membuf *b)
{
    cmt_reader *r;
    cr_assert_eq(cmt_reader_open_memory(&r, b->data, b->len), 0);
    return r;
}

Test(reader, folds_repeated_thread_note_and_env_records)
{
    struct cmt_membuf b;
    uint64_t repeats;
    hostile_repeated(&b, 3000, &repeats);
    cr_assert_gt(repeats, 100000, "a trace mostly of repeats");
    cmt_reader *r = open_buf(&b);
    for (int round = 0; round < 2; round++) { /* a second pass after a rewind: the same */
        struct counts c = pass(r);
        cr_expect_eq(c.rc, 0);
        cr_expect_eq(cmt_reader_folded(r), repeats, "pass %d", round);
        cr_expect_eq(c.notes, 1, "pass %d", round);
        cr_expect_eq(c.envs, 1, "pass %d", round);
        cr_expect_eq(c.threads, 1, "pass %d", round);
        cr_expect_eq(cmt_reader_env_count(r), 1, "the table holds the pair once");
        cr_expect_str_eq(cmt_reader_thread_name(r, 77), "main");
        cr_expect_gt(c.events, 0);
        cmt_reader_rewind(r);
    }
    cmt_reader_close(r);
    cmt_membuf_free(&b);
}

Test(reader, a_repeated_thread_record_still_names_its_thread)
{
    struct cmt_membuf b = {0};
    cmt_writer *w;
    cr_assert_eq(cmt_writer_create(&w, cmt_membuf_sink, &b, NULL), 0);
    const char *names[] = {"a", "b", "a"};
    for (int i = 0; i < 3; i++)
        cr_assert_eq(cmt_writer_thread(w, &(struct cmt_thread){5, names[i]}), 0);
    cr_assert_eq(cmt_writer_flush(w), 0);
    cmt_writer_destroy(w);
    cmt_reader *r = open_buf(&b);
    struct counts c = pass(r);
    cr_expect_eq(c.threads, 2, "the third repeats the first: folded");
    cr_expect_eq(cmt_reader_folded(r), 1);
    cr_expect_str_eq(cmt_reader_thread_name(r, 5), "a", "the last one for a tid names it");
    cmt_reader_close(r);
    cmt_membuf_free(&b);
}

/* Reads b (and frees it): sound to the end, `events` events in seq order, and the sequence
 * note holds `note`. */
static void expect_read(struct cmt_membuf *b, uint64_t events, const char *note, const char *what)
{
    cmt_reader *r = open_buf(b);
    struct counts c = pass(r);
    cr_expect_eq(c.rc, 0, "%s", what);
    cr_expect_eq(c.events, events, "%s: each event once", what);
    cr_expect_eq(c.seq_back, 0, "%s: read in seq order", what);
    char text[512];
    cmt_reader_sequence_note(r, text, sizeof text);
    cr_expect(strstr(text, note), "%s: %s", what, text);
    cmt_reader_close(r);
    cmt_membuf_free(b);
}

Test(reader, leaves_out_a_chunk_repeated_byte_for_byte)
{
    struct cmt_membuf b;
    hostile_chunked(&b, 4);
    hostile_duplicate_chunk(&b, 1);
    expect_read(&b, 4 * HOSTILE_CHUNK_EVENTS,
                "1 chunk repeating an earlier one byte for byte left out", "chunk 1 twice");
}

/* A chunk whose events repeat seqs already read in other bytes (a chunk written again, or one
 * overlapping its neighbour): those events are left out and named, never counted twice. */
Test(reader, leaves_out_events_of_a_chunk_that_overlaps_the_seq_order)
{
    struct tb b;
    tb_begin(&b, 8 * TB_GIB, 8 * TB_GIB);
    uint32_t s = tb_stack(&b, "overlap", 2);
    for (int i = 0; i < 6; i++)
        tb_alloc(&b, 0x7f0000000000 + (uint64_t)i * 2 * TB_MIB, TB_MIB, s);
    cmt_writer_flush(b.w);
    b.seq -= 3; /* seqs 4..6 again, at other addresses: other bytes */
    for (int i = 0; i < 6; i++)
        tb_alloc(&b, 0x7f1000000000 + (uint64_t)i * 2 * TB_MIB, TB_MIB, s);
    tb_finish(&b, 1);
    struct cmt_membuf buf = b.buf;
    b.buf = (struct cmt_membuf){0};
    tb_free_builder(&b);
    expect_read(&buf, 9, "3 events at or below a seq already read left out", "seqs 4..6 twice");
}

Test(reader, reads_chunks_moved_in_the_file_in_seq_order)
{
    size_t moves[][2] = {{1, 2}, {0, 3}, {1, 3}};
    for (size_t m = 0; m < sizeof moves / sizeof *moves; m++) {
        struct cmt_membuf b;
        hostile_chunked(&b, 4);
        hostile_swap_chunks(&b, moves[m][0], moves[m][1]);
        char what[64];
        snprintf(what, sizeof what, "chunks %zu and %zu swapped", moves[m][0], moves[m][1]);
        expect_read(&b, 4 * HOSTILE_CHUNK_EVENTS, "chunks out of seq order read in seq order",
                    what);
    }
}

Test(reader, names_a_missing_chunk)
{
    struct cmt_membuf b;
    hostile_chunked(&b, 4);
    size_t starts[8];
    cr_assert_eq(hostile_chunk_starts(b.data, b.len, starts, 8), 5);
    hostile_drop_chunk(&b, 2);
    cmt_reader *r = open_buf(&b);
    struct counts c = pass(r);
    cr_expect_eq(c.events, 3 * HOSTILE_CHUNK_EVENTS);
    char note[512];
    cmt_reader_sequence_note(r, note, sizeof note);
    char want[128];
    snprintf(want, sizeof want,
             "%d events missing between chunks (a chunk lost: the first gap "
             "before the chunk at byte %zu)",
             HOSTILE_CHUNK_EVENTS, starts[2]);
    cr_expect(strstr(note, want), "%s", note);
    cmt_reader_close(r);
    cmt_membuf_free(&b);
}

Test(reader, a_sound_trace_has_no_sequence_note)
{
    struct cmt_membuf b;
    hostile_chunked(&b, 4);
    cmt_reader *r = open_buf(&b);
    struct counts c = pass(r);
    cr_expect_eq(c.events, 4 * HOSTILE_CHUNK_EVENTS);
    char note[64] = "x";
    cr_expect_eq(cmt_reader_sequence_note(r, note, sizeof note), 0);
    cr_expect_str_eq(note, "");
    cr_expect_eq(cmt_reader_folded(r), 0);
    cmt_reader_close(r);
    cmt_membuf_free(&b);
}

Test(reader, refuses_a_major_3_file_relabelled_as_an_older_major)
{
    for (unsigned major = 1; major <= 2; major++) {
        struct cmt_membuf b;
        hostile_chunked(&b, 2);
        hostile_relabel(&b, major);
        cmt_reader *r = open_buf(&b);
        struct counts c = pass(r);
        cr_expect_eq(c.rc, CMT_ECORRUPT, "major %u", major);
        cr_expect_eq(c.events, 0);
        cr_expect(strstr(cmt_reader_damage(r), "event blocks of major 3"), "%s",
                  cmt_reader_damage(r));
        cmt_reader_close(r);
        cmt_membuf_free(&b);
    }
}

Test(reader, preload_keeps_the_description_of_the_damage)
{
    struct cmt_membuf b;
    hostile_chunked(&b, 1);
    cmt_reader *r;
    cr_assert_eq(cmt_reader_open_memory(&r, b.data, 16 + 16 + 40), 0);
    cr_expect_eq(cmt_reader_preload(r), CMT_ETRUNCATED);
    cr_expect_str_eq(cmt_reader_damage(r), "trace is truncated at byte 16 (chunk cut short)");
    cr_expect_eq(cmt_reader_damage_offset(r), 16);
    cmt_reader_close(r);
    cmt_membuf_free(&b);
}

Test(reader, its_own_failed_allocation_is_out_of_memory_not_damage)
{
#ifdef CMT_TEST_NO_MALLOC_HOOK
    cr_skip_test("the sanitizer owns malloc: no failure can be injected");
#else
    struct cmt_membuf b;
    hostile_big_chunk(&b, (size_t)60 << 20);
    cmt_reader *r;
    cr_assert_eq(cmt_reader_open_memory(&r, b.data, b.len), 0);
    cr_expect_eq(pass(r).rc, 0, "without a limit the chunk reads: the file is sound");
    cmt_reader_close(r);
    cr_assert_eq(cmt_reader_open_memory(&r, b.data, b.len), 0);
    fail_above = (size_t)32 << 20; /* the 60 MiB chunk cannot be decompressed */
    int rc = pass(r).rc;
    fail_above = 0;
    cr_expect_eq(rc, CMT_ENOMEM);
    cr_expect_str_eq(cmt_reader_damage(r), "out of memory reading the chunk at byte 16");
    cmt_reader_close(r);
    cmt_membuf_free(&b);
#endif
}

Test(reader, names_each_of_many_threads)
{
    struct cmt_membuf b = {0};
    cmt_writer *w;
    cr_assert_eq(cmt_writer_create(&w, cmt_membuf_sink, &b, NULL), 0);
    char name[16];
    for (uint32_t tid = 1; tid <= 5000; tid++) { /* the index grows several times */
        snprintf(name, sizeof name, "t%u", tid);
        cr_assert_eq(cmt_writer_thread(w, &(struct cmt_thread){tid * 7919, name}), 0);
    }
    cr_assert_eq(cmt_writer_thread(w, &(struct cmt_thread){7919, "renamed"}), 0);
    cr_assert_eq(cmt_writer_flush(w), 0);
    cmt_writer_destroy(w);
    cmt_reader *r = open_buf(&b);
    cr_expect_eq(pass(r).threads, 5001);
    cr_expect_str_eq(cmt_reader_thread_name(r, 7919), "renamed", "the last one names it");
    for (uint32_t tid = 2; tid <= 5000; tid++) {
        snprintf(name, sizeof name, "t%u", tid);
        cr_expect_str_eq(cmt_reader_thread_name(r, tid * 7919), name);
    }
    cr_expect_null(cmt_reader_thread_name(r, 3));
    cmt_reader_close(r);
    cmt_membuf_free(&b);
}
