/* test_pickle.c — the plain-data pickle decoder: every opcode it reads, the memo's sharing,
 * the opcodes it refuses, its bounds, truncation at every byte, and the error offsets. The
 * inputs are hand-built bytes (the opcode values are Python's, Lib/pickletools.py). */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "cmt_error.h"
#include "pickle.h"

#define B(...) ((const unsigned char[]){__VA_ARGS__})
#define DECODE(doc, ...) decode(doc, B(__VA_ARGS__), sizeof(B(__VA_ARGS__)), NULL, NULL, NULL)

static int decode(cmt_pickle **doc, const unsigned char *b, size_t n,
                  const struct cmt_pickle_limits *lim, struct cmt_err *err, uint64_t *at)
{
    return cmt_pickle_decode(doc, b, n, lim, err, at);
}

static const struct cmt_pickle_value *item(const struct cmt_pickle_value *v, uint32_t k)
{
    cr_assert(v && k < v->n, "item %u of %u", k, v ? v->n : 0);
    return v->u.items[k];
}

static int64_t i64(const struct cmt_pickle_value *v)
{
    int64_t x = 0;
    cr_assert_eq(cmt_pickle_get_i64(v, &x), 0, "not an int: %s", cmt_pickle_type_name(v->type));
    return x;
}

Test(pickle, reads_every_scalar_opcode)
{
    cmt_pickle *doc;
    /* PROTO 4, MARK, then one value per opcode, TUPLE, STOP */
    int rc = DECODE(&doc, 0x80, 4, '(', 'N', 0x88, 0x89, 'K', 200, 'M', 0x34, 0x12, 'J', 0xfe, 0xff,
                    0xff, 0xff,                                   /* BININT -2 */
                    0x8a, 0,                                      /* LONG1 0 */
                    0x8a, 1, 0x80,                                /* LONG1 -128 */
                    0x8a, 6, 0, 0, 0, 0, 0x7f, 0x7f,              /* LONG1 0x7f7f00000000 */
                    0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0x80, 0,        /* LONG1 2^63 (unsigned) */
                    0x8b, 2, 0, 0, 0, 0xff, 0x7f,                 /* LONG4 32767 */
                    'G', 0x3f, 0xf8, 0, 0, 0, 0, 0, 0,            /* BINFLOAT 1.5 */
                    0x8c, 2, 'h', 'i',                            /* SHORT_BINUNICODE */
                    'X', 1, 0, 0, 0, 'x',                         /* BINUNICODE */
                    0x8d, 1, 0, 0, 0, 0, 0, 0, 0, 'y',            /* BINUNICODE8 */
                    'C', 2, 0, 0xff,                              /* SHORT_BINBYTES */
                    'B', 1, 0, 0, 0, 'b',                         /* BINBYTES */
                    0x8e, 1, 0, 0, 0, 0, 0, 0, 0, 'c',            /* BINBYTES8 */
                    0x96, 1, 0, 0, 0, 0, 0, 0, 0, 'd',            /* BYTEARRAY8 */
                    'U', 1, 's', 'T', 1, 0, 0, 0, 't', 't', '.'); /* SHORT_BINSTRING, BINSTRING */
    cr_assert_eq(rc, 0);
    const struct cmt_pickle_value *t = cmt_pickle_root(doc);
    cr_assert_eq(t->type, CMT_PICKLE_TUPLE);
    cr_assert_eq(t->n, 21);
    cr_expect_eq(cmt_pickle_protocol(doc), 4);
    cr_expect_eq(item(t, 0)->type, CMT_PICKLE_NONE);
    cr_expect_eq(item(t, 1)->type, CMT_PICKLE_BOOL);
    cr_expect_eq(i64(item(t, 1)), 1);
    cr_expect_eq(i64(item(t, 2)), 0);
    cr_expect_eq(i64(item(t, 3)), 200);
    cr_expect_eq(i64(item(t, 4)), 0x1234);
    cr_expect_eq(i64(item(t, 5)), -2);
    cr_expect_eq(i64(item(t, 6)), 0);
    cr_expect_eq(i64(item(t, 7)), -128);
    cr_expect_eq(i64(item(t, 8)), 0x7f7f00000000);
    uint64_t u;
    cr_expect_eq(cmt_pickle_get_u64(item(t, 9), &u), 0);
    cr_expect_eq(u, UINT64_C(1) << 63);
    int64_t s;
    cr_expect_eq(cmt_pickle_get_i64(item(t, 9), &s), CMT_EINVALID, "2^63 is not an int64");
    cr_expect_eq(i64(item(t, 10)), 32767);
    cr_expect_eq(item(t, 11)->type, CMT_PICKLE_FLOAT);
    cr_expect(item(t, 11)->u.f == 1.5);
    cr_expect(cmt_pickle_str_is(item(t, 12), "hi"));
    cr_expect(cmt_pickle_str_is(item(t, 13), "x"));
    cr_expect(cmt_pickle_str_is(item(t, 14), "y"));
    cr_expect_eq(item(t, 15)->type, CMT_PICKLE_BYTES);
    cr_expect_eq(item(t, 15)->n, 2);
    cr_expect_eq((unsigned char)item(t, 15)->u.s[1], 0xff);
    for (int k = 16; k <= 20; k++)
        cr_expect_eq(item(t, k)->type, CMT_PICKLE_BYTES, "item %d", k);
    cr_expect(!cmt_pickle_str_is(item(t, 16), "b"), "bytes are not a str");
    cmt_pickle_free(doc);
}

