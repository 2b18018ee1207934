/* frag.h — internal: fragmentation measures with buffers kept between calls, for a caller that
 * measures often (the timeline's hole sampling); cmt_replay_fragmentation (replay.h) is the
 * same measure with buffers of its own. */
#ifndef CMT__FRAG_H
#define CMT__FRAG_H

#include <stddef.h>
#include <stdint.h>

#include "replay.h"

/* One address range of the live set. */
struct cmt__frag_range {
    uint64_t addr, size;
};

/* A growing array of ranges. */
struct cmt__frag_ranges {
    struct cmt__frag_range *v;
    size_t n, cap;
};

/* The buffers of a measure: zero-initialise, reuse, cmt__frag_scratch_free. */
struct cmt__frag_scratch {
    struct cmt__frag_ranges allocs, va, maps; /* the live set, by what it takes part in */
    struct cmt__frag_ranges tmp;              /* the sort's other half */
    size_t *count, count_cap;                 /* the sort's digit counts, a row a pass */
};

/* Measures the current state of device dev as cmt_replay_fragmentation does, into *out,
 * keeping the buffers in *s for the next call (they only grow).
 * @return 0 or CMT_ENOMEM (*out is then all 0; *s stays valid). */
int cmt__frag_measure(const cmt_replay *rp, int32_t dev, struct cmt__frag_scratch *s,
                      struct cmt_fragmentation *out);
/* Frees the buffers of *s and zeroes it. */
void cmt__frag_scratch_free(struct cmt__frag_scratch *s);

#endif
