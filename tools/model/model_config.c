/* model_config.c — settings, PYTORCH_CUDA_ALLOC_CONF strings, messages.
 *
 * The parser follows PyTorch's AllocatorConfig::parseArgs: the string is
 * lexed into words and the separators , : [ ] (spaces dropped), then read as
 * key:value pairs separated by commas. Error texts reuse PyTorch's wording
 * where it has one. */
#include "model_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
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

#define CMT__MAX_TOKENS 256
#define CMT__TOKEN_LEN 64

struct tokens {
    char text[CMT__MAX_TOKENS][CMT__TOKEN_LEN];
    size_t count;
};

static int push(struct tokens *t, const char *s, size_t n, struct cmt_err *err)
{
    if (t->count == CMT__MAX_TOKENS)
        return cmt_err_set(err, CMT_EMODEL_PARSE, "allocator config has more than %d tokens",
                           CMT__MAX_TOKENS);
    if (n >= CMT__TOKEN_LEN)
        return cmt_err_set(err, CMT_EMODEL_PARSE, "allocator config word '%.20s...' is too long",
                           s);
    memcpy(t->text[t->count], s, n);
    t->text[t->count][n] = '\0';
    t->count++;
    return 0;
}

static int lex(const char *conf, struct tokens *t, struct cmt_err *err)
{
    char word[CMT__TOKEN_LEN + 1];
    size_t n = 0;
    int rc;
    t->count = 0;
    for (const char *p = conf;; p++) {
        bool separator = *p == ',' || *p == ':' || *p == '[' || *p == ']';
        if (separator || *p == '\0') {
            if (n > 0 && (rc = push(t, word, n, err)) != 0)
                return rc;
            n = 0;
            if (*p == '\0')
                return 0;
            if ((rc = push(t, p, 1, err)) != 0)
                return rc;
        } else if (*p != ' ') {
            if (n == CMT__TOKEN_LEN)
                return cmt_err_set(err, CMT_EMODEL_PARSE,
                                   "allocator config word '%.20s...' is too long", word);
            word[n++] = *p;
        }
    }
}

/* ---- values ----------------------------------------------------------- */

/* c10's consumeToken: token i must be the separator c. */
static int consume(const struct tokens *t, size_t i, char c, struct cmt_err *err)
{
    if (i < t->count && t->text[i][0] == c && t->text[i][1] == '\0')
        return 0;
    return cmt_err_set(err, CMT_EMODEL_PARSE,
                       "Error parsing CachingAllocator settings, expected %c", c);
}

/* std::stoi: an optional sign and digits, anything after them ignored ("64MB" reads 64); it
 * throws when no digit comes first or the value does not fit an int. */
static bool stoi_like(const char *s, long *out)
{
    errno = 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || errno == ERANGE || v > INT_MAX || v < INT_MIN)
        return false;
    *out = v;
    return true;
}

static int not_a_number(struct cmt_err *err, const char *key, const char *text)
{
    return cmt_err_set(err, CMT_EMODEL_PARSE,
                       "%s value '%s' is not a number (PyTorch's std::stoi throws)", key, text);
}

static bool expect(const struct tokens *t, size_t i, const char *what)
{
    return i < t->count && strcmp(t->text[i], what) == 0;
}

static unsigned floor_log2_u64(uint64_t v)
{
    return 63u - (unsigned)__builtin_clzll(v);
}

static bool is_pow2(uint64_t v)
{
    return v != 0 && (v & (v - 1)) == 0;
}

/* The value parsers of the setting types (model_settings.h), one per type, in the manner of
 * c10 2.6's CUDAAllocatorConfig::parse*: parse_<type>(tokens, &i, key, lo, hi, out, err) with
 * i at the key, consumes ':' and leaves i at the value. The texts are c10's
 * where c10 has one (its checks' texts, byte for byte); where c10 throws a bare std::stoi
 * exception the text is ours. */

/* N MiB, N > lo (c10: "must be > 20"). */
static int parse_mb(const struct tokens *t, size_t *i, const char *key, double lo, double hi,
                    uint64_t *out, struct cmt_err *err)
{
    long v;
    int rc = consume(t, ++*i, ':', err);
    if (rc)
        return rc;
    if (++*i >= t->count)
        return cmt_err_set(err, CMT_EMODEL_PARSE, "Error, expecting %s value", key);
    if (!stoi_like(t->text[*i], &v))
        return not_a_number(err, key, t->text[*i]);
    if (v < 0) /* c10 reads it as a size_t: nearly 2^44 MiB, unlimited in all but name */
        return cmt_err_set(err, CMT_EMODEL_PARSE, "%s value '%s' is negative", key, t->text[*i]);
    if ((double)v <= lo)
        return cmt_err_set(err, CMT_EMODEL_PARSE,
                           "CachingAllocator option %s too small, must be > %u", key, (unsigned)lo);
    *out = (uint64_t)v * CMT_MODEL_MIB;
    return 0;
}

