/* export_tables.c — the csv, jsonl and parquet tables: a row writer for the three (parquet's
 * cells go to parquet_writer.c), and the events, sites, episodes and processes tables
 * (docs/export.md lists their columns). */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "cmt_debug.h"
#include "cmt_format.h"
#include "escape.h"
#include "export/export.h"
#include "export/parquet_writer.h"
#include "frames.h"
#include "oom.h"
#include "sites.h"

void cmt__out_init(struct cmt__out *o, FILE *f)
{
    o->f = f;
    o->n = 0;
}

void cmt__out_flush(struct cmt__out *o)
{
    if (o->n)
        fwrite(o->buf, 1, o->n, o->f);
    o->n = 0;
}

void cmt__out_u64(struct cmt__out *o, uint64_t v)
{
    char buf[24], *p = buf + sizeof buf;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    cmt__out_bytes(o, p, (size_t)(buf + sizeof buf - p));
}

void cmt__out_i64(struct cmt__out *o, int64_t v)
{
    if (v < 0) {
        cmt__out_char(o, '-');
        cmt__out_u64(o, (uint64_t)0 - (uint64_t)v);
    } else {
        cmt__out_u64(o, (uint64_t)v);
    }
}

static void out_sink(void *o, const char *p, size_t n)
{
    cmt__out_bytes(o, p, n);
}

void cmt__out_quote(struct cmt__out *o, const char *s)
{
    size_t n = cmt__json_plain_length(s, 0);
    if (s && !s[n]) { /* plain ASCII, the names of nearly every row: no sink calls */
        cmt__out_char(o, '"');
        cmt__out_bytes(o, s, n);
        cmt__out_char(o, '"');
        return;
    }
    cmt__json_escape(s, 0, out_sink, o);
}

static int rows_without_header; /* the tables of the second and later traces of one export */

void cmt__rows_header(int write)
{
    rows_without_header = !write;
}

void cmt__rows_begin(struct cmt__rows *t, FILE *f, int shape, const char *const *columns,
                     const char *types, unsigned ncolumns)
{
    cmt__out_init(&t->out, f);
    t->jsonl = shape == CMT__ROWS_JSONL;
    t->parquet = NULL;
    t->failed = 0;
    t->columns = columns;
    t->ncolumns = ncolumns;
    t->column = 0;
    t->rows = 0;
    CMT_ASSERT(strlen(types) == ncolumns);
    if (shape == CMT__ROWS_PARQUET || shape == CMT__ROWS_PARQUET_PLAIN) {
        t->parquet = cmt__parquet_open(f, columns, types, ncolumns, shape == CMT__ROWS_PARQUET);
        t->failed = !t->parquet;
        return;
    }
    if (t->jsonl || rows_without_header)
        return;
    for (unsigned i = 0; i < ncolumns; i++) {
        cmt__out_str(&t->out, i ? "," : "");
        cmt__out_str(&t->out, columns[i]);
    }
    cmt__out_char(&t->out, '\n');
}

int cmt__rows_end(struct cmt__rows *t)
{
    if (t->parquet || t->failed) {
        int rc = t->failed ? -1 : cmt__parquet_close(t->parquet);
        t->parquet = NULL;
        t->failed = rc != 0;
        return rc;
    }
    cmt__out_flush(&t->out);
    return 0;
}

void cmt__row_begin(struct cmt__rows *t)
{
    t->column = 0;
    if (t->jsonl)
        cmt__out_char(&t->out, '{');
}

void cmt__row_end(struct cmt__rows *t)
{
    CMT_ASSERT(t->column == t->ncolumns || t->parquet || t->failed);
    t->rows++;
    if (t->parquet)
        cmt__parquet_row_end(t->parquet);
    else if (!t->failed)
        cmt__out_str(&t->out, t->jsonl ? "}\n" : "\n");
}

/* The separator and, for jsonl, the column's key (column names need no escaping). */
static void next(struct cmt__rows *t)
{
    unsigned c = t->column++;
    if (c)
        cmt__out_char(&t->out, ',');
    if (t->jsonl) {
        cmt__out_char(&t->out, '"');
        cmt__out_str(&t->out, c < t->ncolumns ? t->columns[c] : "?");
        cmt__out_bytes(&t->out, "\":", 2);
    }
}

/* A parquet table's cell goes to its writer (a failed one's nowhere), then returns. */
#define PARQUET_CELL(t, call) \
    do {                      \
        if ((t)->parquet) {   \
            call;             \
            return;           \
        }                     \
        if ((t)->failed)      \
            return;           \
    } while (0)

