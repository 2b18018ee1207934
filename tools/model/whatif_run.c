/* whatif_run.c — replay a stream per setting (on threads), recommend one. */
#include "whatif.h"
#include "whatif_codec.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIB ((uint64_t)1 << 20)

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void make_config(const struct cmt_whatif_setting *st, const struct cmt_whatif_device *dev,
                        enum cmt_model_address_policy policy, struct cmt_model_config *c)
{
    cmt_model_config_default(c, (size_t)dev->capacity);
    c->device_total = (size_t)dev->device_total;
    c->memory_fraction = dev->memory_fraction;
    c->address_policy = policy;
    /* A zero field keeps PyTorch's default. */
#define CMT__SETTING_COPY(field, ...) \
    if (st->field)                    \
        c->field = st->field;
    CMT_MODEL_SETTINGS(CMT__SETTING_COPY)
#undef CMT__SETTING_COPY
}

/* Replay until the end or the first OOM under one address policy. */
static void replay_one(const struct cmt_whatif_stream *s, const struct cmt_whatif_device *dev,
                       enum cmt_model_address_policy policy, struct cmt_whatif_result *res,
                       cmt_model_handle *handles)
{
    struct cmt_model_config config;
    struct cmt_model *m = NULL;
    double start = now_seconds();
    make_config(&res->setting, dev, policy, &config);
    if (s->device >= 0) /* the OOM message names it, as c10's does */
        config.device_index = s->device;
    res->address_policy = policy;
    res->error = cmt_model_create(&config, &m);
    if (res->error)
        return;
    const struct cmt_model_stats *st = cmt_model_stats_view(m);
    uint64_t peak = 0;
    size_t k = 0;
    struct cmt_whatif_cursor cur;
    struct cmt_whatif_event e;
    cmt_whatif_cursor_init(&cur, s);
    for (; cmt__whatif_cursor_ready(&cur); k++) {
        cmt__whatif_decode(&cur.at, &cur.stream, &cur.new_id, &e);
        if (cmt_whatif_event_empties_cache(&e)) {
            cmt_model_empty_cache(m);
            continue;
        }
        if (e.is_free) {
            cmt_model_free(m, handles[e.id]);
            handles[e.id] = 0;
            continue;
        }
        int rc = cmt_model_alloc(m, (size_t)e.size, e.stream, &handles[e.id]);
        if (rc == CMT_EMODEL_OOM) {
            res->oom = true;
            res->oom_event = k;
            res->oom_info = *cmt_model_last_oom(m);
            break;
        }
        if (rc) {
            res->error = rc;
            break;
        }
        if (st->peak_reserved > peak) {
            peak = st->peak_reserved;
            res->allocated_at_peak = st->allocated_bytes;
            res->inactive_split_at_peak = st->inactive_split_bytes;
        }
    }
    if (cur.error && !res->error)
        res->error = cur.error;
    res->events_replayed = k;
    res->stats = *st;
    res->peak_reserved = st->peak_reserved;
    res->peak_allocated = st->peak_allocated;
    res->alloc_retries = st->num_alloc_retries;
    res->device_alloc_calls = st->device_alloc_calls;
    res->device_free_calls = st->device_free_calls;
    res->oversize_segments = st->oversize_segments;
    res->addresses_diverged = cmt_model_addresses_diverged(m);
    cmt_model_destroy(m);
    res->seconds = now_seconds() - start;
}

/* The setting under the other policy, when the addresses made a difference possible. */
static void check_other(const struct cmt_whatif_stream *s, const struct cmt_whatif_device *dev,
                        struct cmt_whatif_result *res, cmt_model_handle *handles, size_t ids)
{
    if (!dev->check_other_policy || !res->addresses_diverged || res->error)
        return;
    struct cmt_whatif_result other;
    memset(&other, 0, sizeof other);
    other.setting = res->setting;
    memset(handles, 0, ids * sizeof *handles);
    enum cmt_model_address_policy policy = dev->address_policy == CMT_MODEL_ADDRESSES_FIRST_FIT
                                               ? CMT_MODEL_ADDRESSES_NEVER_REUSE
                                               : CMT_MODEL_ADDRESSES_FIRST_FIT;
    replay_one(s, dev, policy, &other, handles);
    if (other.error)
        return;
    res->other_checked = true;
    res->other_oom = other.oom;
    res->other_oom_event = other.oom_event;
    res->other_peak_reserved = other.peak_reserved;
    res->borderline = other.oom != res->oom;
    res->seconds += other.seconds;
}

