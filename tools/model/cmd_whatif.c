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

#include "commands.h"
#include "output.h"
#include "whatif.h"
#include "whatif_cli.h"

#define CMD "whatif"
#define MIB ((uint64_t)1 << 20)
#define MAX_VALUES 64
#define MAX_SETTINGS 4096

static const char usage[] =
    "usage: cumemtrace whatif [--json] [--capacity BYTES] [--max-split-size-mb LIST]\n"
    "                         [--expandable-segments LIST] [--roundup-power2-divisions LIST]\n"
    "                         [--gc-threshold LIST] [--jobs N] FILE\n"
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
    "  --max-split-size-mb LIST          e.g. 4096,6144,8192,inf (default: unlimited and a\n"
    "                                    ladder around the request that fails)\n"
    "  --expandable-segments LIST        true,false (default: false)\n"
    "  --roundup-power2-divisions LIST   0 (off) or powers of two, e.g. 0,4 (default: 0)\n"
    "  --gc-threshold LIST               0 (off) or fractions in (0,1), e.g. 0,0.8; acts with\n"
    "                                    a memory-fraction cap equal to the capacity (default: 0)\n"
    "  --jobs N               replay on N threads (default: the number of CPUs)\n";

/* ---- argument parsing ------------------------------------------------- */

struct options {
  int json;
  const char *path;
  uint64_t capacity; /* 0: from the trace */
  unsigned jobs;
  uint64_t split[MAX_VALUES];
  size_t split_count;
  bool expandable[MAX_VALUES];
  size_t expandable_count;
  unsigned divisions[MAX_VALUES];
  size_t divisions_count;
  double gc[MAX_VALUES];
  size_t gc_count;
};