void cmt__row_u64(struct cmt__rows *t, uint64_t v)
{
    PARQUET_CELL(t, cmt__parquet_u64(t->parquet, v));
    next(t);
    cmt__out_u64(&t->out, v);
}

void cmt__row_i64(struct cmt__rows *t, int64_t v)
{
    PARQUET_CELL(t, cmt__parquet_i64(t->parquet, v));
    next(t);
    cmt__out_i64(&t->out, v);
}

void cmt__row_double(struct cmt__rows *t, double v)
{
    PARQUET_CELL(t,
                 isfinite(v) ? cmt__parquet_double(t->parquet, v) : cmt__parquet_null(t->parquet));
    next(t);
    char buf[32];
    if (isfinite(v)) {
        snprintf(buf, sizeof buf, "%.6g", v);
        cmt__out_str(&t->out, buf);
    } else if (t->jsonl) {
        cmt__out_str(&t->out, "null");
    }
}

void cmt__row_bool(struct cmt__rows *t, int v)
{
    PARQUET_CELL(t, cmt__parquet_bool(t->parquet, v));
    next(t);
    cmt__out_str(&t->out, v ? "true" : "false");
}

void cmt__row_null(struct cmt__rows *t)
{
    PARQUET_CELL(t, cmt__parquet_null(t->parquet));
    next(t);
    if (t->jsonl)
        cmt__out_str(&t->out, "null");
}

/* RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled; control
 * bytes other than tab become spaces, so a row is always one line. formula: "'" first. */
void cmt__out_csv(struct cmt__out *f, const char *s, int formula)
{
    int quote = !*s || strpbrk(s, ",\"\n\r") != NULL || s[0] == ' ';
    if (quote)
        cmt__out_char(f, '"');
    if (formula)
        cmt__out_char(f, '\'');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"')
            cmt__out_bytes(f, "\"\"", 2);
        else if (*p < 0x20 && *p != '\t')
            cmt__out_char(f, ' ');
        else
            cmt__out_char(f, (char)*p);
    }
    if (quote)
        cmt__out_char(f, '"');
}

/* A string cell; formula: a csv cell a spreadsheet would take for a formula gets a leading
 * "'" (inside the quotes when quoted), as spreadsheets expect (OWASP, CSV injection). */
static void str_cell(struct cmt__rows *t, const char *s, int formula)
{
    PARQUET_CELL(t,
                 s ? cmt__parquet_string(t->parquet, s, strlen(s)) : cmt__parquet_null(t->parquet));
    next(t);
    if (t->jsonl) {
        if (s)
            cmt__out_quote(&t->out, s);
        else
            cmt__out_str(&t->out, "null");
    } else if (s) {
        cmt__out_csv(&t->out, s, formula); /* "" for an empty string, nothing for NULL */
    }
}

void cmt__row_str(struct cmt__rows *t, const char *s)
{
    str_cell(t, s, 0);
}

void cmt__row_text(struct cmt__rows *t, const char *s)
{
    str_cell(t, s, !t->parquet && cmt__csv_is_formula(s)); /* parquet: no spreadsheet */
}

void cmt__row_identity(struct cmt__rows *t, const cmt_reader *r)
{
    const struct cmt_process *proc = cmt_reader_process(r);
    if (proc)
        cmt__row_u64(t, proc->pid);
    else
        cmt__row_null(t);
    cmt__row_text(t, proc ? proc->hostname : NULL);
    if (proc && proc->rank >= 0) /* format 3.1 PROCESS; older traces and no launcher: null */
        cmt__row_i64(t, proc->rank);
    else
        cmt__row_null(t);
}

const char *cmt__export_alloc_conf(const cmt_reader *r)
{
    const char *conf = NULL;
    for (size_t i = 0; i < cmt_reader_env_count(r); i++) {
        const struct cmt_env *e = cmt_reader_env(r, i);
        if (strcmp(e->name, "PYTORCH_CUDA_ALLOC_CONF") == 0)
            conf = e->value; /* the older name wins, as in PyTorch 2.x */
        else if (!conf && strcmp(e->name, "PYTORCH_ALLOC_CONF") == 0)
            conf = e->value;
    }
    return conf;
}

/* ---- events ---- */

static const char *const event_columns[] = {CMT__EXPORT_ID_COLUMNS,
                                            "seq",
                                            "t_ns",
                                            "tid",
                                            "dev",
                                            "api",
                                            "op",
                                            "result",
                                            "oom",
                                            "kind",
                                            "key",
                                            "bytes",
                                            "request_bytes",
                                            "delta_bytes",
                                            "device_live_bytes",
                                            "object",
                                            "site",
                                            "stack",
                                            "phase"};