/* The string has no word for unlimited: that is the key left out. */
static int parse_limit_mb(const struct tokens *t, size_t *i, const char *key, double lo, double hi,
                          uint64_t *out, struct cmt_err *err)
{
    return parse_mb(t, i, key, lo, hi, out, err);
}

/* roundup_power2_divisions' single-value form (i at the value): a power of two for every
 * size interval. */
static int parse_pow2(const struct tokens *t, size_t *i, const char *key, double lo, double hi,
                      unsigned *out, struct cmt_err *err)
{
    long v;
    if (!stoi_like(t->text[*i], &v))
        return not_a_number(err, key, t->text[*i]);
    /* A negative int read as a size_t is no power of two. */
    if (v < 0 || !is_pow2((uint64_t)v))
        return cmt_err_set(err, CMT_EMODEL_PARSE,
                           "For roundups, the divisons has to be power of 2 ");
    *out = (unsigned)v;
    return 0;
}

/* The divisions of each of c10's size intervals as the config has them now. */
static void current_intervals(const struct cmt_model_config *c,
                              unsigned out[CMT_MODEL_ROUNDUP_INTERVALS])
{
    for (int k = 0; k < CMT_MODEL_ROUNDUP_INTERVALS; k++)
        out[k] = c->roundup_power2_per_interval ? c->roundup_power2_intervals[k]
                                                : c->roundup_power2_divisions;
}

/* Stores per-interval divisions, as one value when every interval has the same. */
static void store_intervals(struct cmt_model_config *c,
                            const unsigned v[CMT_MODEL_ROUNDUP_INTERVALS])
{
    bool same = true;
    for (int k = 1; k < CMT_MODEL_ROUNDUP_INTERVALS; k++)
        same = same && v[k] == v[0];
    memset(c->roundup_power2_intervals, 0, sizeof c->roundup_power2_intervals);
    c->roundup_power2_per_interval = !same;
    c->roundup_power2_divisions = same ? v[0] : 0;
    if (!same)
        memcpy(c->roundup_power2_intervals, v, sizeof c->roundup_power2_intervals);
}

/* One "interval:divisions" entry of the list form, i at the interval; as c10 2.6. */
static int parse_interval(const struct tokens *t, size_t *i, unsigned *v, size_t *last_index,
                          bool *first, struct cmt_err *err)
{
    const char *key = "roundup_power2_divisions";
    const char *interval = t->text[*i];
    long divisions;
    int rc = consume(t, ++*i, ':', err);
    if (rc)
        return rc;
    if (++*i >= t->count)
        return cmt_err_set(err, CMT_EMODEL_PARSE, "Error parsing roundup_power2_divisions value");
    if (!stoi_like(t->text[*i], &divisions))
        return not_a_number(err, key, t->text[*i]);
    if (divisions < 0 || (divisions != 0 && !is_pow2((uint64_t)divisions)))
        return cmt_err_set(
            err, CMT_EMODEL_PARSE,
            "For roundups, the divisons has to be power of 2 or 0 to disable roundup ");
    if (strcmp(interval, ">") == 0) {
        for (size_t k = *last_index; k < CMT_MODEL_ROUNDUP_INTERVALS; k++)
            v[k] = (unsigned)divisions;
        return 0;
    }
    errno = 0;
    char *end;
    unsigned long long bound = strtoull(interval, &end, 10); /* std::stoul */
    if (end == interval || errno == ERANGE)
        return cmt_err_set(err, CMT_EMODEL_PARSE,
                           "%s interval '%s' is not a number (PyTorch's std::stoul throws)", key,
                           interval);
    if (!is_pow2(bound))
        return cmt_err_set(err, CMT_EMODEL_PARSE,
                           "For roundups, the intervals have to be power of 2 ");
    /* c10 indexes by log2 of the number as given (256 -> 8), not by the size's interval. */
    size_t index = floor_log2_u64(bound);
    if (index > CMT_MODEL_ROUNDUP_INTERVALS - 1)
        index = CMT_MODEL_ROUNDUP_INTERVALS - 1;
    if (*first) {
        for (size_t k = 0; k < index; k++)
            v[k] = (unsigned)divisions;
        *first = false;
    }
    v[index] = (unsigned)divisions;
    *last_index = index;
    return 0;
}

