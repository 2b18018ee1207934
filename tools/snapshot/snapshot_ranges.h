/* snapshot_ranges.h — a set of address ranges: what the recorded window of a snapshot mapped
 * into expandable segments (this folder only).
 *
 * The window's segment_map and segment_unmap entries are ranges, not objects: one map may be
 * unmapped in pieces, and pieces of several maps make one dump-time segment. What the window
 * unmaps without having mapped it, and what a dump-time segment holds that the window did not
 * map, was mapped before the window. */
#ifndef CMT_SNAPSHOT_RANGES_H
#define CMT_SNAPSHOT_RANGES_H

#include <stddef.h>
#include <stdint.h>

/* Disjoint, non-adjacent [start, end) ranges sorted by address. */
struct cmt__ranges {
    struct cmt__range {
        uint64_t start, end;
    } * v;
    size_t n, cap;
};

/* Called with each part [start, end) of a range that the set does not hold, in address order.
 * @return 0 to go on, else an error code that is passed back. */
typedef int (*cmt__range_fn)(void *ctx, uint64_t start, uint64_t end);

/* Adds [start, end) (joining what it overlaps or touches). @return 0 or CMT_ENOMEM. */
int cmt__ranges_add(struct cmt__ranges *r, uint64_t start, uint64_t end);

/* Calls fn for each part of [start, end) that r does not hold. @return 0 or fn's code. */
int cmt__ranges_gaps(const struct cmt__ranges *r, uint64_t start, uint64_t end, cmt__range_fn fn,
                     void *ctx);

/* Calls fn for each part of [start, end) that r does not hold, then takes [start, end) out of r.
 * @return 0, fn's code, or CMT_ENOMEM. */
int cmt__ranges_remove(struct cmt__ranges *r, uint64_t start, uint64_t end, cmt__range_fn fn,
                       void *ctx);

void cmt__ranges_free(struct cmt__ranges *r);

#endif