/* Their parquet types (cmt__rows_begin). */
static const char event_types[] = "usiuuuissibsuuuiuuuus";
CMT__ROWS_TYPES_MATCH(event_types, event_columns);

static unsigned events_step(struct cmt_observer *self, const cmt_replay *rp,
                            const struct cmt_replay_step *st)
{
    (void)rp;
    struct cmt__export_events *e = self->ctx;
    struct cmt__rows *t = &e->rows;
    const struct cmt_event *ev = &st->rec.u.event;
    cmt__row_begin(t);
    cmt__row_identity(t, e->reader);
    cmt__row_u64(t, ev->seq);
    cmt__row_u64(t, ev->t_ns);
    cmt__row_u64(t, ev->tid);
    cmt__row_i64(t, ev->dev);
    cmt__row_text(t, st->api);
    const char *op = st->op >= 0 ? cmt_op_name((uint32_t)st->op) : NULL;
    cmt__row_str(t, op ? op : "other");
    cmt__row_i64(t, ev->result);
    cmt__row_bool(t, st->oom);
    cmt__row_str(t, st->kind >= 0 ? cmt_kind_name(st->kind) : NULL);
    if (st->kind >= 0) {
        cmt__row_u64(t, st->key);
        cmt__row_u64(t, st->bytes);
    } else {
        cmt__row_null(t);
        cmt__row_null(t);
    }
    if (st->is_alloc)
        cmt__row_u64(t, st->request);
    else
        cmt__row_null(t);
    cmt__row_i64(t, st->delta);
    if (st->device)
        cmt__row_u64(t, st->device->live_bytes);
    else
        cmt__row_null(t);
    if (st->object != CMT_NO_OBJECT)
        cmt__row_u64(t, st->object);
    else
        cmt__row_null(t);
    cmt__row_u64(t, st->site);
    cmt__row_u64(t, ev->stack);
    uint32_t phase = e->phases ? cmt_phases_current(e->phases, ev->tid) : 0;
    if (phase) /* the range the event happened in (phases.h) */
        cmt__row_text(t, cmt_phases_name(e->phases, phase));
    else
        cmt__row_null(t);
    cmt__row_end(t);
    return CMT_OBSERVE_EVENT;
}

struct cmt_observer cmt__export_events_observer(struct cmt__export_events *e, FILE *f, int shape,
                                                const cmt_reader *r)
{
    e->reader = r;
    e->phases = NULL;
    cmt__rows_begin(&e->rows, f, shape, event_columns, event_types,
                    sizeof event_columns / sizeof *event_columns);
    struct cmt_observer o = {.wants = CMT_OBSERVE_EVENT, .step = events_step, .ctx = e};
    return o;
}

/* ---- sites ---- */

static const char *const site_columns[] = {
    CMT__EXPORT_ID_COLUMNS, "site",          "stack",        "call_site",    "site_key",
    "alloc_count",          "alloc_bytes",   "free_count",   "failures",     "peak_bytes",
    "at_peak_bytes",        "at_peak_count", "leaked_bytes", "leaked_count", "host_peak_bytes",
    "host_leaked_bytes",    "frames"};
static const char site_types[] = "usiuussuuuuuuuuuuus";
CMT__ROWS_TYPES_MATCH(site_types, site_columns);

int cmt__export_sites(const struct cmt__pass *p, FILE *f, int shape)
{
    static _Thread_local char frames[16384]; /* export --partitioned --jobs: per thread */
    char top[512], key[4096];
    struct cmt__rows t;
    cmt__rows_begin(&t, f, shape, site_columns, site_types,
                    sizeof site_columns / sizeof *site_columns);
    for (uint32_t i = 0; i < cmt_replay_site_count(p->replay); i++) {
        const struct cmt_replay_site *s = cmt_replay_site(p->replay, i);
        if (!s->alloc_count && !s->failures && !s->host_alloc_count)
            continue;
        cmt_stack_text(p->reader, s->stack, CMT_MAX_STACK_DEPTH, frames, sizeof frames);
        cmt__row_begin(&t);
        cmt__row_identity(&t, p->reader);
        cmt__row_u64(&t, i);
        cmt__row_u64(&t, s->stack);
        cmt__row_text(&t, cmt_stack_top(p->reader, s->stack, top, sizeof top));
        cmt__row_text(&t, cmt_site_key(p->reader, s->stack, key, sizeof key));
        cmt__row_u64(&t, s->alloc_count);
        cmt__row_u64(&t, s->alloc_bytes);
        cmt__row_u64(&t, s->free_count);
        cmt__row_u64(&t, s->failures);
        cmt__row_u64(&t, s->peak_bytes);
        cmt__row_u64(&t, s->at_peak_bytes);
        cmt__row_u64(&t, s->at_peak_count);
        cmt__row_u64(&t, s->live_bytes);
        cmt__row_u64(&t, s->live_count);
        cmt__row_u64(&t, s->host_peak_bytes);
        cmt__row_u64(&t, s->host_live_bytes);
        cmt__row_text(&t, frames);
        cmt__row_end(&t);
    }
    return cmt__rows_end(&t);
}

