/* gen_trace.c — writes a realistic large trace for the analysis benchmark.
 *
 * usage: cmt_bench_gen_trace OUT.cmt [EVENTS [RANK]]   (default 4,000,000 events)
 *
 * With RANK, the trace is rank RANK of a 64-rank job (bench/fleet): its PROCESS record says so
 * (pid 4242 + RANK, local rank RANK % 8 on host bench-host-(RANK / 8), started RANK ms after
 * rank 0) and its random stream is its own.
 *
 * The workload looks like a training job under a caching allocator plus a library that uses
 * stream-ordered memory: a few hundred call sites with 12-frame stacks on four threads, large
 * cuMemAlloc segments that live long, a churn of cuMemAllocAsync/cuMemFreeAsync of activation-
 * sized buffers with a live set of a few thousand, occasional cuMemGetInfo, stream syncs, a VMM
 * expandable segment that grows, and an OOM episode (fail, free cached segments, retry). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_rng.h"
#include "writer.h"

enum {
    A_ALLOC = 1,
    A_FREE,
    A_ALLOC_ASYNC,
    A_FREE_ASYNC,
    A_INFO,
    A_SYNC,
    A_CREATE,
    A_RELEASE,
    A_MAP,
    A_UNMAP,
    A_RESERVE,
    A_VAFREE,
    A_HOST,
    A_FREE_HOST
};

static const struct cmt_api apis[] = {
    {A_ALLOC, CMT_OP_ALLOC, "cuMemAlloc_v2"},
    {A_FREE, CMT_OP_FREE, "cuMemFree_v2"},
    {A_ALLOC_ASYNC, CMT_OP_ALLOC_ASYNC, "cuMemAllocAsync"},
    {A_FREE_ASYNC, CMT_OP_FREE_ASYNC, "cuMemFreeAsync"},
    {A_INFO, CMT_OP_MEM_INFO, "cuMemGetInfo_v2"},
    {A_SYNC, CMT_OP_SYNC, "cuStreamSynchronize"},
    {A_CREATE, CMT_OP_VMM_CREATE, "cuMemCreate"},
    {A_RELEASE, CMT_OP_VMM_RELEASE, "cuMemRelease"},
    {A_MAP, CMT_OP_VMM_MAP, "cuMemMap"},
    {A_UNMAP, CMT_OP_VMM_UNMAP, "cuMemUnmap"},
    {A_RESERVE, CMT_OP_VA_RESERVE, "cuMemAddressReserve"},
    {A_VAFREE, CMT_OP_VA_FREE, "cuMemAddressFree"},
    {A_HOST, CMT_OP_ALLOC_HOST, "cuMemAllocHost_v2"},
    {A_FREE_HOST, CMT_OP_FREE_HOST, "cuMemFreeHost"},
};

#define SITES 300
#define DEPTH 12
#define LIVE_ASYNC 4096
#define SEGMENTS 64

static cmt_writer *w;
static uint64_t seq, t_ns;
static uint32_t site_leaf[SITES];

static void check(int rc, const char *what)
{
    if (rc) {
        fprintf(stderr, "cmt_bench_gen_trace: %s failed (%d)\n", what, rc);
        exit(1);
    }
}

static void event(uint32_t api, int result, uint32_t site, uint32_t fields, const uint64_t *vals)
{
    struct cmt_event e = {.seq = ++seq,
                          .tid = 1000 + (uint32_t)(next_rand() % 4),
                          .api = api,
                          .result = result,
                          .dev = 0,
                          .stack = site_leaf[site],
                          .fields = fields};
    t_ns += 500 + next_rand() % 4000;
    e.t_ns = t_ns;
    int k = 0;
    for (uint32_t m = fields; m; m &= m - 1)
        e.v[__builtin_ctz(m)] = vals[k++];
    check(cmt_writer_event(w, &e), "event");
}

static void header(int rank)
{
    static const char *argv[] = {"python", "train.py", "--batch-size", "64"};
    char host[32] = "bench-host";
    if (rank >= 0)
        snprintf(host, sizeof host, "bench-host-%d", rank / 8);
    uint64_t r = rank >= 0 ? (uint64_t)rank : 0;
    struct cmt_process p = {4242 + r,
                            1,
                            1700000000000000000ull + r * 1000000,
                            1000 + r * 1000000,
                            12040,
                            host,
                            "/usr/bin/python3",
                            4,
                            argv,
                            rank,
                            rank >= 0 ? rank % 8 : -1,
                            rank >= 0 ? 64 : -1,
                            rank >= 0 ? "bench-job" : NULL};
    check(cmt_writer_process(w, &p), "process");
    for (size_t i = 0; i < sizeof apis / sizeof *apis; i++)
        check(cmt_writer_api(w, &apis[i]), "api");
    struct cmt_module m = {1, "/usr/lib/libtorch_cuda.so", 0x7f0000000000ull, 0x4000000, NULL, 0};
    check(cmt_writer_module(w, &m), "module");
    /* call sites: a shared trunk of 6 frames, then 6 frames of their own */
    uint32_t id = 1;
    for (uint32_t f = 0; f < 6; f++, id++) {
        struct cmt_stack_node n = {id, id - 1, 0x7f0000001000ull + f * 0x40};
        check(cmt_writer_stack_node(w, &n), "node");
    }
    for (uint32_t s = 0; s < SITES; s++) {
        uint32_t parent = 6;
        for (uint32_t f = 0; f < DEPTH - 6; f++, id++) {
            struct cmt_stack_node n = {id, parent, 0x7f0000100000ull + s * 0x1000 + f * 0x10};
            check(cmt_writer_stack_node(w, &n), "node");
            parent = id;
        }
        site_leaf[s] = parent;
    }
    struct cmt_device d = {0, "NVIDIA H100 80GB HBM3", 80ull << 30, 79ull << 30, 0};
    check(cmt_writer_device(w, &d), "device");
    struct cmt_meminfo mi = {0, 0, CMT_MEMINFO_BASELINE, 79ull << 30, 80ull << 30, 0};
    check(cmt_writer_meminfo(w, &mi), "meminfo");
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: cmt_bench_gen_trace OUT.cmt [EVENTS [RANK]]\n");
        return 2;
    }
    uint64_t target = argc >= 3 ? strtoull(argv[2], NULL, 10) : 4000000;
    int rank = argc == 4 ? atoi(argv[3]) : -1;
    if (rank > 0) /* a stream of its own; rank 0 and no rank: the usual one */
        for (int i = 0; i < rank; i++)
            bench_rng_state ^= next_rand() + 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
    struct cmt_membuf buf = {0};
    /* the shim's settings (interpose/writer_thread.c), so the trace is what a recording of
     * such a workload would be */
    struct cmt_writer_options opt = {.level = 1, .raw_literals = 1};
    check(cmt_writer_create(&w, cmt_membuf_sink, &buf, &opt), "writer");
    header(rank);

    static uint64_t live_ptr[LIVE_ASYNC];
    static uint64_t seg_ptr[SEGMENTS], seg_size[SEGMENTS];
    uint64_t next_addr = 0x7f1000000000ull, next_handle = 1, va = 0, va_mapped = 0;
    uint64_t cycle_start = 1;
    int oom_done = 0;
    while (seq < target) {
        uint64_t r = next_rand() % 1000;
        if (r < 470) { /* churn: replace one live async buffer */
            uint32_t i = (uint32_t)(next_rand() % LIVE_ASYNC);
            if (live_ptr[i]) {
                uint64_t v[] = {live_ptr[i], 7};
                event(A_FREE_ASYNC, 0, i % SITES, CMT_F(PTR) | CMT_F(STREAM), v);
            }
            uint64_t size = (uint64_t)512 << (next_rand() % 14);
            live_ptr[i] = next_addr;
            next_addr += (size + 511) & ~511ull;
            uint64_t v[] = {live_ptr[i], size, 7};
            event(A_ALLOC_ASYNC, 0, i % SITES, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(STREAM), v);
        } else if (r < 940) { /* the same churn, pairs allocated and freed at once */
            uint64_t size = (uint64_t)4096 << (next_rand() % 8);
            uint32_t site = (uint32_t)(next_rand() % SITES);
            uint64_t v[] = {next_addr, size, 7};
            event(A_ALLOC_ASYNC, 0, site, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(STREAM), v);
            uint64_t f[] = {next_addr, 7};
            event(A_FREE_ASYNC, 0, site, CMT_F(PTR) | CMT_F(STREAM), f);
            next_addr += size;
        } else if (r < 970) { /* caching-allocator segment churn */
            uint32_t i = (uint32_t)(next_rand() % SEGMENTS);
            if (seg_ptr[i]) {
                uint64_t v[] = {seg_ptr[i]};
                event(A_FREE, 0, 1 + i % 7, CMT_F(PTR), v);
            }
            seg_size[i] = (uint64_t)(2 + next_rand() % 200) << 20;
            seg_ptr[i] = next_addr;
            next_addr += seg_size[i];
            uint64_t v[] = {seg_ptr[i], seg_size[i]};
            event(A_ALLOC, 0, 1 + i % 7, CMT_F(PTR) | CMT_F(SIZE), v);
        } else if (r < 985) {
            uint64_t v[] = {7};
            event(A_SYNC, 0, 0, CMT_F(STREAM), v);
        } else if (r < 995) {
            uint64_t v[] = {40ull << 30, 80ull << 30};
            event(A_INFO, 0, 0, CMT_F(FREE) | CMT_F(TOTAL), v);
        } else { /* an expandable segment: reserve once, map 20 MiB pages, recycle at 2 GiB */
            if (!va) {
                va = 0x7e0000000000ull;
                uint64_t v[] = {va, 8ull << 30, 0};
                event(A_RESERVE, 0, 8, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(ALIGN), v);
            }
            if (va_mapped >= (2ull << 30)) {
                for (uint64_t off = 0; off < va_mapped; off += 20ull << 20) {
                    uint64_t v[] = {va + off, 20ull << 20};
                    event(A_UNMAP, 0, 9, CMT_F(PTR) | CMT_F(SIZE), v);
                    uint64_t h[] = {cycle_start + off / (20ull << 20)};
                    event(A_RELEASE, 0, 9, CMT_F(HANDLE), h);
                }
                va_mapped = 0;
                cycle_start = next_handle;
            }
            uint64_t c[] = {20ull << 20, next_handle}; /* field-bit order */
            event(A_CREATE, 0, 10, CMT_F(HANDLE) | CMT_F(SIZE), c);
            uint64_t m[] = {va + va_mapped, 20ull << 20, next_handle++, 0};
            event(A_MAP, 0, 10, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(OFFSET) | CMT_F(HANDLE), m);
            va_mapped += 20ull << 20;
        }
        if (!oom_done && seq > target / 2) { /* one OOM episode mid-run */
            oom_done = 1;
            uint64_t v[] = {60ull << 30};
            event(A_ALLOC, 2, 11, CMT_F(SIZE), v);
            struct cmt_meminfo mi = {t_ns, 0, CMT_MEMINFO_OOM, 1ull << 30, 80ull << 30, seq};
            check(cmt_writer_meminfo(w, &mi), "meminfo");
            uint64_t again[] = {60ull << 30};
            event(A_ALLOC, 2, 11, CMT_F(SIZE), again);
        }
    }
    struct cmt_end end = {t_ns, seq, 0};
    check(cmt_writer_end(w, &end), "end");
    check(cmt_writer_flush(w), "flush");
    cmt_writer_destroy(w);
    FILE *f = fopen(argv[1], "wb");
    if (!f || fwrite(buf.data, 1, buf.len, f) != buf.len || fclose(f) != 0) {
        fprintf(stderr, "cmt_bench_gen_trace: cannot write %s\n", argv[1]);
        return 1;
    }
    printf("%s: %" PRIu64 " events, %zu bytes\n", argv[1], seq, buf.len);
    cmt_membuf_free(&buf);
    return 0;
}