Test(pickle, builds_every_container)
{
    cmt_pickle *doc;
    int rc = DECODE(&doc, 0x80, 2, '(',                                        /* the outer tuple */
                    ']', 'K', 1, 'a', '(', 'K', 2, 'K', 3, 'e',                /* [1, 2, 3] */
                    '(', 'K', 4, 'l',                                          /* LIST [4] */
                    '}', 0x8c, 1, 'a', 'K', 1, 's',                            /* {"a": 1} */
                    '(', 0x8c, 1, 'b', 'K', 2, 'd',                            /* DICT {"b": 2} */
                    '}', '(', 0x8c, 1, 'c', 'K', 3, 0x8c, 1, 'c', 'K', 4, 'u', /* dup key */
                    ')', 'K', 5, 0x85, 'K', 6, 'K', 7, 0x86, 'K', 8, 'K', 9, 'K', 10, 0x87, 0x8f,
                    '(', 'K', 11, 'K', 12, 0x90, /* EMPTY_SET, ADDITEMS */
                    '(', 'K', 13, 0x91,          /* FROZENSET */
                    'K', 99, '0',                /* POP */
                    '(', 'K', 98, 'K', 97, '1',  /* POP_MARK */
                    'K', 14, '2',                /* DUP */
                    't', '.');
    cr_assert_eq(rc, 0);
    const struct cmt_pickle_value *t = cmt_pickle_root(doc);
    cr_assert_eq(t->n, 13);
    const struct cmt_pickle_value *l = item(t, 0);
    cr_expect_eq(l->type, CMT_PICKLE_LIST);
    cr_assert_eq(l->n, 3);
    cr_expect_eq(i64(item(l, 2)), 3);
    cr_expect_eq(i64(item(item(t, 1), 0)), 4);
    cr_expect_eq(i64(cmt_pickle_dict_get(item(t, 2), "a")), 1);
    cr_expect_eq(i64(cmt_pickle_dict_get(item(t, 3), "b")), 2);
    cr_expect_eq(item(t, 4)->n, 2, "a dict keeps both pairs of a repeated key");
    cr_expect_eq(i64(cmt_pickle_dict_get(item(t, 4), "c")), 4, "the last one wins");
    cr_expect_null(cmt_pickle_dict_get(item(t, 4), "z"));
    cr_expect_eq(item(t, 5)->type, CMT_PICKLE_TUPLE);
    cr_expect_eq(item(t, 5)->n, 0);
    cr_expect_eq(item(t, 6)->n, 1);
    cr_expect_eq(item(t, 7)->n, 2);
    cr_expect_eq(i64(item(item(t, 8), 2)), 10);
    cr_expect_eq(item(t, 9)->type, CMT_PICKLE_SET);
    cr_expect_eq(item(t, 9)->n, 2);
    cr_expect_eq(item(t, 10)->type, CMT_PICKLE_SET);
    cr_expect_eq(i64(item(t, 11)), 14);
    cr_expect_eq(item(t, 11), item(t, 12), "DUP pushes the same value");
    cmt_pickle_free(doc);
}

