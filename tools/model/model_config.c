/* model_config.c — settings, PYTORCH_CUDA_ALLOC_CONF strings, messages.
 *
 * The parser follows PyTorch's AllocatorConfig::parseArgs: the string is
 * lexed into words and the separators , : [ ] (spaces dropped), then read as
 * key:value pairs separated by commas. Error texts reuse PyTorch's wording
 * where it has one. */
#include "model_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cmt_model_config_default(struct cmt_model_config *config, size_t capacity) {
  memset(config, 0, sizeof *config);
  config->max_split_size = SIZE_MAX;
  config->max_non_split_rounding = CMT__LARGE_BUFFER;
  config->capacity = capacity;
}

/* ---- lexer ------------------------------------------------------------ */

#define CMT__MAX_TOKENS 64
#define CMT__TOKEN_LEN 64

struct tokens {
  char text[CMT__MAX_TOKENS][CMT__TOKEN_LEN];
  size_t count;
};

static int fail(char *err, size_t err_len, const char *fmt, ...) {
  if (err && err_len > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
  }
  return CMT_EMODEL_PARSE;
}

static int push(struct tokens *t, const char *s, size_t n, char *err, size_t err_len) {
  if (t->count == CMT__MAX_TOKENS)
    return fail(err, err_len, "allocator config has more than %d tokens", CMT__MAX_TOKENS);
  if (n >= CMT__TOKEN_LEN)
    return fail(err, err_len, "allocator config word '%.20s...' is too long", s);
  memcpy(t->text[t->count], s, n);
  t->text[t->count][n] = '\0';
  t->count++;
  return 0;
}

static int lex(const char *conf, struct tokens *t, char *err, size_t err_len) {
  char word[CMT__TOKEN_LEN + 1];
  size_t n = 0;
  int rc;
  t->count = 0;
  for (const char *p = conf;; p++) {
    bool separator = *p == ',' || *p == ':' || *p == '[' || *p == ']';
    if (separator || *p == '\0') {
      if (n > 0 && (rc = push(t, word, n, err, err_len)) != 0)
        return rc;
      n = 0;
      if (*p == '\0')
        return 0;
      if ((rc = push(t, p, 1, err, err_len)) != 0)
        return rc;
    } else if (*p != ' ') {
      if (n == CMT__TOKEN_LEN)
        return fail(err, err_len, "allocator config word '%.20s...' is too long", word);
      word[n++] = *p;
    }
  }
}

/* ---- values ----------------------------------------------------------- */

/* A plain decimal that fits an int, as std::stoi would require. */
static bool parse_int(const char *s, unsigned long *out) {
  if (*s < '0' || *s > '9')
    return false;
  errno = 0;
  char *end;
  unsigned long v = strtoul(s, &end, 10);
  if (errno != 0 || *end != '\0' || v > 2147483647ul)
    return false;
  *out = v;
  return true;
}

static bool expect(const struct tokens *t, size_t i, const char *what) {
  return i < t->count && strcmp(t->text[i], what) == 0;
}

/* max_split_size_mb and max_non_split_rounding_mb: N MiB, N >= 20. */
static int parse_mb(const struct tokens *t, size_t i, const char *key, size_t *out,
                    char *err, size_t err_len) {
  unsigned long v;
  if (i >= t->count)
    return fail(err, err_len, "Error, expecting %s value", key);
  if (!parse_int(t->text[i], &v))
    return fail(err, err_len, "%s value '%s' is not a whole number of MiB", key,
                t->text[i]);
  if (v < CMT__LARGE_BUFFER / CMT_MODEL_MIB)
    return fail(err, err_len, "CachingAllocator option %s too small, must be >= %u",
                key, (unsigned)(CMT__LARGE_BUFFER / CMT_MODEL_MIB));
  *out = (size_t)v * CMT_MODEL_MIB;
  return 0;
}

static int parse_divisions(const struct tokens *t, size_t i, unsigned *out,
                           char *err, size_t err_len) {
  unsigned long v;
  if (i >= t->count)
    return fail(err, err_len, "Error, expecting roundup_power2_divisions value");
  if (strcmp(t->text[i], "[") == 0)
    return fail(err, err_len,
                "roundup_power2_divisions per size interval ([...]) is not modelled; "
                "give one value");
  if (!parse_int(t->text[i], &v) || v == 0 || (v & (v - 1)) != 0)
    return fail(err, err_len, "For roundups, the divisons has to be power of 2 (got '%s')",
                t->text[i]);
  *out = (unsigned)v;
  return 0;
}

