/* cmd_whatif.c — `cumemtrace whatif`: replay a tensor-level stream through the
 * caching-allocator model for every combination of the settings asked for,
 * print the table, PyTorch's OOM messages and a recommendation. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <sys/stat.h>

#include "commands.h"
#include "options.h"
#include "output.h"
#include "pass.h"
#include "progress.h"
#include "whatif.h"
#include "print/whatif_cli.h"

#define CMD "whatif"
#define MIB ((uint64_t)1 << 20)
#define MAX_VALUES 64
#define MAX_SETTINGS 4096

/* Options besides the settings, before and after them in the synopsis. */
static const char *const synopsis_before[] = {"[--json]", "[--capacity BYTES]",
                                              "[--memory-fraction F]"};
static const char *const synopsis_after[] = {"[--address-policy never-reuse|first-fit]",
                                             "[--oom-message 2.x|1.x]", "[--jobs N]", "FILE"};

static const char usage_text[] =
    "\n"
    "Replays the tensor-level allocation stream in FILE through a model of PyTorch's CUDA\n"
    "caching allocator, once per combination of settings, and says which settings of\n"
    "PYTORCH_CUDA_ALLOC_CONF avoid out-of-memory failures.\n"
    "\n"
    "Record the stream with PyTorch's caching turned off, so every tensor is its own\n"
    "allocation:  PYTORCH_NO_CUDA_MEMORY_CACHING=1 cumemtrace record -- python app.py\n"
    "(or PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync).\n"
    "\n"
    "options:\n"
    "  --json                 print one JSON object instead of the table\n"
    "  --capacity BYTES       memory the allocator may reserve, e.g. 20GiB (default: the\n"
    "                         device's total minus what was in use before the first allocation)\n"
    "  --memory-fraction F    torch.cuda.set_per_process_memory_fraction(F), 0 < F <= 1: the\n"
    "                         allocator may hold F x the device's total; garbage collection\n"
    "                         (--gc-threshold) acts only with a fraction, as in PyTorch\n";

static const char usage_jobs[] =
    "  --address-policy never-reuse|first-fit\n"
    "                         where the model puts device allocations (default never-reuse);\n"
    "                         a setting is also replayed under the other policy when they could\n"
    "                         differ, and marked borderline when its OOM verdict depends on it\n"
    "  --oom-message 2.x|1.x  the wording of PyTorch's OOM messages: 2.x (default, as\n"
    "                         PyTorch 2.6 prints them, unless the trace names a PyTorch before\n"
    "                         2.1) or 1.x (PyTorch 1.x to 2.0)\n"
    "  --jobs N               replay on N threads (default: the number of CPUs)\n"
    "Every option that takes a value also takes it as --option=VALUE.\n";

#define USAGE_WIDTH 90 /* the synopsis wraps before this column */
#define USAGE_HELP_COLUMN 36

/* One word of the synopsis, wrapped under the first option. */
static void synopsis_word(FILE *f, const char *word, size_t *column)
{
    static const char head[] = "usage: cumemtrace whatif";
    size_t len = strlen(word);
    if (*column == 0) {
        fputs(head, f);
        *column = sizeof head - 1;
    }
    if (*column + 1 + len > USAGE_WIDTH) {
        fprintf(f, "\n%*s", (int)sizeof head, "");
        *column = sizeof head;
    } else {
        fputc(' ', f);
        (*column)++;
    }
    fputs(word, f);
    *column += len;
}

/* "  --flag LIST   help", the help's later lines under its first. */
static void usage_option(FILE *f, const char *flag, const char *help)
{
    char name[64];
    snprintf(name, sizeof name, "%s LIST", flag);
    fprintf(f, "  %-*s ", USAGE_HELP_COLUMN - 3, name);
    for (const char *p = help; *p; p++) {
        fputc(*p, f);
        if (*p == '\n')
            fprintf(f, "%*s", USAGE_HELP_COLUMN, "");
    }
    fputc('\n', f);
}

