/*
 * oracle_diff — the differential test: the what-if model (tools/model, caching_model.h) against
 * PyTorch's real caching allocator (oracle_driver on simcuda), on the same tensor streams.
 *
 * Usage: oracle_diff --driver PATH [--cases N] [--seed S] [--streams 1|2]
 *                    [--addresses never-reuse|first-fit] [--all] [--verbose]
 *   Environment: ORACLE_CASES and ORACLE_SEED override --cases and --seed (long runs).
 *
 * For every case (random scripts, then the hand-made ones) and every setting of the matrix, the
 * script runs through both, and these must be equal: OOM yes/no and the request that failed
 * first, how many failed, peak reserved, peak allocated, device allocation calls (failed ones
 * included), retries, OOM count, and the first OOM message (the model's cmt_model_format_oom, PyTorch 2.x's
 * wording, against c10's text). First, config strings (CONFIGS): c10's parser and the model's must take
 * the same ones to the same settings and refuse the others with the same text. Both sides run
 * under one address policy (--addresses): never-reused addresses (SIMCUDA_REUSE_ADDRESSES=0, the
 * model's CMT_MODEL_ADDRESSES_NEVER_REUSE, the default) or first-fit reuse (simcuda's default
 * SIMCUDA_REUSE_ADDRESSES=1, the model's CMT_MODEL_ADDRESSES_FIRST_FIT), so ties between
 * equal-size free blocks break the same way. Also compared: c10's num_device_alloc (successful
 * device allocations) against the model's.
 * Settings the model does not understand, and the known disagreements (KNOWN below), are run
 * and reported but do not fail the test unless --all is given.
 * @return 0 when every compared pair agrees, 1 otherwise, 2 on a usage or run error, 77 when
 *         the driver is absent (the oracle build was skipped).
 */
#include "caching_model.h"
#include "model_scenario.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB ((uint64_t)1 << 20)
#define GIB ((uint64_t)1 << 30)
#define MESSAGE_MAX 1024

struct op {
    enum { OP_ALLOC, OP_FREE, OP_EMPTY_CACHE } kind;
    uint64_t value; /* size, or the tensor id (index among allocs) */
    unsigned stream;
};

struct script {
    char name[64];
    struct op *ops;
    size_t count, capacity_ops;
    uint64_t allocs;
    uint64_t capacity;     /* what the allocator can get from the device */
    uint64_t device_total; /* the device's memory */
};

struct setting {
    const char *conf; /* PYTORCH_CUDA_ALLOC_CONF */
    double fraction;  /* set_per_process_memory_fraction; 0: none */
};

/* The matrix: every random case runs under each. */
static const struct setting SETTINGS[] = {
    {"", 0},
    {"max_split_size_mb:64", 0},
    {"max_split_size_mb:256", 0},
    {"max_split_size_mb:1024", 0},
    {"max_split_size_mb:4096", 0},
    {"roundup_power2_divisions:4", 0},
    {"roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", 0},
    {"garbage_collection_threshold:0.6", 0.8},
    {"garbage_collection_threshold:0.8,max_split_size_mb:512", 0.9},
    {"", 0.5},
    {"expandable_segments:True", 0},
    {"expandable_segments:True,max_split_size_mb:256", 0},
    {"roundup_power2_divisions:4,max_split_size_mb:1024", 0},
    {"max_split_size_mb:256,max_non_split_rounding_mb:64", 0},
    {"max_split_size_mb:128,max_non_split_rounding_mb:1024,roundup_power2_divisions:2", 0},
};
#define SETTING_COUNT (sizeof(SETTINGS) / sizeof(SETTINGS[0]))

/* Known disagreements, left out of the verdict (not of the report) until the model catches up:
 * {case name or "*", setting's conf, fraction, why}. Documented in README.md. */
static const struct {
    const char *script, *conf;
    double fraction;
    const char *why;
} KNOWN[] = {
    {NULL, NULL, 0, NULL}, /* the end */
};

/* The address policy both sides run under. */
static enum cmt_model_address_policy policy = CMT_MODEL_ADDRESSES_NEVER_REUSE;

struct figures {
    bool oom;
    long long first_oom, failed;
    long long peak_reserved, peak_allocated, device_alloc_calls, retries, ooms, device_allocs;
    char message[MESSAGE_MAX];
};

