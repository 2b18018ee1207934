/* Tests of format/cmt_grow.* (the one array-growth helper). */
#include <criterion/criterion.h>
#include <stdint.h>

#include "cmt_error.h"
#include "cmt_grow.h"

Test(grow, doubles_from_the_first_capacity_and_keeps_the_elements)
{
    uint64_t *v = NULL;
    size_t cap = 0;
    cr_assert_eq(CMT_GROW(v, cap, 1, 4), 0);
    cr_assert_eq(cap, 4);
    for (uint64_t i = 0; i < 4; i++)
        v[i] = i * 7;
    cr_assert_eq(CMT_GROW(v, cap, 4, 4), 0, "room already there");
    cr_assert_eq(cap, 4);
    cr_assert_eq(CMT_GROW(v, cap, 9, 4), 0);
    cr_assert_eq(cap, 16, "4 -> 8 -> 16 to hold 9");
    for (uint64_t i = 0; i < 4; i++)
        cr_assert_eq(v[i], i * 7);
    free(v);
}

Test(grow, refuses_sizes_that_overflow_and_changes_nothing)
{
    uint64_t *v = NULL;
    size_t cap = 0;
    cr_assert_eq(CMT_GROW(v, cap, 2, 2), 0);
    uint64_t *before = v;
    cr_assert_eq(CMT_GROW(v, cap, SIZE_MAX / 4, 2), CMT_ENOMEM);
    cr_assert_eq(v, before);
    cr_assert_eq(cap, 2);
    cr_assert_eq(CMT_GROW(v, cap, SIZE_MAX, 2), CMT_ENOMEM);
    cr_assert_eq(cap, 2);
    free(v);
}
