/* sites.h — call sites ranked by a measure, grouped and named by their first frame
 * outside allocator internals (frames.h), and their symbolized identity across traces. */
#ifndef CMT_SITES_H
#define CMT_SITES_H

#include <stddef.h>
#include <stdint.h>

#include "replay.h"

struct cmt_ranked_site {
    uint32_t site;         /* the group's largest member (its stack is the one shown) */
    uint64_t bytes, count; /* summed over the group */
};

/* A replay site with a measure, as input to cmt_sites_group. */
struct cmt_site_item {
    uint32_t site, stack;
    uint64_t bytes, count;
};

/* AT_PEAK, LIVE, OWN_PEAK: device memory; HOST_LIVE: pinned host memory live at the end. */
enum cmt_rank_by { CMT_RANK_AT_PEAK, CMT_RANK_LIVE, CMT_RANK_OWN_PEAK, CMT_RANK_HOST_LIVE };

/* Groups items by call site (equal cmt_site_key) and keeps the top `max` groups by bytes,
 * largest first; ties keep the order of their first items. Call it once symbols are read
 * (after the replay). @return how many (ungrouped ranking when out of memory). */
size_t cmt_sites_group(const cmt_reader *r, const struct cmt_site_item *items, size_t n,
                       struct cmt_ranked_site *out, size_t max);

/* The top `max` call sites by the measure (nonzero only), grouped as above. @return how many. */
size_t cmt_sites_rank(const cmt_replay *rp, enum cmt_rank_by by, struct cmt_ranked_site *out,
                      size_t max);

/* A site's identity across traces: its symbolized frames from its call-site frame (the first
 * outside allocator internals) outwards, joined by " <- ". @return buf. */
const char *cmt_site_key(const cmt_reader *r, uint32_t stack, char *buf, size_t size);

#endif
