#include "trace_fixture.h"
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static struct cmt_membuf good;

static void setup(void)
{
    fixture_write(&good, 512); /* many small chunks, so damage lands mid-file */
}

static void teardown(void)
{
    cmt_membuf_free(&good);
}

TestSuite(damage, .init = setup, .fini = teardown);

Test(damage, rejects_bad_magic)
{
    cmt_reader *r;
    good.data[0] = 'X';
    cr_assert_eq(cmt_reader_open_memory(&r, good.data, good.len), CMT_EBAD_MAGIC);
    cr_assert_null(r);
    cr_assert_eq(cmt_reader_open_memory(&r, "hello world, not a trace", 24), CMT_EBAD_MAGIC);
}

Test(damage, rejects_newer_major_version)
{
    cmt_reader *r;
    good.data[8] = CMT_VERSION_MAJOR + 1;
    cr_assert_eq(cmt_reader_open_memory(&r, good.data, good.len), CMT_ENEWER_VERSION);
    cr_assert_str_eq(cmt_strerror(CMT_ENEWER_VERSION),
                     "trace was written by a newer major format version");
}

Test(damage, accepts_newer_minor_version)
{
    cmt_reader *r;
    good.data[10] = 9;
    cr_assert_eq(cmt_reader_open_memory(&r, good.data, good.len), 0);
    uint64_t counts[CMT_REC_MAX];
    cr_assert_eq(fixture_read_all(r, counts), 0);
    cmt_reader_close(r);
}

Test(damage, empty_and_header_only)
{
    cmt_reader *r;
    cr_assert_eq(cmt_reader_open_memory(&r, good.data, 0), CMT_EEMPTY);
    cr_assert_eq(cmt_reader_open_memory(&r, good.data, 5), CMT_ETRUNCATED);
    cr_assert_eq(cmt_reader_open_memory(&r, good.data, CMT_FILE_HEADER_SIZE), 0);
    uint64_t counts[CMT_REC_MAX];
    cr_assert_eq(fixture_read_all(r, counts), 0);
    cr_assert_eq(counts[CMT_REC_EVENT], 0);
    cmt_reader_close(r);
}

/* Every truncation point yields a prefix of the events, in order, and names the damage. */
Test(damage, truncation_anywhere_keeps_every_event_before_it)
{
    uint64_t prev_events = 0;
    for (size_t cut = CMT_FILE_HEADER_SIZE; cut < good.len; cut += 7) {
        cmt_reader *r;
        cr_assert_eq(cmt_reader_open_memory(&r, good.data, cut), 0);
        uint64_t counts[CMT_REC_MAX];
        int rc = fixture_read_all(r, counts);
        if (rc != 0) {
            cr_assert_eq(rc, CMT_ETRUNCATED, "cut %zu gave %d", cut, rc);
            cr_assert_lt(cmt_reader_damage_offset(r), cut);
            cr_assert(strstr(cmt_reader_damage(r), "truncated") != NULL);
        }
        cr_assert_geq(counts[CMT_REC_EVENT], prev_events, "events went backwards at %zu", cut);
        prev_events = counts[CMT_REC_EVENT];
        cr_assert_eq(cmt_reader_seq_gaps(r), 0);
        cr_assert_eq(cmt_reader_next(r, &(struct cmt_record){0}), rc, "damage is sticky");
        cmt_reader_close(r);
    }
    cr_assert_gt(prev_events, FIXTURE_EVENTS / 2);
}

/* A rewind after damage reads the same again (a chunk cut short once left the reader "cut",
 * so a second pass, as after cmt_reader_preload, stopped at its very start). */
Test(damage, a_rewind_after_truncation_reads_the_same_events_again)
{
    int cut_short = 0;
    for (size_t cut = CMT_FILE_HEADER_SIZE; cut < good.len; cut += 7) {
        cmt_reader *r;
        cr_assert_eq(cmt_reader_open_memory(&r, good.data, cut), 0);
        uint64_t first[CMT_REC_MAX], second[CMT_REC_MAX];
        int rc = fixture_read_all(r, first);
        cut_short += rc == CMT_ETRUNCATED;
        cmt_reader_rewind(r);
        cr_assert_eq(fixture_read_all(r, second), rc, "cut %zu", cut);
        cr_assert_eq(second[CMT_REC_EVENT], first[CMT_REC_EVENT], "cut %zu", cut);
        cr_assert_eq(cmt_reader_event_count(r), first[CMT_REC_EVENT], "cut %zu", cut);
        cmt_reader_close(r);
    }
    cr_assert_gt(cut_short, 0);
}

