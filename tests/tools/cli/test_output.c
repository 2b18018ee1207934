/* Tests of output.c's JSON writer: the helpers that write several members, or a member that
 * may be null, write exactly what the one-member calls they stand for write. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "output.h"

struct doc {
    char *text;
    size_t len;
    FILE *f;
    struct cmt__json j;
};

static void doc_open(struct doc *d)
{
    d->text = NULL;
    d->f = open_memstream(&d->text, &d->len);
    cr_assert_not_null(d->f);
    cmt__json_init(&d->j, d->f);
    cmt__json_object(&d->j, NULL);
}

static const char *doc_close(struct doc *d)
{
    cmt__json_end_object(&d->j);
    cr_assert_eq(fclose(d->f), 0);
    return d->text;
}

Test(output, json_u64s_writes_each_member_in_order_as_json_u64_does)
{
    struct doc a, b;
    uint32_t small = 7;
    doc_open(&a);
    cmt__json_string(&a.j, "file", "x.cmt");
    CMT__JSON_U64S(&a.j, {"alloc_calls", 3}, {"peak_bytes", UINT64_MAX}, {"small", small},
                   {"zero", 0});
    cmt__json_u64(&a.j, "after", 1);
    doc_open(&b);
    cmt__json_string(&b.j, "file", "x.cmt");
    cmt__json_u64(&b.j, "alloc_calls", 3);
    cmt__json_u64(&b.j, "peak_bytes", UINT64_MAX);
    cmt__json_u64(&b.j, "small", small);
    cmt__json_u64(&b.j, "zero", 0);
    cmt__json_u64(&b.j, "after", 1);
    cr_expect_str_eq(doc_close(&a), doc_close(&b));
    cr_expect_str_eq(a.text, "{\"file\":\"x.cmt\",\"alloc_calls\":3,\"peak_bytes\":"
                             "18446744073709551615,\"small\":7,\"zero\":0,\"after\":1}");
    free(a.text);
    free(b.text);
}

Test(output, json_u64s_as_the_first_members_of_an_array_element)
{
    struct doc d;
    doc_open(&d);
    cmt__json_array(&d.j, "rows");
    cmt__json_object(&d.j, NULL);
    CMT__JSON_U64S(&d.j, {"addr", 4096}, {"bytes", 512});
    cmt__json_end_object(&d.j);
    cmt__json_end_array(&d.j);
    cr_expect_str_eq(doc_close(&d), "{\"rows\":[{\"addr\":4096,\"bytes\":512}]}");
    free(d.text);
}

Test(output, or_null_writes_null_for_a_missing_string_a_zero_count_and_a_negative_rank)
{
    struct doc d;
    doc_open(&d);
    cmt__json_string_or_null(&d.j, "host", "node-1");
    cmt__json_string_or_null(&d.j, "job_id", NULL);
    cmt__json_u64_or_null(&d.j, "exact_mb", 4096);
    cmt__json_u64_or_null(&d.j, "smallest_bytes", 0);
    cmt__json_i64_or_null(&d.j, "rank", 0);
    cmt__json_i64_or_null(&d.j, "world_size", -1);
    cr_expect_str_eq(doc_close(&d), "{\"host\":\"node-1\",\"job_id\":null,\"exact_mb\":4096,"
                                    "\"smallest_bytes\":null,\"rank\":0,\"world_size\":null}");
    free(d.text);
}