/* ---- episodes ---- */

static const char *const episode_columns[] = {CMT__EXPORT_ID_COLUMNS,
                                              "episode",
                                              "dev",
                                              "t_ns",
                                              "seq",
                                              "api",
                                              "request_bytes",
                                              "attempts",
                                              "frees_between",
                                              "released_bytes",
                                              "fatal",
                                              "verdict",
                                              "free_bytes",
                                              "total_bytes",
                                              "process_bytes",
                                              "others_bytes",
                                              "shortfall_bytes",
                                              "pool_retained_bytes",
                                              "hole_bytes",
                                              "largest_hole_bytes",
                                              "hole_fragmentation",
                                              "call_site",
                                              "site_key"};
static const char episode_types[] = "usiuiuusuuuubsuuuuuuuudss";
CMT__ROWS_TYPES_MATCH(episode_types, episode_columns);

int cmt__export_episodes(const struct cmt__pass *p, FILE *f, int shape)
{
    char top[512], key[4096];
    struct cmt__rows t;
    cmt__rows_begin(&t, f, shape, episode_columns, episode_types,
                    sizeof episode_columns / sizeof *episode_columns);
    for (uint32_t i = 0; p->oom && i < cmt_oom_count(p->oom); i++) {
        const struct cmt_oom_episode *e = cmt_oom_episode(p->oom, i);
        cmt__row_begin(&t);
        cmt__row_identity(&t, p->reader);
        cmt__row_u64(&t, i);
        cmt__row_i64(&t, e->dev);
        cmt__row_u64(&t, e->t_ns);
        cmt__row_u64(&t, e->seq);
        cmt__row_text(&t, e->api);
        cmt__row_u64(&t, e->request_bytes);
        cmt__row_u64(&t, e->attempts);
        cmt__row_u64(&t, e->frees_between);
        cmt__row_u64(&t, e->released_bytes);
        cmt__row_bool(&t, e->fatal);
        cmt__row_str(&t, cmt_verdict_name(e->verdict));
        cmt__row_u64(&t, e->free_bytes);
        cmt__row_u64(&t, e->total_bytes);
        cmt__row_u64(&t, e->process_bytes);
        cmt__row_u64(&t, e->others_bytes);
        cmt__row_u64(&t, e->shortfall_bytes);
        cmt__row_u64(&t, e->pool_retained_bytes);
        cmt__row_u64(&t, e->frag.hole_bytes);
        cmt__row_u64(&t, e->frag.largest_hole);
        cmt__row_double(&t, e->frag.hole_fragmentation);
        cmt__row_text(&t, cmt_stack_top(p->reader, e->stack, top, sizeof top));
        cmt__row_text(&t, cmt_site_key(p->reader, e->stack, key, sizeof key));
        cmt__row_end(&t);
    }
    return cmt__rows_end(&t);
}

/* ---- processes ---- */

static const char *const process_columns[] = {CMT__EXPORT_ID_COLUMNS,
                                              "ppid",
                                              "exe",
                                              "argv",
                                              "alloc_conf",
                                              "start_wall_ns",
                                              "trace",
                                              "events",
                                              "duration_ns",
                                              "peak_live_bytes",
                                              "peak_t_ns",
                                              "peak_dev",
                                              "live_bytes_at_end",
                                              "host_pinned_peak_bytes",
                                              "alloc_calls",
                                              "failures",
                                              "oom_failures",
                                              "episodes",
                                              "fatal_episodes",
                                              "first_oom_t_ns",
                                              "peak_hole_bytes",
                                              "peak_largest_hole_bytes",
                                              "peak_hole_fragmentation",
                                              "clean_exit",
                                              "damaged",
                                              "allocator_peak_allocated_bytes",
                                              "allocator_peak_reserved_bytes",
                                              "allocator_peak_dev",
                                              "allocator_allocated_bytes_at_end",
                                              "allocator_reserved_bytes_at_end",
                                              "allocator_events"};
