/* pass.h — internal: the replay loop every command runs, with its consumers. */
#ifndef CMT__CMD_COMMON_H
#define CMT__CMD_COMMON_H

#include "diff.h"
#include <stdio.h>

#include "allocator.h"
#include "oom.h"
#include "phases.h"
#include "replay.h"
#include "report.h"

struct cmt_timeline;

/* One pass over a trace: opens it, replays it to the end feeding the analyses asked for
 * (CMT__PASS_* and a non-NULL timeline) as observers of one replay, warns once about damage.
 * @return 0 (also for a damaged trace that was read up to the damage), or 1 after printing
 * why the trace could not be read at all. */
enum { CMT__PASS_OOM = 1, CMT__PASS_REPORT = 2, CMT__PASS_DIFF = 4 };
struct cmt__pass {
    const char *cmd, *path;
    cmt_reader *reader;
    cmt_replay *replay;
    cmt_alloc *alloc;              /* the allocator-level view (always kept) */
    struct cmt_phases phases;      /* the program's ranges and their memory (always kept) */
    cmt_oom *oom;                  /* NULL: no OOM analysis */
    struct cmt_timeline *timeline; /* NULL: no timeline */
    struct cmt_report report;      /* with CMT__PASS_REPORT */
    struct cmt_diff_side diff;     /* with CMT__PASS_DIFF */
    int damage;                    /* the damage code, 0 when sound */
    int quiet_damage;   /* set between open and replay: a second pass does not warn again */
    int quiet_progress; /* set between open and replay: no progress line (passes in parallel) */
    int stage, stages;  /* set between open and replay: "pass 2 of 2" on the progress line */
};
int cmt__pass_run(struct cmt__pass *p, const char *cmd, const char *path, unsigned want,
                  struct cmt_timeline *timeline);
/* cmt__pass_run in two steps, for observers that need the reader before the replay:
 * cmt__pass_open() opens the trace (@return 0, or 1 after printing why it cannot be read:
 * nothing to close); cmt__pass_replay() runs the pass with `nextra` more observers after the
 * analyses' (copied: their ctx must outlive the pass); p->alloc, when the caller made it
 * between the two (an extra observer reads it), is used and closed with the pass.
 * @return as cmt__pass_run. */
int cmt__pass_open(struct cmt__pass *p, const char *cmd, const char *path);
int cmt__pass_replay(struct cmt__pass *p, unsigned want, struct cmt_timeline *timeline,
                     const struct cmt_observer *extra, size_t nextra);
void cmt__pass_close(struct cmt__pass *p);
/* The exit status a finished pass leaves its command: 1 when the replay stopped on an error that
 * is not damage (out of memory: the results shown are partial) or on damage before any event,
 * else 0 (cmt__damage_status). */
int cmt__pass_status(const struct cmt__pass *p);

/* `cumemtrace CMD [--json] FILE`: parses the arguments (cmt__parse_json_file) and runs the
 * pass. @return 1 with *p open (cmt__pass_close it) and *json set; 0 when the command is
 * over, with *status its exit status (help printed, a usage error, an unreadable trace). */
int cmt__pass_from_args(struct cmt__pass *p, int argc, char **argv, const char *cmd,
                        const char *usage, unsigned want, int *json, int *status);

/* Writes the timeline of a finished pass as an SVG chart (timeline_svg.c); `samples` (NULL:
 * none) gives each device's capacity and the memory held by others.
 * @return 0, or -1 when writing to f failed. */
struct cmt_site_timeline;
int cmt__timeline_svg(FILE *f, const struct cmt__pass *pass, const struct cmt_timeline *tl,
                      const struct cmt_site_timeline *samples);

/* Device label: "GPU 0 (NVIDIA H100)" or "device -1 (unknown)". @return buf. */
const char *cmt__device_label(const cmt_replay *rp, int32_t dev, char *buf, size_t size);

#endif