static void print_usage(FILE *f)
{
    char word[64];
    size_t column = 0;
    for (size_t i = 0; i < sizeof synopsis_before / sizeof *synopsis_before; i++)
        synopsis_word(f, synopsis_before[i], &column);
#define CMT__SETTING_SYNOPSIS(field, type, key, def, flag, ...) \
    snprintf(word, sizeof word, "[%s LIST]", flag);             \
    synopsis_word(f, word, &column);
    CMT_MODEL_SETTINGS(CMT__SETTING_SYNOPSIS)
#undef CMT__SETTING_SYNOPSIS
    for (size_t i = 0; i < sizeof synopsis_after / sizeof *synopsis_after; i++)
        synopsis_word(f, synopsis_after[i], &column);
    fputc('\n', f);
    fputs(usage_text, f);
#define CMT__SETTING_USAGE(field, type, key, def, flag, json, rank, lo, hi, help) \
    usage_option(f, flag, help);
    CMT_MODEL_SETTINGS(CMT__SETTING_USAGE)
#undef CMT__SETTING_USAGE
    fputs(usage_jobs, f);
}

/* ---- argument parsing ------------------------------------------------- */

struct options {
    int json;
    const char *path;
    uint64_t capacity; /* 0: from the trace */
    unsigned jobs;
    enum cmt_model_oom_style oom_style;
    bool oom_style_given;
    double memory_fraction; /* 0: none */
    enum cmt_model_address_policy address_policy;
    /* The values given for each setting, in the order given. */
#define CMT__SETTING_LIST(field, type, ...)          \
    struct {                                         \
        CMT__SETTING_CTYPE(type) values[MAX_VALUES]; \
        size_t count;                                \
    } field;
    CMT_MODEL_SETTINGS(CMT__SETTING_LIST)
#undef CMT__SETTING_LIST
};

int cmt_whatif_parse_bytes(const char *text, uint64_t *out)
{
    char *end;
    if (!text || !*text || *text == '-' || *text == '+')
        return -1;
    double v = strtod(text, &end);
    if (end == text || !(v >= 0))
        return -1;
    static const struct {
        const char *suffix;
        double scale;
    } units[] = {{"", 1},
                 {"b", 1},
                 {"k", 1024.0},
                 {"kib", 1024.0},
                 {"m", 1048576.0},
                 {"mib", 1048576.0},
                 {"g", 1073741824.0},
                 {"gib", 1073741824.0},
                 {"t", 1099511627776.0},
                 {"tib", 1099511627776.0}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcasecmp(end, units[i].suffix) != 0)
            continue;
        double bytes = v * units[i].scale;
        if (bytes < 1 || bytes >= 18446744073709551615.0)
            return -1;
        *out = (uint64_t)bytes;
        return 0;
    }
    return -1;
}

/* Split a comma list, calling parse on each item. @return 0 or a usage error. */
static int parse_list(const char *option, const char *list, size_t *count,
                      int (*parse)(const char *item, size_t index, void *ctx), void *ctx,
                      const char *expected)
{
    char buf[1024];
    if (snprintf(buf, sizeof buf, "%s", list) >= (int)sizeof buf)
        return cmt__usage_error(CMD, "%s: list too long", option);
    char *save = NULL;
    char *item = strtok_r(buf, ",", &save);
    if (!item)
        return cmt__usage_error(CMD, "%s needs a comma-separated list", option);
    for (; item; item = strtok_r(NULL, ",", &save)) {
        while (*item == ' ')
            item++;
        if (*count >= MAX_VALUES)
            return cmt__usage_error(CMD, "%s: at most %d values", option, MAX_VALUES);
        if (parse(item, *count, ctx) != 0)
            return cmt__usage_error(CMD, "%s: '%s' is not %s", option, item, expected);
        (*count)++;
    }
    return 0;
}

/* The list-item parsers of the setting types (model_settings.h), one per
 * type: item_<type>(item, index, ctx) stores the value at values[index], and
 * expected_<type> says what an item should have been. */
struct list_ctx {
    double lo, hi; /* the table's range */
    void *values;  /* the setting's values[] */
};

static int item_mb(const char *item, size_t i, void *ctx)
{
    const struct list_ctx *c = ctx;
    uint64_t *values = c->values;
    char *end;
    if (*item < '0' || *item > '9')
        return -1;
    unsigned long long mb = strtoull(item, &end, 10);
    if (*end || (double)mb < c->lo || (double)mb > c->hi)
        return -1;
    values[i] = (uint64_t)mb * MIB;
    return 0;
}

static void expected_mb(char *buf, size_t len, double lo, double hi)
{
    snprintf(buf, len, "a whole number of MiB >= %u", (unsigned)lo);
}

