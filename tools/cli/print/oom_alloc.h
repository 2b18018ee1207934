/* oom_alloc.h — internal: how `oom` presents an episode's allocator-level view (text, JSON). */
#ifndef CMT__OOM_ALLOC_H
#define CMT__OOM_ALLOC_H

#include <stdint.h>

#include "oom.h"
#include "output.h"

/* The episode's "allocator" JSON object (docs/analysis.md lists its keys); e->alloc != NULL. */
void cmt__oom_json_allocator(struct cmt__json *j, const cmt_reader *r,
                             const struct cmt_oom_episode *e);
/* The allocator lines of an episode's text, with the recommendation; e->alloc != NULL. */
void cmt__oom_print_allocator(const cmt_reader *r, const struct cmt_oom_episode *e,
                              const char *dev);
/* The max_split_size_mb value to suggest against a failing request: the largest multiple of
 * 512 MiB below it (of 20 MiB below 512 MiB), at least 20. */
uint64_t cmt__oom_suggest_max_split_mb(uint64_t request_bytes);

#endif