Test(pickle, memo_shares_nodes_and_allows_cycles)
{
    cmt_pickle *doc;
    /* x = [7]; (x, x, x, cycle) with every memo opcode; cycle = [cycle] */
    int rc = DECODE(&doc, 0x80, 4, 0x95, 26, 0, 0, 0, 0, 0, 0, 0, /* FRAME */
                    '(', ']', 0x94, 'K', 7, 'a',                  /* MEMOIZE -> 0 */
                    'h', 0, 'j', 0, 0, 0, 0,                      /* BINGET, LONG_BINGET */
                    ']', 'r', 5, 0, 0, 0, 'h', 5, 'a',            /* LONG_BINPUT, cycle */
                    'q', 9, 't', '.');                            /* BINPUT then TUPLE */
    cr_assert_eq(rc, 0, "rc %d", rc);
    const struct cmt_pickle_value *t = cmt_pickle_root(doc);
    cr_assert_eq(t->n, 4);
    cr_expect_eq(item(t, 0), item(t, 1));
    cr_expect_eq(item(t, 1), item(t, 2));
    cr_expect_eq(i64(item(item(t, 0), 0)), 7);
    const struct cmt_pickle_value *cycle = item(t, 3);
    cr_expect_eq(item(cycle, 0), cycle, "a list holding itself");
    cmt_pickle_free(doc);
}

static void expect_error(const unsigned char *b, size_t n, int code, uint64_t offset,
                         const char *text)
{
    cmt_pickle *doc = (cmt_pickle *)1;
    struct cmt_err err = {0};
    uint64_t at = UINT64_MAX;
    int rc = decode(&doc, b, n, NULL, &err, &at);
    cr_expect_eq(rc, code, "rc %d (%s), want %d", rc, err.text, code);
    cr_expect_eq(err.code, code, "the carrier holds the code returned");
    cr_expect_null(doc);
    cr_expect_eq(at, offset, "offset %llu, want %llu (%s)", (unsigned long long)at,
                 (unsigned long long)offset, err.text);
    cr_expect(strstr(err.text, text), "'%s' lacks '%s'", err.text, text);
}

#define EXPECT_ERROR(code, offset, text, ...) \
    expect_error(B(__VA_ARGS__), sizeof(B(__VA_ARGS__)), code, offset, text)

Test(pickle, refuses_what_would_build_objects)
{
    EXPECT_ERROR(CMT_EPICKLE_CLASS, 2, "GLOBAL", 0x80, 2, 'c', 'o', 's', '\n', 's', 'y', 's', '\n',
                 '.');
    EXPECT_ERROR(CMT_EPICKLE_CLASS, 4, "REDUCE", 0x80, 4, ')', ')', 'R', '.');
    EXPECT_ERROR(CMT_EPICKLE_CLASS, 2, "STACK_GLOBAL", 0x80, 4, 0x93, '.');
    EXPECT_ERROR(CMT_EPICKLE_CLASS, 3, "BUILD", 0x80, 4, ')', 'b', '.');
    EXPECT_ERROR(CMT_EPICKLE_CLASS, 2, "NEWOBJ", 0x80, 4, 0x81, '.');
    EXPECT_ERROR(CMT_EPICKLE_CLASS, 2, "PERSID", 0x80, 4, 'P', '1', '\n', '.');
    EXPECT_ERROR(CMT_EPICKLE_CLASS, 0, "NEXT_BUFFER", 0x97, '.');
    EXPECT_ERROR(CMT_EPICKLE_OPCODE, 2, "INT", 0x80, 2, 'I', '1', '\n', '.');
    EXPECT_ERROR(CMT_EPICKLE_OPCODE, 2, "unknown opcode 0xff", 0x80, 2, 0xff, '.');
    EXPECT_ERROR(CMT_EPICKLE_PROTOCOL, 0, "protocol 6", 0x80, 6, 'N', '.');
}