struct work {
    const struct cmt_whatif_stream *stream;
    const struct cmt_whatif_device *dev;
    const struct cmt_whatif_setting *settings;
    struct cmt_whatif_result *results;
    size_t count;
    size_t next; /* atomically incremented */
};

static void *worker(void *arg)
{
    struct work *w = arg;
    size_t ids = w->stream->id_count ? w->stream->id_count : 1;
    cmt_model_handle *handles = malloc(ids * sizeof *handles);
    for (;;) {
        size_t i = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED);
        if (i >= w->count)
            break;
        struct cmt_whatif_result *res = &w->results[i];
        memset(res, 0, sizeof *res);
        res->setting = w->settings[i];
        if (!handles) {
            res->error = CMT_EMODEL_NOMEM;
            continue;
        }
        memset(handles, 0, ids * sizeof *handles);
        replay_one(w->stream, w->dev, w->dev->address_policy, res, handles);
        check_other(w->stream, w->dev, res, handles, ids);
    }
    free(handles);
    return NULL;
}

int cmt_whatif_run_on(const struct cmt_whatif_stream *stream, const struct cmt_whatif_device *dev,
                      const struct cmt_whatif_setting *settings, size_t count, unsigned threads,
                      struct cmt_whatif_result *results)
{
    if (!stream || !dev || !settings || !results || dev->capacity == 0 ||
        !(dev->memory_fraction >= 0.0 && dev->memory_fraction <= 1.0) ||
        (unsigned)dev->address_policy >= CMT_MODEL_ADDRESS_POLICY_COUNT)
        return CMT_EINVALID;
    struct cmt_whatif_device d = *dev;
    if (d.device_total < d.capacity)
        d.device_total = d.capacity;
    struct work w = {stream, &d, settings, results, count, 0};
    if (threads == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cpus > 0 ? (unsigned)cpus : 1;
    }
    if (threads > count)
        threads = (unsigned)count;
    if (threads > 64)
        threads = 64;
    pthread_t tids[64];
    unsigned started = 0;
    /* The calling thread works too; extra threads only when they help. */
    for (unsigned t = 1; t < threads; t++)
        if (pthread_create(&tids[started], NULL, worker, &w) == 0)
            started++;
    worker(&w);
    for (unsigned t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    return 0;
}

int cmt_whatif_run(const struct cmt_whatif_stream *stream, uint64_t capacity, uint64_t device_total,
                   const struct cmt_whatif_setting *settings, size_t count, unsigned threads,
                   struct cmt_whatif_result *results)
{
    struct cmt_whatif_device dev = {.capacity = capacity, .device_total = device_total};
    return cmt_whatif_run_on(stream, &dev, settings, count, threads, results);
}

void cmt_whatif_setting_default(struct cmt_whatif_setting *setting)
{
#define CMT__SETTING_DEFAULT(field, type, key, def, ...) setting->field = def;
    CMT_MODEL_SETTINGS(CMT__SETTING_DEFAULT)
#undef CMT__SETTING_DEFAULT
}

/* How many settings differ from PyTorch's defaults. */
static int distance_from_default(const struct cmt_whatif_setting *s)
{
    struct cmt_model_config c;
    struct cmt_whatif_device dev = {.capacity = 1, .device_total = 1};
    int n = 0;
    make_config(s, &dev, CMT_MODEL_ADDRESSES_NEVER_REUSE, &c);
#define CMT__SETTING_CHANGED(field, type, key, def, ...) n += cmt__setting_set_##type(c.field, def);
    CMT_MODEL_SETTINGS(CMT__SETTING_CHANGED)
#undef CMT__SETTING_CHANGED
    return n;
}

/* @return true when a is preferred to b at equal peak. */
static bool closer_to_default(const struct cmt_whatif_setting *a,
                              const struct cmt_whatif_setting *b)
{
    int da = distance_from_default(a), db = distance_from_default(b);
    if (da != db)
        return da < db;
    return a->max_split_size > b->max_split_size;
}

void cmt_whatif_recommend(const struct cmt_whatif_result *results, size_t count,
                          struct cmt_whatif_recommendation *out)
{
    memset(out, 0, sizeof *out);
    out->best = -1;
    out->rule = -1;
    for (size_t i = 0; i < count; i++) {
        const struct cmt_whatif_result *r = &results[i];
        if (r->error)
            continue;
        if (r->oom) {
            if (!out->smallest_failing_request ||
                r->oom_info.alloc_size < out->smallest_failing_request)
                out->smallest_failing_request = r->oom_info.alloc_size;
            continue;
        }
        if (out->best < 0) {
            out->best = (long)i;
            continue;
        }
        const struct cmt_whatif_result *b = &results[out->best];
        /* A setting that fits under either address policy beats a borderline one. */
        if (r->borderline != b->borderline) {
            if (!r->borderline)
                out->best = (long)i;
            continue;
        }
        if (r->peak_reserved < b->peak_reserved ||
            (r->peak_reserved == b->peak_reserved && closer_to_default(&r->setting, &b->setting)))
            out->best = (long)i;
    }
    uint64_t request = out->smallest_failing_request;
    if (!request)
        return;
    /* With S at or below the failing allocation's segment size, its cached
   * block is oversize: refused to smaller requests, so never split. */
    uint64_t exact = request / MIB;
    out->exact_max_split_mb = exact > 20 ? exact : 0; /* c10: "must be > 20" */
    for (size_t i = 0; i < count; i++) {
        const struct cmt_whatif_result *r = &results[i];
        uint64_t split = r->setting.max_split_size;
        if (r->error || r->oom || split == UINT64_MAX || split > request)
            continue;
        if (out->rule < 0) {
            out->rule = (long)i;
            continue;
        }
        const struct cmt_whatif_setting *b = &results[out->rule].setting;
        if (split > b->max_split_size ||
            (split == b->max_split_size && closer_to_default(&r->setting, b)))
            out->rule = (long)i;
    }
}

size_t cmt_whatif_default_ladder(uint64_t failing_request, uint64_t mb[5])
{
    uint64_t request_mb = failing_request / MIB;
    uint64_t step = 1024;
    if (request_mb < 3 * 1024) {
        step = 32;
        while (step * 2 * 4 <= request_mb)
            step *= 2;
    }
    uint64_t base = request_mb / step * step;
    size_t n = 0;
    for (int k = -2; k <= 2; k++) {
        if (k < 0 && base < (uint64_t)(-k) * step)
            continue;
        uint64_t v = base + (uint64_t)((int64_t)k * (int64_t)step);
        if (v > 20 && (n == 0 || v > mb[n - 1]))
            mb[n++] = v;
    }
    return n;
}

size_t cmt_whatif_default_splits_on(const struct cmt_whatif_stream *s,
                                    const struct cmt_whatif_device *dev,
                                    const struct cmt_whatif_setting *base, uint64_t split[6])
{
    struct cmt_whatif_setting probe = *base;
    struct cmt_whatif_device d = *dev;
    struct cmt_whatif_result r;
    probe.max_split_size = UINT64_MAX;
    d.check_other_policy = false;
    memset(&r, 0, sizeof r);
    cmt_whatif_run_on(s, &d, &probe, 1, 1, &r);
    uint64_t around = r.oom ? r.oom_info.rounded : s->max_request;
    uint64_t mb[5];
    size_t n = cmt_whatif_default_ladder(around, mb);
    split[0] = UINT64_MAX;
    for (size_t i = 0; i < n; i++)
        split[i + 1] = mb[i] * MIB;
    return n + 1;
}

size_t cmt_whatif_default_splits(const struct cmt_whatif_stream *s, uint64_t capacity,
                                 uint64_t device_total, const struct cmt_whatif_setting *base,
                                 uint64_t split[6])
{
    struct cmt_whatif_device dev = {.capacity = capacity, .device_total = device_total};
    return cmt_whatif_default_splits_on(s, &dev, base, split);
}

int cmt_whatif_setting_conf(const struct cmt_whatif_setting *setting, char *buf, size_t len)
{
    struct cmt_model_config c;
    struct cmt_whatif_device dev = {.capacity = 1, .device_total = 1};
    make_config(setting, &dev, CMT_MODEL_ADDRESSES_NEVER_REUSE, &c);
    return cmt_model_config_format(&c, buf, len);
}