/* roundup_power2_divisions: one value, or c10's per-interval list "[256:1,512:2,>:8]". */
static int parse_roundup(const struct tokens *t, size_t *i, struct cmt_model_config *c,
                         struct cmt_err *err)
{
    const char *key = "roundup_power2_divisions";
    unsigned v[CMT_MODEL_ROUNDUP_INTERVALS];
    int rc = consume(t, ++*i, ':', err);
    if (rc)
        return rc;
    if (++*i >= t->count)
        return cmt_err_set(err, CMT_EMODEL_PARSE,
                           "Error, expecting roundup_power2_divisions value");
    if (!expect(t, *i, "[")) {
        unsigned one = 0;
        if ((rc = parse_pow2(t, i, key, 1, 1024, &one, err)) != 0)
            return rc;
        c->roundup_power2_per_interval = false;
        memset(c->roundup_power2_intervals, 0, sizeof c->roundup_power2_intervals);
        c->roundup_power2_divisions = one;
        return 0;
    }
    current_intervals(c, v);
    size_t last_index = 0;
    bool first = true;
    while (++*i < t->count && !expect(t, *i, "]")) {
        if ((rc = parse_interval(t, i, v, &last_index, &first, err)) != 0)
            return rc;
        /* c10 reads the token after the list's last one unchecked; here it is missing. */
        if (!expect(t, *i + 1, "]") && (rc = consume(t, ++*i, ',', err)) != 0)
            return rc;
    }
    store_intervals(c, v);
    return 0;
}

static int parse_fraction(const struct tokens *t, size_t *i, const char *key, double lo, double hi,
                          double *out, struct cmt_err *err)
{
    int rc = consume(t, ++*i, ':', err);
    if (rc)
        return rc;
    if (++*i >= t->count)
        return cmt_err_set(err, CMT_EMODEL_PARSE, "Error, expecting %s value", key);
    errno = 0;
    char *end;
    double v = strtod(t->text[*i], &end); /* std::stod: what follows the number is ignored */
    if (errno == ERANGE || end == t->text[*i])
        return cmt_err_set(err, CMT_EMODEL_PARSE,
                           "%s value '%s' is not a number (PyTorch's std::stod throws)", key,
                           t->text[*i]);
    /* c10's texts for garbage_collection_threshold, the only fraction. */
    if (!(v > lo))
        return cmt_err_set(err, CMT_EMODEL_PARSE,
                           "garbage_collect_threshold too small, set it 0.0~1.0");
    if (!(v < hi))
        return cmt_err_set(err, CMT_EMODEL_PARSE,
                           "garbage_collect_threshold too big, set it 0.0~1.0");
    *out = v;
    return 0;
}

/* True or False after the ':'; c10's text names the key. */
static int parse_true_false(const struct tokens *t, size_t *i, const char *key, bool *out,
                            struct cmt_err *err)
{
    int rc = consume(t, ++*i, ':', err);
    if (rc)
        return rc;
    ++*i;
    if (expect(t, *i, "True") || expect(t, *i, "False")) {
        *out = expect(t, *i, "True");
        return 0;
    }
    return cmt_err_set(err, CMT_EMODEL_PARSE, "Expected a single True/False argument for %s", key);
}

static int parse_boolean(const struct tokens *t, size_t *i, const char *key, double lo, double hi,
                         bool *out, struct cmt_err *err)
{
    return parse_true_false(t, i, key, out, err);
}