static void push(struct script *s, struct op op)
{
    if (s->count == s->capacity_ops) {
        s->capacity_ops = s->capacity_ops ? 2 * s->capacity_ops : 64;
        s->ops = realloc(s->ops, s->capacity_ops * sizeof(*s->ops));
        if (!s->ops) {
            perror("oracle_diff");
            exit(2);
        }
    }
    s->ops[s->count++] = op;
    if (op.kind == OP_ALLOC)
        s->allocs++;
}

/* splitmix64: a seed gives the same scripts everywhere. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t uniform(uint64_t *state, uint64_t lo, uint64_t hi)
{
    return lo + next_random(state) % (hi - lo + 1);
}

/* Log-uniform in [lo, hi]. */
static uint64_t log_uniform(uint64_t *state, uint64_t lo, uint64_t hi)
{
    unsigned lo_bits = 63 - (unsigned)__builtin_clzll(lo), hi_bits = 63 - __builtin_clzll(hi);
    unsigned bits = (unsigned)uniform(state, lo_bits, hi_bits);
    uint64_t from = (uint64_t)1 << bits, to = bits == 63 ? UINT64_MAX : (from << 1) - 1;
    if (from < lo)
        from = lo;
    if (to > hi)
        to = hi;
    return uniform(state, from, to);
}

/* A random tensor stream: sizes from 512 B to GiBs (a third small-pool, a third tens of MiB, a
 * third up to a quarter of the device), frees of random live tensors, an empty_cache in 4% of
 * the steps, on `streams` streams. */
static void random_script(struct script *s, uint64_t seed, unsigned index, unsigned streams)
{
    uint64_t state = seed * 1000003u + index;
    static const uint64_t capacities_gib[] = {2, 4, 8, 16, 24, 40};
    memset(s, 0, sizeof(*s));
    snprintf(s->name, sizeof(s->name), "random-%u-streams%u", index, streams);
    s->device_total = capacities_gib[uniform(&state, 0, 5)] * GIB;
    s->capacity = s->device_total - uniform(&state, 0, 3) * 256 * MIB;
    unsigned steps = (unsigned)uniform(&state, 20, 160);
    uint64_t *live = calloc(steps, sizeof(*live));
    size_t live_count = 0;
    for (unsigned i = 0; i < steps; i++) {
        /* Now and then torch.cuda.empty_cache(): freed segments leave address holes, where
         * the two address policies part. */
        if (uniform(&state, 0, 99) < 4) {
            push(s, (struct op){OP_EMPTY_CACHE, 0, 0});
            continue;
        }
        if (live_count && uniform(&state, 0, 99) < 40) {
            size_t k = uniform(&state, 0, live_count - 1);
            push(s, (struct op){OP_FREE, live[k], 0});
            live[k] = live[--live_count];
            continue;
        }
        uint64_t size;
        switch (uniform(&state, 0, 2)) {
        case 0: size = log_uniform(&state, 512, MIB); break;
        case 1: size = log_uniform(&state, MIB, 64 * MIB); break;
        default: size = log_uniform(&state, 64 * MIB, s->device_total / 4); break;
        }
        if (uniform(&state, 0, 3) == 0)
            size += uniform(&state, 1, 511); /* not a multiple of 512 */
        unsigned stream = streams > 1 ? (unsigned)uniform(&state, 0, streams - 1) : 0;
        live[live_count++] = s->allocs;
        push(s, (struct op){OP_ALLOC, size, stream});
    }
    free(live);
}

/* The write-up's stream (tools/model's scenario): on its 24 GiB card, max_split_size_mb
 * 4096/5120/6144 avoid the 6.18 GiB OOM, 7168/8192/unlimited do not. */
static void writeup_script(struct script *s)
{
    const struct cmt_model_scenario *w = cmt_model_scenario_writeup();
    uint64_t ids[64];
    memset(s, 0, sizeof(*s));
    snprintf(s->name, sizeof(s->name), "writeup");
    s->capacity = w->capacity;
    s->device_total = w->device_total;
    for (size_t i = 0; i < w->event_count; i++) {
        const struct cmt_model_event *e = &w->events[i];
        if (e->op == CMT_MODEL_OP_ALLOC) {
            ids[e->id] = s->allocs;
            push(s, (struct op){OP_ALLOC, e->size, (unsigned)e->stream});
        } else {
            push(s, (struct op){OP_FREE, ids[e->id], 0});
        }
    }
}