static int parse_threshold(const struct tokens *t, size_t i, double *out, char *err,
                           size_t err_len) {
  if (i >= t->count)
    return fail(err, err_len, "Error, expecting garbage_collection_threshold value");
  errno = 0;
  char *end;
  double v = strtod(t->text[i], &end);
  if (errno != 0 || end == t->text[i] || *end != '\0')
    return fail(err, err_len, "garbage_collection_threshold value '%s' is not a number",
                t->text[i]);
  if (!(v > 0.0 && v < 1.0))
    return fail(err, err_len, "garbage_collect_threshold is invalid, set it in (0.0, 1.0)");
  *out = v;
  return 0;
}

static int parse_bool(const struct tokens *t, size_t i, const char *key, bool *out,
                      char *err, size_t err_len) {
  if (expect(t, i, "True") || expect(t, i, "False")) {
    *out = expect(t, i, "True");
    return 0;
  }
  return fail(err, err_len, "Expected a single True/False argument for %s", key);
}

/* Keys PyTorch accepts that change nothing the model looks at. */
static bool ignored_key(const char *key) {
  static const char *const keys[] = {
      "release_lock_on_cudamalloc", "release_lock_on_hipmalloc",
      "pinned_use_cuda_host_register", "pinned_use_hip_host_register",
      "pinned_num_register_threads", "pinned_use_background_threads"};
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
    if (strcmp(key, keys[k]) == 0)
      return true;
  return false;
}

static int parse_item(const struct tokens *t, size_t i, struct cmt_model_config *c,
                      char *err, size_t err_len) {
  const char *key = t->text[i];
  size_t v = i + 2;
  if (!expect(t, i + 1, ":"))
    return fail(err, err_len,
                "Error parsing CachingAllocator settings, expected : after '%s'", key);
  if (strcmp(key, "max_split_size_mb") == 0)
    return parse_mb(t, v, key, &c->max_split_size, err, err_len);
  if (strcmp(key, "max_non_split_rounding_mb") == 0)
    return parse_mb(t, v, key, &c->max_non_split_rounding, err, err_len);
  if (strcmp(key, "roundup_power2_divisions") == 0)
    return parse_divisions(t, v, &c->roundup_power2_divisions, err, err_len);
  if (strcmp(key, "garbage_collection_threshold") == 0)
    return parse_threshold(t, v, &c->garbage_collection_threshold, err, err_len);
  if (strcmp(key, "expandable_segments") == 0)
    return parse_bool(t, v, key, &c->expandable_segments, err, err_len);
  if (strcmp(key, "backend") == 0) {
    if (expect(t, v, "native"))
      return 0;
    if (expect(t, v, "cudaMallocAsync"))
      return fail(err, err_len,
                  "backend:cudaMallocAsync is not the caching allocator; not modelled");
    return fail(err, err_len,
                "Unknown allocator backend, options are native and cudaMallocAsync");
  }
  if (ignored_key(key)) {
    if (v >= t->count || expect(t, v, ",") || expect(t, v, ":"))
      return fail(err, err_len, "Error, expecting %s value", key);
    return 0;
  }
  return fail(err, err_len, "Unrecognized CachingAllocator option: %s", key);
}

int cmt_model_config_parse(struct cmt_model_config *config, const char *conf,
                           char *err, size_t err_len) {
  if (!config || !conf)
    return CMT_EINVALID;
  struct tokens *t = malloc(sizeof *t);
  if (!t)
    return CMT_EMODEL_NOMEM;
  struct cmt_model_config c = *config;
  int rc = lex(conf, t, err, err_len);
  for (size_t i = 0; rc == 0 && i < t->count; i += 4) {
    /* Each item is key : value, then a comma unless it is the last. */
    rc = parse_item(t, i, &c, err, err_len);
    if (rc == 0 && i + 3 < t->count && !expect(t, i + 3, ","))
      rc = fail(err, err_len,
                "Error parsing CachingAllocator settings, expected , before '%s'",
                t->text[i + 3]);
    if (rc == 0 && i + 3 == t->count - 1)
      rc = fail(err, err_len, "allocator config ends with a comma");
  }
  free(t);
  if (rc == 0)
    *config = c;
  return rc;
}

