/* cmt_grow.h — the one way an array grows: doubling, from a first capacity, never shrinking.
 *
 *     struct item *items; size_t count, cap;
 *     if (CMT_GROW(items, cap, count + 1, 64) != 0)
 *         return CMT_ENOMEM;          (items and cap are unchanged)
 *     items[count++] = x;
 *
 * `items` is any pointer lvalue, `cap` a size_t lvalue holding its capacity in elements. */
#ifndef CMT_GROW_H
#define CMT_GROW_H

#include <stddef.h>

/* Makes room for at least `need` elements of `size` bytes in the array whose pointer is at
 * `items_at` (a T **, passed as void *), capacity *cap, doubling from `first` (0 means 16).
 * @return 0 (also when the room is there already), or CMT_ENOMEM (nothing changed; also when
 *         need * size overflows). */
int cmt_grow(void *items_at, size_t *cap, size_t need, size_t size, size_t first);

#define CMT_GROW(items, cap, need, first) \
    cmt_grow(&(items), &(cap), (need), sizeof *(items), (first))

#endif
