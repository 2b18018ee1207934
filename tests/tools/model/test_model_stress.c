/* Randomised runs of the caching-allocator model: internal invariants hold
 * under every setting, and replay is fast enough for `whatif`. */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <stdlib.h>
#include <time.h>

#include "caching_model.h"

#define MiB CMT_MODEL_MIB
#define GiB CMT_MODEL_GIB
#define LIVE_MAX 4096

struct rng {
    uint64_t state;
};

static uint64_t next(struct rng *r)
{
    r->state = r->state * 6364136223846793005ull + 1442695040888963407ull;
    return r->state >> 33;
}

/* Mostly small tensors, some activations, a few big buffers. */
static uint64_t pick_size(struct rng *r)
{
    uint64_t roll = next(r) % 100;
    if (roll < 60)
        return 1 + next(r) % MiB;
    if (roll < 95)
        return MiB + next(r) % (48 * MiB);
    return 50 * MiB + next(r) % (400 * MiB);
}

struct run {
    uint64_t ooms, events;
};

/* Streams drawn for the requests: a few, as programs have, unless a test asks for more. */
static uint64_t stream_count = 3;

static struct run churn(struct cmt_model *m, uint64_t seed, uint64_t steps, uint64_t check_every)
{
    static cmt_model_handle live[LIVE_MAX];
    size_t count = 0;
    struct rng r = {seed};
    struct run out = {0, 0};
    for (uint64_t k = 0; k < steps; k++) {
        bool do_free = count == LIVE_MAX || (count > 0 && next(&r) % 2 == 0);
        if (do_free) {
            size_t victim = next(&r) % count;
            cr_assert_eq(cmt_model_free(m, live[victim]), CMT_EOK);
            live[victim] = live[--count];
        } else {
            cmt_model_handle h;
            uint64_t stream = next(&r) % stream_count;
            int rc = cmt_model_alloc(m, pick_size(&r), stream * 0x9e3779b97f4a7c15ull, &h);
            if (rc == CMT_EMODEL_OOM) {
                out.ooms++;
                /* Make room like a program that shrinks its batch. */
                for (size_t n = count / 2; n > 0; n--) {
                    cr_assert_eq(cmt_model_free(m, live[--count]), CMT_EOK);
                    out.events++;
                }
            } else {
                cr_assert_eq(rc, CMT_EOK);
                live[count++] = h;
            }
        }
        out.events++;
        if (next(&r) % 20000 == 0)
            cr_assert_eq(cmt_model_empty_cache(m), CMT_EOK);
        if (check_every && k % check_every == 0)
            cr_assert_eq(cmt_model_check(m), CMT_EOK, "step %llu", (unsigned long long)k);
    }
    while (count > 0)
        cr_assert_eq(cmt_model_free(m, live[--count]), CMT_EOK);
    cr_assert_eq(cmt_model_check(m), CMT_EOK);
    struct cmt_model_stats s;
    cmt_model_get_stats(m, &s);
    cr_assert_eq(s.allocated_bytes, 0);
    cr_assert_eq(s.requested_bytes, 0);
    cr_assert_eq(s.oversize_allocations, 0);
    cr_assert_eq(cmt_model_empty_cache(m), CMT_EOK);
    cmt_model_get_stats(m, &s);
    cr_assert_eq(s.reserved_bytes, 0, "reserved %llu after empty_cache",
                 (unsigned long long)s.reserved_bytes);
    cr_assert_eq(s.segment, 0);
    cr_assert_eq(cmt_model_check(m), CMT_EOK);
    return out;
}

static const char *const settings[] = {
    "",
    "max_split_size_mb:64",
    "max_split_size_mb:200,max_non_split_rounding_mb:40",
    "roundup_power2_divisions:4",
    "expandable_segments:True",
    "expandable_segments:True,max_split_size_mb:64",
    "garbage_collection_threshold:0.5",
};

static struct cmt_model *make(const char *conf, double fraction)
{
    struct cmt_model_config c;
    cmt_model_config_default(&c, 3 * GiB);
    c.device_total = 4 * GiB;
    c.memory_fraction = fraction;
    struct cmt_err err = {0};
    cr_assert_eq(cmt_model_config_parse(&c, conf, &err), CMT_EOK, "%s", err.text);
    struct cmt_model *m = NULL;
    cr_assert_eq(cmt_model_create(&c, &m), CMT_EOK);
    return m;
}

Test(stress, invariants_hold_under_every_setting)
{
    for (size_t k = 0; k < sizeof settings / sizeof settings[0]; k++) {
        struct cmt_model *m = make(settings[k], k == 6 ? 0.6 : 0.0);
        struct run r = churn(m, 1000 + k, 60000, 97);
        cr_log_info("'%s': %llu events, %llu OOMs", settings[k], (unsigned long long)r.events,
                    (unsigned long long)r.ooms);
        cr_assert_gt(r.ooms, 0, "the run should reach the device limit");
        cmt_model_destroy(m);
    }
}

/* Many streams with handles spread over 64 bits: the sets' order and chunk hints still hold. */
Test(stress, invariants_hold_with_a_hundred_streams)
{
    stream_count = 100;
    for (size_t k = 0; k < 2; k++) {
        struct cmt_model *m = make(settings[k * 4], 0.0);
        struct run r = churn(m, 77 + k, 60000, 97);
        cr_assert_gt(r.ooms, 0, "the run should reach the device limit");
        cmt_model_destroy(m);
    }
}

/* Millions of events per setting: the invariants hold all the way (the time is logged, not
 * asserted: bench/ measures speed, a test on a loaded machine cannot). */
Test(stress, replays_millions_of_events)
{
    for (size_t k = 0; k < sizeof settings / sizeof settings[0]; k++) {
        struct cmt_model *m = make(settings[k], k == 6 ? 0.6 : 0.0);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        struct run r = churn(m, 7 + k, 2000000, 0);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        cr_log_info("'%s': %llu events in %.3f s", settings[k], (unsigned long long)r.events,
                    seconds);
        cr_assert_geq(r.events, 2000000, "'%s': every step replayed", settings[k]);
        cmt_model_destroy(m);
    }
}