/* The keys PyTorch accepts that change nothing the model looks at, checked as c10 does. */
static int parse_ignored(const struct tokens *t, size_t *i, const char *key, struct cmt_err *err)
{
    bool b;
    long v;
    int rc;
    if (strcmp(key, "release_lock_on_cudamalloc") == 0 ||
        strcmp(key, "release_lock_on_hipmalloc") == 0)
        return parse_true_false(t, i, "release_lock_on_cudamalloc", &b, err);
    const char *name = strcmp(key, "pinned_use_hip_host_register") == 0
                           ? "pinned_use_cuda_host_register"
                           : key;
    if ((rc = consume(t, ++*i, ':', err)) != 0)
        return rc;
    if (++*i >= t->count)
        return cmt_err_set(err, CMT_EMODEL_PARSE, "Error, expecting %s value", name);
    if (strcmp(key, "pinned_num_register_threads") != 0) {
        if (expect(t, *i, "True") || expect(t, *i, "False"))
            return 0;
        return cmt_err_set(err, CMT_EMODEL_PARSE, "Expected a single True/False argument for %s",
                           name);
    }
    if (!stoi_like(t->text[*i], &v))
        return not_a_number(err, key, t->text[*i]);
    if (v < 0 || !is_pow2((uint64_t)v))
        return cmt_err_set(err, CMT_EMODEL_PARSE,
                           "Number of register threads has to be power of 2 ");
    if (v > 128) /* c10's pinned_max_register_threads() */
        return cmt_err_set(err, CMT_EMODEL_PARSE,
                           "Number of register threads should be less than or equal to 128");
    return 0;
}

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

static int parse_backend(const struct tokens *t, size_t *i, struct cmt_err *err)
{
    int rc = consume(t, ++*i, ':', err);
    if (rc)
        return rc;
    if (++*i >= t->count)
        return cmt_err_set(err, CMT_EMODEL_PARSE, "Error parsing backend value");
    if (expect(t, *i, "native"))
        return 0;
    if (expect(t, *i, "cudaMallocAsync"))
        return cmt_err_set(err, CMT_EMODEL_PARSE,
                           "backend:cudaMallocAsync is not the caching allocator; not modelled");
    return cmt_err_set(err, CMT_EMODEL_PARSE,
                       "Unknown allocator backend, options are native and cudaMallocAsync");
}

/* One key and its value, i at the key; i is left at the item's last token. */
static int parse_item(const struct tokens *t, size_t *i, struct cmt_model_config *c,
                      struct cmt_err *err)
{
    const char *key = t->text[*i];
    if (strcmp(key, "roundup_power2_divisions") == 0)
        return parse_roundup(t, i, c, err);
#define CMT__SETTING_PARSE(field, type, conf_key, def, flag, json, rank, lo, hi, help) \
    if (strcmp(key, conf_key) == 0)                                                    \
        return parse_##type(t, i, key, lo, hi, &c->field, err);
    CMT_MODEL_SETTINGS(CMT__SETTING_PARSE)
#undef CMT__SETTING_PARSE
    if (strcmp(key, "backend") == 0)
        return parse_backend(t, i, err);
    if (ignored_key(key))
        return parse_ignored(t, i, key, err);
    return cmt_err_set(err, CMT_EMODEL_PARSE, "Unrecognized CachingAllocator option: %s", key);
}

int cmt_model_config_parse(struct cmt_model_config *config, const char *conf, struct cmt_err *err)
{
    if (!config || !conf)
        return cmt_err_sys(err, CMT_EINVALID, 0);
    struct tokens *t = malloc(sizeof *t);
    if (!t)
        return cmt_err_sys(err, CMT_EMODEL_NOMEM, 0);
    struct cmt_model_config c = *config;
    int rc = lex(conf, t, err);
    /* c10 2.6's parseArgs: an item, then a comma unless it was the last token (so a trailing
     * comma is accepted, as c10 accepts it). */
    for (size_t i = 0; rc == 0 && i < t->count; i++) {
        rc = parse_item(t, &i, &c, err);
        if (rc == 0 && i + 1 < t->count)
            rc = consume(t, ++i, ',', err);
    }
    free(t);
    if (rc == 0)
        *config = c;
    return rc;
}

const char *cmt_model_config_env(const char *cuda_alloc_conf, const char *alloc_conf)
{
    (void)alloc_conf; /* c10 2.6 does not read PYTORCH_ALLOC_CONF */
    return cuda_alloc_conf;
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
    if ((double)(v / CMT_MODEL_MIB) <= lo) /* c10 would refuse it */
        return CMT_EINVALID;
    return put_mb(o, sep, key, v, lo);
}

static int put_pow2(struct out *o, const char **sep, const char *key, unsigned v, double lo)
{
    put(o, "%s%s:%u", *sep, key, v);
    *sep = ",";
    return 0;
}

/* Per-interval divisions as a list c10 parses back to the same intervals: the first entry
 * covers the first run (c10 fills below the first interval named), then one entry per interval
 * up to the start of the last run, which '>' fills to the end. */