/* A hand-made stream in MiB: "a600 f0 a100 a600" (a = alloc, f = free tensor N; sN: stream;
 * e: empty_cache). */
static void hand_script(struct script *s, const char *name, uint64_t capacity_mib, const char *text)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->name, sizeof(s->name), "%s", name);
    s->capacity = s->device_total = capacity_mib * MIB;
    unsigned stream = 0;
    for (const char *p = text; *p;) {
        char kind = *p++;
        char *end;
        unsigned long long value = strtoull(p, &end, 10);
        p = end;
        while (*p == ' ')
            p++;
        if (kind == 's')
            stream = (unsigned)value;
        else if (kind == 'a')
            push(s, (struct op){OP_ALLOC, value * MIB, stream});
        else if (kind == 'b')
            push(s, (struct op){OP_ALLOC, value, stream}); /* bytes */
        else if (kind == 'e')
            push(s, (struct op){OP_EMPTY_CACHE, 0, 0});
        else
            push(s, (struct op){OP_FREE, value, 0});
    }
}

static const struct {
    const char *name;
    uint64_t capacity_mib;
    const char *text;
} HAND[] = {
    {"notes-A", 1000, "a600 f0 a100 a600"},
    {"notes-B", 850, "a500 f0 a300 a400"},
    {"notes-C", 30, "a4 f0 a4"},
    /* a block freed on one stream is not reused by another */
    {"stream-reuse", 1000, "a600 f0 s1 a600 s0 a600"},
    {"stream-reuse-small", 64, "b4096 f0 s1 b4096 f1 s0 b4096 s1 b8192"},
    /* oversize blocks on two streams, released largest first */
    {"oversize-two-streams", 2048, "a700 s1 a500 s0 a300 f0 f1 f2 s1 a1500 s0 a900"},
    /* GC age order: old cached segments go first once reserved passes the threshold */
    {"gc-ordering", 1024, "a200 a200 a200 f0 a10 a10 f1 a10 f2 a10 a10 a300 a300 a300"},
    /* The address policy decides: after empty_cache, first fit puts tensor 2's segment where
     * tensor 0's was, below tensor 1's; then two free 50 MiB blocks tie, the lowest address
     * goes first, and only never-reuse leaves the whole (releasable) segment free for the
     * last request (README.md, "Addresses"). */
    {"address-tie", 200, "a100 a100 f0 e a50 f1 a50 f2 a50 a100"},
    /* The same through the OOM path's release, with no empty_cache (whatif's stream has
     * none): tests/tools/model's release_tie, borderline in whatif. */
    {"release-tie", 220, "a40 a40 a100 f0 f1 a50 f2 a50 f3 a50 a100"},
};
#define HAND_COUNT (sizeof(HAND) / sizeof(HAND[0]))

static int write_script(const struct script *s, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    for (size_t i = 0; i < s->count; i++) {
        if (s->ops[i].kind == OP_ALLOC)
            fprintf(f, "alloc %" PRIu64 " %u\n", s->ops[i].value, s->ops[i].stream);
        else if (s->ops[i].kind == OP_EMPTY_CACHE)
            fprintf(f, "empty_cache\n");
        else
            fprintf(f, "free %" PRIu64 "\n", s->ops[i].value);
    }
    return fclose(f);
}

static int parse_figures(FILE *in, struct figures *f)
{
    char line[MESSAGE_MAX + 64];
    int seen = 0;
    memset(f, 0, sizeof(*f));
    while (fgets(line, sizeof(line), in)) {
        line[strcspn(line, "\n")] = '\0';
        char *value = strchr(line, ' ');
        if (!value)
            value = line + strlen(line);
        else
            *value++ = '\0';
#define FIELD(key, member)                    \
    if (strcmp(line, key) == 0) {             \
        f->member = strtoll(value, NULL, 10); \
        seen++;                               \
    }
        FIELD("first_oom_request", first_oom)
        FIELD("failed_requests", failed)
        FIELD("peak_reserved", peak_reserved)
        FIELD("peak_allocated", peak_allocated)
        FIELD("device_alloc_calls", device_alloc_calls)
        FIELD("num_alloc_retries", retries)
        FIELD("num_ooms", ooms)
        FIELD("num_device_alloc", device_allocs)
#undef FIELD
        if (strcmp(line, "oom") == 0)
            f->oom = strcmp(value, "yes") == 0;
        if (strcmp(line, "oom_message") == 0)
            snprintf(f->message, sizeof(f->message), "%s", value);
    }
    return seen == 8 ? 0 : -1;
}