int cmt_whatif_parse_bytes(const char *text, uint64_t *out) {
  char *end;
  if (!text || !*text || *text == '-' || *text == '+')
    return -1;
  double v = strtod(text, &end);
  if (end == text || !(v >= 0))
    return -1;
  static const struct {
    const char *suffix;
    double scale;
  } units[] = {{"", 1},         {"b", 1},          {"k", 1024.0},       {"kib", 1024.0},
               {"m", 1048576.0}, {"mib", 1048576.0}, {"g", 1073741824.0}, {"gib", 1073741824.0},
               {"t", 1099511627776.0}, {"tib", 1099511627776.0}};
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
                      const char *expected) {
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

static int parse_split(const char *item, size_t i, void *ctx) {
  uint64_t *values = ctx;
  if (!strcasecmp(item, "inf") || !strcasecmp(item, "unlimited") ||
      !strcasecmp(item, "none") || !strcasecmp(item, "default")) {
    values[i] = UINT64_MAX;
    return 0;
  }
  char *end;
  if (*item < '0' || *item > '9')
    return -1;
  unsigned long long mb = strtoull(item, &end, 10);
  if (*end || mb < 20 || mb > ((uint64_t)1 << 40))
    return -1;
  values[i] = (uint64_t)mb * MIB;
  return 0;
}

static int parse_bool(const char *item, size_t i, void *ctx) {
  bool *values = ctx;
  if (!strcasecmp(item, "true") || !strcmp(item, "1") || !strcasecmp(item, "yes")) {
    values[i] = true;
  } else if (!strcasecmp(item, "false") || !strcmp(item, "0") || !strcasecmp(item, "no")) {
    values[i] = false;
  } else {
    return -1;
  }
  return 0;
}

static int parse_divisions(const char *item, size_t i, void *ctx) {
  unsigned *values = ctx;
  char *end;
  if (*item < '0' || *item > '9')
    return -1;
  unsigned long d = strtoul(item, &end, 10);
  if (*end || d > 1024 || (d > 1 && (d & (d - 1))))
    return -1;
  values[i] = (unsigned)d;
  return 0;
}

static int parse_gc(const char *item, size_t i, void *ctx) {
  double *values = ctx;
  char *end;
  if (!((*item >= '0' && *item <= '9') || *item == '.'))
    return -1;
  double t = strtod(item, &end);
  if (*end || !(t >= 0.0 && t < 1.0))
    return -1;
  values[i] = t;
  return 0;
}

static int parse_args(int argc, char **argv, struct options *o) {
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    const char *value = i + 1 < argc ? argv[i + 1] : NULL;
    int rc = 0;
    if (cmt__is(arg, "-h", "--help")) {
      fputs(usage, stdout);
      return -1;
    } else if (cmt__is(arg, "--json", NULL)) {
      o->json = 1;
      continue;
    } else if (arg[0] != '-' || !arg[1]) {
      if (o->path)
        return cmt__usage_error(CMD, "one trace file expected, got '%s' too", arg);
      o->path = arg;
      continue;
    } else if (!cmt__is(arg, "--capacity", "--max-split-size-mb") &&
               !cmt__is(arg, "--expandable-segments", "--roundup-power2-divisions") &&
               !cmt__is(arg, "--gc-threshold", "--jobs")) {
      return cmt__usage_error(CMD, "unknown option '%s'", arg);
    }
    if (!value)
      return cmt__usage_error(CMD, "%s needs a value", arg);
    i++;
    if (cmt__is(arg, "--capacity", NULL)) {
      if (cmt_whatif_parse_bytes(value, &o->capacity) != 0)
        return cmt__usage_error(CMD, "--capacity: '%s' is not a size such as 20GiB", value);
    } else if (cmt__is(arg, "--jobs", NULL)) {
      char *end;
      long n = strtol(value, &end, 10);
      if (*end || n < 1 || n > 64)
        return cmt__usage_error(CMD, "--jobs wants 1..64, got '%s'", value);
      o->jobs = (unsigned)n;
    } else if (cmt__is(arg, "--max-split-size-mb", NULL)) {
      rc = parse_list(arg, value, &o->split_count, parse_split, o->split,
                      "a whole number of MiB >= 20 or inf");
    } else if (cmt__is(arg, "--expandable-segments", NULL)) {
      rc = parse_list(arg, value, &o->expandable_count, parse_bool, o->expandable,
                      "true or false");
    } else if (cmt__is(arg, "--roundup-power2-divisions", NULL)) {
      rc = parse_list(arg, value, &o->divisions_count, parse_divisions, o->divisions,
                      "0 or a power of two up to 1024");
    } else {
      rc = parse_list(arg, value, &o->gc_count, parse_gc, o->gc, "0 or a fraction in (0,1)");
    }
    if (rc)
      return rc;
  }
  if (!o->path)
    return cmt__usage_error(CMD, "missing trace FILE");
  return 0;
}

/* ---- the sweep -------------------------------------------------------- */

/* Every combination, split size varying slowest. @return the count, or 0 when
 * there would be too many. */
static size_t combinations(const struct options *o, struct cmt_whatif_setting *out) {
  size_t n = 0;
  for (size_t a = 0; a < o->split_count; a++)
    for (size_t b = 0; b < o->expandable_count; b++)
      for (size_t c = 0; c < o->divisions_count; c++)
        for (size_t d = 0; d < o->gc_count; d++) {
          if (n == MAX_SETTINGS)
            return 0;
          out[n++] = (struct cmt_whatif_setting){o->split[a], o->expandable[b],
                                                 o->divisions[c], o->gc[d]};
        }
  return n;
}