static int item_limit_mb(const char *item, size_t i, void *ctx)
{
    const struct list_ctx *c = ctx;
    uint64_t *values = c->values;
    if (!strcasecmp(item, "inf") || !strcasecmp(item, "unlimited") || !strcasecmp(item, "none") ||
        !strcasecmp(item, "default")) {
        values[i] = UINT64_MAX;
        return 0;
    }
    /* c10 refuses the bound itself ("must be > 20"); a plain mb setting's bound is its
     * default, which is the key left out. */
    if (item_mb(item, i, ctx) != 0 || (double)(values[i] / MIB) <= c->lo)
        return -1;
    return 0;
}

static void expected_limit_mb(char *buf, size_t len, double lo, double hi)
{
    snprintf(buf, len, "a whole number of MiB > %u or inf", (unsigned)lo);
}

static int item_boolean(const char *item, size_t i, void *ctx)
{
    const struct list_ctx *c = ctx;
    bool *values = c->values;
    if (!strcasecmp(item, "true") || !strcmp(item, "1") || !strcasecmp(item, "yes")) {
        values[i] = true;
    } else if (!strcasecmp(item, "false") || !strcmp(item, "0") || !strcasecmp(item, "no")) {
        values[i] = false;
    } else {
        return -1;
    }
    return 0;
}

static void expected_boolean(char *buf, size_t len, double lo, double hi)
{
    snprintf(buf, len, "true or false");
}

static int item_pow2(const char *item, size_t i, void *ctx)
{
    const struct list_ctx *c = ctx;
    unsigned *values = c->values;
    char *end;
    if (*item < '0' || *item > '9')
        return -1;
    unsigned long d = strtoul(item, &end, 10);
    if (*end || (double)d > c->hi || (d > 1 && (d & (d - 1))))
        return -1;
    values[i] = (unsigned)d;
    return 0;
}

static void expected_pow2(char *buf, size_t len, double lo, double hi)
{
    snprintf(buf, len, "0 or a power of two up to %u", (unsigned)hi);
}

static int item_fraction(const char *item, size_t i, void *ctx)
{
    const struct list_ctx *c = ctx;
    double *values = c->values;
    char *end;
    if (!((*item >= '0' && *item <= '9') || *item == '.'))
        return -1;
    double t = strtod(item, &end);
    if (*end || !(t == 0.0 || (t > c->lo && t < c->hi)))
        return -1;
    values[i] = t;
    return 0;
}

static void expected_fraction(char *buf, size_t len, double lo, double hi)
{
    snprintf(buf, len, "0 or a fraction in (%g,%g)", lo, hi);
}

enum {
    OPT_HELP = 1,
    OPT_JSON,
    OPT_CAPACITY,
    OPT_JOBS,
    OPT_OOM_MESSAGE,
    OPT_MEMORY_FRACTION,
    OPT_ADDRESS_POLICY,
    OPT_SETTING /* + CMT_MODEL_SETTING_field: the settings' list options */
};