/* Runs the real allocator: simcuda holds device_total, of which device_total - capacity is
 * "used by other processes", no context overhead, addresses under `policy`. */

/* Forks a child whose standard output the parent reads (*in, in the parent only).
 * @return the child's pid (0 in the child), or -1. */
static pid_t spawn_reading(FILE **in)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        return 0;
    }
    close(fds[1]);
    *in = fdopen(fds[0], "r");
    return pid;
}

static int run_oracle(const char *driver, const char *path, const struct script *s,
                      const struct setting *setting, struct figures *out)
{
    char memory[32], used[32], fraction[32];
    snprintf(memory, sizeof(memory), "%" PRIu64, s->device_total);
    snprintf(used, sizeof(used), "%" PRIu64, s->device_total - s->capacity);
    snprintf(fraction, sizeof(fraction), "%.17g", setting->fraction);
    FILE *in;
    pid_t pid = spawn_reading(&in);
    if (pid < 0)
        return -1;
    if (pid == 0) {
        setenv("SIMCUDA_MEMORY", memory, 1);
        setenv("SIMCUDA_USED", used, 1);
        setenv("SIMCUDA_CONTEXT_OVERHEAD", "0", 1);
        setenv("SIMCUDA_REUSE_ADDRESSES", policy == CMT_MODEL_ADDRESSES_FIRST_FIT ? "1" : "0", 1);
        setenv("PYTORCH_CUDA_ALLOC_CONF", setting->conf, 1);
        unsetenv("PYTORCH_NO_CUDA_MEMORY_CACHING");
        if (setting->fraction > 0)
            execl(driver, driver, "--memory-fraction", fraction, path, (char *)NULL);
        else
            execl(driver, driver, path, (char *)NULL);
        _exit(127);
    }
    int parsed = parse_figures(in, out);
    fclose(in);
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 && parsed == 0 ? 0 : -1;
}

/* The model on the same stream. @return 0, or -1 when it does not take the setting. */
static int run_model_under(const struct script *s, const struct setting *setting,
                           enum cmt_model_address_policy under, struct figures *out, char *why,
                           size_t why_len)
{
    struct cmt_model_config config;
    struct cmt_model *model;
    cmt_model_config_default(&config, s->capacity);
    config.device_total = s->device_total;
    config.memory_fraction = setting->fraction;
    config.address_policy = under;
    struct cmt_err err = {0};
    if (cmt_model_config_parse(&config, setting->conf, &err) != CMT_EOK) {
        snprintf(why, why_len, "%s", cmt_err_message(&err));
        return -1;
    }
    if (cmt_model_create(&config, &model) != CMT_EOK) {
        snprintf(why, why_len, "cmt_model_create failed");
        return -1;
    }
    cmt_model_handle *handles = calloc(s->allocs + 1, sizeof(*handles));
    memset(out, 0, sizeof(*out));
    out->first_oom = -1;
    uint64_t next = 0;
    for (size_t i = 0; i < s->count; i++) {
        const struct op *op = &s->ops[i];
        if (op->kind == OP_FREE) {
            cmt_model_free(model, handles[op->value]);
            handles[op->value] = 0;
            continue;
        }
        if (op->kind == OP_EMPTY_CACHE) {
            cmt_model_empty_cache(model);
            continue;
        }
        int rc = cmt_model_alloc(model, op->value, op->stream, &handles[next]);
        if (rc == CMT_EMODEL_OOM) {
            if (out->first_oom < 0) {
                out->first_oom = (long long)next;
                cmt_model_format_oom(cmt_model_last_oom(model), out->message, sizeof(out->message));
            }
            out->failed++;
            handles[next] = 0;
        } else if (rc != CMT_EOK) {
            snprintf(why, why_len, "cmt_model_alloc: %s", cmt_strerror(rc));
            free(handles);
            cmt_model_destroy(model);
            return -1;
        }
        next++;
    }
    struct cmt_model_stats st;
    cmt_model_get_stats(model, &st);
    out->oom = out->failed > 0;
    out->peak_reserved = (long long)st.peak_reserved;
    out->peak_allocated = (long long)st.peak_allocated;
    out->device_alloc_calls = (long long)st.device_alloc_calls;
    out->retries = (long long)st.num_alloc_retries;
    out->ooms = (long long)st.num_ooms;
    out->device_allocs = (long long)st.num_device_alloc;
    free(handles);
    cmt_model_destroy(model);
    return 0;
}

