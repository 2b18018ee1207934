/* export.h — internal: `cumemtrace export`'s formats (cmd_export.c parses the arguments and
 * runs the pass; one file per format presents what the analyses returned). docs/export.md
 * documents every format, table and column. */
#ifndef CMT__EXPORT_H
#define CMT__EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "export/memory_viz_state.h"
#include "output.h"
#include "pass.h"
#include "replay.h"

/* The formats: X(id, name). */
#define CMT__EXPORT_FORMATS(X)  \
    X(PERFETTO, "perfetto")     \
    X(COLLAPSED, "collapsed")   \
    X(MEMORY_VIZ, "memory-viz") \
    X(CSV, "csv")               \
    X(JSONL, "jsonl")           \
    X(PARQUET, "parquet")

enum cmt__export_format {
#define CMT__EXPORT_FORMAT_ENUM(id, name) CMT__EXPORT_##id,
    CMT__EXPORT_FORMATS(CMT__EXPORT_FORMAT_ENUM)
#undef CMT__EXPORT_FORMAT_ENUM
        CMT__EXPORT_FORMAT_COUNT
};

/* The collapsed format's weights: X(id, name). */
#define CMT__EXPORT_WEIGHTS(X) \
    X(PEAK, "peak")            \
    X(LEAKED, "leaked")        \
    X(COUNT, "count")

enum cmt__export_weight {
#define CMT__EXPORT_WEIGHT_ENUM(id, name) CMT__EXPORT_WEIGHT_##id,
    CMT__EXPORT_WEIGHTS(CMT__EXPORT_WEIGHT_ENUM)
#undef CMT__EXPORT_WEIGHT_ENUM
};

/* The tables of csv and jsonl: X(id, name). */
#define CMT__EXPORT_TABLES(X) \
    X(EVENTS, "events")       \
    X(SITES, "sites")         \
    X(EPISODES, "episodes")   \
    X(PROCESSES, "processes") \
    X(RUNS, "runs")

enum cmt__export_table {
#define CMT__EXPORT_TABLE_ENUM(id, name) CMT__EXPORT_TABLE_##id,
    CMT__EXPORT_TABLES(CMT__EXPORT_TABLE_ENUM)
#undef CMT__EXPORT_TABLE_ENUM
        CMT__EXPORT_TABLE_COUNT
};

/* The partitioned export's compression: X(id, name, suffix of the part files). zstd first:
 * the default (docs/fleet.md says why). */
#define CMT__EXPORT_CODECS(X) \
    X(ZSTD, "zstd", ".zst")   \
    X(NONE, "none", "")

enum cmt__export_codec {
#define CMT__EXPORT_CODEC_ENUM(id, name, suffix) CMT__EXPORT_CODEC_##id,
    CMT__EXPORT_CODECS(CMT__EXPORT_CODEC_ENUM)
#undef CMT__EXPORT_CODEC_ENUM
        CMT__EXPORT_CODEC_COUNT
};

/* The most traces the partitioned export converts at once (--jobs). */
#define CMT__EXPORT_MAX_JOBS 64

/* --from, --to, --device: the part of a trace perfetto and memory-viz write. */
struct cmt__export_window {
    uint64_t from_ns, to_ns; /* inclusive; to_ns UINT64_MAX: the end */
    int32_t device;          /* -1: every device */
};
static inline int cmt__export_window_time(const struct cmt__export_window *w, uint64_t t_ns)
{
    return t_ns >= w->from_ns && t_ns <= w->to_ns;
}
static inline int cmt__export_window_dev(const struct cmt__export_window *w, int32_t dev)
{
    return w->device < 0 || dev == w->device;
}

/* memory-viz keeps each device's last entries, as PyTorch's ring does: the max_entries that
 * PyTorch's memory_viz guide passes to _record_memory_history (its own default is unbounded). */
#define CMT__EXPORT_MEMVIZ_MAX_ENTRIES 100000

struct cmt__export_options {
    enum cmt__export_format format;
    enum cmt__export_weight weight; /* collapsed */
    enum cmt__export_table table;   /* csv, jsonl without --partitioned */
    uint64_t min_slice_bytes;       /* perfetto: allocations drawn as slices */
    const char *run;                /* --run: the run id of every trace (NULL: derived) */
    int with_events;                /* --partitioned: also the events table */
    enum cmt__export_codec codec;   /* --partitioned: --compress */
    unsigned jobs;                  /* --partitioned: traces converted at once; 0: the cores */

    /* ---- windows and caps (perfetto, memory-viz) ---- */
    struct cmt__export_window window; /* --from, --to, --device */
    int64_t rank;                     /* --rank: the trace of that rank among those given, -1 */
    uint64_t max_entries;             /* memory-viz: per device, 0 all */
};

/* A buffer in front of a FILE for the exports' hot paths (a row or a counter per event): bytes,
 * decimal numbers and JSON strings without stdio's per-call locking and format parsing.
 * cmt__out_flush() before writing to f any other way, and at the end. */
