/* Tests of format/cmt_search.h (the one binary search over a sorted array). */
#include <criterion/criterion.h>
#include <stdint.h>

#include "cmt_search.h"

struct place {
    int32_t dev;
    uint64_t addr;
};

Test(search, lower_bound_finds_the_first_not_below_the_key)
{
    const struct place v[] = {{0, 16}, {0, 32}, {0, 32}, {1, 48}};
    size_t at = 99;
    CMT_LOWER_BOUND(at, v, 4, .addr, 32);
    cr_assert_eq(at, 1, "the first of two equal keys");
    CMT_LOWER_BOUND(at, v, 4, .addr, 15);
    cr_assert_eq(at, 0);
    CMT_LOWER_BOUND(at, v, 4, .addr, 33);
    cr_assert_eq(at, 3);
    CMT_LOWER_BOUND(at, v, 4, .addr, 49);
    cr_assert_eq(at, 4, "past the end: count");
    CMT_LOWER_BOUND(at, v, 4, .dev, -1);
    cr_assert_eq(at, 0, "a signed key");
    CMT_LOWER_BOUND(at, v, 0, .addr, 32);
    cr_assert_eq(at, 0, "an empty array");
}

Test(search, upper_bound_passes_the_equal_keys)
{
    const uint64_t v[] = {1, 3, 3, 5};
    uint32_t at = 99;
    CMT_UPPER_BOUND(at, v, 4, , 3);
    cr_assert_eq(at, 3);
    CMT_UPPER_BOUND(at, v, 4, , 0);
    cr_assert_eq(at, 0);
    CMT_UPPER_BOUND(at, v, 4, , 5);
    cr_assert_eq(at, 4);
    CMT_LOWER_BOUND(at, v, 4, , 3);
    cr_assert_eq(at, 1, "a plain array of keys");
}