static int run_model(const struct script *s, const struct setting *setting, struct figures *out,
                     char *why, size_t why_len)
{
    return run_model_under(s, setting, policy, out, why, why_len);
}

/* Names the first differing figure in diff; @return true when all are equal. */
static bool same(const struct figures *real, const struct figures *model, char *diff, size_t len)
{
#define CHECK(member)                                                                 \
    if (real->member != model->member) {                                              \
        snprintf(diff, len, #member " real %lld model %lld", (long long)real->member, \
                 (long long)model->member);                                           \
        return false;                                                                 \
    }
    CHECK(oom)
    CHECK(first_oom)
    CHECK(failed)
    CHECK(peak_reserved)
    CHECK(peak_allocated)
    CHECK(device_alloc_calls)
    CHECK(retries)
    CHECK(ooms)
    CHECK(device_allocs)
#undef CHECK
    if (strcmp(real->message, model->message) != 0) {
        snprintf(diff, len, "oom message\n      real:  %s\n      model: %s", real->message,
                 model->message);
        return false;
    }
    return true;
}

/* Config strings: c10's parser and the model's must take the same ones to the same settings,
 * and refuse the same ones with the same text (where c10 throws a bare std::stoi/stod/stoul
 * exception, any refusal). {PYTORCH_CUDA_ALLOC_CONF or NULL, PYTORCH_ALLOC_CONF or NULL}. */
static const struct {
    const char *cuda_conf, *alloc_conf;
} CONFIGS[] = {
    {"", NULL},
    {"max_split_size_mb:21", NULL},
    {"max_split_size_mb:20", NULL},
    {"max_split_size_mb:64MB,", NULL},
    {"max_split_size_mb:abc", NULL},
    {"max_split_size_mb", NULL},
    {"max_split_size_mb:", NULL},
    {"max_split_size_mb:128 expandable_segments:True", NULL},
    {"max_split_size_mb:128,,", NULL},
    {" max_split_size_mb : 6144 ,roundup_power2_divisions:4", NULL},
    {"max_non_split_rounding_mb:20", NULL},
    {"max_non_split_rounding_mb:64", NULL},
    {"foo:1", NULL},
    {"expandable_segments:true", NULL},
    {"expandable_segments:True,release_lock_on_cudamalloc:True", NULL},
    {"release_lock_on_cudamalloc:1", NULL},
    {"pinned_num_register_threads:8,pinned_use_cuda_host_register:False", NULL},
    {"pinned_num_register_threads:3", NULL},
    {"pinned_num_register_threads:256", NULL},
    {"pinned_use_background_threads:yes", NULL},
    {"roundup_power2_divisions:3", NULL},
    {"roundup_power2_divisions:0", NULL},
    {"roundup_power2_divisions:1", NULL},
    {"roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", NULL},
    {"roundup_power2_divisions:[256:1,512:2,1024:8,>:8]", NULL},
    {"roundup_power2_divisions:[>:4]", NULL},
    {"roundup_power2_divisions:[1:2,4:8,64:16]", NULL},
    {"roundup_power2_divisions:[65536:4,>:2]", NULL},
    {"roundup_power2_divisions:[2:4,", NULL},
    {"roundup_power2_divisions:[256:3]", NULL},
    {"roundup_power2_divisions:[300:2]", NULL},
    {"roundup_power2_divisions:[256:", NULL},
    {"roundup_power2_divisions:[256:2;512:4]", NULL},
    {"roundup_power2_divisions:[256:0,>:4],max_split_size_mb:300", NULL},
    {"garbage_collection_threshold:0.6", NULL},
    {"garbage_collection_threshold:1.0", NULL},
    {"garbage_collection_threshold:0", NULL},
    {"garbage_collection_threshold:x", NULL},
    {"backend:native", NULL},
    {"backend:cudaMalloc", NULL},
    /* c10 2.6 reads PYTORCH_CUDA_ALLOC_CONF only */
    {NULL, "max_split_size_mb:64"},
    {"max_split_size_mb:128", "max_split_size_mb:64"},
    {NULL, "foo:1"},
};
#define CONFIG_COUNT (sizeof(CONFIGS) / sizeof(CONFIGS[0]))

