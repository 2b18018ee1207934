/* ledger_print.h — internal: the ledger (tools/analysis/ledger.h) as the commands present it:
 * text lines, a JSON object, and the pass that takes it. */
#ifndef CMT__LEDGER_PRINT_H
#define CMT__LEDGER_PRINT_H

#include <stddef.h>

#include "ledger.h"
#include "output.h"
#include "pass.h"

/* A row's label: "live tensors (pytorch-cuda-caching)", "NCCL", "user code: f (x.c:3)", ...
 * a: the allocator-level view (allocator names; NULL: ids). @return buf. */
const char *cmt__ledger_row_text(const cmt_reader *r, const cmt_alloc *a,
                                 const struct cmt_ledger_row *row, char *buf, size_t size);
/* Prints moment m as `indent`-indented lines under the heading "ledger of DEVICE at WHEN":
 * one line per row with its bytes and share of the capacity, then the residual. */
void cmt__ledger_print(const struct cmt__pass *p, const struct cmt_ledger_moment *m,
                       const char *when, const char *indent);
/* Writes m as the object `key` {dev, t_ns, seq, total_bytes, free_measured, process_bytes,
 * context_bytes, others_bytes, free_bytes, residual_bytes, rows: [{row, label, bytes, ...}]}. */
void cmt__ledger_json(struct cmt__json *j, const char *key, const struct cmt__pass *p,
                      const struct cmt_ledger_moment *m);

/* The HTML page's `ledger` key: per device {dev, t: [ns...], m: [{total, residual, rows:
 * [[row key, label, bytes], ...]}]}, the moments taken at times (CMT_LEDGER_AT_TIME) in time
 * order; a: the allocator view the ledger read (allocator names). Nothing when l is NULL. */
void cmt__ledger_page_json(struct cmt__json *j, const struct cmt__pass *p, const cmt_alloc *a,
                           const cmt_ledger *l);
/* The times the page takes the ledger at: the ends of the chart's buckets (`buckets` of them
 * at most, each a power-of-two width, as site_timeline.h makes them up to end_t), every k-th so
 * that at most `count` are taken, the last at end_t, and the peak among them, ascending, into
 * times (count + 1 at most). @return how many. */
size_t cmt__ledger_page_times(uint64_t end_t, uint64_t peak_t, uint32_t buckets, size_t count,
                              uint64_t *times);

/* Parses a time from the trace's start: a number with a unit ns, us, ms, s (the default) or
 * min ("12.5s", "800ms", "3"). @return 0 with *ns set, or -1. */
int cmt__parse_time(const char *text, uint64_t *ns);

/* @return the moment taken at the out-of-memory failure of device dev at t_ns, or NULL. */
const struct cmt_ledger_moment *cmt__ledger_at_oom(const cmt_ledger *l, int32_t dev, uint64_t t_ns);

/* One pass over the trace at path with the ledger (options o) as an observer besides the
 * analyses of `want`: as cmt__pass_open + cmt__pass_replay; `second`: the command's second
 * pass over the trace (damage was said already). *ledger is NULL when it could not
 * be made (out of memory: said on stderr; the pass still runs). `extra`, when not NULL: one
 * more observer after the ledger (copied). @return as cmt__pass_run. */
int cmt__ledger_pass(struct cmt__pass *p, const char *cmd, const char *path, unsigned want,
                     const struct cmt_ledger_options *o, int second, cmt_ledger **ledger,
                     const struct cmt_observer *extra);

/* The ledger of every device at time t (the state after every event at or before it) of the
 * trace of the finished pass p, replayed again from its start and only up to t: p's reader is
 * rewound (its tables are kept) and stopped after the moment, p's replay and views are left
 * as they are. For a moment known only after a first pass (report's peak). *ledger is NULL
 * when it could not be made. @return 0, or CMT_ENOMEM. */
int cmt__ledger_rerun_to(const struct cmt__pass *p, uint64_t t, cmt_ledger **ledger);

/* The ledger of every device at time t of a trace already read to its end once (reader: its
 * tables and symbols are known; borrowed), replayed from its start and only up to t: p is set
 * up as a pass over it (its replay and allocator views at t, for the printers), with p->reader
 * the borrowed reader, so set p->reader to NULL before cmt__pass_close(p). *ledger is NULL
 * when it could not be made. @return 0, or 1 after saying it ran out of memory. */
int cmt__ledger_pass_to(struct cmt__pass *p, const char *cmd, const char *path, cmt_reader *reader,
                        uint64_t t, cmt_ledger **ledger);

#endif