struct cmt__out {
    FILE *f;
    size_t n;
    char buf[1 << 16];
};
void cmt__out_init(struct cmt__out *o, FILE *f);
void cmt__out_flush(struct cmt__out *o);
static inline void cmt__out_bytes(struct cmt__out *o, const void *p, size_t n)
{
    if (o->n + n > sizeof o->buf) {
        cmt__out_flush(o);
        if (n > sizeof o->buf) {
            fwrite(p, 1, n, o->f);
            return;
        }
    }
    __builtin_memcpy(o->buf + o->n, p, n);
    o->n += n;
}
static inline void cmt__out_char(struct cmt__out *o, char c)
{
    if (o->n == sizeof o->buf)
        cmt__out_flush(o);
    o->buf[o->n++] = c;
}
static inline void cmt__out_str(struct cmt__out *o, const char *s)
{
    cmt__out_bytes(o, s, __builtin_strlen(s));
}
void cmt__out_u64(struct cmt__out *o, uint64_t v);
void cmt__out_i64(struct cmt__out *o, int64_t v);
/* s as a JSON string literal, escaped by cmt__json_escape (escape.h). */
void cmt__out_quote(struct cmt__out *o, const char *s);
/* s as a CSV cell (quoted when it holds a comma, quote, line break or is empty; control
 * characters as spaces); formula: with a leading "'" (cmt__csv_is_formula). */
void cmt__out_csv(struct cmt__out *o, const char *s, int formula);

/* ---- rows: one writer for csv (RFC 4180, a header line), jsonl (one object a line) and
 * parquet (parquet_writer.h: typed, nullable columns, the partitioned export's parts) ---- */
enum cmt__rows_shape {
    CMT__ROWS_CSV = 0,
    CMT__ROWS_JSONL = 1,
    CMT__ROWS_PARQUET = 2,       /* zstd-compressed pages */
    CMT__ROWS_PARQUET_PLAIN = 3, /* uncompressed pages (--compress none) */
};
struct cmt__parquet;
struct cmt__rows {
    struct cmt__out out;
    int jsonl;
    struct cmt__parquet *parquet; /* the parquet shape's writer (NULL: csv or jsonl) */
    int failed;                   /* parquet: it could not be begun */
    const char *const *columns;   /* names, in the order values are given */
    unsigned ncolumns, column;
    uint64_t rows;
};
/* Whether the csv tables begun from now on write their header line (1, the default; 0 for the
 * second and later traces of one export, whose rows follow the first's). */
void cmt__rows_header(int write);
/* Starts a table on f (shape: enum cmt__rows_shape; 0 and 1 are csv and jsonl); csv writes
 * the header line. types: a character per column, its parquet type (enum cmt__parquet_type:
 * i signed integer (row_i64), u unsigned (row_u64), b boolean, d double, s string), declared
 * so that every part of a table has the same schema whatever its cells hold. cmt__rows_end() flushes the table to f (parquet: the
 * row groups left and the footer). @return cmt__rows_end: 0, or -1 when parquet's writer
 * failed (out of memory, or a write: ferror(f)). */
void cmt__rows_begin(struct cmt__rows *t, FILE *f, int shape, const char *const *columns,
                     const char *types, unsigned ncolumns);
int cmt__rows_end(struct cmt__rows *t);
/* Asserts at compile time that a table's types string has a type per column. */
#define CMT__ROWS_TYPES_MATCH(types, columns) \
    _Static_assert(sizeof(types) - 1 == sizeof(columns) / sizeof *(columns), "a type per column")
void cmt__row_begin(struct cmt__rows *t);
void cmt__row_end(struct cmt__rows *t);
void cmt__row_u64(struct cmt__rows *t, uint64_t v);
void cmt__row_i64(struct cmt__rows *t, int64_t v);
void cmt__row_double(struct cmt__rows *t, double v);
void cmt__row_bool(struct cmt__rows *t, int v);
/* A string: NULL is empty (csv) / null (jsonl). row_str for the project's own names (op, kind,
 * verdict); row_text for text from a trace or from outside (host, program, argv, function,
 * file, site, API and environment strings, paths): a csv cell of it that a spreadsheet would
 * take for a formula (cmt__csv_is_formula) gets a leading "'" (docs/export.md). */
void cmt__row_str(struct cmt__rows *t, const char *s);
void cmt__row_text(struct cmt__rows *t, const char *s);
void cmt__row_null(struct cmt__rows *t);

/* The identity columns every table starts with (pid, host, rank), from the PROCESS record;
 * rank is empty (null) until traces record it. */
#define CMT__EXPORT_ID_COLUMNS "pid", "host", "rank"
void cmt__row_identity(struct cmt__rows *t, const cmt_reader *r);

/* The events table as a replay observer: a row per event, written as the replay goes;
 * cmt__rows_end(&e->rows) after the pass. */
struct cmt__export_events {
    struct cmt__rows rows;
    const cmt_reader *reader;
    const struct cmt_phases *phases; /* the pass's (its `phase` column), NULL: none */
};
struct cmt_observer cmt__export_events_observer(struct cmt__export_events *e, FILE *f, int shape,
                                                const cmt_reader *r);
/* The tables a finished pass gives (sites, episodes, processes); shape: enum cmt__rows_shape.
 * @return cmt__rows_end's. */