struct parsed {
    bool error, bare_exception;
    char text[MESSAGE_MAX];
    unsigned long long split, rounding;
    double threshold;
    int expandable;
    unsigned long long roundup[CMT_MODEL_ROUNDUP_INTERVALS];
};

static int run_oracle_config(const char *driver, const char *cuda_conf, const char *alloc_conf,
                             struct parsed *out)
{
    FILE *in;
    pid_t pid = spawn_reading(&in);
    if (pid < 0)
        return -1;
    if (pid == 0) {
        setenv("SIMCUDA_MEMORY", "1GiB", 1);
        if (cuda_conf)
            setenv("PYTORCH_CUDA_ALLOC_CONF", cuda_conf, 1);
        else
            unsetenv("PYTORCH_CUDA_ALLOC_CONF");
        if (alloc_conf)
            setenv("PYTORCH_ALLOC_CONF", alloc_conf, 1);
        else
            unsetenv("PYTORCH_ALLOC_CONF");
        execl(driver, driver, "--config", (char *)NULL);
        _exit(127);
    }
    char line[MESSAGE_MAX + 64];
    int seen = 0;
    memset(out, 0, sizeof(*out));
    while (fgets(line, sizeof(line), in)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "config_error ", 13) == 0) {
            out->error = true;
            snprintf(out->text, sizeof(out->text), "%.1000s", line + 13);
            out->bare_exception = strcmp(out->text, "stoi") == 0 ||
                                  strcmp(out->text, "stod") == 0 || strcmp(out->text, "stoul") == 0;
            seen = 5;
        } else if (sscanf(line, "max_split_size %llu", &out->split) == 1 ||
                   sscanf(line, "max_non_split_rounding %llu", &out->rounding) == 1 ||
                   sscanf(line, "garbage_collection_threshold %lf", &out->threshold) == 1 ||
                   sscanf(line, "expandable_segments %d", &out->expandable) == 1) {
            seen++;
        } else if (strncmp(line, "roundup", 7) == 0) {
            char *p = line + 7;
            for (int k = 0; k < CMT_MODEL_ROUNDUP_INTERVALS; k++)
                out->roundup[k] = strtoull(p, &p, 10);
            seen++;
        }
    }
    fclose(in);
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 && seen == 5 ? 0 : -1;
}

/* The model's reading of the same environment, in c10 2.6's precedence. */
static void run_model_config(const char *cuda_conf, const char *alloc_conf, struct parsed *out)
{
    struct cmt_model_config c;
    cmt_model_config_default(&c, GIB);
    memset(out, 0, sizeof(*out));
    const char *conf = cmt_model_config_env(cuda_conf, alloc_conf);
    struct cmt_err err = {0};
    if (conf && cmt_model_config_parse(&c, conf, &err) != CMT_EOK) {
        snprintf(out->text, sizeof(out->text), "%.*s", (int)sizeof(out->text) - 1, err.text);
        out->error = true;
        return;
    }
    out->split = c.max_split_size;
    out->rounding = c.max_non_split_rounding;
    out->threshold = c.garbage_collection_threshold;
    out->expandable = c.expandable_segments;
    for (int k = 0; k < CMT_MODEL_ROUNDUP_INTERVALS; k++)
        out->roundup[k] = c.roundup_power2_per_interval ? c.roundup_power2_intervals[k]
                                                        : c.roundup_power2_divisions;
}

