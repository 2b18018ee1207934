/* diff.h — two runs side by side: what each run's replay gives a comparison (its call sites at
 * the peak by symbolized identity, the fragmentation at the peak), and the call sites of both
 * matched by that identity. The figures of each run are its replay's (replay.h) and its oom
 * episodes' (oom.h); the CLI presents them. */
#ifndef CMT_DIFF_H
#define CMT_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "replay.h"

/* A call site with bytes at the process peak, named across traces (cmt_site_key). */
struct cmt_diff_site {
    char *key;
    uint32_t stack; /* leaf STACK_NODE id in its own trace */
    uint64_t bytes;
};

/* What one run brings to a comparison, filled by its observer's finish. */
struct cmt_diff_side {
    struct cmt_diff_site *sites; /* in replay site order */
    size_t site_count;
    int32_t peak_dev;                      /* the device with the highest peak (-1 when none) */
    int have_frag;                         /* frag_at_peak is set */
    struct cmt_fragmentation frag_at_peak; /* of peak_dev */
};

/* The side as a replay observer (finish only). Free it with cmt_diff_side_free. */
struct cmt_observer cmt_diff_observer(struct cmt_diff_side *side);
void cmt_diff_side_free(struct cmt_diff_side *side);

/* A call site of either run, matched by key: bytes at each run's peak. */
struct cmt_site_delta {
    const char *key;           /* owned by the sides */
    uint32_t stack_a, stack_b; /* 0 where the run has no such site */
    uint64_t a, b;
};

/* Matches the sites of two runs and orders them by the size of their change, largest first.
 * @return 0 with *out (free() it) and *count set, or CMT_ENOMEM. */
int cmt_diff_sites(const struct cmt_diff_side *a, const struct cmt_diff_side *b,
                   struct cmt_site_delta **out, size_t *count);

#endif
