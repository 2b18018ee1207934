/* Device callbacks of the caching-allocator model: one call per segment, one
 * per page for expandable segments, and a refusing device is an OOM. */
#include <criterion/criterion.h>

#include "caching_model.h"

#define MiB CMT_MODEL_MIB

struct device {
    uint64_t held, limit;
    int allocs, frees, refusals;
    uint64_t last_address, last_size;
};

static int dev_alloc(void *ctx, uint64_t address, uint64_t size)
{
    struct device *d = ctx;
    if (d->held + size > d->limit) {
        d->refusals++;
        return -1;
    }
    d->held += size;
    d->allocs++;
    d->last_address = address;
    d->last_size = size;
    return 0;
}

static void dev_free(void *ctx, uint64_t address, uint64_t size)
{
    struct device *d = ctx;
    (void)address;
    d->held -= size;
    d->frees++;
}

static struct cmt_model *make(struct device *d, uint64_t capacity, const char *conf)
{
    struct cmt_model_config c;
    cmt_model_config_default(&c, capacity);
    if (conf)
        cr_assert_eq(cmt_model_config_parse(&c, conf, NULL), CMT_EOK);
    struct cmt_model *m = NULL;
    cr_assert_eq(cmt_model_create(&c, &m), CMT_EOK);
    struct cmt_model_device_hooks hooks = {dev_alloc, dev_free, d};
    cr_assert_eq(cmt_model_set_device_hooks(m, &hooks), CMT_EOK);
    return m;
}

/* Scenario A of the notes, with the device (not the capacity) saying no:
 * the model's OOM path runs exactly as for a full device. */
Test(model_hooks, segments_go_through_the_device_and_refusals_are_ooms)
{
    struct device d = {.limit = 1000 * MiB};
    struct cmt_model *m = make(&d, 100000 * MiB, NULL);
    cmt_model_handle a, b, c;
    cr_assert_eq(cmt_model_alloc(m, 600 * MiB, 0, &a), CMT_EOK);
    cr_assert_eq(d.allocs, 1);
    cr_assert_eq(d.last_size, 600 * MiB);
    struct cmt_model_block info;
    cmt_model_block_info(m, a, &info);
    cr_assert_eq(d.last_address, info.address);
    cmt_model_free(m, a);
    cr_assert_eq(cmt_model_alloc(m, 100 * MiB, 0, &b), CMT_EOK);
    cr_assert_eq(cmt_model_alloc(m, 600 * MiB, 0, &c), CMT_EMODEL_OOM);
    /* Two refused device allocations (first try and the retry); nothing freed
   * because the only segment is split by b. */
    cr_assert_eq(d.refusals, 2);
    cr_assert_eq(d.frees, 0);
    cr_assert_eq(d.held, 600 * MiB);
    cmt_model_free(m, b);
    cmt_model_empty_cache(m);
    cr_assert_eq(d.frees, 1);
    cr_assert_eq(d.held, 0);
    cmt_model_destroy(m);
}

Test(model_hooks, expandable_segments_map_and_unmap_page_by_page)
{
    struct device d = {.limit = 100000 * MiB};
    struct cmt_model *m = make(&d, 100000 * MiB, "expandable_segments:True");
    cmt_model_handle a;
    cr_assert_eq(cmt_model_alloc(m, 100 * MiB, 0, &a), CMT_EOK);
    cr_assert_eq(d.allocs, 5); /* 5 pages of 20 MiB */
    cr_assert_eq(d.held, 100 * MiB);
    cmt_model_free(m, a);
    cmt_model_empty_cache(m);
    cr_assert_eq(d.frees, 5);
    cr_assert_eq(d.held, 0);
    cmt_model_destroy(m);
}

Test(model_hooks, a_refused_page_leaves_nothing_mapped)
{
    struct device d = {.limit = 50 * MiB};
    struct cmt_model *m = make(&d, 100000 * MiB, "expandable_segments:True");
    cmt_model_handle a;
    cr_assert_eq(cmt_model_alloc(m, 100 * MiB, 0, &a), CMT_EMODEL_OOM);
    cr_assert_eq(d.held, 0);
    struct cmt_model_stats s;
    cmt_model_get_stats(m, &s);
    cr_assert_eq(s.reserved_bytes, 0);
    cr_assert_eq(cmt_model_check(m), CMT_EOK);
    cmt_model_destroy(m);
}
