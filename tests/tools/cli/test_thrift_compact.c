/* Thrift's compact protocol (tools/cli/export/thrift_compact.c): the bytes of fields, nested
 * structs and lists as the spec lays them out. */
#include <criterion/criterion.h>
#include <string.h>

#include "export/thrift_compact.h"

static void expect_bytes(const struct cmt__bytes *b, const uint8_t *want, size_t n)
{
    cr_assert_eq(b->n, n, "%zu bytes, want %zu", b->n, n);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(b->p[i], want[i], "byte %zu: %#x, want %#x", i, b->p[i], want[i]);
}

Test(thrift_compact, short_and_long_field_headers_and_zigzag_varints)
{
    struct cmt__bytes b = {0};
    struct cmt__thrift t;
    cmt__thrift_begin(&t, &b);
    cmt__thrift_i32(&t, 1, 1);    /* delta 1: 0x15, zigzag(1) = 2 */
    cmt__thrift_i64(&t, 3, -1);   /* delta 2: 0x26, zigzag(-1) = 1 */
    cmt__thrift_i64(&t, 20, 300); /* delta 17: long form 0x06, zigzag(20) = 40, 600 = ac 04 */
    cmt__thrift_bool(&t, 21, 0);  /* the value in the type: 0x12 */
    cmt__thrift_string(&t, 22, "ab");
    cmt__thrift_byte(&t, 23, -64); /* delta 1: 0x13, the byte as it is (no varint): 0xc0 */
    cmt__thrift_end(&t);
    static const uint8_t want[] = {0x15, 0x02, 0x26, 0x01, 0x06, 0x28, 0xd8, 0x04,
                                   0x12, 0x18, 0x02, 'a',  'b',  0x13, 0xc0, 0x00};
    expect_bytes(&b, want, sizeof want);
    cmt__bytes_free(&b);
}

Test(thrift_compact, nested_structs_restart_their_field_ids_and_lists_carry_their_size)
{
    struct cmt__bytes b = {0};
    struct cmt__thrift t;
    cmt__thrift_begin(&t, &b);
    cmt__thrift_struct(&t, 5); /* 0x5c */
    cmt__thrift_i32(&t, 1, 0); /* 0x15 0x00: ids restart inside */
    cmt__thrift_end(&t);
    cmt__thrift_list(&t, 6, CMT__THRIFT_I32, 2); /* delta 1 from 5: 0x19, 0x25 */
    cmt__thrift_list_i32(&t, 3);
    cmt__thrift_list_i32(&t, -2);
    cmt__thrift_list(&t, 7, CMT__THRIFT_STRUCT, 16); /* 0x19, 0xfc, 16 */
    for (int i = 0; i < 16; i++) {
        cmt__thrift_list_struct(&t);
        cmt__thrift_end(&t);
    }
    cmt__thrift_end(&t);
    uint8_t want[64] = {0x5c, 0x15, 0x00, 0x00, 0x19, 0x25, 0x06, 0x03, 0x19, 0xfc, 0x10};
    size_t n = 11;
    for (int i = 0; i < 16; i++)
        want[n++] = 0; /* each empty struct's stop */
    want[n++] = 0;
    expect_bytes(&b, want, n);
    cmt__bytes_free(&b);
}
