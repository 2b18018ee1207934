/* cmd_export.c — `cumemtrace export --format F [-o OUT] FILE` and
 * `cumemtrace export --format csv|jsonl --partitioned DIR TRACES...`: the analyses' data in
 * the formats other tools read (docs/export.md). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "export/export.h"
#include "options.h"
#include "output.h"
#include "pass.h"
#include "print/ledger_print.h"

static const char usage[] =
    "usage: cumemtrace export --format F [options] [-o OUT] FILE | TRACE... | DIR\n"
    "       cumemtrace export --format csv|jsonl|parquet --partitioned DIR [--run ID] [--events] "
    "[--compress C] [--jobs N] TRACES...\n"
    "\n"
    "Writes a trace's memory in a format other tools read (docs/export.md):\n"
    "  perfetto    Chrome/Perfetto trace-event JSON: a counter track per device and kind,\n"
    "              allocations as slices, out-of-memory failures as instant events\n"
    "              (ui.perfetto.dev, chrome://tracing)\n"
    "  collapsed   folded stacks, root first, for flamegraph.pl, inferno, speedscope\n"
    "  memory-viz  a PyTorch memory snapshot pickle (pytorch.org/memory_viz)\n"
    "  csv, jsonl  a table: events, sites, episodes or processes (--table)\n"
    "Several traces (or a directory's *.cmt): csv, jsonl and collapsed give each one's rows\n"
    "in turn (csv: one header); perfetto and memory-viz are one trace's view.\n"
    "\n"
    "  -f, --format F       perfetto, collapsed, memory-viz, csv, jsonl or parquet\n"
    "  -o, --output OUT     write to OUT (default: standard output)\n"
    "  --weight W           collapsed: peak (bytes held at the peak, default), leaked (bytes\n"
    "                       live at the end) or count (allocations)\n"
    "  --table T            csv, jsonl: events (default), sites, episodes or processes\n"
    "  --min-slice BYTES    perfetto: allocations of at least BYTES become slices (default\n"
    "                       1048576; 0: every allocation)\n"
    "  --partitioned DIR    csv, jsonl, parquet: Hive-style tables DIR/TABLE/run=ID/part-NAME.EXT\n"
    "                       for DuckDB, Spark, Trino (runs, processes, episodes, sites);\n"
    "                       parquet (only here): typed columns, zstd pages, the smallest\n"
    "                       (docs/fleet.md)\n"
    "  --run ID             the run the traces belong to (default: each trace's directory)\n"
    "  --events             --partitioned: the events table too\n"
    "  --compress C         --partitioned: zstd (default: part-NAME.EXT.zst; parquet: its\n"
    "                       pages) or none\n"
    "  --jobs N             --partitioned: traces converted at once (default: the processors)\n"
    "Windows and caps (perfetto, memory-viz):\n"
    "  --from T, --to T     only what happened between these times from the trace's start\n"
    "                       (12.5s, 800ms, 3: seconds); memory-viz's segments: those at --to\n"
    "  --device N           only device N\n"
    "  --rank R             of several traces (or a directory of ranks): rank R's\n"
    "  --max-entries N      memory-viz: each device's last N trace entries (default 100000,\n"
    "                       as PyTorch's memory_viz guide records them; 0: all)\n"
    "  -h, --help           this help\n";

static const char *const format_names[] = {
#define CMT__NAME(id, name) name,
    CMT__EXPORT_FORMATS(CMT__NAME)};
static const char *const weight_names[] = {CMT__EXPORT_WEIGHTS(CMT__NAME)};
static const char *const table_names[] = {CMT__EXPORT_TABLES(CMT__NAME)
#undef CMT__NAME
};
static const char *const codec_names[] = {
#define CMT__CODEC_NAME(id, name, suffix) name,
    CMT__EXPORT_CODECS(CMT__CODEC_NAME)
#undef CMT__CODEC_NAME
};

/* @return the index of name in names, or -1. */
static int lookup(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

struct args {
    struct cmt__export_options o;
    int have_format, have_weight, have_table, have_slice, have_partition_option;
    int have_window, have_max_entries; /* windows and caps */
    const char *out, *partitioned;
    char **files;
    int nfiles;
};

enum {
    OPT_HELP = 1,
    OPT_FORMAT,
    OPT_OUTPUT,
    OPT_WEIGHT,
    OPT_TABLE,
    OPT_MIN_SLICE,
    OPT_PARTITIONED,
    OPT_RUN,
    OPT_EVENTS,
    OPT_COMPRESS,
    OPT_JOBS,
    OPT_FROM,
    OPT_TO,
    OPT_DEVICE,
    OPT_RANK,
    OPT_MAX_ENTRIES
};

const struct cmt__option cmt_cmd_export_options[] = {
    CMT__OPTION_HELP(OPT_HELP),
    {"-f", "--format", 1, OPT_FORMAT, NULL},
    {"-o", "--output", 1, OPT_OUTPUT, NULL},
    {NULL, "--weight", 1, OPT_WEIGHT, NULL},
    {NULL, "--table", 1, OPT_TABLE, NULL},
    {NULL, "--min-slice", 1, OPT_MIN_SLICE, NULL},
    {NULL, "--partitioned", 1, OPT_PARTITIONED, "an output directory"},
    {NULL, "--run", 1, OPT_RUN, "an id"},
    {NULL, "--events", 0, OPT_EVENTS, NULL},
    {NULL, "--compress", 1, OPT_COMPRESS, NULL},
    {NULL, "--jobs", 1, OPT_JOBS, NULL},
    {NULL, "--from", 1, OPT_FROM, NULL},
    {NULL, "--to", 1, OPT_TO, NULL},
    {NULL, "--device", 1, OPT_DEVICE, NULL},
    {NULL, "--rank", 1, OPT_RANK, NULL},
    {NULL, "--max-entries", 1, OPT_MAX_ENTRIES, NULL},
    {0},
};

/* ---- windows and caps: --from, --to, --device, --rank, --max-entries ---- */

/* A whole number in v into *n. @return 0, or -1. */
static int whole(const char *v, uint64_t *n)
{
    char *end;
    if (!v || *v < '0' || *v > '9')
        return -1;
    *n = strtoull(v, &end, 10);
    return *end ? -1 : 0;
}

/* One of the window's options, `opt` with value v. @return 0, or 2 after a usage error. */
static int window_option(int opt, const char *v, struct args *a)
{
    uint64_t n;
    int from = opt == OPT_FROM;
    if (from || opt == OPT_TO) {
        if (cmt__parse_time(v, from ? &a->o.window.from_ns : &a->o.window.to_ns) != 0)
            return cmt__usage_error("export",
                                    "%s wants a time from the trace's start (12.5s, "
                                    "800ms, 3)%s%s%s",
                                    from ? "--from" : "--to", v ? ", got '" : "", v ? v : "",
                                    v ? "'" : "");
        a->have_window = 1;
    } else if (opt == OPT_DEVICE) {
        if (whole(v, &n) != 0 || n >= CMT_MAX_DEVICES)
            return cmt__usage_error("export", "--device wants a device ordinal%s%s%s",
                                    v ? ", got '" : "", v ? v : "", v ? "'" : "");
        a->o.window.device = (int32_t)n;
        a->have_window = 1;
    } else if (opt == OPT_RANK) {
        if (whole(v, &n) != 0 || n > INT32_MAX)
            return cmt__usage_error("export", "--rank wants a rank%s%s%s", v ? ", got '" : "",
                                    v ? v : "", v ? "'" : "");
        a->o.rank = (int64_t)n;
    } else {
        if (whole(v, &a->o.max_entries) != 0)
            return cmt__usage_error("export", "--max-entries wants a number of entries%s%s%s",
                                    v ? ", got '" : "", v ? v : "", v ? "'" : "");
        a->have_max_entries = 1;
    }
    return 0;
}

/* The windows' combinations. @return 0, or 2 after a usage error. */
static int check_window(const struct args *a)
{
    enum cmt__export_format f = a->o.format;
    int view = f == CMT__EXPORT_PERFETTO || f == CMT__EXPORT_MEMORY_VIZ;
    if ((a->have_window || a->o.rank >= 0) && !view)
        return cmt__usage_error("export", "%s is for --format perfetto or memory-viz",
                                a->o.rank >= 0 ? "--rank" : "--from, --to and --device");
    if (a->have_max_entries && f != CMT__EXPORT_MEMORY_VIZ)
        return cmt__usage_error("export", "--max-entries is for --format memory-viz");
    if (a->o.window.from_ns > a->o.window.to_ns)
        return cmt__usage_error("export", "--from is after --to");
    return 0;
}

/* Of the traces given, the one of rank `rank` (its PROCESS record's). @return its index, or -1
 * after one line saying there is none. */
static long rank_trace(char *const *paths, size_t n, int64_t rank)
{
    for (size_t i = 0; i < n; i++) {
        cmt_reader *r;
        if (cmt__open_trace("export", paths[i], &r) != 0)
            continue;
        struct cmt_record rec;
        const struct cmt_process *proc = NULL; /* PROCESS is among the first records */
        for (int k = 0; k < 4096 && !(proc = cmt_reader_process(r)) && cmt_reader_next(r, &rec) > 0;
             k++)
            ;
        int match = proc && proc->rank == rank;
        cmt_reader_close(r);
        if (match)
            return (long)i;
    }
    fprintf(stderr, "cumemtrace export: no trace of rank %" PRId64 " among the %zu given\n", rank,
            n);
    return -1;
}

/* "WANTS, got 'V'", or WANTS alone when the value is missing. @return 2 (usage). */
static int bad_value(const char *wants, const char *v)
{
    if (!v)
        return cmt__usage_error("export", "%s", wants);
    return cmt__usage_error("export", "%s, got '%s'", wants, v);
}

/* A name option's value (--format, --weight, --table) into a->o. @return 0, or 2 after a
 * usage error. */
static int name_option(int opt, const char *v, struct args *a)
{
    int k;
    if (opt == OPT_FORMAT) {
        if (!v || (k = lookup(format_names, CMT__EXPORT_FORMAT_COUNT, v)) < 0)
            return bad_value(
                "--format wants perfetto, collapsed, memory-viz, csv, jsonl or parquet", v);
        a->o.format = (enum cmt__export_format)k;
        a->have_format = 1;
    } else if (opt == OPT_WEIGHT) {
        if (!v || (k = lookup(weight_names, 3, v)) < 0)
            return bad_value("--weight wants peak, leaked or count", v);
        a->o.weight = (enum cmt__export_weight)k;
        a->have_weight = 1;
    } else if (opt == OPT_COMPRESS) {
        if (!v || (k = lookup(codec_names, CMT__EXPORT_CODEC_COUNT, v)) < 0)
            return bad_value("--compress wants zstd or none", v);
        a->o.codec = (enum cmt__export_codec)k;
        a->have_partition_option = 1;
    } else {
        if (!v || (k = lookup(table_names, CMT__EXPORT_TABLE_COUNT, v)) < 0 ||
            k == CMT__EXPORT_TABLE_RUNS)
            return bad_value("--table wants events, sites, episodes or processes", v);
        a->o.table = (enum cmt__export_table)k;
        a->have_table = 1;
    }
    return 0;
}

/* One option (not --help) into *a. @return 0, or 2 after a usage error. */
static int option(const struct cmt__opts *p, int opt, struct args *a)
{
    const char *v = p->value;
    char *end;
    switch (opt) {
    case OPT_OUTPUT:
        if (!v || !*v)
            return cmt__usage_error("export", "-o needs an output file");
        a->out = v;
        return 0;
    case OPT_MIN_SLICE:
        if (!v || !*v || (a->o.min_slice_bytes = strtoull(v, &end, 10), *end) || *v == '-')
            return bad_value("--min-slice wants a number of bytes", v);
        a->have_slice = 1;
        return 0;
    case OPT_PARTITIONED:
    case OPT_RUN:
        if (!*v)
            return cmt__opts_needs(p);
        if (opt == OPT_RUN)
            a->o.run = v;
        else
            a->partitioned = v;
        return 0;
    case OPT_EVENTS: a->o.with_events = 1; return 0;
    case OPT_JOBS: {
        unsigned long n = v && *v != '-' ? strtoul(v, &end, 10) : 0;
        if (!n || *end || n > CMT__EXPORT_MAX_JOBS) {
            char wants[48];
            snprintf(wants, sizeof wants, "--jobs wants a number from 1 to %d",
                     CMT__EXPORT_MAX_JOBS);
            return bad_value(wants, v);
        }
        a->o.jobs = (unsigned)n;
        a->have_partition_option = 1;
        return 0;
    }
    case OPT_FROM:
    case OPT_TO:
    case OPT_DEVICE:
    case OPT_RANK:
    case OPT_MAX_ENTRIES: return window_option(opt, v, a);
    default: return name_option(opt, v, a);
    }
}

/* An option or a trace (cmt__opts_parse). @return 0, or 2 after a usage error. */
static int on_option(const struct cmt__opts *p, int opt, void *ctx)
{
    struct args *a = ctx;
    if (opt != CMT__OPT_ARG)
        return option(p, opt, a) ? 2 : 0;
    a->files[a->nfiles++] = p->argv[p->index];
    return 0;
}

/* @return 0 with *a filled, -1 after help, 2 after a usage error. */
static int parse(int argc, char **argv, struct args *a)
{
    memset(a, 0, sizeof *a);
    a->o.min_slice_bytes = UINT64_C(1) << 20;
    a->o.window = (struct cmt__export_window){0, UINT64_MAX, -1};
    a->o.rank = -1;
    a->o.max_entries = CMT__EXPORT_MEMVIZ_MAX_ENTRIES;
    a->files = calloc((size_t)argc, sizeof *a->files);
    if (!a->files)
        return cmt__usage_error("export", "out of memory");
    return cmt__opts_parse("export", argc, argv, cmt_cmd_export_options, 0, usage, on_option, a);
}

/* Option combinations. @return 0, or 2 after a usage error. */
static int check(const struct args *a)
{
    enum cmt__export_format f = a->o.format;
    int table_format = f == CMT__EXPORT_CSV || f == CMT__EXPORT_JSONL;
    if (!a->have_format)
        return cmt__usage_error("export", "missing --format (perfetto, collapsed, memory-viz, "
                                          "csv, jsonl or parquet)");
    if (a->have_weight && f != CMT__EXPORT_COLLAPSED)
        return cmt__usage_error("export", "--weight is for --format collapsed");
    if (a->have_slice && f != CMT__EXPORT_PERFETTO)
        return cmt__usage_error("export", "--min-slice is for --format perfetto");
    if (check_window(a) != 0)
        return 2;
    if (a->have_table && !table_format)
        return cmt__usage_error("export", "--table is for --format csv or jsonl");
    if (f == CMT__EXPORT_PARQUET && !a->partitioned)
        return cmt__usage_error("export", "--format parquet writes --partitioned DIR's parts");
    if (a->partitioned) {
        if (!table_format && f != CMT__EXPORT_PARQUET)
            return cmt__usage_error("export",
                                    "--partitioned is for --format csv, jsonl or parquet");
        if (a->out)
            return cmt__usage_error("export", "-o and --partitioned conflict: choose one output");
        if (a->have_table)
            return cmt__usage_error("export", "--table and --partitioned conflict: "
                                              "--partitioned writes every table");
        if (!a->nfiles)
            return cmt__usage_error("export", "missing trace files");
        return 0;
    }
    if (a->o.run || a->o.with_events || a->have_partition_option)
        return cmt__usage_error("export", "%s is for --partitioned",
                                a->o.run           ? "--run"
                                : a->o.with_events ? "--events"
                                                   : "--compress or --jobs");
    if (!a->nfiles)
        return cmt__usage_error("export", "missing trace FILE");
    if (f == CMT__EXPORT_MEMORY_VIZ && !a->out && isatty(STDOUT_FILENO))
        return cmt__usage_error("export", "memory-viz writes a binary pickle: give -o OUT.pickle");
    return 0;
}

/* One line on stderr when the rings let entries go. */
static void memviz_cut(const struct cmt__export_memory_viz *x, const char *path)
{
    uint64_t kept, dropped;
    cmt__export_memory_viz_cut(x, &kept, &dropped);
    if (dropped)
        fprintf(stderr,
                "cumemtrace export: %s: memory-viz kept each device's last %" PRIu64
                " trace entries (%" PRIu64 " in all) and left out %" PRIu64
                " older ones, as PyTorch's ring would (--max-entries N; 0 keeps all)\n",
                path, x->max_entries, kept, dropped);
}

/* The pass and the format's writing. @return the exit status. */
static int export_one(const struct args *a, const char *path, FILE *f)
{
    const struct cmt__export_options *o = &a->o;
    struct cmt__pass p;
    struct cmt_observer extra[1];
    size_t n = 0;
    static struct cmt__export_perfetto perfetto;
    static struct cmt__export_memory_viz memviz;
    static struct cmt__export_events events;
    unsigned want = CMT__PASS_OOM | CMT__PASS_REPORT;
    int status = 0;
    if (o->format == CMT__EXPORT_COLLAPSED)
        return cmt__export_collapsed_run(path, f, o->weight);
    if (o->format == CMT__EXPORT_PERFETTO || o->format == CMT__EXPORT_MEMORY_VIZ ||
        (o->table == CMT__EXPORT_TABLE_EVENTS &&
         (o->format == CMT__EXPORT_CSV || o->format == CMT__EXPORT_JSONL))) {
        if (cmt__pass_open(&p, "export", path) != 0)
            return 1;
        /* perfetto names slices by their call site: the symbols (at the trace's end) first. A
         * damaged trace keeps its reader at the damage: reopen it, and go without them. */
        if (o->format == CMT__EXPORT_PERFETTO && cmt_reader_preload(p.reader) < 0) {
            cmt_reader_close(p.reader);
            p.reader = NULL;
            if (cmt__open_trace("export", path, &p.reader) != 0)
                return 1;
        }
        if (o->format == CMT__EXPORT_PERFETTO && cmt_alloc_create(&p.alloc) != 0) {
            fprintf(stderr, "cumemtrace export: %s: out of memory\n", path);
            cmt__pass_close(&p);
            return 1;
        }
        if (o->format == CMT__EXPORT_PERFETTO)
            extra[n++] = cmt__export_perfetto_observer(&perfetto, f, p.reader, o->min_slice_bytes,
                                                       p.alloc, &o->window);
        else if (o->format != CMT__EXPORT_MEMORY_VIZ)
            extra[n++] = cmt__export_events_observer(&events, f, o->format == CMT__EXPORT_JSONL,
                                                     p.reader);
        else if (cmt__export_memory_viz_init(&memviz, &o->window, o->max_entries, &extra[n++]) !=
                 0) {
            fprintf(stderr, "cumemtrace export: %s: out of memory\n", path);
            cmt__export_memory_viz_free(&memviz);
            cmt__pass_close(&p);
            return 1;
        }
        events.phases = &p.phases;
        if (cmt__pass_replay(&p, want, NULL, extra, n) != 0)
            return 1;
    } else if (cmt__pass_run(&p, "export", path, want, NULL) != 0) {
        return 1;
    }
    switch (o->format) {
    case CMT__EXPORT_PERFETTO: cmt__export_perfetto_end(&perfetto, &p); break;
    case CMT__EXPORT_MEMORY_VIZ:
        if (cmt__export_memory_viz_end(&memviz, &p, f) != 0 && !ferror(f)) {
            fprintf(stderr, "cumemtrace export: %s: out of memory\n", path);
            status = 1;
        }
        memviz_cut(&memviz, path);
        cmt__export_memory_viz_free(&memviz);
        break;
    case CMT__EXPORT_CSV:
    case CMT__EXPORT_JSONL: {
        int jsonl = o->format == CMT__EXPORT_JSONL;
        if (o->table == CMT__EXPORT_TABLE_EVENTS)
            cmt__rows_end(&events.rows);
        else if (o->table == CMT__EXPORT_TABLE_SITES)
            cmt__export_sites(&p, f, jsonl);
        else if (o->table == CMT__EXPORT_TABLE_EPISODES)
            cmt__export_episodes(&p, f, jsonl);
        else if (o->table == CMT__EXPORT_TABLE_PROCESSES)
            cmt__export_processes(&p, f, jsonl);
        break;
    }
    default: break;
    }
    if (cmt__pass_status(&p))
        status = 1;
    cmt__pass_close(&p);
    return status;
}

/* The traces given (a directory: its *.cmt in name order) into f: the tables' rows and the
 * folded stacks of each in turn (csv: one header); perfetto and memory-viz are one process's
 * view. @return the exit status. */
static int export_all(const struct args *a, FILE *f)
{
    if (a->nfiles == 1 && !cmt__is_dir(a->files[0]) && a->o.rank < 0)
        return export_one(a, a->files[0], f);
    char **paths;
    size_t n;
    if (cmt__trace_paths("export", (const char *const *)a->files, (size_t)a->nfiles, &paths, &n) !=
        0)
        return 1;
    int rc = 0;
    if (a->o.rank >= 0) { /* one trace of them */
        long i = rank_trace(paths, n, a->o.rank);
        rc = i < 0 ? 1 : export_one(a, paths[i], f);
        cmt__trace_paths_free(paths, n);
        return rc;
    }
    if (n > 1 && (a->o.format == CMT__EXPORT_PERFETTO || a->o.format == CMT__EXPORT_MEMORY_VIZ)) {
        fprintf(stderr,
                "cumemtrace export: %s is one trace's view and %zu traces were given: export "
                "each (%s), or csv/jsonl tables of all (--partitioned DIR)\n",
                a->o.format == CMT__EXPORT_PERFETTO ? "perfetto" : "memory-viz", n,
                a->o.format == CMT__EXPORT_PERFETTO
                    ? "their pids keep them apart when their traceEvents are joined"
                    : "one process's snapshot per pickle");
        rc = 1;
    }
    for (size_t i = 0; !rc && i < n; i++) {
        cmt__rows_header(i == 0);
        rc |= export_one(a, paths[i], f);
    }
    cmt__rows_header(1);
    cmt__trace_paths_free(paths, n);
    return rc;
}

int cmt_cmd_export(int argc, char **argv)
{
    struct args a;
    int rc = parse(argc, argv, &a);
    if (rc == 0)
        rc = check(&a);
    if (rc) {
        free(a.files);
        return rc < 0 ? 0 : rc;
    }
    if (a.partitioned) {
        rc = cmt__export_partitioned(&a.o, a.partitioned, a.files, a.nfiles);
        free(a.files);
        return rc;
    }
    FILE *f = a.out ? fopen(a.out, "wb") : stdout;
    if (!f) {
        fprintf(stderr, "cumemtrace export: %s: cannot create the file\n", a.out);
        free(a.files);
        return 1;
    }
    static char buffer[1 << 20]; /* fewer writes: the exports are written in small pieces */
    setvbuf(f, buffer, _IOFBF, sizeof buffer);
    rc = export_all(&a, f);
    int bad = fflush(f) != 0 || ferror(f);
    if (a.out && fclose(f) != 0)
        bad = 1;
    if (bad && !rc) {
        fprintf(stderr, "cumemtrace export: %s: cannot write the export\n",
                a.out ? a.out : "standard output");
        rc = 1;
    }
    free(a.files);
    return rc;
}