Test(pickle, malformed_input_names_its_offset)
{
    EXPECT_ERROR(CMT_EPICKLE_MALFORMED, 3, "APPEND needs 2", 0x80, 4, 'N', 'a', '.');
    EXPECT_ERROR(CMT_EPICKLE_MALFORMED, 4, "APPEND to a None", 0x80, 4, 'N', 'N', 'a', '.');
    EXPECT_ERROR(CMT_EPICKLE_MALFORMED, 6, "SETITEMS into a list", 0x80, 4, ']', '(', 'N', 'N', 'u',
                 '.');
    EXPECT_ERROR(CMT_EPICKLE_MALFORMED, 5, "odd number", 0x80, 4, '}', '(', 'N', 'u', '.');
    EXPECT_ERROR(CMT_EPICKLE_MALFORMED, 3, "without a MARK", 0x80, 4, 'N', 'e', '.');
    EXPECT_ERROR(CMT_EPICKLE_MALFORMED, 2, "memo key 3", 0x80, 4, 'h', 3, '.');
    EXPECT_ERROR(CMT_EPICKLE_MALFORMED, 2, "STOP with an empty stack", 0x80, 4, '.');
    EXPECT_ERROR(CMT_EPICKLE_MALFORMED, 5, "APPEND needs 2", 0x80, 4, ']', '(', 'N', 'a', '.');
    EXPECT_ERROR(CMT_EPICKLE_LIMIT, 2, "wider than 64 bits", 0x80, 4, 0x8a, 9, 1, 1, 1, 1, 1, 1, 1,
                 1, 1, '.');
    EXPECT_ERROR(CMT_EPICKLE_LIMIT, 3, "memo index", 0x80, 4, 'N', 'r', 0, 0, 0, 0x10, '.');
    EXPECT_ERROR(CMT_EPICKLE_TRUNCATED, 2, "past the end", 0x80, 4, 'X', 100, 0, 0, 0, 'a', '.');
    EXPECT_ERROR(CMT_EPICKLE_TRUNCATED, 2, "FRAME", 0x80, 4, 0x95, 99, 0, 0, 0, 0, 0, 0, 0, 'N',
                 '.');
    EXPECT_ERROR(CMT_EPICKLE_TRUNCATED, 3, "before STOP", 0x80, 4, 'N');
}

Test(pickle, bytes_after_stop_are_ignored)
{
    cmt_pickle *doc;
    cr_assert_eq(DECODE(&doc, 0x80, 4, 'K', 5, '.', 0xff, 0xff, 'c'), 0);
    cr_expect_eq(i64(cmt_pickle_root(doc)), 5);
    cmt_pickle_free(doc);
}

/* Every proper prefix of a pickle fails as truncated, never as anything else, and never
 * reads past its end (ASan would see it: each prefix is a separate allocation). */
Test(pickle, every_prefix_is_truncated)
{
    static const unsigned char whole[] = {
        0x80, 4,   0x95, 38,  0,    0,   0,   0,   0,    0, 0,   '}',  0x94, '(', 0x8c, 3,   'k',
        'e',  'y', 0x94, ']', 0x94, '(', 'J', 1,   2,    3, 4,   0x8a, 2,    1,   1,    'G', 0,
        0,    0,   0,    0,   0,    0,   0,   'e', 0x8c, 1, 'b', 'h',  1,    'u', '.'};
    cmt_pickle *doc;
    cr_assert_eq(decode(&doc, whole, sizeof whole, NULL, NULL, NULL), 0);
    const struct cmt_pickle_value *root = cmt_pickle_root(doc);
    cr_expect_eq(cmt_pickle_dict_get(root, "b"), root->u.items[0], "BINGET 1 is the key str");
    cr_expect_eq(cmt_pickle_dict_get(root, "key")->n, 3);
    cmt_pickle_free(doc);
    for (size_t n = 0; n < sizeof whole; n++) {
        unsigned char *cut = malloc(n ? n : 1);
        memcpy(cut, whole, n);
        struct cmt_err err = {0};
        uint64_t at = UINT64_MAX;
        int rc = decode(&doc, cut, n, NULL, &err, &at);
        cr_expect_eq(rc, CMT_EPICKLE_TRUNCATED, "cut at %zu: rc %d (%s)", n, rc, err.text);
        cr_expect_leq(at, n);
        free(cut);
    }
}

