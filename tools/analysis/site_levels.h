/* site_levels.h — finer levels of a device's stacked series (site_timeline.h) in windows
 * around chosen moments (the peak, out-of-memory failures), so that a chart zoomed into one
 * draws more detail, down to single events.
 *
 * Each window is a nest of levels around one centre: level k has buckets 16^k times narrower
 * than the series' own (powers of two, at least 1 ns) and spans `points` of them, so every
 * level holds about as many points as the coarse series. Like the series' buckets, each keeps
 * the state at its highest live_bytes (the groups' bytes then) and at its end, so a peak is
 * exact at every level. Outside its span a level holds nothing: the page draws the coarser
 * level there and says so. The levels read the groups' bytes of the series they follow: their
 * observer runs after that series' observer, on the same replay. */
#ifndef CMT_SITE_LEVELS_H
#define CMT_SITE_LEVELS_H

#include <stddef.h>
#include <stdint.h>

#include "site_timeline.h"

#define CMT_SITE_LEVELS_MAX 48 /* levels over all windows */

struct cmt_site_level {
    int32_t dev;
    uint32_t window;     /* the centre's index, in the order given */
    uint64_t t_lo, t_hi; /* the span: [t_lo, t_hi) */
    uint64_t width;      /* ns per bucket: a power of two */
    unsigned width_shift;
    uint32_t points;                          /* buckets from t_lo */
    struct cmt_site_timeline_point *p;        /* only live_bytes, t_ns, last_*, oom, used are set */
    uint64_t *group_bytes, *last_group_bytes; /* per point, group_count values */
    /* the state when the span opens (after the last event before it) */
    uint64_t entry_live_bytes, *entry_groups;
    int entered; /* an event at or after t_lo was seen */
};

struct cmt__site_levels_prev { /* a device's state after its last event */
    int32_t dev;
    uint64_t live_bytes, *groups;
};

struct cmt_site_levels {
    const struct cmt_site_timeline *series; /* followed, not owned */
    uint32_t group_count;
    struct cmt_site_level levels[CMT_SITE_LEVELS_MAX];
    uint32_t count;
    struct cmt__site_levels_prev prev[CMT_SITE_LEVELS_MAX]; /* the levels' devices */
    uint32_t prev_count;
    int failed; /* out of memory */
};

/* Plans the windows: for each centre (time, device) the nest of levels whose bucket is the
 * series' width at the end of a trace ending at `end_t_ns` divided by 16, 256, ... down to
 * 1 ns, each spanning `points` buckets around the centre (clipped at 0). Centres after the first that fall inside
 * an earlier centre's finest span add nothing. At most CMT_SITE_LEVELS_MAX levels in all.
 * @return 0 or CMT_ENOMEM (cmt_site_levels_free it either way). */
int cmt_site_levels_init(struct cmt_site_levels *lv, const struct cmt_site_timeline *series,
                         const uint64_t *centre_t_ns, const int32_t *centre_dev, size_t centres,
                         uint64_t end_t_ns, uint32_t points);
void cmt_site_levels_free(struct cmt_site_levels *lv);
/* @return point i's group values of level l; last: at the bucket's end. */
const uint64_t *cmt_site_level_groups(const struct cmt_site_levels *lv,
                                      const struct cmt_site_level *l, uint32_t i, int last);
/* The levels as a replay observer: after the followed series' observer. */
struct cmt_observer cmt_site_levels_observer(struct cmt_site_levels *lv);

#endif