/* ---- printing --------------------------------------------------------- */

struct out {
  char *buf;
  size_t len, used;
};

static void put(struct out *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t room = o->used < o->len ? o->len - o->used : 0;
  int n = vsnprintf(room ? o->buf + o->used : NULL, room, fmt, ap);
  va_end(ap);
  if (n > 0)
    o->used += (size_t)n;
}

static bool whole_mb(size_t bytes) {
  return bytes % CMT_MODEL_MIB == 0 && bytes >= CMT__LARGE_BUFFER;
}

int cmt_model_config_format(const struct cmt_model_config *config, char *buf, size_t len) {
  if (!config)
    return CMT_EINVALID;
  struct out o = {buf, len, 0};
  const char *sep = "";
  if (len > 0)
    buf[0] = '\0';
  if (config->max_split_size != 0 && config->max_split_size != SIZE_MAX) {
    if (!whole_mb(config->max_split_size))
      return CMT_EINVALID;
    put(&o, "%smax_split_size_mb:%zu", sep, config->max_split_size / CMT_MODEL_MIB);
    sep = ",";
  }
  if (config->max_non_split_rounding != CMT__LARGE_BUFFER) {
    if (!whole_mb(config->max_non_split_rounding))
      return CMT_EINVALID;
    put(&o, "%smax_non_split_rounding_mb:%zu", sep,
        config->max_non_split_rounding / CMT_MODEL_MIB);
    sep = ",";
  }
  if (config->roundup_power2_divisions > 1) {
    put(&o, "%sroundup_power2_divisions:%u", sep, config->roundup_power2_divisions);
    sep = ",";
  }
  if (config->garbage_collection_threshold > 0.0) {
    put(&o, "%sgarbage_collection_threshold:%g", sep, config->garbage_collection_threshold);
    sep = ",";
  }
  if (config->expandable_segments)
    put(&o, "%sexpandable_segments:True", sep);
  return o.used > (size_t)INT32_MAX ? CMT_EINVALID : (int)o.used;
}

int cmt_model_format_size(uint64_t bytes, char *buf, size_t len) {
  if (bytes <= 1024)
    return snprintf(buf, len, "%llu bytes", (unsigned long long)bytes);
  if (bytes <= 1048576)
    return snprintf(buf, len, "%.2f KiB", (double)bytes / 1024.0);
  if (bytes <= 1073741824ull)
    return snprintf(buf, len, "%.2f MiB", (double)bytes / 1048576.0);
  return snprintf(buf, len, "%.2f GiB", (double)bytes / 1073741824.0);
}

int cmt_model_format_oom(const struct cmt_model_oom *oom, char *buf, size_t len) {
  if (!oom)
    return CMT_EINVALID;
  char tried[32], total[32], allocated[32], free_[32], allowed[48], reserved[32];
  cmt_model_format_size(oom->alloc_size, tried, sizeof tried);
  cmt_model_format_size(oom->device_total, total, sizeof total);
  cmt_model_format_size(oom->allocated, allocated, sizeof allocated);
  cmt_model_format_size(oom->device_free, free_, sizeof free_);
  cmt_model_format_size(oom->reserved, reserved, sizeof reserved);
  allowed[0] = '\0';
  if (oom->allowed > 0) {
    cmt_model_format_size(oom->allowed, allowed, sizeof allowed - 10);
    strcat(allowed, " allowed; ");
  }
  return snprintf(buf, len,
                  "CUDA out of memory. Tried to allocate %s (GPU %d; %s total capacity; "
                  "%s already allocated; %s free; %s%s reserved in total by PyTorch) "
                  "If reserved memory is >> allocated memory try setting "
                  "max_split_size_mb to avoid fragmentation.  See documentation for "
                  "Memory Management and PYTORCH_CUDA_ALLOC_CONF",
                  tried, oom->device, total, allocated, free_, allowed, reserved);
}
