/* Tests of whatif_capacity.c: the one capacity choice of `whatif` and `html`. */
#include <criterion/criterion.h>

#include "cmt_error.h"
#include "whatif_capacity.h"

#define GIB ((uint64_t)1 << 30)

static struct cmt_whatif_stream stream_with(uint64_t total, uint64_t free_bytes)
{
    struct cmt_whatif_stream s = {0};
    s.device_total = total;
    s.device_free = free_bytes;
    s.has_capacity = total > 0 && free_bytes > 0 && free_bytes <= total;
    return s;
}

Test(whatif_capacity, the_given_capacity_comes_first)
{
    struct cmt_whatif_stream s = stream_with(24 * GIB, 20 * GIB);
    struct cmt_whatif_capacity c;
    cr_assert_eq(cmt_whatif_capacity_choose(&s, 2 * GIB, &c), 0);
    cr_expect_eq(c.capacity, 2 * GIB);
    cr_expect_eq(c.device_total, 24 * GIB);
    cr_expect_eq(c.source, CMT_WHATIF_CAPACITY_GIVEN);
    cr_expect_str_eq(cmt_whatif_capacity_source_name(c.source), "option");
    /* more than the device: the device is taken to be as large */
    cr_assert_eq(cmt_whatif_capacity_choose(&s, 40 * GIB, &c), 0);
    cr_expect_eq(c.device_total, 40 * GIB);
}

Test(whatif_capacity, else_what_the_trace_says_was_free)
{
    struct cmt_whatif_stream s = stream_with(24 * GIB, 20 * GIB);
    struct cmt_whatif_capacity c;
    cr_assert_eq(cmt_whatif_capacity_choose(&s, 0, &c), 0);
    cr_expect_eq(c.capacity, 20 * GIB);
    cr_expect_eq(c.device_total, 24 * GIB);
    cr_expect_str_eq(cmt_whatif_capacity_source_name(c.source), "trace");
}

Test(whatif_capacity, else_no_limit_and_unknown)
{
    /* a free figure without a total is not a capacity either */
    struct cmt_whatif_stream s = stream_with(0, 20 * GIB);
    struct cmt_whatif_capacity c;
    cr_assert_eq(cmt_whatif_capacity_choose(&s, 0, &c), 0);
    cr_expect_eq(c.capacity, CMT_WHATIF_NO_LIMIT);
    cr_expect_eq(c.device_total, CMT_WHATIF_NO_LIMIT);
    cr_expect_eq(c.source, CMT_WHATIF_CAPACITY_UNKNOWN);
    cr_expect_str_eq(cmt_whatif_capacity_source_name(c.source), "unknown");
}

Test(whatif_capacity, the_default_device_checks_the_other_address_policy)
{
    struct cmt_whatif_capacity c = {
        .capacity = 3 * GIB, .device_total = 4 * GIB, .source = CMT_WHATIF_CAPACITY_TRACE};
    struct cmt_whatif_device d = cmt_whatif_capacity_device(&c);
    cr_expect_eq(d.capacity, 3 * GIB);
    cr_expect_eq(d.device_total, 4 * GIB);
    cr_expect_eq(d.memory_fraction, 0.0);
    cr_expect(d.check_other_policy);
}

Test(whatif_capacity, null_arguments_are_refused)
{
    struct cmt_whatif_stream s = stream_with(0, 0);
    struct cmt_whatif_capacity c;
    cr_expect_eq(cmt_whatif_capacity_choose(NULL, 0, &c), CMT_EINVALID);
    cr_expect_eq(cmt_whatif_capacity_choose(&s, 0, NULL), CMT_EINVALID);
}