/* No list given: unlimited and a ladder around the failing request. */
static void default_split_list(struct options *o, const struct cmt_whatif_stream *s,
                               uint64_t capacity, uint64_t total) {
  struct cmt_whatif_setting base = {UINT64_MAX, o->expandable[0], o->divisions[0], o->gc[0]};
  o->split_count = cmt_whatif_default_splits(s, capacity, total, &base, o->split);
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Exact-bound check: the largest MiB value that makes the smallest failing
 * request oversize, replayed with PyTorch's other defaults. */
static bool exact_bound_run(const struct cmt_whatif_stream *s, const struct cmt_whatif_run_out *run,
                            struct cmt_whatif_result *out) {
  uint64_t exact = run->rec.exact_max_split_mb;
  if (!exact)
    return false;
  for (size_t i = 0; i < run->count; i++)
    if (run->results[i].setting.max_split_size == exact * MIB) {
      *out = run->results[i];
      return true;
    }
  struct cmt_whatif_setting st = {exact * MIB, false, 0, 0.0};
  cmt_whatif_run(s, run->capacity, run->device_total, &st, 1, 1, out);
  return true;
}

int cmt_cmd_whatif(int argc, char **argv) {
  struct options *o = calloc(1, sizeof *o);
  struct cmt_whatif_setting *settings = malloc(MAX_SETTINGS * sizeof *settings);
  struct cmt_whatif_result *results = malloc(MAX_SETTINGS * sizeof *results);
  cmt_reader *r = NULL;
  struct cmt_whatif_stream s = {0};
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
  if (!o->expandable_count)
    o->expandable[o->expandable_count++] = false;
  if (!o->divisions_count)
    o->divisions[o->divisions_count++] = 0;
  if (!o->gc_count)
    o->gc[o->gc_count++] = 0.0;

  if (cmt__open_trace(CMD, o->path, &r) != 0)
    goto out;
  char err[256] = "";
  rc = cmt_whatif_stream_load(r, &s, err, sizeof err);
  if (rc) {
    fprintf(stderr, "cumemtrace whatif: %s: %s\n", o->path, err);
    goto out;
  }
  cmt__warn_damage(CMD, o->path, r, s.damage);

  struct cmt_whatif_run_out run = {.stream = &s, .path = o->path, .results = results};
  if (o->capacity) {
    run.capacity = o->capacity;
    run.capacity_from_trace = false;
  } else if (s.has_capacity) {
    run.capacity = s.device_free;
    run.capacity_from_trace = true;
  } else {
    fprintf(stderr, "cumemtrace whatif: %s: the trace does not say how much device memory was "
                    "free; pass --capacity (e.g. --capacity 20GiB)\n", o->path);
    goto out;
  }
  run.device_total = s.device_total > run.capacity ? s.device_total : run.capacity;

  if (!o->split_count)
    default_split_list(o, &s, run.capacity, run.device_total);
  run.count = combinations(o, settings);
  if (!run.count) {
    fprintf(stderr, "cumemtrace whatif: more than %d combinations of settings; shorten the "
                    "lists\n", MAX_SETTINGS);
    status = 2;
    goto out;
  }
  double start = now_seconds();
  cmt_whatif_run(&s, run.capacity, run.device_total, settings, run.count, o->jobs, results);
  run.seconds = now_seconds() - start;
  run.threads = o->jobs;
  cmt_whatif_recommend(results, run.count, &run.rec);
  run.has_exact = exact_bound_run(&s, &run, &run.exact);

  for (size_t i = 0; i < run.count; i++)
    if (results[i].error) {
      fprintf(stderr, "cumemtrace whatif: %s: replay stopped: %s\n", o->path,
              cmt_strerror(results[i].error));
      goto out;
    }
  if (o->json)
    cmt_whatif_print_json(stdout, &run);
  else
    cmt_whatif_print_text(stdout, &run);
  if (o->json && s.caching_detected)
    fprintf(stderr, "cumemtrace whatif: warning: %s looks recorded through a caching allocator "
                    "(%s); record with PYTORCH_NO_CUDA_MEMORY_CACHING=1\n", o->path,
            s.caching_reason);
  status = 0;
out:
  cmt_whatif_stream_free(&s);
  cmt_reader_close(r);
  free(o);
  free(settings);
  free(results);
  return status;
}
