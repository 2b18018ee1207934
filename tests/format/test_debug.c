/* test_debug.c — cmt_debug.h: off (the default build), CMT_ASSERT and CMT_DEBUG_LOG evaluate
 * nothing; on (-DCMT_DEBUG=ON), CMT_ASSERT evaluates its condition once. */
#include <criterion/criterion.h>

#include "cmt_debug.h"

Test(debug, evaluates_arguments_only_when_on)
{
    int n = 0;
    CMT_ASSERT(++n == 1);
#ifdef CMT_DEBUG
    cr_assert_eq(n, 1);
#else
    CMT_DEBUG_LOG("%d", ++n);
    cr_assert_eq(n, 0);
#endif
}
