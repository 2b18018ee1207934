/* cmd_common.h — internal: the replay loop every command runs, with its consumers. */
#ifndef CMT__CMD_COMMON_H
#define CMT__CMD_COMMON_H

#include <stdio.h>

#include "oom.h"
#include "replay.h"

struct cmt_timeline;

/* One pass over a trace: opens it, replays it to the end feeding the consumers that are
 * non-NULL, warns once about damage. @return 0 (also for a damaged trace that was read up to
 * the damage), or 1 after printing why the trace could not be read at all. */
struct cmt__pass {
    const char *cmd, *path;
    cmt_reader *reader;
    cmt_replay *replay;
    cmt_oom *oom;                  /* NULL: no OOM analysis */
    struct cmt_timeline *timeline; /* NULL: no timeline */
    int damage;                    /* the damage code, 0 when sound */
};
int cmt__pass_run(struct cmt__pass *p, const char *cmd, const char *path, int want_oom,
                  struct cmt_timeline *timeline);
void cmt__pass_close(struct cmt__pass *p);

/* Writes the timeline of a finished pass as an SVG chart (timeline_svg.c).
 * @return 0, or -1 when writing to f failed. */
int cmt__timeline_svg(FILE *f, const struct cmt__pass *pass, const struct cmt_timeline *tl);

/* Device label: "GPU 0 (NVIDIA H100)" or "device -1 (unknown)". @return buf. */
const char *cmt__device_label(const cmt_replay *rp, int32_t dev, char *buf, size_t size);

#endif
