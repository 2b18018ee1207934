/* Tests of the pickle writer: the opcodes chosen for each value (the smallest CPython reads),
 * and, with python3, that pickle.loads gives back the structure written, memo references
 * included (skipped without python3 outside CI). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/pickle_writer.h"

/* What the writer wrote, as bytes. */
static size_t written(FILE *f, unsigned char *buf, size_t size)
{
    fflush(f);
    rewind(f);
    size_t n = fread(buf, 1, size, f);
    fclose(f);
    return n;
}

Test(pickle_writer, ints_take_the_smallest_opcode_and_large_ones_long1)
{
    FILE *f = tmpfile();
    struct cmt__pickle p;
    cmt__pickle_begin(&p, f);
    cmt__pickle_uint(&p, 5);                    /* K 05 */
    cmt__pickle_uint(&p, 300);                  /* M 2c 01 */
    cmt__pickle_uint(&p, 0x12345678);           /* J 78 56 34 12 */
    cmt__pickle_uint(&p, UINT64_C(0x80000000)); /* LONG1 5 00 00 00 80 00 */
    cmt__pickle_uint(&p, UINT64_C(1) << 63);    /* LONG1 9 ... 80 00 */
    cmt__pickle_int(&p, -1);                    /* J ff ff ff ff */
    cmt__pickle_int(&p, INT64_MIN);             /* LONG1 8 00 .. 80 */
    cr_assert_eq(cmt__pickle_end(&p), 0);
    unsigned char b[128];
    size_t n = written(f, b, sizeof b);
    static const unsigned char want[] = {
        0x80, 4,    'K',  5,    'M', 0x2c, 1, 'J', 0x78, 0x56, 0x34, 0x12, 0x8a, 5,  0,   0,
        0,    0x80, 0,    0x8a, 9,   0,    0, 0,   0,    0,    0,    0,    0x80, 0,  'J', 0xff,
        0xff, 0xff, 0xff, 0x8a, 8,   0,    0, 0,   0,    0,    0,    0,    0x80, '.'};
    cr_assert_eq(n, sizeof want);
    cr_expect(memcmp(b, want, n) == 0);
}

Test(pickle_writer, strings_are_valid_utf8_and_long_ones_binunicode)
{
    FILE *f = tmpfile();
    struct cmt__pickle p;
    cmt__pickle_begin(&p, f);
    cmt__pickle_str(&p, "a\xff");    /* invalid byte: U+FFFD */
    cmt__pickle_str(&p, "\xc3\xa9"); /* é stays */
    static char big[300];
    memset(big, 'x', sizeof big - 1);
    cmt__pickle_str(&p, big);
    cr_assert_eq(cmt__pickle_end(&p), 0);
    unsigned char b[512];
    size_t n = written(f, b, sizeof b);
    static const unsigned char head[] = {0x80, 4,    0x8c, 4,   'a',  0xef, 0xbf, 0xbd, 0x8c,
                                         2,    0xc3, 0xa9, 'X', 0x2b, 1,    0,    0};
    cr_assert_gt(n, sizeof head);
    cr_expect(memcmp(b, head, sizeof head) == 0);
    cr_expect_eq(n, sizeof head + 299 + 1);
}

Test(pickle_writer, python_loads_dicts_lists_tuples_and_shared_lists)
{
    const char *ci = getenv("CI");
    if (system("python3 -c 'import pickle' >/dev/null 2>&1") != 0) {
        if (ci && strcmp(ci, "true") == 0)
            cr_assert_fail("python3 is needed in CI");
        cr_skip_test("python3 is not installed");
    }
    char path[64];
    snprintf(path, sizeof path, "/tmp/cmt_pickle_%d.pkl", (int)getpid());
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    struct cmt__pickle p;
    cmt__pickle_begin(&p, f);
    cmt__pickle_dict(&p);
    cmt__pickle_str(&p, "frames");
    uint32_t frames = cmt__pickle_list_memo(&p);
    cmt__pickle_dict(&p);
    cmt__pickle_str(&p, "name");
    cmt__pickle_str(&p, "f");
    cmt__pickle_str(&p, "line");
    cmt__pickle_uint(&p, 7);
    cmt__pickle_end_dict(&p);
    cmt__pickle_end_list(&p);
    cmt__pickle_str(&p, "again");
    cmt__pickle_get(&p, frames);
    cmt__pickle_str(&p, "pool");
    cmt__pickle_uint(&p, 0);
    cmt__pickle_uint(&p, UINT64_C(0xffffffffffffffff));
    cmt__pickle_tuple2(&p);
    cmt__pickle_str(&p, "flags");
    cmt__pickle_list(&p);
    cmt__pickle_bool(&p, 1);
    cmt__pickle_bool(&p, 0);
    cmt__pickle_none(&p);
    cmt__pickle_int(&p, -5);
    cmt__pickle_end_list(&p);
    cmt__pickle_end_dict(&p);
    cr_assert_eq(cmt__pickle_end(&p), 0);
    fclose(f);
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "python3 -c \"import pickle, sys; d = pickle.load(open('%s', 'rb')); "
             "ok = d == {'frames': [{'name': 'f', 'line': 7}], 'again': [{'name': 'f', "
             "'line': 7}], 'pool': (0, 2**64 - 1), 'flags': [True, False, None, -5]} "
             "and d['frames'] is d['again']; sys.exit(0 if ok else print(d) or 1)\"",
             path);
    cr_expect_eq(system(cmd), 0);
    remove(path);
}
