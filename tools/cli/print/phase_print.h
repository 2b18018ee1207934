/* phase_print.h — internal: the program's phases (tools/analysis/phases.h) as every command
 * shows them: report's and oom's "by phase" tables, the phase at an OOM, diff by phase, the
 * timeline's phase band, JSON. */
#ifndef CMT__PHASE_PRINT_H
#define CMT__PHASE_PRINT_H

#include <stdio.h>

#include "output.h"
#include "phases.h"

/* Phases a view lists at most (by peak, then bytes allocated). */
#define CMT__PHASES_SHOWN 20

/* "by phase": allocated, peak and still live (leaked) per phase, one line each, under a
 * title; nothing when the trace has no ranges. */
void cmt__phases_text(FILE *f, const struct cmt_phases *ph);
/* The same as a "phases" array (absent without ranges), and "ranges" (instances, marks). */
void cmt__phases_json(struct cmt__json *j, const struct cmt_phases *ph);

/* The failure the phases recorded for an OOM episode of thread tid at t_ns: the first of that
 * thread at or after t_ns (else of any thread; else the last), NULL when none. */
const struct cmt_phase_oom *cmt__phase_oom_at(const struct cmt_phases *ph, uint64_t t_ns,
                                              uint32_t tid);
/* "  phase      train > worker1 > inner" for that failure; nothing without ranges. */
void cmt__phase_oom_text(FILE *f, const struct cmt_phases *ph, uint64_t t_ns, uint32_t tid);
void cmt__phase_oom_json(struct cmt__json *j, const struct cmt_phases *ph, uint64_t t_ns,
                         uint32_t tid);

/* diff by phase: each phase of either run, its peak and bytes allocated in both. */
void cmt__phases_diff_text(FILE *f, const struct cmt_phases *a, const struct cmt_phases *b);
void cmt__phases_diff_json(struct cmt__json *j, const struct cmt_phases *a,
                           const struct cmt_phases *b);

/* The band's phase over [from, to): of the outermost ranges (depth 0, marks aside) that
 * overlap it, the one that covers the most of it. @return its phase index, 0 when none. */
uint32_t cmt__phase_band_at(const struct cmt_phases *ph, uint64_t from, uint64_t to);

/* The text timeline's phase band: one letter per cell of `width` ns (the band's phase, blank
 * for none), then the letters' legend; nothing without ranges. `labelled`: the row starts
 * with "phases" in a 10-wide column (as the allocator's rows), else "phases" ends it. */
void cmt__phase_band_text(FILE *f, const struct cmt_phases *ph, uint64_t width, uint64_t cells,
                          int labelled);

/* The HTML page's band: "phases": [{"n": name, "s": start_ns, "e": end_ns}, ...], the
 * outermost ranges (depth 0, marks aside) in opening order, at most CMT__PHASE_BAND_MAX. */
#define CMT__PHASE_BAND_MAX 20000
void cmt__phase_band_json(struct cmt__json *j, const struct cmt_phases *ph);

#endif