const struct cmt__option cmt_cmd_whatif_options[] = {
    CMT__OPTION_HELP(OPT_HELP),
    {NULL, "--json", 0, OPT_JSON, NULL},
    {NULL, "--capacity", 1, OPT_CAPACITY, "a value"},
    {NULL, "--jobs", 1, OPT_JOBS, "a value"},
    {NULL, "--oom-message", 1, OPT_OOM_MESSAGE, "a value"},
    {NULL, "--memory-fraction", 1, OPT_MEMORY_FRACTION, "a value"},
    {NULL, "--address-policy", 1, OPT_ADDRESS_POLICY, "a value"},
#define CMT__SETTING_ENTRY(field, type, key, def, flag, ...) \
    {NULL, flag, 1, OPT_SETTING + CMT_MODEL_SETTING_##field, "a value"},
    CMT_MODEL_SETTINGS(CMT__SETTING_ENTRY)
#undef CMT__SETTING_ENTRY
        {0},
};

/* The list option `arg` of setting CMT_MODEL_SETTING_field `setting`.
 * @return 0 or a usage error. */
static int parse_setting(size_t setting, const char *arg, const char *value, struct options *o)
{
#define CMT__SETTING_OPTION(field, type, key, def, flag, json, rank, lo, hi, help)   \
    if (setting == CMT_MODEL_SETTING_##field) {                                      \
        struct list_ctx ctx = {lo, hi, o->field.values};                             \
        char expected[64];                                                           \
        expected_##type(expected, sizeof expected, lo, hi);                          \
        return parse_list(arg, value, &o->field.count, item_##type, &ctx, expected); \
    }
    CMT_MODEL_SETTINGS(CMT__SETTING_OPTION)
#undef CMT__SETTING_OPTION
    return cmt__usage_error(CMD, "unknown option '%s'", arg);
}

/* One option's value (not a setting's) into *o. @return 0, or 2 after a usage error. */
static int parse_value(int opt, const char *value, struct options *o)
{
    char *end;
    if (opt == OPT_CAPACITY) {
        if (cmt_whatif_parse_bytes(value, &o->capacity) != 0)
            return cmt__usage_error(CMD, "--capacity: '%s' is not a size such as 20GiB", value);
    } else if (opt == OPT_JOBS) {
        long n = strtol(value, &end, 10);
        if (*end || n < 1 || n > 64)
            return cmt__usage_error(CMD, "--jobs wants 1..64, got '%s'", value);
        o->jobs = (unsigned)n;
    } else if (opt == OPT_OOM_MESSAGE) {
        if (strcmp(value, "2.x") == 0 || strcmp(value, "2") == 0)
            o->oom_style = CMT_MODEL_OOM_2X;
        else if (strcmp(value, "1.x") == 0 || strcmp(value, "1") == 0)
            o->oom_style = CMT_MODEL_OOM_1X;
        else
            return cmt__usage_error(CMD, "--oom-message wants 2.x or 1.x, got '%s'", value);
        o->oom_style_given = true;
    } else if (opt == OPT_MEMORY_FRACTION) {
        double f = strtod(value, &end);
        if (end == value || *end || !(f > 0.0 && f <= 1.0))
            return cmt__usage_error(CMD, "--memory-fraction wants a fraction in (0,1], got '%s'",
                                    value);
        o->memory_fraction = f;
    } else if (cmt_model_address_policy_parse(value, &o->address_policy) != CMT_EOK) {
        return cmt__usage_error(CMD, "--address-policy wants never-reuse or first-fit, got '%s'",
                                value);
    }
    return 0;
}

static int parse_args(int argc, char **argv, struct options *o)
{
    struct cmt__opts p;
    int opt, rc = 0;
    cmt__opts_init(&p, CMD, argc, argv, cmt_cmd_whatif_options, 0);
    while (!rc && (opt = cmt__opts_next(&p)) != CMT__OPT_END) {
        if (opt == OPT_HELP) {
            print_usage(stdout);
            return -1;
        } else if (opt == OPT_JSON) {
            o->json = 1;
        } else if (opt == CMT__OPT_ERROR) {
            return 2;
        } else if (opt == CMT__OPT_ARG) {
            if (o->path)
                return cmt__usage_error(CMD, "one trace file expected, got '%s' too", p.value);
            o->path = p.value;
        } else if (opt >= OPT_SETTING) {
            rc = parse_setting((size_t)(opt - OPT_SETTING), p.name, p.value, o);
        } else {
            rc = parse_value(opt, p.value, o);
        }
    }
    if (rc)
        return rc;
    if (!o->path)
        return cmt__usage_error(CMD, "missing trace FILE");
    return 0;
}

/* ---- the sweep -------------------------------------------------------- */

/* Every combination of the values given, an odometer over the table: the
 * first setting (split size) varies slowest. @return the count, or 0 when
 * there would be too many. */
static size_t combinations(const struct options *o, struct cmt_whatif_setting *out)
{
    size_t count[CMT_MODEL_SETTING_COUNT], at[CMT_MODEL_SETTING_COUNT] = {0};
    size_t n = 0;
#define CMT__SETTING_COUNT(field, ...) count[CMT_MODEL_SETTING_##field] = o->field.count;
    CMT_MODEL_SETTINGS(CMT__SETTING_COUNT)
#undef CMT__SETTING_COUNT
    for (size_t k = 0; k < CMT_MODEL_SETTING_COUNT; k++)
        if (count[k] == 0)
            return 0;
    for (;;) {
        if (n == MAX_SETTINGS)
            return 0;
#define CMT__SETTING_PICK(field, ...) out[n].field = o->field.values[at[CMT_MODEL_SETTING_##field]];
        CMT_MODEL_SETTINGS(CMT__SETTING_PICK)
#undef CMT__SETTING_PICK
        n++;
        size_t k = CMT_MODEL_SETTING_COUNT;
        while (k > 0 && ++at[k - 1] == count[k - 1])
            at[--k] = 0;
        if (k == 0)
            return n;
    }
}

/* Settings not given take their default; max_split_size is left empty, for
 * the ladder. */
static void default_lists(struct options *o)
{
#define CMT__SETTING_DEFAULT_LIST(field, type, key, def, ...)                             \
    if (!o->field.count && CMT_MODEL_SETTING_##field != CMT_MODEL_SETTING_max_split_size) \
        o->field.values[o->field.count++] = def;
    CMT_MODEL_SETTINGS(CMT__SETTING_DEFAULT_LIST)
#undef CMT__SETTING_DEFAULT_LIST
}

/* No list given: unlimited and a ladder around the failing request, with the
 * first value of every other list. */
static void default_split_list(struct options *o, const struct cmt_whatif_stream *s,
                               const struct cmt_whatif_device *dev)
{
    struct cmt_whatif_setting base;
#define CMT__SETTING_FIRST(field, ...) base.field = o->field.values[0];
    CMT_MODEL_SETTINGS(CMT__SETTING_FIRST)
#undef CMT__SETTING_FIRST
    base.max_split_size = UINT64_MAX;
    o->max_split_size.count = cmt_whatif_default_splits_on(s, dev, &base, o->max_split_size.values);
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Exact-bound check: the largest MiB value that makes the smallest failing
 * request oversize, replayed with PyTorch's other defaults. */
static bool exact_bound_run(const struct cmt_whatif_stream *s, const struct cmt_whatif_run_out *run,
                            struct cmt_whatif_result *out)
{
    uint64_t exact = run->rec.exact_max_split_mb;
    if (!exact)
        return false;
    for (size_t i = 0; i < run->count; i++)
        if (run->results[i].setting.max_split_size == exact * MIB) {
            *out = run->results[i];
            return true;
        }
    struct cmt_whatif_setting st;
    cmt_whatif_setting_default(&st);
    st.max_split_size = exact * MIB;
    cmt_whatif_run_on(s, &run->dev, &st, 1, 1, out);
    return true;
}

/* @return 1 after naming the first setting whose replay stopped on an error, with the event it
 * stopped at (the replay stops at the event it could not apply). */
static int replay_failed(const struct options *o, const struct cmt_whatif_run_out *run)
{
    for (size_t i = 0; i < run->count; i++) {
        const struct cmt_whatif_result *res = &run->results[i];
        if (!res->error)
            continue;
        const struct cmt_whatif_stream *s = run->stream;
        if (res->events_replayed >= s->event_count) {
            fprintf(stderr, "cumemtrace whatif: %s: replay stopped: %s\n", o->path,
                    cmt_strerror(res->error));
            return 1;
        }
        struct cmt_whatif_event ev = {0};
        const struct cmt_whatif_event *e = &ev;
        cmt_whatif_stream_event(s, res->events_replayed, &ev);
        if (!e->is_free && e->size >= ((uint64_t)1 << 60) && res->error == CMT_EINVALID)
            fprintf(stderr,
                    "cumemtrace whatif: %s: event seq %" PRIu64 ": an allocation of %" PRIu64
                    " bytes is larger than the model replays (PyTorch refuses 1 EiB or "
                    "more); replay stopped\n",
                    o->path, e->seq, e->size);
        else
            fprintf(stderr, "cumemtrace whatif: %s: event seq %" PRIu64 ": replay stopped: %s\n",
                    o->path, e->seq, cmt_strerror(res->error));
        return 1;
    }
    return 0;
}

/* A failure other processes caused replays on what the process had then: the OOM analysis's
 * first failure on dev (a pass of its own; the stream does not keep the verdict). */
static void held_capacity(const char *path, int32_t dev, struct cmt_whatif_capacity *cap)
{
    struct cmt__pass p;
    if (cmt__pass_open(&p, CMD, path) != 0)
        return;
    p.quiet_damage = 1; /* said once, by the stream's reading */
    if (cmt__pass_replay(&p, CMT__PASS_OOM, NULL, NULL, 0) != 0)
        return;
    cmt__whatif_capacity_at_failure(p.oom, dev, cap);
    cmt__pass_close(&p);
}

int cmt_cmd_whatif(int argc, char **argv)
{
    struct options *o = calloc(1, sizeof *o);
    struct cmt_whatif_setting *settings = malloc(MAX_SETTINGS * sizeof *settings);
    struct cmt_whatif_result *results = malloc(MAX_SETTINGS * sizeof *results);
    cmt_reader *r = NULL;
    struct cmt_whatif_stream s = {0};
    struct cmt_whatif_selfcheck check = {0};
    int status = 1;
    if (!o || !settings || !results) {
        fprintf(stderr, "cumemtrace whatif: out of memory\n");
        goto out;
    }
    int rc = parse_args(argc, argv, o);
    if (rc) {
        status = rc < 0 ? 0 : rc;
        goto out;
    }
    default_lists(o);
    static char one[4096]; /* a directory's one trace */
    if (!(o->path = cmt__one_trace(CMD, o->path,
                                   "whatif replays one process's allocator: name one of them "
                                   "(`cumemtrace report DIR` says which rank failed first)",
                                   one, sizeof one)))
        goto out;
    if (cmt__open_trace(CMD, o->path, &r) != 0)
        goto out;
    struct cmt_err err = {0};
    struct cmt__progress progress; /* a line on a terminal while the trace is read */
    struct cmt_observer extra[1];
    size_t extra_count = 0;
    struct stat st;
    if (cmt__progress_wanted(stderr)) {
        cmt__progress_init(&progress, stderr, CMD, o->path, 1,
                           stat(o->path, &st) == 0 ? (uint64_t)st.st_size : 0,
                           cmt__progress_now_ns());
        extra[extra_count++] = cmt__progress_observer(&progress);
    }
    /* allocator records, or driver's */
    rc = cmt_whatif_load_any_observed(r, &s, &check, extra, extra_count, &err);
    if (extra_count)
        cmt__progress_done(&progress);
    if (rc) {
        fprintf(stderr, "cumemtrace whatif: %s: %s\n", o->path, cmt_err_message(&err));
        goto out;
    }
    cmt__warn_damage(CMD, o->path, r, s.damage);

    struct cmt_whatif_run_out run = {
        .stream = &s, .path = o->path, .results = results, .oom_style = o->oom_style};
    /* --capacity, else what the trace says was free, else no limit (one choice: html's too) */
    struct cmt_whatif_capacity cap;
    if (cmt_whatif_capacity_choose(&s, o->capacity, &cap) != 0)
        goto out;
    if (!o->capacity && s.failed_allocs)
        held_capacity(o->path, s.device, &cap);
    run.capacity = cap.capacity;
    run.oom_own_bytes = cap.oom_own_bytes;
    run.oom_free_bytes = cap.oom_free_bytes;
    run.device_total = cap.device_total;
    run.capacity_source = cap.source;
    run.dev = cmt_whatif_capacity_device(&cap);
    run.dev.memory_fraction = o->memory_fraction;
    run.dev.address_policy = o->address_policy;
    /* The wording of the PyTorch the trace names, unless --oom-message says. */
    if (!o->oom_style_given && cmt_whatif_torch_prints_1x(s.torch_version)) {
        run.oom_style = CMT_MODEL_OOM_1X;
        run.oom_style_from_trace = true;
    }
    if (check.present) {
        cmt_whatif_selfcheck_run(&s, run.capacity, run.device_total, &check); /* check.error */
        run.check = &check;
    }
    if (!o->max_split_size.count)
        default_split_list(o, &s, &run.dev);
    run.count = combinations(o, settings);
    if (!run.count) {
        fprintf(stderr,
                "cumemtrace whatif: more than %d combinations of settings; shorten the "
                "lists\n",
                MAX_SETTINGS);
        status = 2;
        goto out;
    }
    double start = now_seconds();
    cmt_whatif_run_on(&s, &run.dev, settings, run.count, o->jobs, results);
    run.seconds = now_seconds() - start;
    run.threads = o->jobs;
    cmt_whatif_recommend(results, run.count, &run.rec);
    run.has_exact = exact_bound_run(&s, &run, &run.exact);

    if (replay_failed(o, &run))
        goto out;
    if (o->json)
        cmt_whatif_print_json(stdout, &run);
    else
        cmt_whatif_print_text(stdout, &run);
    if (!o->memory_fraction)
        for (size_t i = 0; i < run.count; i++)
            if (settings[i].garbage_collection_threshold > 0.0) {
                fprintf(stderr,
                        "cumemtrace whatif: note: garbage_collection_threshold acts only with a "
                        "memory fraction (PyTorch's set_per_process_memory_fraction); pass "
                        "--memory-fraction F\n");
                break;
            }
    if (o->json && s.caching_detected)
        fprintf(stderr,
                "cumemtrace whatif: warning: %s looks recorded through a caching allocator "
                "(%s); record with PYTORCH_NO_CUDA_MEMORY_CACHING=1\n",
                o->path, s.caching_reason);
    status = 0;
out:
    cmt_whatif_selfcheck_free(&check);
    cmt_whatif_stream_free(&s);
    cmt_reader_close(r);
    free(o);
    free(settings);
    free(results);
    return status;
}