/* A flip is reported as damage at or before its offset, or it changed nothing that is read
 * (zstd frames have bits that do not affect what they decode to, such as padding; the
 * checksum over the decoded bytes catches every flip that does). */
Test(damage, bit_flips_never_crash_and_report_offset)
{
    cmt_reader *r;
    cr_assert_eq(cmt_reader_open_memory(&r, good.data, good.len), 0);
    uint64_t digest = fixture_event_digest(r);
    cmt_reader_close(r);
    int detected = 0, flips = 0;
    for (size_t at = CMT_FILE_HEADER_SIZE; at < good.len; at += 13, flips++) {
        good.data[at] ^= 0x5a;
        cr_assert_eq(cmt_reader_open_memory(&r, good.data, good.len), 0);
        uint64_t counts[CMT_REC_MAX];
        int rc = fixture_read_all(r, counts);
        cr_assert(rc == 0 || rc == CMT_ECORRUPT || rc == CMT_ETRUNCATED, "flip at %zu gave %d", at,
                  rc);
        if (rc != 0) {
            detected++;
            cr_assert_leq(cmt_reader_damage_offset(r), at);
            cr_assert_leq(counts[CMT_REC_EVENT], FIXTURE_EVENTS);
        } else {
            cmt_reader_rewind(r);
            cr_assert_eq(fixture_event_digest(r), digest, "flip at %zu changed events silently",
                         at);
        }
        cmt_reader_close(r);
        good.data[at] ^= 0x5a;
    }
    cr_assert_gt(detected, flips * 9 / 10, "only %d of %d flips detected", detected, flips);
}

Test(reader_open, reports_errno_through_the_carrier)
{
    cmt_reader *r = (cmt_reader *)&r;
    struct cmt_err err = {.sys_errno = -1};
    cr_assert_eq(cmt_reader_open_file(&r, "/nonexistent/trace.cmt", &err), CMT_EIO);
    cr_assert_null(r);
    cr_assert_eq(err.code, CMT_EIO);
    cr_assert_eq(err.sys_errno, ENOENT);
    cr_assert_str_eq(cmt_err_message(&err), strerror(ENOENT));
    cr_assert_eq(cmt_reader_open_file(&r, "/nonexistent/trace.cmt", NULL), CMT_EIO); /* NULL ok */
    static const char junk[] = "not a trace at all, and long enough for a file header";
    char path[] = "/tmp/cmt-reader-open.XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, junk, sizeof junk), (ssize_t)sizeof junk);
    close(fd);
    err.sys_errno = -1;
    cr_assert_eq(cmt_reader_open_file(&r, path, &err), CMT_EBAD_MAGIC);
    unlink(path);
    cr_assert_eq(err.sys_errno, 0, "a format error leaves no errno behind");
    cr_assert_str_eq(cmt_err_message(&err), cmt_strerror(CMT_EBAD_MAGIC));
}

/* A directory, a character device and a FIFO (which must not wait for a writer): one code from
 * the error list, no errno left to print ("Success"). */
Test(reader_open, refuses_what_is_not_a_regular_file, .timeout = 30)
{
    char dir[] = "/tmp/cmt-reader-open.XXXXXX", fifo[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    const char *paths[] = {dir, "/dev/null", fifo};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        cmt_reader *r = (cmt_reader *)&r;
        struct cmt_err err = {.sys_errno = -1};
        cr_expect_eq(cmt_reader_open_file(&r, paths[i], &err), CMT_ENOT_REGULAR, "%s", paths[i]);
        cr_expect_null(r);
        cr_expect_eq(err.sys_errno, 0, "%s", paths[i]);
        cr_expect_str_eq(cmt_err_message(&err), "not a regular file");
        cr_expect_eq(cmt_reader_open_file(&r, paths[i], NULL), CMT_ENOT_REGULAR);
    }
    unlink(fifo);
    rmdir(dir);
}
