/* model_config.c — settings, PYTORCH_CUDA_ALLOC_CONF strings, messages.
 *
 * The parser follows PyTorch's AllocatorConfig::parseArgs: the string is
 * lexed into words and the separators , : [ ] (spaces dropped), then read as
 * key:value pairs separated by commas. Error texts reuse PyTorch's wording
 * where it has one. */
#include "model_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cmt_model_config_default(struct cmt_model_config *config, size_t capacity)
{
    memset(config, 0, sizeof *config);
#define CMT__SETTING_DEFAULT(field, type, key, def, ...) config->field = def;
    CMT_MODEL_SETTINGS(CMT__SETTING_DEFAULT)
#undef CMT__SETTING_DEFAULT
    config->capacity = capacity;
}

/* ---- lexer ------------------------------------------------------------ */

#define CMT__MAX_TOKENS 64
#define CMT__TOKEN_LEN 64

struct tokens {
    char text[CMT__MAX_TOKENS][CMT__TOKEN_LEN];
    size_t count;
};

static int fail(char *err, size_t err_len, const char *fmt, ...)
{
    if (err && err_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
    }
    return CMT_EMODEL_PARSE;
}

static int push(struct tokens *t, const char *s, size_t n, char *err, size_t err_len)
{
    if (t->count == CMT__MAX_TOKENS)
        return fail(err, err_len, "allocator config has more than %d tokens", CMT__MAX_TOKENS);
    if (n >= CMT__TOKEN_LEN)
        return fail(err, err_len, "allocator config word '%.20s...' is too long", s);
    memcpy(t->text[t->count], s, n);
    t->text[t->count][n] = '\0';
    t->count++;
    return 0;
}