Test(pickle, bounds_hold)
{
    cmt_pickle *doc;
    struct cmt_err err = {0};
    uint64_t at = UINT64_MAX;
    const unsigned char marks[] = {0x80, 4, '(', '(', '(', ')', '.'};
    struct cmt_pickle_limits two_marks = {.max_marks = 2};
    cr_expect_eq(decode(&doc, marks, sizeof marks, &two_marks, &err, &at), CMT_EPICKLE_LIMIT);
    cr_expect_eq(at, 4);
    cr_expect(strstr(err.text, "MARK"), "%s", err.text);
    const unsigned char many[] = {0x80, 4, 'N', 'N', 'N', 'N', 'N', 't', '.'};
    struct cmt_pickle_limits four = {.max_stack = 4};
    cr_expect_eq(decode(&doc, many, sizeof many, &four, &err, &at), CMT_EPICKLE_LIMIT);
    cr_expect(strstr(err.text, "stack"), "%s", err.text);
    const unsigned char values[] = {0x80, 4, '(', ']', ']', ']', 'l', '.'};
    struct cmt_pickle_limits three = {.max_values = 3};
    cr_expect_eq(decode(&doc, values, sizeof values, &three, &err, &at), CMT_EPICKLE_LIMIT);
    cr_expect_eq(at, 6, "the fourth value is the LIST");
    struct cmt_pickle_limits roomy = {.max_values = 4, .max_marks = 1, .max_stack = 4};
    cr_expect_eq(decode(&doc, values, sizeof values, &roomy, &err, &at), 0, "%s", err.text);
    cr_expect_eq(cmt_pickle_value_count(doc), 4);
    cmt_pickle_free(doc);
}

Test(pickle, small_ints_need_no_values)
{
    cmt_pickle *doc;
    cr_assert_eq(DECODE(&doc, 0x80, 4, '(', 'K', 0, 'K', 1, 'M', 0xff, 0x03, 'N', 0x88, 't', '.'),
                 0);
    cr_expect_eq(cmt_pickle_value_count(doc), 1, "only the tuple lives in the arena");
    cmt_pickle_free(doc);
}

Test(pickle, readers_check_types)
{
    cmt_pickle *doc;
    cr_assert_eq(DECODE(&doc, 0x80, 4, '(', 'J', 0xff, 0xff, 0xff, 0xff, 0x8c, 1, 'a', 'G', 0x40, 0,
                        0, 0, 0, 0, 0, 0, 't', '.'),
                 0);
    const struct cmt_pickle_value *t = cmt_pickle_root(doc);
    uint64_t u;
    double d;
    cr_expect_eq(cmt_pickle_get_u64(item(t, 0), &u), CMT_EINVALID, "-1 is not unsigned");
    cr_expect_eq(cmt_pickle_get_u64(item(t, 1), &u), CMT_EINVALID);
    cr_expect_eq(cmt_pickle_get_double(item(t, 2), &d), 0);
    cr_expect(d == 2.0);
    cr_expect_eq(cmt_pickle_get_double(item(t, 0), &d), 0);
    cr_expect(d == -1.0);
    cr_expect_eq(cmt_pickle_get_i64(NULL, (int64_t *)&u), CMT_EINVALID);
    cr_expect_null(cmt_pickle_dict_get(t, "a"), "a tuple is not a dict");
    cr_expect_str_eq(cmt_pickle_type_name(CMT_PICKLE_DICT), "dict");
    cr_expect_str_eq(cmt_pickle_type_name(99), "?");
    cmt_pickle_free(doc);
}
