/* cmt_search.h — the one binary search over a sorted array, and the one ascending order of
 * uint64_t keys for qsort/bsearch (cmt_u64_ascending).
 *
 *     size_t at;
 *     CMT_LOWER_BOUND(at, d->segments, d->segment_count, .addr, addr);
 *     (at: the first segment whose .addr is not below addr; segment_count when none)
 *     CMT_UPPER_BOUND(at, v, n, , key);
 *     (at: the first element of a plain array v[0 .. n-1] above key)
 *
 * `items[i] member` is the sort key of element i: `member` is a member access such as `.addr`,
 * or nothing for an array of keys; the array is sorted by it, ascending. `items`, `count` and
 * `key` are evaluated more than once (no side effects). `at` is any integer lvalue. */
#ifndef CMT_SEARCH_H
#define CMT_SEARCH_H

#include <stddef.h>
#include <stdint.h>

/* at = the number of leading elements whose key is `op` key (op: < or <=). */
#define CMT__BISECT(at, items, count, member, op, key)           \
    do {                                                         \
        size_t cmt__lo = 0, cmt__hi = (count);                   \
        while (cmt__lo < cmt__hi) {                              \
            size_t cmt__mid = cmt__lo + (cmt__hi - cmt__lo) / 2; \
            if ((items)[cmt__mid] member op(key))                \
                cmt__lo = cmt__mid + 1;                          \
            else                                                 \
                cmt__hi = cmt__mid;                              \
        }                                                        \
        (at) = cmt__lo;                                          \
    } while (0)

/* at = the index of the first element whose key is >= key (count when none). */
#define CMT_LOWER_BOUND(at, items, count, member, key) CMT__BISECT(at, items, count, member, <, key)

/* at = the index of the first element whose key is > key (count when none). */
#define CMT_UPPER_BOUND(at, items, count, member, key) \
    CMT__BISECT(at, items, count, member, <=, key)

/* qsort's and bsearch's comparison of two uint64_t: ascending. */
static inline int cmt_u64_ascending(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

#endif