static void put_intervals(struct out *o, const char **sep, const unsigned *v)
{
    int first_end = 0, last_start = CMT_MODEL_ROUNDUP_INTERVALS - 1;
    while (first_end + 1 < CMT_MODEL_ROUNDUP_INTERVALS && v[first_end + 1] == v[0])
        first_end++;
    while (last_start > 0 && v[last_start - 1] == v[CMT_MODEL_ROUNDUP_INTERVALS - 1])
        last_start--;
    put(o, "%sroundup_power2_divisions:[%llu:%u", *sep, 1ull << first_end, v[0]);
    for (int k = first_end + 1; k <= last_start; k++)
        put(o, ",%llu:%u", 1ull << k, v[k]);
    put(o, ",>:%u]", v[CMT_MODEL_ROUNDUP_INTERVALS - 1]);
    *sep = ",";
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

static int cmt__setting_rank(int index)
{
    static const int ranks[] = {
#define CMT__SETTING_RANK(field, type, key, def, flag, json, rank, ...) rank,
        CMT_MODEL_SETTINGS(CMT__SETTING_RANK)
#undef CMT__SETTING_RANK
    };
    return ranks[index];
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
        if (config->roundup_power2_per_interval &&
            rank == cmt__setting_rank(CMT_MODEL_SETTING_roundup_power2_divisions))
            put_intervals(&o, &sep, config->roundup_power2_intervals);
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
    return cmt_model_format_oom_as(oom, CMT_MODEL_OOM_2X, buf, len);
}

/* "<size> allowed; " when a memory fraction caps the process, else "" (both texts say it). */
static void format_allowed(const struct cmt_model_oom *oom, char allowed[48])
{
    allowed[0] = '\0';
    if (oom->allowed > 0) {
        cmt_model_format_size(oom->allowed, allowed, 48 - 10);
        strcat(allowed, " allowed; ");
    }
}

/* c10 2.6's text (CUDACachingAllocator.cpp, DeviceCachingAllocator::malloc), with no private
 * pools and no per-process NVML lines. */
static int format_oom_2x(const struct cmt_model_oom *oom, char *buf, size_t len)
{
    char tried[32], total[32], free_[32], allowed[48], allocated[32], unallocated[32];
    cmt_model_format_size(oom->alloc_size, tried, sizeof tried);
    cmt_model_format_size(oom->device_total, total, sizeof total);
    cmt_model_format_size(oom->device_free, free_, sizeof free_);
    format_allowed(oom, allowed);
    cmt_model_format_size(oom->allocated, allocated, sizeof allocated);
    cmt_model_format_size(oom->reserved - oom->allocated, unallocated, sizeof unallocated);
    return snprintf(buf, len,
                    "CUDA out of memory. Tried to allocate %s. GPU %d has a total capacity of %s "
                    "of which %s is free. %sOf the allocated memory %s is allocated by PyTorch, "
                    "and %s is reserved by PyTorch but unallocated. If reserved but unallocated "
                    "memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
                    "to avoid fragmentation.  See documentation for Memory Management  "
                    "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
                    tried, oom->device, total, free_, allowed, allocated, unallocated);
}

int cmt_model_format_oom_as(const struct cmt_model_oom *oom, enum cmt_model_oom_style style,
                            char *buf, size_t len)
{
    if (!oom)
        return CMT_EINVALID;
    if (style == CMT_MODEL_OOM_2X)
        return format_oom_2x(oom, buf, len);
    char tried[32], total[32], allocated[32], free_[32], allowed[48], reserved[32];
    cmt_model_format_size(oom->alloc_size, tried, sizeof tried);
    cmt_model_format_size(oom->device_total, total, sizeof total);
    cmt_model_format_size(oom->allocated, allocated, sizeof allocated);
    cmt_model_format_size(oom->device_free, free_, sizeof free_);
    cmt_model_format_size(oom->reserved, reserved, sizeof reserved);
    format_allowed(oom, allowed);
    return snprintf(buf, len,
                    "CUDA out of memory. Tried to allocate %s (GPU %d; %s total capacity; "
                    "%s already allocated; %s free; %s%s reserved in total by PyTorch) "
                    "If reserved memory is >> allocated memory try setting "
                    "max_split_size_mb to avoid fragmentation.  See documentation for "
                    "Memory Management and PYTORCH_CUDA_ALLOC_CONF",
                    tried, oom->device, total, allocated, free_, allowed, reserved);
}
