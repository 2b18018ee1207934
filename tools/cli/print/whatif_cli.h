/* whatif_cli.h — internal to `cumemtrace whatif`: one finished sweep and its
 * printers (whatif_print.c). */
#ifndef CMT__WHATIF_CLI_H
#define CMT__WHATIF_CLI_H

#include <stdio.h>

#include "whatif.h"
#include "whatif_blocks.h"
#include "whatif_capacity.h"

struct cmt_whatif_run_out {
    const struct cmt_whatif_stream *stream;
    const char *path;
    uint64_t capacity, device_total;
    enum cmt_whatif_capacity_source capacity_source; /* cmt_whatif_capacity_choose's */
    uint64_t oom_own_bytes, oom_free_bytes;          /* source OOM: at the failure */
    enum cmt_model_oom_style oom_style;              /* the wording of the OOM messages */
    bool oom_style_from_trace;    /* chosen by the PyTorch version the trace names */
    struct cmt_whatif_device dev; /* what every replay ran on */
    struct cmt_whatif_result *results;
    size_t count;
    double seconds;   /* wall time of the sweep */
    unsigned threads; /* 0: one per CPU */
    struct cmt_whatif_recommendation rec;
    bool has_exact; /* exact holds the replay of rec.exact_max_split_mb */
    struct cmt_whatif_result exact;
    /* the stream came from allocator-level records: the model's check of itself, else NULL */
    const struct cmt_whatif_selfcheck *check;
};

/* "20GiB", "21556 MiB", "1.5G", plain bytes (binary units, any case).
 * @return 0, or -1 for anything else (0 bytes included). */
int cmt_whatif_parse_bytes(const char *text, uint64_t *out);

/* The capacity as one sentence without line breaks, the same in `whatif` and `html`: "20 GiB
 * = 24 GiB total - 4 GiB in use before the first allocation", "unknown: the trace does not
 * say ...". @return the length of the full text (as snprintf). */
int cmt__whatif_capacity_text(const struct cmt_whatif_capacity *capacity,
                              const struct cmt_whatif_stream *stream, char *buf, size_t len);

/* The recommendation without a capacity: "SETTING reserves the least (peak X). Without ...",
 * the same in `whatif` and `html`. @return as snprintf. */
int cmt__whatif_unknown_capacity_advice(const struct cmt_whatif_result *best, char *buf,
                                        size_t len);

/* When the first out-of-memory failure on dev came from memory other processes held (verdict
 * held_by_others), the capacity becomes what the process had then (cmt_whatif_capacity_held),
 * the same in `whatif` and `html`. @return 1 when it changed cap, else 0. */
struct cmt_oom;
int cmt__whatif_capacity_at_failure(const struct cmt_oom *oom, int32_t dev,
                                    struct cmt_whatif_capacity *cap);

void cmt_whatif_print_text(FILE *f, const struct cmt_whatif_run_out *run);
void cmt_whatif_print_json(FILE *f, const struct cmt_whatif_run_out *run);

/* The self-check (run->check != NULL): its lines, and its "self_check" JSON object
 * (whatif_selfcheck_print.c). */
struct cmt__json;
void cmt__whatif_print_selfcheck(FILE *f, const struct cmt_whatif_run_out *run);
void cmt__whatif_json_selfcheck(struct cmt__json *j, const struct cmt_whatif_run_out *run);

#endif
