/* ledger_expect.h — the tests' one comparison of two ledger moments (test_ledger.c,
 * test_fleet.c): a moment taken in one replay against the one a replay asked for its time
 * alone takes. */
#ifndef CMT_TEST_LEDGER_EXPECT_H
#define CMT_TEST_LEDGER_EXPECT_H

#include <criterion/criterion.h>

#include "ledger.h"

static inline void expect_same_moment(const struct cmt_ledger_moment *a,
                                      const struct cmt_ledger_moment *b)
{
    cr_assert_eq(a->t_ns, b->t_ns);
    cr_expect_eq(a->seq, b->seq);
    cr_expect_eq(a->total_bytes, b->total_bytes);
    cr_expect_eq(a->free_measured, b->free_measured);
    cr_expect_eq(a->process_bytes, b->process_bytes);
    cr_expect_eq(a->context_bytes, b->context_bytes);
    cr_expect_eq(a->others_bytes, b->others_bytes);
    cr_expect_eq(a->free_bytes, b->free_bytes);
    cr_expect_eq(a->residual_bytes, b->residual_bytes);
    cr_assert_eq(a->row_count, b->row_count);
    for (size_t i = 0; i < a->row_count; i++) {
        const struct cmt_ledger_row *x = &a->rows[i], *y = &b->rows[i];
        cr_expect(x->type == y->type && x->owner == y->owner && x->stack == y->stack &&
                      x->bytes == y->bytes && x->count == y->count,
                  "row %zu: %d %d %u %llu %llu vs %d %d %u %llu %llu", i, x->type, x->owner,
                  x->stack, (unsigned long long)x->bytes, (unsigned long long)x->count, y->type,
                  y->owner, y->stack, (unsigned long long)y->bytes, (unsigned long long)y->count);
    }
}

#endif
