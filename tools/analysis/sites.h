/* sites.h — internal: call sites ranked by a measure, and their symbolized identity. */
#ifndef CMT__SITES_H
#define CMT__SITES_H

#include <stddef.h>
#include <stdint.h>

#include "replay.h"

struct cmt__ranked {
    uint32_t site;
    uint64_t bytes, count;
};

enum cmt__rank_by { CMT__AT_PEAK, CMT__LIVE, CMT__OWN_PEAK };

/* The top `max` sites by the measure (nonzero only), largest first. @return how many. */
size_t cmt__rank_sites(const cmt_replay *rp, enum cmt__rank_by by, struct cmt__ranked *out,
                       size_t max);

/* A site's identity across traces: its symbolized frames joined by " <- " (innermost first).
 * @return buf. */
const char *cmt__site_key(const cmt_reader *r, uint32_t stack, char *buf, size_t size);

#endif
