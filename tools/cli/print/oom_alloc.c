/* oom_alloc.c — an out-of-memory episode's allocator-level view, as text and JSON. */
#include "print/oom_alloc.h"

#include <inttypes.h>
#include <stdio.h>

#include "frames.h"

uint64_t cmt__oom_suggest_max_split_mb(uint64_t request_bytes)
{
    uint64_t mib = request_bytes >> 20;
    uint64_t step = mib > 512 ? 512 : 20;
    uint64_t n = mib ? (mib - 1) / step * step : 0;
    return n < 20 ? 20 : n;
}

static void json_sites(struct cmt__json *j, const char *key, const cmt_reader *r,
                       const struct cmt_alloc_holder *h, uint32_t n)
{
    char site[512];
    cmt__json_array(j, key);
    for (uint32_t i = 0; i < n; i++) {
        cmt__json_object(j, NULL);
        cmt__json_u64(j, "bytes", h[i].bytes);
        cmt__json_u64(j, "count", h[i].count);
        if (h[i].node)
            cmt_reader_format_frame(r, h[i].node, site, sizeof site);
        cmt__json_string(j, "site", h[i].node ? site : "(no stack)");
        cmt__json_stack(j, "stack", r, h[i].stack);
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
}

void cmt__oom_json_allocator(struct cmt__json *j, const cmt_reader *r,
                             const struct cmt_oom_episode *e)
{
    const struct cmt_alloc_view *v = e->alloc;
    cmt__json_object(j, "allocator");
    cmt__json_u64(j, "id", v->allocator);
    cmt__json_string_or_null(j, "name", v->name);
    cmt__json_string_or_null(j, "conf", v->conf);
    CMT__JSON_U64S(
        j, {"request_bytes", v->request_bytes}, {"allocated_bytes", v->fig.allocated_bytes},
        {"active_bytes", v->fig.active_bytes}, {"reserved_bytes", v->fig.reserved_bytes},
        {"unallocated_bytes", v->unallocated_bytes},
        {"inactive_split_bytes", v->fig.inactive_split_bytes}, {"segments", v->fig.segments},
        {"largest_free_block_bytes", v->largest_free_block},
        {"max_split_size_bytes", v->max_split_size},
        {"servable_cached_blocks", v->servable_blocks});
    cmt__json_bool(j, "recorded", v->have_recorded);
    if (v->have_recorded) {
        cmt__json_u64(j, "recorded_allocated_bytes", v->recorded_allocated);
        cmt__json_u64(j, "recorded_reserved_bytes", v->recorded_reserved);
    }
    CMT__JSON_U64S(j, {"cached_blocks", v->free_block_count},
                   {"split_cached_blocks", v->split_free_count},
                   {"split_cached_bytes", v->split_free_bytes},
                   {"oversize_cached_blocks", v->oversize_free_count},
                   {"oversize_cached_bytes", v->oversize_free_bytes});
    cmt__json_array(j, "largest_cached_blocks");
    for (uint32_t i = 0; i < v->free_shown; i++) {
        const struct cmt_alloc_free_block *f = &v->free_blocks[i];
        cmt__json_object(j, NULL);
        CMT__JSON_U64S(j, {"addr", f->addr}, {"bytes", f->size}, {"segment", f->segment},
                       {"segment_bytes", f->segment_size}, {"stream", f->stream});
        cmt__json_bool(j, "split", f->split);
        cmt__json_bool(j, "oversize", f->oversize);
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
    json_sites(j, "holders", r, v->holders, v->holder_count);
    cmt__json_u64(j, "driver_live_bytes", v->driver_live_bytes);
    cmt__json_u64(j, "outside_bytes", v->outside_bytes);
    json_sites(j, "outside_sites", r, v->outside, v->outside_count);
    if (e->verdict == CMT_VERDICT_FRAGMENTATION)
        cmt__json_u64(j, "suggest_max_split_size_mb",
                      cmt__oom_suggest_max_split_mb(v->request_bytes));
    cmt__json_end_object(j);
}

static void print_sites(const cmt_reader *r, const struct cmt_alloc_holder *h, uint32_t n)
{
    char a[32], site[512], text[512];
    for (uint32_t i = 0; i < n; i++) {
        if (h[i].node)
            cmt_reader_format_frame(r, h[i].node, site, sizeof site);
        printf("    %10s  %6" PRIu64 " block%s  %s\n", cmt__bytes(h[i].bytes, a), h[i].count,
               h[i].count == 1 ? " " : "s",
               h[i].node ? cmt__text(site, text, sizeof text) : "(no stack)");
    }
}

void cmt__oom_print_allocator(const cmt_reader *r, const struct cmt_oom_episode *e, const char *dev)
{
    const struct cmt_alloc_view *v = e->alloc;
    char a[32], b[32], c[32], d[32], text[256];
    printf("  allocator  %s, %s: allocated %s, reserved %s, reserved but unallocated %s\n",
           v->name ? cmt__text(v->name, text, sizeof text) : "allocator",
           v->conf && *v->conf ? "with its settings below" : "default settings",
           cmt__bytes(v->fig.allocated_bytes, a), cmt__bytes(v->fig.reserved_bytes, b),
           cmt__bytes(v->unallocated_bytes, c));
    if (v->conf && *v->conf)
        printf("  settings   %s\n", cmt__text(v->conf, text, sizeof text));
    if (v->have_recorded && (v->recorded_allocated != v->fig.allocated_bytes ||
                             v->recorded_reserved != v->fig.reserved_bytes))
        printf("  recorded   the allocator itself reported allocated %s, reserved %s\n",
               cmt__bytes(v->recorded_allocated, a), cmt__bytes(v->recorded_reserved, b));
    printf("  cache      %" PRIu64 " cached block%s, largest %s (request %s); %" PRIu64
           " split (%s, cannot be given back)",
           v->free_block_count, v->free_block_count == 1 ? "" : "s",
           cmt__bytes(v->largest_free_block, a), cmt__bytes(v->request_bytes, b),
           v->split_free_count, cmt__bytes(v->split_free_bytes, c));
    if (v->max_split_size)
        printf(", %" PRIu64 " oversize (%s, kept whole)", v->oversize_free_count,
               cmt__bytes(v->oversize_free_bytes, d));
    printf("\n");
    for (uint32_t i = 0; i < v->free_shown; i++) {
        const struct cmt_alloc_free_block *f = &v->free_blocks[i];
        printf("    %10s  free at 0x%" PRIx64 " in a %s segment%s%s\n", cmt__bytes(f->size, a),
               f->addr, cmt__bytes(f->segment_size, b), f->split ? " (split)" : "",
               f->oversize ? " (oversize)" : "");
    }
    printf("  outside    %s of this process's device memory lies outside the allocator "
           "(driver-level %s - reserved %s)%s\n",
           cmt__bytes(v->outside_bytes, a), cmt__bytes(v->driver_live_bytes, b),
           cmt__bytes(v->fig.reserved_bytes, c), v->outside_count ? ":" : "");
    print_sites(r, v->outside, v->outside_count);
    printf("  others     other processes %s (total %s - free %s - this process %s)\n",
           cmt__bytes(e->others_bytes, a), cmt__bytes(e->total_bytes, b),
           cmt__bytes(e->free_bytes, c), cmt__bytes(e->process_bytes, d));
    if (v->holder_count)
        printf("  tensors on %s at the failure, by allocation site:\n", dev);
    print_sites(r, v->holders, v->holder_count);
    if (e->verdict == CMT_VERDICT_FRAGMENTATION)
        printf("  hint       keep blocks as large as the request whole: export "
               "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:%" PRIu64 "\n"
               "             (below the %s request)%s; `cumemtrace whatif` checks %s on this "
               "run\n",
               cmt__oom_suggest_max_split_mb(v->request_bytes), cmt__bytes(v->request_bytes, a),
               v->expandable ? "" : ", or expandable_segments:True", v->expandable ? "it" : "both");
}
