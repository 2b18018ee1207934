/* alloc_run.c — see alloc_run.h. */
#include "alloc_run.h"

#include <stdio.h>
#include <stdlib.h>

#include "caching_model.h"

struct run {
    struct tb *b;
    int with_driver;
};

static void must(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "alloc_run: %s\n", what);
        abort();
    }
}

static int on_alloc(void *ctx, uint64_t address, uint64_t size)
{
    struct run *r = ctx;
    if (r->with_driver)
        tb_alloc(r->b, address, size, 0);
    uint64_t v[] = {address, size};
    tb_alloc_event(r->b, CMT_AA_SEGMENT_ALLOC, 0, 0, CMT_AF(ADDR) | CMT_AF(SIZE), v);
    return 0;
}

static void on_free(void *ctx, uint64_t address, uint64_t size)
{
    struct run *r = ctx;
    uint64_t v[] = {address, size};
    tb_alloc_event(r->b, CMT_AA_SEGMENT_FREE, 0, 0, CMT_AF(ADDR) | CMT_AF(SIZE), v);
    if (r->with_driver)
        tb_free(r->b, address);
}

static void failed(struct run *r, const struct cmt_model_oom *o, uint32_t stack)
{
    if (r->with_driver) { /* as the shim sees PyTorch's OOM path */
        uint64_t seq = tb_alloc_fail(r->b, o->alloc_size, stack);
        tb_meminfo(r->b, CMT_MEMINFO_OOM, o->device_free, o->device_total, seq);
        tb_alloc_fail(r->b, o->alloc_size, stack);
    }
    uint64_t v[] = {o->rounded, o->device_free, o->device_total, o->allocated, o->reserved};
    tb_alloc_event(r->b, CMT_AA_OOM, 0, stack,
                   CMT_AF(SIZE) | CMT_AF(DEVICE_FREE) | CMT_AF(DEVICE_TOTAL) | CMT_AF(ALLOCATED) |
                       CMT_AF(RESERVED),
                   v);
}

void alloc_run_record(struct tb *b, const char *conf, uint64_t capacity, uint64_t total,
                      const struct cmt_model_event *events, size_t n, uint32_t id_count,
                      int with_driver)
{
    tb_begin(b, total, capacity);
    tb_allocator(b, 1, conf);
    uint32_t root = tb_source_frame(b, 0, "main", "train.py", 100);
    uint32_t stacks[3];
    for (uint32_t k = 0; k < 3; k++) {
        char fn[16];
        snprintf(fn, sizeof fn, "step_%u", k);
        uint32_t py = tb_source_frame(b, root, fn, "train.py", 10 + k);
        stacks[k] = tb_frame(b, py, "c10::cuda::CUDACachingAllocator::Native::malloc");
    }
    struct cmt_model_config config;
    cmt_model_config_default(&config, capacity);
    config.device_total = total;
    struct cmt_err err = {0};
    must(!*conf || cmt_model_config_parse(&config, conf, &err) == 0, err.text);
    struct cmt_model *m;
    must(cmt_model_create(&config, &m) == 0, "model");
    struct run r = {b, with_driver};
    struct cmt_model_device_hooks hooks = {on_alloc, on_free, &r};
    cmt_model_set_device_hooks(m, &hooks);
    cmt_model_handle *h = calloc(id_count ? id_count : 1, sizeof *h);
    must(h != NULL, "memory");
    for (size_t i = 0; i < n; i++) {
        const struct cmt_model_event *e = &events[i];
        struct cmt_model_block blk;
        if (e->op == CMT_MODEL_OP_FREE) {
            if (h[e->id] && cmt_model_block_info(m, h[e->id], &blk) == 0) {
                tb_block_free(b, blk.address, blk.size);
                cmt_model_free(m, h[e->id]);
            }
            h[e->id] = 0;
            continue;
        }
        int rc = cmt_model_alloc(m, e->size, e->stream, &h[e->id]);
        if (rc == CMT_EMODEL_OOM) {
            failed(&r, cmt_model_last_oom(m), stacks[e->id % 3]);
            h[e->id] = 0;
            continue;
        }
        must(rc == 0 && cmt_model_block_info(m, h[e->id], &blk) == 0, "alloc");
        uint64_t v[] = {blk.address, blk.size, e->size, e->stream};
        tb_alloc_event(b, CMT_AA_ALLOC, 0, stacks[e->id % 3],
                       CMT_AF(ADDR) | CMT_AF(SIZE) | CMT_AF(REQUESTED) | CMT_AF(STREAM), v);
    }
    free(h);
    cmt_model_destroy(m);
    tb_finish(b, 0);
}