static const char process_types[] = "usiusssusuuuuiuuuuuuuuuudbbuuiuuu";
CMT__ROWS_TYPES_MATCH(process_types, process_columns);

/* The device of the process peak (the one whose own peak is the highest), or slot 0. */
static const struct cmt_replay_device *peak_device(const cmt_replay *rp)
{
    const struct cmt_replay_device *best = NULL;
    for (uint32_t s = 0; s < cmt_replay_device_count(rp); s++) {
        const struct cmt_replay_device *d = cmt_replay_device_slot(rp, s);
        if (d && (!best || d->peak_live_bytes > best->peak_live_bytes))
            best = d;
    }
    return best;
}

int cmt__export_processes(const struct cmt__pass *p, FILE *f, int shape)
{
    static _Thread_local char argv_text[8192];
    const struct cmt_replay_totals *tot = cmt_replay_totals(p->replay);
    const struct cmt_process *proc = cmt_reader_process(p->reader);
    struct cmt__rows t;
    cmt__rows_begin(&t, f, shape, process_columns, process_types,
                    sizeof process_columns / sizeof *process_columns);
    cmt__row_begin(&t);
    cmt__row_identity(&t, p->reader);
    size_t n = 0;
    argv_text[0] = 0;
    for (uint32_t i = 0; proc && i < proc->argc && n + 1 < sizeof argv_text; i++) {
        int w = snprintf(argv_text + n, sizeof argv_text - n, "%s%s", i ? " " : "", proc->argv[i]);
        n = w > 0 && n + (size_t)w < sizeof argv_text ? n + (size_t)w : sizeof argv_text - 1;
    }
    if (proc) {
        cmt__row_u64(&t, proc->ppid);
        cmt__row_text(&t, proc->exe);
        cmt__row_text(&t, argv_text);
    } else {
        cmt__row_null(&t);
        cmt__row_null(&t);
        cmt__row_null(&t);
    }
    cmt__row_text(&t, cmt__export_alloc_conf(p->reader));
    if (proc)
        cmt__row_u64(&t, proc->start_wall_ns);
    else
        cmt__row_null(&t);
    cmt__row_text(&t, p->path);
    cmt__row_u64(&t, tot->events);
    cmt__row_u64(&t, tot->last_t_ns);
    cmt__row_u64(&t, tot->peak_live_bytes);
    cmt__row_u64(&t, tot->peak_t_ns);
    const struct cmt_replay_device *pd = peak_device(p->replay);
    if (pd)
        cmt__row_i64(&t, pd->dev);
    else
        cmt__row_null(&t);
    cmt__row_u64(&t, tot->live_bytes);
    cmt__row_u64(&t, tot->host_peak_bytes);
    cmt__row_u64(&t, tot->alloc_calls);
    cmt__row_u64(&t, tot->failures);
    cmt__row_u64(&t, tot->oom_failures);
    uint32_t episodes = p->oom ? cmt_oom_count(p->oom) : 0, fatal = 0;
    for (uint32_t i = 0; i < episodes; i++)
        fatal += (uint32_t)cmt_oom_episode(p->oom, i)->fatal;
    cmt__row_u64(&t, episodes);
    cmt__row_u64(&t, fatal);
    if (episodes)
        cmt__row_u64(&t, cmt_oom_episode(p->oom, 0)->t_ns);
    else
        cmt__row_null(&t);
    struct cmt_fragmentation fr;
    if (pd && cmt_replay_peak_fragmentation(p->replay, pd->dev, &fr) == 0) {
        cmt__row_u64(&t, fr.hole_bytes);
        cmt__row_u64(&t, fr.largest_hole);
        cmt__row_double(&t, fr.hole_fragmentation);
    } else {
        cmt__row_null(&t);
        cmt__row_null(&t);
        cmt__row_null(&t);
    }
    cmt__row_bool(&t, tot->ended);
    cmt__row_bool(&t, p->damage < 0);
    struct cmt_alloc_summary as;
    if (cmt_alloc_summarize(p->alloc, &as)) { /* allocator-level records (a snapshot, --torch) */
        cmt__row_u64(&t, as.peak_allocated_bytes);
        cmt__row_u64(&t, as.peak_reserved_bytes);
        cmt__row_i64(&t, as.dev);
        cmt__row_u64(&t, as.allocated_bytes_at_end);
        cmt__row_u64(&t, as.reserved_bytes_at_end);
        cmt__row_u64(&t, as.events);
    } else {
        for (int k = 0; k < 6; k++)
            cmt__row_null(&t);
    }
    cmt__row_end(&t);
    return cmt__rows_end(&t);
}