/* @return the number of disagreements; -1 when the driver fails. */
static int check_configs(const char *driver, bool verbose, unsigned *pairs)
{
    int disagree = 0;
    for (size_t k = 0; k < CONFIG_COUNT; k++) {
        struct parsed real, model;
        const char *cuda = CONFIGS[k].cuda_conf, *alloc = CONFIGS[k].alloc_conf;
        if (run_oracle_config(driver, cuda, alloc, &real) != 0) {
            fprintf(stderr, "oracle_diff: config '%s': the driver failed\n", cuda ? cuda : "");
            return -1;
        }
        run_model_config(cuda, alloc, &model);
        (*pairs)++;
        bool ok = real.error == model.error;
        if (ok && real.error)
            ok = real.bare_exception || strcmp(real.text, model.text) == 0;
        if (ok && !real.error) {
            ok = real.split == model.split && real.rounding == model.rounding &&
                 real.threshold == model.threshold && real.expandable == model.expandable &&
                 memcmp(real.roundup, model.roundup, sizeof(real.roundup)) == 0;
        }
        if (!ok || verbose)
            printf("%s config PYTORCH_CUDA_ALLOC_CONF=%s%s%s%s: c10 %s%s, model %s%s\n",
                   ok ? "agree   " : "DISAGREE", cuda ? "'" : "(unset)", cuda ? cuda : "",
                   cuda ? "'" : "", alloc ? " PYTORCH_ALLOC_CONF set" : "",
                   real.error ? "refuses: " : "takes it", real.error ? real.text : "",
                   model.error ? "refuses: " : "takes it", model.error ? model.text : "");
        disagree += !ok;
    }
    return disagree;
}

static const char *known(const struct script *s, const struct setting *setting)
{
    for (size_t k = 0; KNOWN[k].script; k++)
        if ((strcmp(KNOWN[k].script, "*") == 0 || strcmp(KNOWN[k].script, s->name) == 0) &&
            strcmp(KNOWN[k].conf, setting->conf) == 0 && KNOWN[k].fraction == setting->fraction)
            return KNOWN[k].why;
    return NULL;
}

struct tally {
    unsigned pairs, agree, disagree, excluded;
    /* Pairs where the model under the other policy gives other figures (so where the policy
     * is a real choice), and of those where the OOM verdict changes. */
    unsigned policy_matters, policy_flips_oom;
};

static int check(const char *driver, const char *path, const struct script *s,
                 const struct setting *setting, bool all, bool verbose, struct tally *t)
{
    struct figures real, model;
    char why[256] = "", diff[3 * MESSAGE_MAX];
    if (write_script(s, path) != 0 || run_oracle(driver, path, s, setting, &real) != 0) {
        fprintf(stderr, "oracle_diff: %s [%s fraction %g]: the driver failed\n", s->name,
                setting->conf, setting->fraction);
        return -1;
    }
    t->pairs++;
    const char *excuse = known(s, setting);
    bool ok = run_model(s, setting, &model, why, sizeof(why)) == 0;
    struct figures other;
    char ignored[3 * MESSAGE_MAX];
    if (ok &&
        run_model_under(s, setting,
                        policy == CMT_MODEL_ADDRESSES_FIRST_FIT ? CMT_MODEL_ADDRESSES_NEVER_REUSE
                                                                : CMT_MODEL_ADDRESSES_FIRST_FIT,
                        &other, why, sizeof(why)) == 0 &&
        !same(&model, &other, ignored, sizeof(ignored))) {
        t->policy_matters++;
        t->policy_flips_oom += model.oom != other.oom;
    }
    if (!ok)
        snprintf(diff, sizeof(diff), "the model does not run it: %s", why);
    else
        ok = same(&real, &model, diff, sizeof(diff));
    if (ok) {
        t->agree++;
        if (verbose)
            printf("agree     %-26s [%s fraction %g] oom %s peak_reserved %lld\n", s->name,
                   setting->conf, setting->fraction, real.oom ? "yes" : "no", real.peak_reserved);
        return 0;
    }
    bool counts = all || !excuse;
    if (counts)
        t->disagree++;
    else
        t->excluded++;
    printf("%s %s (capacity %" PRIu64 " of %" PRIu64 " bytes, %zu requests) [%s fraction %g]: "
           "%s%s%s\n",
           counts ? "DISAGREE" : "known   ", s->name, s->capacity, s->device_total, s->count,
           setting->conf, setting->fraction, diff, excuse ? "; known: " : "", excuse ? excuse : "");
    return 0;
}

