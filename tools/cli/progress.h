/* progress.h — internal: one progress line on stderr while a long analysis reads a trace.
 *
 * Shown only when stderr is a terminal and the pass has run for a second: a quick command
 * prints nothing, a pipe or a file never gets the line. The decision and the text take the
 * clock and the terminal flag as arguments, so tests need neither timing nor a terminal. */
#ifndef CMT__PROGRESS_H
#define CMT__PROGRESS_H

#include <stdint.h>
#include <stdio.h>

#include "replay.h"

#define CMT__PROGRESS_DELAY_NS UINT64_C(1000000000) /* nothing before a second */
#define CMT__PROGRESS_EVERY_NS UINT64_C(200000000)  /* then at most 5 lines a second */

struct cmt__progress {
    FILE *f;
    const char *cmd, *path;
    int terminal;       /* f is a terminal (the caller decides; tests pass 1) */
    uint64_t total;     /* bytes of the trace, 0 when unknown */
    uint64_t start_ns;  /* when the pass began */
    uint64_t next_ns;   /* the earliest time of the next line */
    uint32_t countdown; /* steps until the observer next reads the clock */
    int shown;          /* a line is on the terminal (done() erases it) */
    int stage, stages;  /* of a command that reads the trace several times: "pass 2 of 2" */
};

void cmt__progress_init(struct cmt__progress *p, FILE *f, const char *cmd, const char *path,
                        int terminal, uint64_t total, uint64_t now_ns);
/* Draws the line when it is due (terminal, past the delay, not drawn in the last 200 ms).
 * @return 1 when it drew. */
int cmt__progress_update(struct cmt__progress *p, uint64_t done, uint64_t now_ns);
/* Erases a line that was drawn. */
void cmt__progress_done(struct cmt__progress *p);
/* "cumemtrace whatif: big.cmt  42% [########            ] 1.20 GiB of 2.86 GiB, 3.1 s", cut
 * to fit `size` (at most 100 columns); with stages > 1, "big.cmt pass 2 of 2  42% ...", so the
 * second reading of the trace does not look like the first going back. @return buf. */
const char *cmt__progress_text(char *buf, size_t size, const char *cmd, const char *path, int stage,
                               int stages, uint64_t done, uint64_t total, uint64_t elapsed_ns);
/* An observer that feeds p from each step's file offset (the clock is read every 4096 steps). */
struct cmt_observer cmt__progress_observer(struct cmt__progress *p);
/* @return 1 when a progress line may be shown on f: a terminal, and CUMEMTRACE_PROGRESS is not 0. */
int cmt__progress_wanted(FILE *f);
uint64_t cmt__progress_now_ns(void);

#endif
