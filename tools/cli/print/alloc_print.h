/* alloc_print.h — internal: the allocator-level figures and settings as report, diff and
 * timeline show them (only for traces with allocator-level records: the output of other
 * traces does not change). */
#ifndef CMT__ALLOC_PRINT_H
#define CMT__ALLOC_PRINT_H

#include <stddef.h>
#include <stdint.h>

#include "allocator.h"
#include "output.h"
#include "pass.h"

/* The allocator figures of dev summed over its allocators: peaks are each allocator's own
 * (exact with one allocator). @return 0 when no allocator has state on dev. */
int cmt__alloc_totals(const cmt_alloc *a, int32_t dev, struct cmt_alloc_figures *now,
                      struct cmt_alloc_figures *peak);
/* The settings the run's allocators used: "NAME VERSION: CONF" of each ALLOCATOR record's
 * allocator ("default settings" for an empty conf), joined by "; "; without ALLOCATOR records
 * but with allocator events, the PYTORCH_CUDA_ALLOC_CONF (or PYTORCH_ALLOC_CONF) ENV record
 * ("PYTORCH_CUDA_ALLOC_CONF=..., from the environment"). @return buf, or NULL when the trace
 * has no allocator-level records. */
const char *cmt__alloc_settings_text(const struct cmt__pass *p, char *buf, size_t size);
/* "allocator": {...} of one device (docs/analysis.md, report). Nothing when no state on dev. */
void cmt__alloc_json_device(struct cmt__json *j, const cmt_alloc *a, int32_t dev);
/* "allocator_settings": [{id, name, version, conf, source}] (nothing without records). */
void cmt__alloc_json_settings(struct cmt__json *j, const struct cmt__pass *p);

/* "allocator peak 14.00 MiB allocated, 40.00 MiB reserved at 5.00 us[ on GPU 0 (the largest
 * of 2 devices)], 15.00 MiB allocated at the end" (cmt_alloc_summarize); when the two peaks
 * were reached at different times, each has its own: "allocator peak 14.00 MiB allocated at
 * 5.00 us, 40.00 MiB reserved at 3.00 us, ...". @return buf, or NULL without allocator state. */
const char *cmt__alloc_headline_text(const struct cmt__pass *p, char *buf, size_t size);
/* key: {peak_allocated_bytes, peak_reserved_bytes, peak_allocated_t_ns, peak_reserved_t_ns, dev,
 * allocated_bytes_at_end, reserved_bytes_at_end, events} (nothing without allocator state). */
void cmt__alloc_json_headline(struct cmt__json *j, const char *key, const cmt_alloc *a);

#endif