int cmt__export_sites(const struct cmt__pass *p, FILE *f, int shape);
int cmt__export_episodes(const struct cmt__pass *p, FILE *f, int shape);
int cmt__export_processes(const struct cmt__pass *p, FILE *f, int shape);
/* The PYTORCH_CUDA_ALLOC_CONF (or PYTORCH_ALLOC_CONF) the process ran with, or NULL. */
const char *cmt__export_alloc_conf(const cmt_reader *r);

/* ---- the other formats ---- */
/* Perfetto / Chrome trace-event JSON: an observer that writes counters and slices as the
 * replay goes; cmt__export_perfetto_end() writes the OOM instants and closes the JSON. */
struct cmt__perfetto_tensor {
    uint64_t addr;
    int32_t dev; /* INT32_MIN: an empty slot */
    uint32_t stack;
};
struct cmt__export_perfetto {
    FILE *f;
    struct cmt__out out;
    const cmt_reader *reader;
    uint64_t pid, min_slice_bytes;
    uint64_t first;    /* no event written yet */
    char **site_names; /* per site, lazily */
    uint32_t site_name_count;
    uint32_t *kinds_seen; /* per device slot: kinds shown so far (a bit mask) */
    uint32_t kinds_seen_count;
    /* the allocator's figures rebuilt by the pass (NULL: only those its events recorded), one
     * counter per device and moment (a snapshot's starting state comes at one time) */
    const cmt_alloc *alloc;
    struct cmt__perfetto_figures {
        int32_t dev;
        uint64_t t_ns, allocated, reserved, inactive_split;
    } pending[8];
    uint32_t pending_count;
    /* the allocator's blocks as tensor slices: those begun and not ended (a set by address) */
    struct cmt__perfetto_tensor *tensors;
    size_t tensor_count, tensor_cap;
    char **frame_names; /* per stack, lazily: its top frame */
    uint32_t frame_name_count;
    /* the window: opened (the state at its start written), closed (its end passed) */
    struct cmt__export_window window;
    int opened, closed;
    uint64_t last_t_ns; /* of the last event or allocator action */
};
/* alloc: the state the pass keeps (cmt__pass's alloc, made before the replay), or NULL. */
struct cmt_observer cmt__export_perfetto_observer(struct cmt__export_perfetto *x, FILE *f,
                                                  const cmt_reader *r, uint64_t min_slice_bytes,
                                                  const cmt_alloc *alloc,
                                                  const struct cmt__export_window *window);
void cmt__export_perfetto_end(struct cmt__export_perfetto *x, const struct cmt__pass *p);

/* Folded stacks, one line per call site with a nonzero weight, root frame first: the driver's
 * call sites; for a trace without driver allocation calls (a PyTorch snapshot), the allocator's
 * blocks by their first Python frame and its callers (export_collapsed.c). Reads path in one
 * pass, two for the allocator's peak. @return the exit status (1 after saying why). */
int cmt__export_collapsed_run(const char *path, FILE *f, enum cmt__export_weight weight);

/* PyTorch's memory snapshot: an observer that keeps the trace entries of each device (driver
 * calls, or its allocator's events where the trace has them) in a ring of its last
 * max_entries, and the allocator's end state in memory that follows what is live;
 * cmt__export_memory_viz_end() writes the pickle. @return 0, or -1 when out of memory. */
struct cmt__memviz_ring {
    struct cmt__memviz_entry *e;
    size_t cap, head, count;
    uint64_t dropped; /* entries the ring let go */
};
struct cmt__export_memory_viz {
    struct cmt__export_window window;
    uint64_t max_entries;           /* per device, 0: all */
    struct cmt__memviz_ring *rings; /* per device 0..CMT_MAX_DEVICES-1 */
    struct cmt__memviz_actions actions;
    uint8_t has_alloc[CMT_MAX_DEVICES]; /* its allocator's actions are its trace */
    int32_t max_dev;
    uint64_t outside;               /* entries outside the window's times */
    int failed, done;               /* done: past the window's end */
    struct cmt_replay_object *live; /* the driver's objects live when the window ended */
    size_t live_count, live_cap;
    char *conf;                       /* the last ALLOCATOR record's settings, or NULL */
    uint64_t active[CMT_MAX_DEVICES]; /* per device: the allocator's active bytes so far */
};
/* @return 0 with *observer set, or -1 when out of memory (free x in either case). */
int cmt__export_memory_viz_init(struct cmt__export_memory_viz *x,
                                const struct cmt__export_window *window, uint64_t max_entries,
                                struct cmt_observer *observer);
int cmt__export_memory_viz_end(struct cmt__export_memory_viz *x, const struct cmt__pass *p,
                               FILE *f);
/* The entries written and those the rings let go. */
void cmt__export_memory_viz_cut(const struct cmt__export_memory_viz *x, uint64_t *kept,
                                uint64_t *dropped);
void cmt__export_memory_viz_free(struct cmt__export_memory_viz *x);

/* `--partitioned DIR TRACES...`. @return the exit status. */
int cmt__export_partitioned(const struct cmt__export_options *o, const char *dir,
                            char *const *traces, int ntraces);

#endif