static int lex(const char *conf, struct tokens *t, char *err, size_t err_len)
{
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
static bool parse_int(const char *s, unsigned long *out)
{
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

static bool expect(const struct tokens *t, size_t i, const char *what)
{
    return i < t->count && strcmp(t->text[i], what) == 0;
}

/* The value parsers of the setting types (model_settings.h), one per type:
 * parse_<type>(tokens, index of the value, key, lo, hi, out, err, err_len).
 * Texts reuse PyTorch's wording where it has one. */

/* N MiB, N >= lo; N below PyTorch's stoi limit. */
static int parse_mb(const struct tokens *t, size_t i, const char *key, double lo, double hi,
                    uint64_t *out, char *err, size_t err_len)
{
    unsigned long v;
    if (i >= t->count)
        return fail(err, err_len, "Error, expecting %s value", key);
    if (!parse_int(t->text[i], &v))
        return fail(err, err_len, "%s value '%s' is not a whole number of MiB", key, t->text[i]);
    if ((double)v < lo)
        return fail(err, err_len, "CachingAllocator option %s too small, must be >= %u", key,
                    (unsigned)lo);
    *out = (uint64_t)v * CMT_MODEL_MIB;
    return 0;
}

/* The string has no word for unlimited: that is the key left out. */
static int parse_limit_mb(const struct tokens *t, size_t i, const char *key, double lo, double hi,
                          uint64_t *out, char *err, size_t err_len)
{
    return parse_mb(t, i, key, lo, hi, out, err, err_len);
}

static int parse_pow2(const struct tokens *t, size_t i, const char *key, double lo, double hi,
                      unsigned *out, char *err, size_t err_len)
{
    unsigned long v;
    if (i >= t->count)
        return fail(err, err_len, "Error, expecting %s value", key);
    if (strcmp(t->text[i], "[") == 0)
        return fail(err, err_len, "%s per size interval ([...]) is not modelled; give one value",
                    key);
    /* PyTorch's text for roundup_power2_divisions, the only pow2 setting. */
    if (!parse_int(t->text[i], &v) || v == 0 || (v & (v - 1)) != 0)
        return fail(err, err_len, "For roundups, the divisons has to be power of 2 (got '%s')",
                    t->text[i]);
    *out = (unsigned)v;
    return 0;
}

static int parse_fraction(const struct tokens *t, size_t i, const char *key, double lo, double hi,
                          double *out, char *err, size_t err_len)
{
    if (i >= t->count)
        return fail(err, err_len, "Error, expecting %s value", key);
    errno = 0;
    char *end;
    double v = strtod(t->text[i], &end);
    if (errno != 0 || end == t->text[i] || *end != '\0')
        return fail(err, err_len, "%s value '%s' is not a number", key, t->text[i]);
    /* PyTorch's text for garbage_collection_threshold, the only fraction. */
    if (!(v > lo && v < hi))
        return fail(err, err_len, "garbage_collect_threshold is invalid, set it in (%.1f, %.1f)",
                    lo, hi);
    *out = v;
    return 0;
}

static int parse_boolean(const struct tokens *t, size_t i, const char *key, double lo, double hi,
                         bool *out, char *err, size_t err_len)
{
    if (expect(t, i, "True") || expect(t, i, "False")) {
        *out = expect(t, i, "True");
        return 0;
    }
    return fail(err, err_len, "Expected a single True/False argument for %s", key);
}

/* Keys PyTorch accepts that change nothing the model looks at. */
static bool ignored_key(const char *key)
{
    static const char *const keys[] = {
        "release_lock_on_cudamalloc",    "release_lock_on_hipmalloc",
        "pinned_use_cuda_host_register", "pinned_use_hip_host_register",
        "pinned_num_register_threads",   "pinned_use_background_threads"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        if (strcmp(key, keys[k]) == 0)
            return true;
    return false;
}

static int parse_item(const struct tokens *t, size_t i, struct cmt_model_config *c, char *err,
                      size_t err_len)
{
    const char *key = t->text[i];
    size_t v = i + 2;
    if (!expect(t, i + 1, ":"))
        return fail(err, err_len, "Error parsing CachingAllocator settings, expected : after '%s'",
                    key);
#define CMT__SETTING_PARSE(field, type, conf_key, def, flag, json, rank, lo, hi, help) \
    if (strcmp(key, conf_key) == 0)                                                    \
        return parse_##type(t, v, key, lo, hi, &c->field, err, err_len);
    CMT_MODEL_SETTINGS(CMT__SETTING_PARSE)
#undef CMT__SETTING_PARSE
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

int cmt_model_config_parse(struct cmt_model_config *config, const char *conf, char *err,
                           size_t err_len)
{
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

static void put(struct out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->used < o->len ? o->len - o->used : 0;
    int n = vsnprintf(room ? o->buf + o->used : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->used += (size_t)n;
}

/* The printers of the setting types: put_<type>(out, separator, key, value,
 * lo) writes ",key:value" (no comma first) for a value that differs from
 * the default; the caller has checked that. */
static int put_mb(struct out *o, const char **sep, const char *key, uint64_t v, double lo)
{
    if (v % CMT_MODEL_MIB != 0 || (double)(v / CMT_MODEL_MIB) < lo)
        return CMT_EINVALID;
    put(o, "%s%s:%" PRIu64, *sep, key, v / CMT_MODEL_MIB);
    *sep = ",";
    return 0;
}

static int put_limit_mb(struct out *o, const char **sep, const char *key, uint64_t v, double lo)
{
    return put_mb(o, sep, key, v, lo);
}

static int put_pow2(struct out *o, const char **sep, const char *key, unsigned v, double lo)
{
    put(o, "%s%s:%u", *sep, key, v);
    *sep = ",";
    return 0;
}

static int put_fraction(struct out *o, const char **sep, const char *key, double v, double lo)
{
    put(o, "%s%s:%g", *sep, key, v);
    *sep = ",";
    return 0;
}

static int put_boolean(struct out *o, const char **sep, const char *key, bool v, double lo)
{
    put(o, "%s%s:%s", *sep, key, v ? "True" : "False");
    *sep = ",";
    return 0;
}

int cmt_model_config_format(const struct cmt_model_config *config, char *buf, size_t len)
{
    if (!config)
        return CMT_EINVALID;
    struct out o = {buf, len, 0};
    const char *sep = "";
    int rc;
    if (len > 0)
        buf[0] = '\0';
    for (int rank = 0; rank < CMT_MODEL_SETTING_COUNT; rank++) {
#define CMT__SETTING_PUT(field, type, conf_key, def, flag, json, conf_rank, lo, hi, help) \
    if (conf_rank == rank && cmt__setting_set_##type(config->field, def) &&               \
        (rc = put_##type(&o, &sep, conf_key, config->field, lo)) != 0)                    \
        return rc;
        CMT_MODEL_SETTINGS(CMT__SETTING_PUT)
#undef CMT__SETTING_PUT
    }
    return o.used > (size_t)INT32_MAX ? CMT_EINVALID : (int)o.used;
}

int cmt_model_format_size(uint64_t bytes, char *buf, size_t len)
{
    if (bytes <= 1024)
        return snprintf(buf, len, "%llu bytes", (unsigned long long)bytes);
    if (bytes <= 1048576)
        return snprintf(buf, len, "%.2f KiB", (double)bytes / 1024.0);
    if (bytes <= 1073741824ull)
        return snprintf(buf, len, "%.2f MiB", (double)bytes / 1048576.0);
    return snprintf(buf, len, "%.2f GiB", (double)bytes / 1073741824.0);
}

int cmt_model_format_oom(const struct cmt_model_oom *oom, char *buf, size_t len)
{
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
