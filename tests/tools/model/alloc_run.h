/* alloc_run.h — a run of PyTorch's allocator as the trace would hold it: a stream of tensors
 * replayed through the caching-allocator model, its segments (the model's device hooks),
 * blocks and out-of-memory failures written as allocator-level records, and optionally the
 * driver calls the shim would record beside them. What the model did is then exactly what
 * the records say, so whatif's self-check must agree with every segment. */
#ifndef CMT_TEST_ALLOC_RUN_H
#define CMT_TEST_ALLOC_RUN_H

#include "model_scenario.h"
#include "trace_builder.h"

/* Writes the whole trace into b (begun and finished here): a device of `total` bytes of which
 * the allocator may get `capacity`, settings `conf`, the events (each tensor's stack a Python
 * frame "step_K train.py:L"). An allocation that fails is recorded as the allocator's `oom`
 * (with_driver: also the failed cuMemAlloc twice and the OOM sample) and the run goes on. */
void alloc_run_record(struct tb *b, const char *conf, uint64_t capacity, uint64_t total,
                      const struct cmt_model_event *events, size_t n, uint32_t id_count,
                      int with_driver);

#endif