int main(int argc, char **argv)
{
    const char *driver = NULL;
    unsigned cases = 150, streams = 1;
    uint64_t seed = 16;
    bool all = false, verbose = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--driver") == 0 && i + 1 < argc)
            driver = argv[++i];
        else if (strcmp(argv[i], "--cases") == 0 && i + 1 < argc)
            cases = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--streams") == 0 && i + 1 < argc)
            streams = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--addresses") == 0 && i + 1 < argc) {
            if (cmt_model_address_policy_parse(argv[++i], &policy) != CMT_EOK) {
                fprintf(stderr, "oracle_diff: --addresses wants never-reuse or first-fit\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--all") == 0)
            all = true;
        else if (strcmp(argv[i], "--verbose") == 0)
            verbose = true;
        else {
            fprintf(stderr, "usage: oracle_diff --driver PATH [--cases N] [--seed S] "
                            "[--streams 1|2] [--addresses never-reuse|first-fit] [--all] "
                            "[--verbose]\n");
            return 2;
        }
    }
    if (getenv("ORACLE_CASES"))
        cases = (unsigned)strtoul(getenv("ORACLE_CASES"), NULL, 10);
    if (getenv("ORACLE_SEED"))
        seed = strtoull(getenv("ORACLE_SEED"), NULL, 10);
    if (!driver || streams < 1) {
        fprintf(stderr, "oracle_diff: --driver is required, --streams at least 1\n");
        return 2;
    }
    if (access(driver, X_OK) != 0) {
        printf("oracle_diff: %s: %s; skipped (the oracle build did not run)\n", driver,
               strerror(errno));
        return 77;
    }
    char path[] = "/tmp/oracle_diff_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("oracle_diff: mkstemp");
        return 2;
    }
    close(fd);

    struct tally t = {0};
    struct script s;
    int failed_runs = 0;
    unsigned config_pairs = 0;
    int config_disagree = check_configs(driver, verbose, &config_pairs);
    if (config_disagree < 0)
        return 2;
    printf("oracle_diff: %u config strings, %d disagree\n", config_pairs, config_disagree);
    for (unsigned c = 0; c < cases; c++) {
        random_script(&s, seed, c, streams);
        for (size_t k = 0; k < SETTING_COUNT; k++)
            failed_runs |= check(driver, path, &s, &SETTINGS[k], all, verbose, &t);
        free(s.ops);
    }
    /* The write-up's table, and the hand-checked scenarios, under a ladder of split sizes. */
    static const struct setting ladder[] = {
        {"", 0},
        {"max_split_size_mb:4096", 0},
        {"max_split_size_mb:5120", 0},
        {"max_split_size_mb:6144", 0},
        {"max_split_size_mb:7168", 0},
        {"max_split_size_mb:8192", 0},
        {"max_split_size_mb:21", 0},
        {"max_split_size_mb:200", 0},
        {"max_split_size_mb:400", 0},
        {"max_split_size_mb:700", 0},
        {"expandable_segments:True", 0},
        {"garbage_collection_threshold:0.5", 0.9},
    };
    unsigned hand_pairs = t.pairs;
    writeup_script(&s);
    for (size_t k = 0; k < sizeof(ladder) / sizeof(ladder[0]); k++)
        failed_runs |= check(driver, path, &s, &ladder[k], all, verbose, &t);
    free(s.ops);
    for (size_t h = 0; h < HAND_COUNT; h++) {
        hand_script(&s, HAND[h].name, HAND[h].capacity_mib, HAND[h].text);
        for (size_t k = 0; k < sizeof(ladder) / sizeof(ladder[0]); k++)
            failed_runs |= check(driver, path, &s, &ladder[k], all, verbose, &t);
        free(s.ops);
    }
    unlink(path);
    printf("oracle_diff: seed %" PRIu64 ", %s addresses, %u random cases x %zu settings on %u "
           "stream%s, %u hand-made pairs: %u pairs, %u agree, %u disagree, %u known "
           "disagreements left out\n",
           seed, cmt_model_address_policy_name(policy), cases, SETTING_COUNT, streams,
           streams == 1 ? "" : "s", t.pairs - hand_pairs, t.pairs, t.agree, t.disagree, t.excluded);
    printf("oracle_diff: the other address policy changes the model's figures in %u pairs, its "
           "OOM verdict in %u\n",
           t.policy_matters, t.policy_flips_oom);
    if (failed_runs)
        return 2;
    return t.disagree || config_disagree ? 1 : 0;
}
