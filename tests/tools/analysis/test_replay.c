/* Tests of the replay engine's accounting (tools/analysis/replay.c). */
#include <criterion/criterion.h>
#include <string.h>

#include "cmt_error.h"
#include "reader.h"
#include "replay.h"
#include "timeline.h"
#include "trace_builder.h"

static cmt_reader *reader;
static cmt_replay *rp;

static void replay(struct tb *b)
{
    cr_assert_eq(cmt_reader_open_memory(&reader, b->buf.data, b->buf.len), 0);
    cr_assert_eq(cmt_replay_create(&rp, reader), 0);
    cr_assert_eq(cmt_replay_run(rp, NULL, 0), 0);
}

static void done(struct tb *b)
{
    cmt_replay_destroy(rp);
    cmt_reader_close(reader);
    tb_free_builder(b);
}

Test(replay, tracks_live_bytes_and_peak)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 23 * TB_GIB);
    uint32_t s = tb_stack(&b, "alloc_three_deep", 3);
    tb_alloc(&b, 0x10000000, 12345678, s);
    tb_alloc(&b, 0x20000000, 1000, s);
    tb_free(&b, 0x10000000);
    tb_finish(&b, 1);
    replay(&b);
    const struct cmt_replay_totals *t = cmt_replay_totals(rp);
    cr_expect_eq(t->peak_live_bytes, 12345678 + 1000);
    cr_expect_eq(t->live_bytes, 1000);
    const struct cmt_replay_device *d = cmt_replay_device(rp, 0);
    cr_assert_not_null(d);
    cr_expect_eq(d->peak_live_bytes, 12345678 + 1000);
    cr_expect_eq(d->total_bytes, 24 * TB_GIB);
    cr_expect_eq(d->kind_bytes[CMT_KIND_DEVICE], 1000);
    cr_expect(t->ended);
    done(&b);
}

Test(replay, counts_unknown_frees_without_crashing)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    tb_free(&b, 0xdead0000);
    tb_alloc(&b, 0x1000, 100, 0);
    tb_free(&b, 0x1000);
    tb_free(&b, 0x1000);
    tb_finish(&b, 1);
    replay(&b);
    cr_expect_eq(cmt_replay_totals(rp)->unknown_frees, 2);
    cr_expect_eq(cmt_replay_totals(rp)->live_bytes, 0);
    done(&b);
}

/* Every event takes its op, name and handler from its API's entry: an op this build does not
 * know and an API no record declared are both OTHER, change nothing and are counted. */
Test(replay, events_of_unknown_ops_and_undeclared_apis_are_other)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    const struct cmt_api future = {200, CMT_OP_MAX + 7, "cuMemFutureAlloc"};
    cr_assert_eq(cmt_writer_api(b.w, &future), 0);
    uint64_t v[] = {0x1000, 100};
    tb_event(&b, 200, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE), v);
    tb_event(&b, 300, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE), v); /* no API record */
    tb_event(&b, TB_ALLOC, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE), v);
    tb_finish(&b, 1);
    cr_assert_eq(cmt_reader_open_memory(&reader, b.buf.data, b.buf.len), 0);
    cr_assert_eq(cmt_replay_create(&rp, reader), 0);
    struct cmt_replay_step st;
    const char *names[3] = {0};
    int ops[3], kinds[3], n = 0;
    int rc;
    while ((rc = cmt_replay_next(rp, &st)) > 0)
        if (st.rec.type == CMT_REC_EVENT && n < 3) {
            names[n] = st.api;
            kinds[n] = st.kind;
            ops[n++] = st.op;
        }
    cr_assert_eq(rc, 0);
    cr_assert_eq(n, 3);
    cr_expect_eq(ops[0], CMT_OP_OTHER);
    cr_expect_str_eq(names[0], "cuMemFutureAlloc");
    cr_expect_eq(ops[1], CMT_OP_OTHER);
    cr_expect_str_eq(names[1], "?");
    cr_expect_eq(kinds[0], -1);
    cr_expect_eq(kinds[1], -1);
    cr_expect_eq(ops[2], CMT_OP_ALLOC, "a known op still applies");
    cr_expect_eq(kinds[2], CMT_KIND_DEVICE);
    cr_expect_eq(cmt_replay_api_calls(rp, 200), 1);
    cr_expect_eq(cmt_replay_totals(rp)->live_bytes, 100, "only cuMemAlloc's bytes");
    done(&b);
}

Test(replay, vmm_physical_memory_freed_after_release_and_last_unmap)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    uint64_t create[] = {4 * TB_MIB, 0x77}; /* values in field-bit order */
    tb_event(&b, TB_CREATE, 0, 0, 0, CMT_F(HANDLE) | CMT_F(SIZE), create);
    uint64_t reserve[] = {0x7000000000, 64 * TB_MIB, 0};
    tb_event(&b, TB_RESERVE, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(ALIGN), reserve);
    uint64_t map[] = {0x7000000000, 4 * TB_MIB, 0x77, 0};
    tb_event(&b, TB_MAP, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(OFFSET) | CMT_F(HANDLE), map);
    uint64_t release[] = {0x77};
    tb_event(&b, TB_RELEASE, 0, 0, 0, CMT_F(HANDLE), release);
    tb_finish(&b, 0);
    replay(&b);
    const struct cmt_replay_device *d = cmt_replay_device(rp, 0);
    cr_expect_eq(d->live_bytes, 4 * TB_MIB, "released but still mapped: still held");
    cr_expect_eq(d->kind_bytes[CMT_KIND_VA], 64 * TB_MIB);
    cr_expect_eq(d->mapped_bytes, 4 * TB_MIB);
    struct cmt_fragmentation f;
    cr_assert_eq(cmt_replay_fragmentation(rp, 0, &f), 0);
    cr_expect_eq(f.reserved_va_bytes, 64 * TB_MIB);
    cr_expect_eq(f.mapped_in_va_bytes, 4 * TB_MIB);
    cr_expect_eq(f.largest_unmapped, 60 * TB_MIB);
    done(&b);

    tb_begin(&b, TB_GIB, TB_GIB);
    tb_event(&b, TB_CREATE, 0, 0, 0, CMT_F(HANDLE) | CMT_F(SIZE), create);
    tb_event(&b, TB_MAP, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(OFFSET) | CMT_F(HANDLE), map);
    tb_event(&b, TB_RELEASE, 0, 0, 0, CMT_F(HANDLE), release);
    uint64_t unmap[] = {0x7000000000, 4 * TB_MIB};
    tb_event(&b, TB_UNMAP, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE), unmap);
    tb_finish(&b, 1);
    replay(&b);
    cr_expect_eq(cmt_replay_device(rp, 0)->live_bytes, 0);
    cr_expect_eq(cmt_replay_totals(rp)->peak_live_bytes, 4 * TB_MIB);
    done(&b);
}

Test(replay, pools_retain_async_frees_until_sync)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    uint64_t a[] = {0x5000, 8 * TB_MIB, 1};
    tb_event(&b, TB_ALLOC_ASYNC, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(STREAM), a);
    uint64_t f[] = {0x5000, 1};
    tb_event(&b, TB_FREE_ASYNC, 0, 0, 0, CMT_F(PTR) | CMT_F(STREAM), f);
    tb_finish(&b, 0);
    replay(&b);
    const struct cmt_replay_device *d = cmt_replay_device(rp, 0);
    cr_expect_eq(d->live_bytes, 0);
    cr_expect_eq(d->kind_bytes[CMT_KIND_POOL], 8 * TB_MIB);
    done(&b);

    tb_begin(&b, TB_GIB, TB_GIB);
    tb_event(&b, TB_ALLOC_ASYNC, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(STREAM), a);
    tb_event(&b, TB_FREE_ASYNC, 0, 0, 0, CMT_F(PTR) | CMT_F(STREAM), f);
    uint64_t s[] = {1};
    tb_event(&b, TB_SYNC, 0, 0, 0, CMT_F(STREAM), s);
    tb_finish(&b, 0);
    replay(&b);
    cr_expect_eq(cmt_replay_device(rp, 0)->kind_bytes[CMT_KIND_POOL], 0);
    done(&b);
}

/* Finishes b and replays it. @return the bytes device 0's pools keep at the end (the totals
 * agreeing). */
static uint64_t pool_bytes_kept(struct tb *b)
{
    tb_finish(b, 0);
    replay(b);
    uint64_t kept = cmt_replay_device(rp, 0)->kind_bytes[CMT_KIND_POOL];
    cr_expect_eq(cmt_replay_totals(rp)->pool_retained_bytes, kept);
    done(b);
    return kept;
}

/* A pool given a release threshold keeps up to that many bytes at a synchronisation. */
static uint64_t pool_after_sync(uint64_t threshold, int32_t sync_dev)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    uint64_t c[] = {0x77000};
    tb_event(&b, TB_POOL_CREATE, 0, 0, 0, CMT_F(POOL), c);
    uint64_t a[] = {0x5000, 8 * TB_MIB, 1, 0x77000};
    tb_event(&b, TB_ALLOC_ASYNC, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(STREAM) | CMT_F(POOL),
             a);
    uint64_t f[] = {0x5000, 1};
    tb_event(&b, TB_FREE_ASYNC, 0, 0, 0, CMT_F(PTR) | CMT_F(STREAM), f);
    if (threshold) {
        uint64_t t[] = {threshold, 0x77000, 4}; /* size, pool, flags = RELEASE_THRESHOLD */
        tb_event(&b, TB_POOL_ATTR, 0, 0, 0, CMT_F(SIZE) | CMT_F(POOL) | CMT_F(FLAGS), t);
        uint64_t other[] = {1, 0x77000, 2}; /* another attribute: no effect */
        tb_event(&b, TB_POOL_ATTR, 0, 0, 0, CMT_F(SIZE) | CMT_F(POOL) | CMT_F(FLAGS), other);
    }
    if (sync_dev < 0) { /* a reset frees everything, whatever the threshold */
        tb_event(&b, TB_RESET, 0, 0, 0, 0, NULL);
    } else {
        uint64_t s[] = {1};
        tb_event(&b, TB_SYNC, 0, sync_dev, 0, CMT_F(STREAM), s);
    }
    return pool_bytes_kept(&b);
}

Test(replay, a_release_threshold_keeps_pool_memory_at_sync)
{
    cr_expect_eq(pool_after_sync(0, 0), 0, "threshold 0: a sync releases everything");
    cr_expect_eq(pool_after_sync(64 * TB_MIB, 0), 8 * TB_MIB, "below the threshold: all kept");
    cr_expect_eq(pool_after_sync(3 * TB_MIB, 0), 3 * TB_MIB, "above it: trimmed to it");
    cr_expect_eq(pool_after_sync(64 * TB_MIB, 1), 8 * TB_MIB,
                 "another device's sync leaves the pool alone");
    cr_expect_eq(pool_after_sync(64 * TB_MIB, -1), 0, "a device reset releases everything");
}

/* A raised release threshold on the default pool, whose handle a query returned: what
 * cuMemAllocAsync's frees leave in the default pool at a sync. query: 0 none, 1
 * cuDeviceGetDefaultMemPool, 2 cuDeviceGetMemPool (the current pool, still the default). */
static uint64_t default_pool_after_sync(int query, uint64_t threshold)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    uint64_t handle[] = {0xd3f000};
    if (query)
        tb_event(&b, query == 1 ? TB_POOL_DEFAULT : TB_POOL_CURRENT, 0, 0, 0, CMT_F(POOL), handle);
    uint64_t t[] = {threshold, 0xd3f000, 4}; /* size, pool, flags = RELEASE_THRESHOLD */
    tb_event(&b, TB_POOL_ATTR, 0, 0, 0, CMT_F(SIZE) | CMT_F(POOL) | CMT_F(FLAGS), t);
    uint64_t a[] = {0x5000, 8 * TB_MIB, 1}; /* no pool: the device's current (default) pool */
    tb_event(&b, TB_ALLOC_ASYNC, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(STREAM), a);
    uint64_t f[] = {0x5000, 1};
    tb_event(&b, TB_FREE_ASYNC, 0, 0, 0, CMT_F(PTR) | CMT_F(STREAM), f);
    uint64_t s[] = {1};
    tb_event(&b, TB_SYNC, 0, 0, 0, CMT_F(STREAM), s);
    tb_finish(&b, 0);
    replay(&b);
    uint64_t kept = cmt_replay_device(rp, 0)->kind_bytes[CMT_KIND_POOL];
    cr_expect_eq(cmt_replay_totals(rp)->pool_retained_bytes, kept);
    cr_expect_eq(cmt_replay_device(rp, 0)->live_bytes, 0);
    done(&b);
    return kept;
}

Test(replay, a_threshold_on_the_default_pool_keeps_async_memory_at_sync)
{
    cr_expect_eq(default_pool_after_sync(1, 64 * TB_MIB), 8 * TB_MIB,
                 "the queried handle is the default pool: its threshold keeps the block");
    cr_expect_eq(default_pool_after_sync(1, 3 * TB_MIB), 3 * TB_MIB, "trimmed to the threshold");
    cr_expect_eq(default_pool_after_sync(2, 64 * TB_MIB), 8 * TB_MIB,
                 "the current pool's query names the default pool too");
    cr_expect_eq(default_pool_after_sync(0, 64 * TB_MIB), 0,
                 "a handle no query named is another pool: the default pool keeps nothing");
}

/* A pointer imported from another process's pool costs this process nothing, and its free
 * (cuMemFree or cuMemFreeAsync) ends it without putting bytes in any pool. */
Test(replay, an_imported_pool_pointer_is_another_process_memory)
{
    for (int async = 0; async < 2; async++) {
        struct tb b;
        tb_begin(&b, TB_GIB, TB_GIB);
        tb_alloc(&b, 0x1000, 4 * TB_MIB, 0);
        uint64_t i[] = {0x7f0000000000, 0x88000}; /* ptr, pool (the imported pool) */
        tb_event(&b, TB_POOL_IMPORT_PTR, 0, 0, 0, CMT_F(PTR) | CMT_F(POOL), i);
        tb_finish(&b, 0);
        replay(&b);
        const struct cmt_replay_device *d = cmt_replay_device(rp, 0);
        cr_expect_eq(d->live_bytes, 4 * TB_MIB, "the import adds no bytes");
        cr_expect_eq(d->kind_count[CMT_KIND_IPC], 1, "but is a live object of kind ipc");
        done(&b);

        tb_begin(&b, TB_GIB, TB_GIB);
        tb_event(&b, TB_POOL_IMPORT_PTR, 0, 0, 0, CMT_F(PTR) | CMT_F(POOL), i);
        uint64_t f[] = {0x7f0000000000, 1};
        tb_event(&b, async ? TB_FREE_ASYNC : TB_FREE, 0, 0, 0,
                 async ? CMT_F(PTR) | CMT_F(STREAM) : CMT_F(PTR), f);
        tb_finish(&b, 0);
        replay(&b);
        d = cmt_replay_device(rp, 0);
        cr_expect_eq(d->kind_count[CMT_KIND_IPC], 0, "the free ends the import");
        cr_expect_eq(d->kind_bytes[CMT_KIND_POOL], 0, "and puts nothing in a pool");
        cr_expect_eq(cmt_replay_totals(rp)->unknown_frees, 0);
        done(&b);
    }
}

Test(replay, host_pinned_memory_is_not_device_memory)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    uint64_t h[] = {0x9000, 64 * TB_MIB, 0}, h2[] = {0x9000000, 16 * TB_MIB, 0};
    tb_event(&b, TB_HOST, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(FLAGS), h);
    tb_event(&b, TB_HOST, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(FLAGS), h2);
    tb_event(&b, TB_FREE_HOST, 0, 0, 0, CMT_F(PTR), h); /* cuMemFreeHost lets the first go */
    tb_finish(&b, 1);
    replay(&b);
    cr_expect_eq(cmt_replay_totals(rp)->live_bytes, 0);
    cr_expect_eq(cmt_replay_totals(rp)->host_bytes, 16 * TB_MIB);
    cr_expect_eq(cmt_replay_totals(rp)->unknown_frees, 0);
    const struct cmt_replay_site *s = cmt_replay_site(rp, 0);
    cr_expect_eq(s->live_bytes + s->live_count + s->alloc_count + s->at_peak_bytes, 0,
                 "a site's device figures hold no host memory");
    cr_expect_eq(s->host_live_bytes, 16 * TB_MIB);
    cr_expect_eq(s->host_live_count, 1);
    cr_expect_eq(s->host_alloc_count, 2);
    done(&b);
}

Test(replay, a_freed_reservation_is_no_longer_address_space)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    tb_event(&b, TB_RESERVE, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(ALIGN),
             (uint64_t[]){0x7000000000, 64 * TB_MIB, 0});
    tb_event(&b, TB_RESERVE, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(ALIGN),
             (uint64_t[]){0x7100000000, 32 * TB_MIB, 0});
    tb_event(&b, TB_VA_FREE, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE),
             (uint64_t[]){0x7000000000, 64 * TB_MIB});
    tb_finish(&b, 0);
    replay(&b);
    const struct cmt_replay_device *d = cmt_replay_device(rp, 0);
    cr_assert_not_null(d);
    cr_expect_eq(d->kind_bytes[CMT_KIND_VA], 32 * TB_MIB);
    cr_expect_eq(d->kind_count[CMT_KIND_VA], 1);
    cr_expect_eq(d->live_bytes, 0, "address space is no device memory");
    struct cmt_fragmentation f;
    cr_assert_eq(cmt_replay_fragmentation(rp, 0, &f), 0);
    cr_expect_eq(f.reserved_va_bytes, 32 * TB_MIB);
    done(&b);
}

/* cuIpcOpenMemHandle maps another process's allocation: a live object of kind ipc that costs
 * this process nothing, until cuIpcCloseMemHandle. */
Test(replay, an_opened_ipc_handle_is_held_until_closed)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    tb_alloc(&b, 0x1000, 4 * TB_MIB, 0);
    tb_event(&b, TB_IPC_OPEN, 0, 0, 0, CMT_F(PTR) | CMT_F(FLAGS), (uint64_t[]){0x7e0000000000, 1});
    tb_finish(&b, 0);
    replay(&b);
    const struct cmt_replay_device *d = cmt_replay_device(rp, 0);
    cr_expect_eq(d->live_bytes, 4 * TB_MIB, "the open adds no bytes");
    cr_expect_eq(d->kind_count[CMT_KIND_IPC], 1);
    done(&b);

    tb_begin(&b, TB_GIB, TB_GIB);
    tb_event(&b, TB_IPC_OPEN, 0, 0, 0, CMT_F(PTR) | CMT_F(FLAGS), (uint64_t[]){0x7e0000000000, 1});
    tb_event(&b, TB_IPC_CLOSE, 0, 0, 0, CMT_F(PTR), (uint64_t[]){0x7e0000000000});
    tb_finish(&b, 0);
    replay(&b);
    d = cmt_replay_device(rp, 0);
    cr_expect_eq(d->kind_count[CMT_KIND_IPC], 0, "the close ends it");
    cr_expect_eq(cmt_replay_totals(rp)->unknown_frees, 0);
    done(&b);
}

/* Device 0's pool 0x77000 keeps up to 64 MiB at a sync; 8 MiB allocated on stream 1 (from
 * the device's current pool, or from 0x77000 by name) and freed, then `then` (a TB_ id, 0 for
 * none) on the pool, then a sync. @return the bytes pools keep. */
static uint64_t pool_kept(enum tb_api then, int by_name)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    tb_event(&b, TB_POOL_CREATE, 0, 0, 0, CMT_F(POOL), (uint64_t[]){0x77000});
    tb_event(&b, TB_POOL_ATTR, 0, 0, 0, CMT_F(SIZE) | CMT_F(POOL) | CMT_F(FLAGS),
             (uint64_t[]){64 * TB_MIB, 0x77000, 4}); /* RELEASE_THRESHOLD */
    if (then == TB_POOL_SET)
        tb_event(&b, TB_POOL_SET, 0, 0, 0, CMT_F(POOL), (uint64_t[]){0x77000});
    if (by_name)
        tb_event(&b, TB_ALLOC_ASYNC, 0, 0, 0,
                 CMT_F(PTR) | CMT_F(SIZE) | CMT_F(STREAM) | CMT_F(POOL),
                 (uint64_t[]){0x5000, 8 * TB_MIB, 1, 0x77000});
    else
        tb_event(&b, TB_ALLOC_ASYNC, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(STREAM),
                 (uint64_t[]){0x5000, 8 * TB_MIB, 1});
    tb_event(&b, TB_FREE_ASYNC, 0, 0, 0, CMT_F(PTR) | CMT_F(STREAM), (uint64_t[]){0x5000, 1});
    if (then == TB_POOL_DESTROY)
        tb_event(&b, TB_POOL_DESTROY, 0, 0, 0, CMT_F(POOL), (uint64_t[]){0x77000});
    tb_event(&b, TB_SYNC, 0, 0, 0, CMT_F(STREAM), (uint64_t[]){1});
    return pool_bytes_kept(&b);
}

Test(replay, a_destroyed_pool_keeps_nothing)
{
    cr_expect_eq(pool_kept(0, 1), 8 * TB_MIB, "its threshold keeps the freed block");
    cr_expect_eq(pool_kept(TB_POOL_DESTROY, 1), 0, "destroyed: its memory is released");
}

Test(replay, allocations_come_from_the_pool_set_as_current)
{
    cr_expect_eq(pool_kept(0, 0), 0, "the default pool has no threshold: trimmed at the sync");
    cr_expect_eq(pool_kept(TB_POOL_SET, 0), 8 * TB_MIB, "the pool set keeps it: its threshold");
}

/* cuMemRetainAllocationHandle takes a reference: the memory lives until every reference is
 * released. */
Test(replay, a_retained_handle_needs_one_more_release)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    tb_event(&b, TB_CREATE, 0, 0, 0, CMT_F(HANDLE) | CMT_F(SIZE), (uint64_t[]){4 * TB_MIB, 0x77});
    tb_event(&b, TB_VMM_RETAIN, 0, 0, 0, CMT_F(PTR) | CMT_F(HANDLE),
             (uint64_t[]){0x7000000000, 0x77});
    tb_event(&b, TB_RELEASE, 0, 0, 0, CMT_F(HANDLE), (uint64_t[]){0x77});
    tb_finish(&b, 0);
    replay(&b);
    cr_expect_eq(cmt_replay_device(rp, 0)->live_bytes, 4 * TB_MIB, "one reference left");
    done(&b);

    tb_begin(&b, TB_GIB, TB_GIB);
    tb_event(&b, TB_CREATE, 0, 0, 0, CMT_F(HANDLE) | CMT_F(SIZE), (uint64_t[]){4 * TB_MIB, 0x77});
    tb_event(&b, TB_VMM_RETAIN, 0, 0, 0, CMT_F(PTR) | CMT_F(HANDLE),
             (uint64_t[]){0x7000000000, 0x77});
    tb_event(&b, TB_RELEASE, 0, 0, 0, CMT_F(HANDLE), (uint64_t[]){0x77});
    tb_event(&b, TB_RELEASE, 0, 0, 0, CMT_F(HANDLE), (uint64_t[]){0x77});
    tb_finish(&b, 0);
    replay(&b);
    cr_expect_eq(cmt_replay_device(rp, 0)->live_bytes, 0, "both references released");
    cr_expect_eq(cmt_replay_totals(rp)->unknown_frees, 0);
    done(&b);
}

/* cuMemImportFromShareableHandle: another process's memory, a handle of kind vmm with no bytes
 * here, until released. */
Test(replay, an_imported_handle_is_held_without_bytes_until_released)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    tb_event(&b, TB_VMM_IMPORT, 0, 0, 0, CMT_F(HANDLE) | CMT_F(FLAGS), (uint64_t[]){0x99, 1});
    tb_finish(&b, 0);
    replay(&b);
    const struct cmt_replay_device *d = cmt_replay_device(rp, 0);
    cr_expect_eq(d->kind_count[CMT_KIND_VMM], 1);
    cr_expect_eq(d->live_bytes, 0);
    done(&b);

    tb_begin(&b, TB_GIB, TB_GIB);
    tb_event(&b, TB_VMM_IMPORT, 0, 0, 0, CMT_F(HANDLE) | CMT_F(FLAGS), (uint64_t[]){0x99, 1});
    tb_event(&b, TB_RELEASE, 0, 0, 0, CMT_F(HANDLE), (uint64_t[]){0x99});
    tb_finish(&b, 0);
    replay(&b);
    cr_expect_eq(cmt_replay_device(rp, 0)->kind_count[CMT_KIND_VMM], 0);
    cr_expect_eq(cmt_replay_totals(rp)->unknown_frees, 0);
    done(&b);
}

/* cuCtxDestroy synchronises every device: pools trim as at a sync (on device 1 here, the
 * destroyed context's, which a plain sync on device 1 would not do for device 0). */
Test(replay, a_context_destroy_trims_the_pools_of_every_device)
{
    for (int destroy = 0; destroy < 2; destroy++) {
        struct tb b;
        tb_begin(&b, TB_GIB, TB_GIB);
        tb_event(&b, TB_ALLOC_ASYNC, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(STREAM),
                 (uint64_t[]){0x5000, 8 * TB_MIB, 1});
        tb_event(&b, TB_FREE_ASYNC, 0, 0, 0, CMT_F(PTR) | CMT_F(STREAM), (uint64_t[]){0x5000, 1});
        if (destroy)
            tb_event(&b, TB_CTX_DESTROY, 0, 1, 0, CMT_F(CTX), (uint64_t[]){0xc0});
        else
            tb_event(&b, TB_SYNC, 0, 1, 0, CMT_F(STREAM), (uint64_t[]){2});
        tb_finish(&b, 0);
        replay(&b);
        uint64_t kept = cmt_replay_device(rp, 0)->kind_bytes[CMT_KIND_POOL];
        cr_expect_eq(kept, destroy ? 0 : 8 * TB_MIB, "%s: %llu kept",
                     destroy ? "destroyed" : "synced elsewhere", (unsigned long long)kept);
        done(&b);
    }
}

Test(replay, call_sites_at_the_peak_are_exact)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    uint32_t s1 = tb_stack(&b, "weights", 2), s2 = tb_stack(&b, "activations", 2);
    tb_alloc(&b, 0x1000000, 100 * TB_MIB, s1);
    tb_alloc(&b, 0x9000000, 300 * TB_MIB, s2); /* peak: 400 MiB */
    tb_free(&b, 0x9000000);
    tb_alloc(&b, 0x9000000, 50 * TB_MIB, s1);
    tb_finish(&b, 1);
    replay(&b);
    uint64_t at_peak[2] = {0, 0};
    for (uint32_t i = 1; i < cmt_replay_site_count(rp); i++) {
        const struct cmt_replay_site *s = cmt_replay_site(rp, i);
        at_peak[s->stack == s2] = s->at_peak_bytes;
    }
    cr_expect_eq(at_peak[0], 100 * TB_MIB);
    cr_expect_eq(at_peak[1], 300 * TB_MIB);
    cr_expect_eq(cmt_replay_totals(rp)->peak_live_bytes, 400 * TB_MIB);
    done(&b);
}

Test(replay, holes_between_allocations)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    tb_alloc(&b, 0x10000000, 2 * TB_MIB, 0);
    tb_alloc(&b, 0x10000000 + 4 * TB_MIB, 2 * TB_MIB, 0);  /* 2 MiB hole */
    tb_alloc(&b, 0x10000000 + 12 * TB_MIB, 1 * TB_MIB, 0); /* 6 MiB hole, 1 MiB waste */
    tb_finish(&b, 1);
    replay(&b);
    struct cmt_fragmentation f;
    cr_assert_eq(cmt_replay_fragmentation(rp, 0, &f), 0);
    cr_expect_eq(f.hole_bytes, 8 * TB_MIB);
    cr_expect_eq(f.largest_hole, 6 * TB_MIB);
    cr_expect_float_eq(f.hole_fragmentation, 0.25, 1e-9);
    cr_expect_eq(f.waste_bytes, 1 * TB_MIB);
    done(&b);
}

/* More than 32 allocations: the radix sort, over addresses that differ in several bytes,
 * allocated out of address order. Allocation k of 64 (1 MiB) sits at k x 3 MiB, so every hole
 * is 2 MiB. */
Test(replay, holes_between_many_allocations_out_of_order)
{
    struct tb b;
    tb_begin(&b, 4 * TB_GIB, 4 * TB_GIB);
    for (uint64_t i = 0; i < 64; i++) {
        uint64_t k = (i * 37) % 64; /* 37 is prime to 64: every k once */
        tb_alloc(&b, 0x7f0000000000 + k * 3 * TB_MIB, 1 * TB_MIB, 0);
    }
    tb_finish(&b, 1);
    replay(&b);
    struct cmt_fragmentation f;
    cr_assert_eq(cmt_replay_fragmentation(rp, 0, &f), 0);
    cr_expect_eq(f.hole_bytes, 63 * 2 * TB_MIB);
    cr_expect_eq(f.largest_hole, 2 * TB_MIB);
    done(&b);
}

Test(replay, damaged_trace_keeps_what_came_before)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    tb_alloc(&b, 0x1000, 4096, 0);
    cmt_writer_flush(b.w);
    size_t first = b.buf.len;
    tb_alloc(&b, 0x2000, 4096, 0);
    tb_finish(&b, 1);
    b.buf.data[first + 20] ^= 0xff; /* inside the second chunk's frame */
    cr_assert_eq(cmt_reader_open_memory(&reader, b.buf.data, b.buf.len), 0);
    cr_assert_eq(cmt_replay_create(&rp, reader), 0);
    int rc = cmt_replay_run(rp, NULL, 0);
    cr_expect(rc == CMT_ECORRUPT || rc == CMT_ETRUNCATED);
    cr_expect_eq(cmt_replay_totals(rp)->live_bytes, 4096);
    cr_expect_eq(cmt_reader_damage_offset(reader), first);
    done(&b);
}

/* An observer that counts what it is shown and asks for every step once it saw a failure. */
struct counting {
    unsigned wants_after;
    int steps, events, records, ooms, finished;
    uint32_t objects[8];
};

static unsigned count_step(struct cmt_observer *self, const cmt_replay *r,
                           const struct cmt_replay_step *st)
{
    (void)r;
    struct counting *c = self->ctx;
    c->steps++;
    if (st->rec.type == CMT_REC_EVENT)
        c->events++;
    else
        c->records++;
    if (st->oom)
        c->ooms++;
    if (st->is_alloc && !st->failed && c->events <= 8)
        c->objects[c->events - 1] = st->object;
    return c->wants_after;
}

static int count_finish(struct cmt_observer *self, const cmt_replay *r)
{
    (void)r;
    ((struct counting *)self->ctx)->finished++;
    return 0;
}

Test(replay, observers_see_the_steps_they_ask_for)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    tb_alloc(&b, 0x1000, 100, 0);
    tb_alloc(&b, 0x2000, 100, 0);
    tb_alloc_fail(&b, 2 * TB_GIB, 0);
    tb_free(&b, 0x1000);
    tb_alloc(&b, 0x3000, 100, 0); /* takes the object id 0x1000 gave back */
    tb_finish(&b, 1);
    cr_assert_eq(cmt_reader_open_memory(&reader, b.buf.data, b.buf.len), 0);
    cr_assert_eq(cmt_replay_create(&rp, reader), 0);
    struct counting every = {.wants_after = CMT_OBSERVE_EVENT};
    struct counting oom_then_all = {.wants_after = CMT_OBSERVE_ALL};
    struct cmt_observer obs[] = {
        {.wants = CMT_OBSERVE_EVENT, .step = count_step, .finish = count_finish, .ctx = &every},
        {.wants = CMT_OBSERVE_OOM,
         .step = count_step,
         .finish = count_finish,
         .ctx = &oom_then_all},
    };
    cr_assert_eq(cmt_replay_run(rp, obs, 2), 0);
    cr_expect_eq(every.events, 5);
    cr_expect_eq(every.records, 0);
    cr_expect_eq(oom_then_all.ooms, 1);
    cr_expect_eq(oom_then_all.events, 3);  /* the failure, the free, the last allocation */
    cr_expect_gt(oom_then_all.records, 0); /* END and symbols after it */
    cr_expect_eq(every.finished, 1);
    cr_expect_eq(oom_then_all.finished, 1);
    cr_expect_eq(every.objects[0], 1);
    cr_expect_eq(every.objects[1], 2);
    cr_expect_eq(every.objects[4], 1);
    done(&b);
}

Test(replay, an_observer_of_samples_sees_only_the_events_that_take_one)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    tb_alloc(&b, 0x1000, 100, 0);
    uint64_t info[] = {TB_GIB - 100, TB_GIB};
    tb_event(&b, TB_INFO, 0, 0, 0, CMT_F(FREE) | CMT_F(TOTAL), info);
    tb_free(&b, 0x1000);
    tb_event(&b, TB_INFO, 0, 0, 0, CMT_F(FREE) | CMT_F(TOTAL), info);
    tb_finish(&b, 1);
    cr_assert_eq(cmt_reader_open_memory(&reader, b.buf.data, b.buf.len), 0);
    cr_assert_eq(cmt_replay_create(&rp, reader), 0);
    struct counting samples = {.wants_after = CMT_OBSERVE_SAMPLE};
    struct cmt_observer obs[] = {
        {.wants = CMT_OBSERVE_SAMPLE, .step = count_step, .finish = count_finish, .ctx = &samples},
    };
    cr_assert_eq(cmt_replay_run(rp, obs, 1), 0);
    cr_expect_eq(samples.events, 2);
    cr_expect_eq(samples.records, 0);
    cr_expect_eq(cmt_replay_totals(rp)->last_seq, b.seq);
    const struct cmt_replay_device *d = cmt_replay_device(rp, 0);
    cr_assert_not_null(d);
    cr_expect_eq(d->samples, 4, "the DEVICE record, the baseline MEMINFO and the two calls");
    done(&b);
}

Test(replay, host_registration_is_pinned_host_memory_until_unregistered)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    tb_alloc(&b, 0x1000, 100, 0);
    tb_event(&b, TB_HOST_REGISTER, 0, -1, 0, CMT_F(PTR) | CMT_F(SIZE),
             (uint64_t[]){0x7f0000000000, 64 * TB_MIB});
    tb_event(&b, TB_HOST_REGISTER, 0, -1, 0, CMT_F(PTR) | CMT_F(SIZE),
             (uint64_t[]){0x7f1000000000, 8 * TB_MIB});
    tb_event(&b, TB_HOST_UNREGISTER, 0, -1, 0, CMT_F(PTR), (uint64_t[]){0x7f1000000000});
    tb_finish(&b, 1);
    replay(&b);
    const struct cmt_replay_totals *t = cmt_replay_totals(rp);
    cr_expect_eq(t->host_bytes, 64 * TB_MIB);
    cr_expect_eq(t->host_peak_bytes, 72 * TB_MIB);
    cr_expect_eq(cmt_replay_site(rp, 0)->host_free_count, 1);
    cr_expect_eq(cmt_replay_site(rp, 0)->free_count, 0);
    cr_expect_eq(t->live_bytes, 100, "registered host memory is not device memory");
    cr_expect_eq(t->unknown_frees, 0);
    const struct cmt_replay_device *d = cmt_replay_device(rp, -1);
    cr_assert_not_null(d);
    cr_expect_eq(d->kind_bytes[CMT_KIND_HOST], 64 * TB_MIB);
    cr_expect_eq(d->kind_count[CMT_KIND_HOST], 1);
    done(&b);
}

/* A CUDA array is device memory behind a handle (ptr): live until destroyed, in no hole. */
Test(replay, arrays_are_device_memory_until_destroyed)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    tb_alloc(&b, 0x7f0000000000, 100, 0);
    tb_event(&b, TB_ARRAY_CREATE, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE),
             (uint64_t[]){0x55aa00001000, 16 * TB_MIB});
    tb_event(&b, TB_ARRAY_CREATE, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE),
             (uint64_t[]){0x55aa00002000, 4 * TB_MIB});
    tb_event(&b, TB_ARRAY_CREATE, 2 /* CUDA_ERROR_OUT_OF_MEMORY */, 0, 0, CMT_F(SIZE),
             (uint64_t[]){64 * TB_GIB});
    tb_event(&b, TB_ARRAY_DESTROY, 0, 0, 0, CMT_F(PTR), (uint64_t[]){0x55aa00002000});
    tb_finish(&b, 1);
    replay(&b);
    const struct cmt_replay_totals *t = cmt_replay_totals(rp);
    cr_expect_eq(t->live_bytes, 100 + 16 * TB_MIB, "a live array counts as device memory");
    cr_expect_eq(t->oom_failures, 1);
    cr_expect_eq(t->unknown_frees, 0);
    const struct cmt_replay_device *d = cmt_replay_device(rp, 0);
    cr_assert_not_null(d);
    cr_expect_eq(d->kind_bytes[CMT_KIND_ARRAY], 16 * TB_MIB);
    cr_expect_eq(d->kind_count[CMT_KIND_ARRAY], 1);
    cr_expect_eq(d->peak_live_bytes, 100 + 20 * TB_MIB);
    cr_expect_eq(d->waste_bytes, 2 * TB_MIB - 100, "arrays are not rounded as allocations");
    cr_expect(!CMT_KIND_HAS(CMT_KIND_ARRAY, HOLE), "a handle is no address beside the others");
    done(&b);
}

/* NCCL's NVLS buffer: physical memory bound into a multicast object, which is mapped. The
 * object holds no device bytes; the bound memory is counted once, under its own handle, and
 * held by the binding until the unbind. */
Test(replay, multicast_bound_memory_is_counted_once_and_held_until_unbound)
{
    struct tb b;
    const uint32_t map_fields = CMT_F(PTR) | CMT_F(SIZE) | CMT_F(OFFSET) | CMT_F(HANDLE);
    const uint32_t bind_fields = CMT_F(PTR) | CMT_F(SIZE) | CMT_F(HANDLE) | CMT_F(OFFSET);
    tb_begin(&b, TB_GIB, TB_GIB);
    tb_event(&b, TB_CREATE, 0, 0, 0, CMT_F(HANDLE) | CMT_F(SIZE), (uint64_t[]){64 * TB_MIB, 0x77});
    tb_event(&b, TB_MC_CREATE, 0, 0, 0, CMT_F(SIZE) | CMT_F(HANDLE) | CMT_F(COUNT),
             (uint64_t[]){64 * TB_MIB, 0x99, 1});
    tb_event(&b, TB_MC_BIND_MEM, 0, 0, 0, bind_fields, (uint64_t[]){0x77, 64 * TB_MIB, 0x99, 0});
    tb_event(&b, TB_RESERVE, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE),
             (uint64_t[]){0x7000000000, 64 * TB_MIB});
    tb_event(&b, TB_MAP, 0, 0, 0, map_fields, (uint64_t[]){0x7000000000, 64 * TB_MIB, 0x99, 0});
    tb_event(&b, TB_RELEASE, 0, 0, 0, CMT_F(HANDLE), (uint64_t[]){0x77});
    tb_finish(&b, 0);
    replay(&b);
    const struct cmt_replay_device *d = cmt_replay_device(rp, 0);
    cr_assert_not_null(d);
    cr_expect_eq(d->live_bytes, 64 * TB_MIB, "bound and mapped through the object: once");
    cr_expect_eq(cmt_replay_totals(rp)->live_bytes, 64 * TB_MIB);
    cr_expect_eq(d->kind_bytes[CMT_KIND_VMM], 64 * TB_MIB, "released, still bound");
    cr_expect_eq(d->kind_bytes[CMT_KIND_MULTICAST], 64 * TB_MIB, "the object's bindable size");
    cr_expect_eq(d->kind_count[CMT_KIND_MULTICAST], 1);
    cr_expect_eq(d->mapped_bytes, 64 * TB_MIB);
    cr_expect(!CMT_KIND_IS_DEVICE_MEMORY(CMT_KIND_MULTICAST));
    done(&b);

    tb_begin(&b, TB_GIB, TB_GIB);
    tb_event(&b, TB_CREATE, 0, 0, 0, CMT_F(HANDLE) | CMT_F(SIZE), (uint64_t[]){64 * TB_MIB, 0x77});
    tb_event(&b, TB_MC_CREATE, 0, 0, 0, CMT_F(SIZE) | CMT_F(HANDLE),
             (uint64_t[]){64 * TB_MIB, 0x99});
    tb_event(&b, TB_MC_BIND_MEM, 0, 0, 0, bind_fields, (uint64_t[]){0x77, 64 * TB_MIB, 0x99, 0});
    tb_event(&b, TB_MAP, 0, 0, 0, map_fields, (uint64_t[]){0x7000000000, 64 * TB_MIB, 0x99, 0});
    tb_event(&b, TB_RELEASE, 0, 0, 0, CMT_F(HANDLE), (uint64_t[]){0x77});
    tb_event(&b, TB_MC_UNBIND, 0, 1, 0, CMT_F(HANDLE) | CMT_F(OFFSET) | CMT_F(SIZE),
             (uint64_t[]){64 * TB_MIB, 0x99, 0}); /* another device's: nothing of device 0 */
    tb_event(&b, TB_MC_UNBIND, 0, 0, 0, CMT_F(HANDLE) | CMT_F(OFFSET) | CMT_F(SIZE),
             (uint64_t[]){64 * TB_MIB, 0x99, 0});
    tb_event(&b, TB_UNMAP, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE),
             (uint64_t[]){0x7000000000, 64 * TB_MIB});
    tb_event(&b, TB_RELEASE, 0, 0, 0, CMT_F(HANDLE), (uint64_t[]){0x99});
    tb_finish(&b, 1);
    replay(&b);
    d = cmt_replay_device(rp, 0);
    cr_expect_eq(d->live_bytes, 0, "unbound and released: freed");
    cr_expect_eq(d->peak_live_bytes, 64 * TB_MIB, "the peak counts the bound memory once");
    cr_expect_eq(d->kind_count[CMT_KIND_MULTICAST], 0);
    cr_expect_eq(d->kind_bytes[CMT_KIND_MULTICAST], 0);
    cr_expect_eq(d->kind_count[CMT_KIND_VMM], 0);
    cr_expect_eq(d->mapped_bytes, 0);
    cr_expect_eq(cmt_replay_totals(rp)->unknown_frees, 0);
    done(&b);
}

/* Bound by address: the handle mapped where it lies is held; the object's last release lets
 * go. */
Test(replay, multicast_bound_by_address_is_held_until_the_object_goes)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    tb_event(&b, TB_CREATE, 0, 0, 0, CMT_F(HANDLE) | CMT_F(SIZE), (uint64_t[]){32 * TB_MIB, 0x78});
    tb_event(&b, TB_MAP, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(OFFSET) | CMT_F(HANDLE),
             (uint64_t[]){0x7100000000, 32 * TB_MIB, 0x78, 0});
    tb_event(&b, TB_MC_CREATE, 0, 0, 0, CMT_F(SIZE) | CMT_F(HANDLE),
             (uint64_t[]){32 * TB_MIB, 0x9a});
    /* the upper half of the mapping, at the object's start: the whole handle is held */
    tb_event(&b, TB_MC_BIND_ADDR, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(HANDLE) | CMT_F(OFFSET),
             (uint64_t[]){0x7100000000 + 16 * TB_MIB, 16 * TB_MIB, 0x9a, 0});
    tb_event(&b, TB_UNMAP, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE),
             (uint64_t[]){0x7100000000, 32 * TB_MIB});
    tb_event(&b, TB_RELEASE, 0, 0, 0, CMT_F(HANDLE), (uint64_t[]){0x78});
    tb_alloc(&b, 0x7f0000000000, 100, 0); /* a step to look at between */
    tb_event(&b, TB_RELEASE, 0, 0, 0, CMT_F(HANDLE), (uint64_t[]){0x9a});
    tb_finish(&b, 1);
    cr_assert_eq(cmt_reader_open_memory(&reader, b.buf.data, b.buf.len), 0);
    cr_assert_eq(cmt_replay_create(&rp, reader), 0);
    struct cmt_replay_step st;
    uint64_t live_before_last = 0, released = 0;
    while (cmt_replay_next(rp, &st) > 0) {
        if (st.rec.type != CMT_REC_EVENT)
            continue;
        if (st.api && !strcmp(st.api, "cuMemAlloc_v2"))
            live_before_last = cmt_replay_totals(rp)->live_bytes;
        released = st.released;
    }
    cr_expect_eq(live_before_last, 32 * TB_MIB + 100, "unmapped and released, still bound");
    cr_expect_eq(released, 32 * TB_MIB, "the object's release frees the bound memory");
    cr_expect_eq(cmt_replay_totals(rp)->live_bytes, 100);
    cr_expect_eq(cmt_replay_totals(rp)->unknown_frees, 0);
    done(&b);
}

/* A device reset frees the physical memory, the object and the bindings: nothing is left held,
 * and memory made after it is counted afresh. */
Test(replay, multicast_bindings_go_with_a_device_reset)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    tb_event(&b, TB_CREATE, 0, 0, 0, CMT_F(HANDLE) | CMT_F(SIZE), (uint64_t[]){16 * TB_MIB, 0x77});
    tb_event(&b, TB_MC_CREATE, 0, 0, 0, CMT_F(SIZE) | CMT_F(HANDLE),
             (uint64_t[]){16 * TB_MIB, 0x99});
    tb_event(&b, TB_MC_BIND_MEM, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(HANDLE) | CMT_F(OFFSET),
             (uint64_t[]){0x77, 16 * TB_MIB, 0x99, 0});
    tb_event(&b, TB_RESET, 0, 0, 0, 0, NULL);
    /* the same handle values again, new memory and a new object; a binding kept from before
     * would let the new memory go while it is still mapped */
    tb_event(&b, TB_CREATE, 0, 0, 0, CMT_F(HANDLE) | CMT_F(SIZE), (uint64_t[]){4 * TB_MIB, 0x77});
    tb_event(&b, TB_MAP, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(OFFSET) | CMT_F(HANDLE),
             (uint64_t[]){0x7000000000, 4 * TB_MIB, 0x77, 0});
    tb_event(&b, TB_MC_CREATE, 0, 0, 0, CMT_F(SIZE) | CMT_F(HANDLE),
             (uint64_t[]){16 * TB_MIB, 0x99});
    tb_event(&b, TB_RELEASE, 0, 0, 0, CMT_F(HANDLE), (uint64_t[]){0x77});
    tb_event(&b, TB_RELEASE, 0, 0, 0, CMT_F(HANDLE), (uint64_t[]){0x99});
    tb_finish(&b, 1);
    replay(&b);
    const struct cmt_replay_device *d = cmt_replay_device(rp, 0);
    cr_expect_eq(d->live_bytes, 4 * TB_MIB, "released, still mapped: held");
    cr_expect_eq(d->kind_count[CMT_KIND_MULTICAST], 0);
    cr_expect_eq(d->kind_count[CMT_KIND_VMM], 1);
    done(&b);
}

/* Graph memory: an allocation node is an address until its graph is launched; the launch makes
 * it live (kind graph, at the node's call site) from the device's graph pool, a free gives it
 * back to that pool, which a synchronisation leaves alone and a trim empties. An allocation
 * freed in its own graph is never live: the pool retains its bytes. */
#define GRAPH_G 0x6a00
#define GRAPH_H 0x6a80
#define EXEC_X 0x6b00
#define EXEC_Y 0x6b80
#define NODE_A 0x7f0000200000
#define NODE_B 0x7f0000400000
Test(replay, graph_memory_is_live_from_launch_to_free_and_then_in_the_graph_pool)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    uint32_t s = tb_stack(&b, "build_graph", 2);
    uint32_t ph = CMT_F(PTR) | CMT_F(SIZE) | CMT_F(HANDLE);
    tb_event(&b, TB_GRAPH_ALLOC_NODE, 0, 0, s, ph, (uint64_t[]){NODE_A, 3 * TB_MIB, GRAPH_G});
    tb_event(&b, TB_GRAPH_ALLOC_NODE, 0, 0, 0, ph, (uint64_t[]){NODE_B, 1 * TB_MIB, GRAPH_G});
    tb_event(&b, TB_GRAPH_FREE_NODE, 0, 0, 0, CMT_F(PTR) | CMT_F(HANDLE),
             (uint64_t[]){NODE_B, GRAPH_G});
    tb_event(&b, TB_GRAPH_INSTANTIATE, 0, 0, 0, CMT_F(PTR) | CMT_F(HANDLE),
             (uint64_t[]){EXEC_X, GRAPH_G});
    tb_finish(&b, 0);
    replay(&b);
    cr_expect_eq(cmt_replay_totals(rp)->live_bytes, 0, "a node is an address, no memory");
    done(&b);

    /* the same trace, launched */
    tb_begin(&b, TB_GIB, TB_GIB);
    s = tb_stack(&b, "build_graph", 2);
    tb_event(&b, TB_GRAPH_ALLOC_NODE, 0, 0, s, ph, (uint64_t[]){NODE_A, 3 * TB_MIB, GRAPH_G});
    tb_event(&b, TB_GRAPH_ALLOC_NODE, 0, 0, 0, ph, (uint64_t[]){NODE_B, 1 * TB_MIB, GRAPH_G});
    tb_event(&b, TB_GRAPH_FREE_NODE, 0, 0, 0, CMT_F(PTR) | CMT_F(HANDLE),
             (uint64_t[]){NODE_B, GRAPH_G});
    tb_event(&b, TB_GRAPH_INSTANTIATE, 0, 0, 0, CMT_F(PTR) | CMT_F(HANDLE),
             (uint64_t[]){EXEC_X, GRAPH_G});
    uint32_t launch = CMT_F(PTR) | CMT_F(STREAM);
    tb_event(&b, TB_GRAPH_LAUNCH, 0, 0, 0, launch, (uint64_t[]){EXEC_X, 0});
    /* live: A (3 MiB); retained: B (1 MiB) */
    tb_event(&b, TB_FREE_ASYNC, 0, 0, 0, CMT_F(PTR) | CMT_F(STREAM), (uint64_t[]){NODE_A, 0});
    /* retained: 4 MiB; the relaunch takes A and B from it */
    tb_event(&b, TB_GRAPH_LAUNCH, 0, 0, 0, launch, (uint64_t[]){EXEC_X, 0});
    tb_event(&b, TB_GRAPH_LAUNCH, 2 /* CUDA_ERROR_OUT_OF_MEMORY */, 0, 0, launch,
             (uint64_t[]){EXEC_X, 0});
    tb_event(&b, TB_SYNC, 0, 0, 0, CMT_F(STREAM), (uint64_t[]){0});
    tb_finish(&b, 1);
    replay(&b);
    const struct cmt_replay_totals *t = cmt_replay_totals(rp);
    const struct cmt_replay_device *d = cmt_replay_device(rp, 0);
    cr_assert_not_null(d);
    cr_expect_eq(t->live_bytes, 3 * TB_MIB, "A is live again; B, freed in its graph, never");
    cr_expect_eq(d->kind_bytes[CMT_KIND_GRAPH], 3 * TB_MIB);
    cr_expect_eq(d->kind_count[CMT_KIND_GRAPH], 1);
    cr_expect_eq(d->peak_live_bytes, 3 * TB_MIB);
    cr_expect_eq(d->kind_bytes[CMT_KIND_POOL], 1 * TB_MIB,
                 "the graph pool keeps B's bytes across a synchronisation");
    cr_expect_eq(t->unknown_frees, 0);
    uint32_t site = 0;
    for (uint32_t i = 1; i < cmt_replay_site_count(rp); i++)
        if (cmt_replay_site(rp, i)->stack == s)
            site = i;
    cr_assert_neq(site, 0, "the launched memory has its allocation node's call site");
    cr_expect_eq(cmt_replay_site(rp, site)->alloc_count, 2);
    cr_expect_eq(cmt_replay_site(rp, site)->live_bytes, 3 * TB_MIB);
    cr_expect(CMT_KIND_IS_DEVICE_MEMORY(CMT_KIND_GRAPH));
    done(&b);
}

/* A free node of another graph frees at that graph's launch; a trim empties the graph pool;
 * a destroyed exec launches nothing. */
Test(replay, graph_free_nodes_trim_and_destroyed_execs)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    uint32_t ph = CMT_F(PTR) | CMT_F(SIZE) | CMT_F(HANDLE), launch = CMT_F(PTR) | CMT_F(STREAM);
    tb_event(&b, TB_GRAPH_ALLOC_NODE, 0, 0, 0, ph, (uint64_t[]){NODE_A, 8 * TB_MIB, GRAPH_G});
    tb_event(&b, TB_GRAPH_INSTANTIATE, 0, 0, 0, CMT_F(PTR) | CMT_F(HANDLE),
             (uint64_t[]){EXEC_X, GRAPH_G});
    tb_event(&b, TB_GRAPH_DESTROY, 0, 0, 0, CMT_F(HANDLE), (uint64_t[]){GRAPH_G});
    tb_event(&b, TB_GRAPH_FREE_NODE, 0, 0, 0, CMT_F(PTR) | CMT_F(HANDLE),
             (uint64_t[]){NODE_A, GRAPH_H});
    tb_event(&b, TB_GRAPH_INSTANTIATE, 0, 0, 0, CMT_F(PTR) | CMT_F(HANDLE),
             (uint64_t[]){EXEC_Y, GRAPH_H});
    tb_event(&b, TB_GRAPH_LAUNCH, 0, 0, 0, launch,
             (uint64_t[]){EXEC_X, 0}); /* exec outlives graph */
    tb_event(&b, TB_GRAPH_LAUNCH, 0, 0, 0, launch, (uint64_t[]){EXEC_Y, 0}); /* frees A */
    tb_event(&b, TB_GRAPH_MEM_TRIM, 0, 0, 0, 0, NULL);
    tb_event(&b, TB_GRAPH_EXEC_DESTROY, 0, 0, 0, CMT_F(PTR), (uint64_t[]){EXEC_X});
    tb_event(&b, TB_GRAPH_LAUNCH, 0, 0, 0, launch, (uint64_t[]){EXEC_X, 0}); /* nothing */
    tb_finish(&b, 1);
    replay(&b);
    const struct cmt_replay_device *d = cmt_replay_device(rp, 0);
    cr_assert_not_null(d);
    cr_expect_eq(d->peak_live_bytes, 8 * TB_MIB);
    cr_expect_eq(d->live_bytes, 0);
    cr_expect_eq(d->kind_bytes[CMT_KIND_POOL], 0, "a trim releases the graph pool");
    cr_expect_eq(cmt_replay_totals(rp)->pool_retained_bytes, 0);
    done(&b);
}

/* Stream capture: a cuMemAllocAsync / cuMemFreeAsync whose event names the capture's graph
 * (handle) is a node of that graph, no memory; the launches of its exec make it live. A
 * stream-ordered allocation without a handle stays an ordinary one. */
#define STREAM_S 0x5500
Test(replay, captured_stream_ordered_calls_are_graph_nodes)
{
    struct tb b;
    tb_begin(&b, TB_GIB, TB_GIB);
    uint32_t as = CMT_F(PTR) | CMT_F(SIZE) | CMT_F(STREAM), fs = CMT_F(PTR) | CMT_F(STREAM);
    uint32_t cap = CMT_F(HANDLE), launch = CMT_F(PTR) | CMT_F(STREAM);
    tb_event(&b, TB_ALLOC_ASYNC, 0, 0, 0, as, (uint64_t[]){0x7f0000800000, TB_MIB, STREAM_S});
    tb_event(&b, TB_ALLOC_ASYNC, 0, 0, 0, as | cap,
             (uint64_t[]){NODE_A, 3 * TB_MIB, STREAM_S, GRAPH_G});
    tb_event(&b, TB_ALLOC_ASYNC, 0, 0, 0, as | cap,
             (uint64_t[]){NODE_B, 1 * TB_MIB, STREAM_S, GRAPH_G});
    tb_event(&b, TB_FREE_ASYNC, 0, 0, 0, fs | cap, (uint64_t[]){NODE_B, STREAM_S, GRAPH_G});
    tb_finish(&b, 0);
    replay(&b);
    const struct cmt_replay_device *d = cmt_replay_device(rp, 0);
    cr_assert_not_null(d);
    cr_expect_eq(d->live_bytes, TB_MIB, "captured: addresses, no memory");
    cr_expect_eq(d->kind_count[CMT_KIND_ASYNC], 1, "the uncaptured one");
    cr_expect_eq(cmt_replay_totals(rp)->unknown_frees, 0, "the captured free is a node");
    done(&b);

    tb_begin(&b, TB_GIB, TB_GIB);
    tb_event(&b, TB_ALLOC_ASYNC, 0, 0, 0, as | cap,
             (uint64_t[]){NODE_A, 3 * TB_MIB, STREAM_S, GRAPH_G});
    tb_event(&b, TB_ALLOC_ASYNC, 0, 0, 0, as | cap,
             (uint64_t[]){NODE_B, 1 * TB_MIB, STREAM_S, GRAPH_G});
    tb_event(&b, TB_FREE_ASYNC, 0, 0, 0, fs | cap, (uint64_t[]){NODE_B, STREAM_S, GRAPH_G});
    tb_event(&b, TB_GRAPH_INSTANTIATE, 0, 0, 0, CMT_F(PTR) | CMT_F(HANDLE),
             (uint64_t[]){EXEC_X, GRAPH_G});
    for (int i = 0; i < 3; i++) /* auto-free on launch: A is taken again each time */
        tb_event(&b, TB_GRAPH_LAUNCH, 0, 0, 0, launch, (uint64_t[]){EXEC_X, STREAM_S});
    tb_finish(&b, 0);
    replay(&b);
    d = cmt_replay_device(rp, 0);
    cr_assert_not_null(d);
    cr_expect_eq(d->live_bytes, 3 * TB_MIB, "A live; B freed in its own graph");
    cr_expect_eq(d->kind_count[CMT_KIND_GRAPH], 1);
    cr_expect_eq(d->kind_count[CMT_KIND_ASYNC], 0);
    cr_expect_eq(d->kind_bytes[CMT_KIND_POOL], 1 * TB_MIB, "the graph pool keeps B's bytes");
    cr_expect_eq(d->peak_live_bytes, 3 * TB_MIB);
    done(&b);
}

/* The timeline as an observer (the replay skips the events of its quiet windows) gives exactly
 * what it gives when shown every step: maxima, last values, hole sampling. A random trace on
 * two devices, with bursts inside buckets and bucket boundaries crossed both ways. */
Test(replay, timeline_quiet_windows_change_nothing)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 23 * TB_GIB);
    uint64_t live[64] = {0}, x = 0x9E3779B97F4A7C15u;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        unsigned slot = (unsigned)(x % 64);
        int32_t dev = slot < 48 ? 0 : 1;
        uint64_t ptr = 0x100000000ull * (uint64_t)(dev + 1) + slot * 0x1000000ull;
        if (live[slot]) {
            tb_event(&b, TB_FREE, 0, dev, 0, CMT_F(PTR), (uint64_t[]){ptr});
            live[slot] = 0;
        } else {
            live[slot] = 4096 + (x >> 40) % (8u << 20);
            tb_event(&b, TB_ALLOC, 0, dev, 0, CMT_F(PTR) | CMT_F(SIZE),
                     (uint64_t[]){ptr, live[slot]});
        }
        if (x % 97 == 0)
            b.t_ns += (x >> 20) % 5000000; /* a gap: later buckets */
    }
    tb_finish(&b, 1);
    struct cmt_timeline seen, shown;
    cr_assert_eq(cmt_reader_open_memory(&reader, b.buf.data, b.buf.len), 0);
    cr_assert_eq(cmt_replay_create(&rp, reader), 0);
    cr_assert_eq(cmt_timeline_init(&seen, 50), 0);
    struct cmt_observer o = cmt_timeline_observer(&seen);
    cr_assert_eq(cmt_replay_run(rp, &o, 1), 0);
    cmt_replay_destroy(rp);
    cmt_reader_rewind(reader);
    cr_assert_eq(cmt_replay_create(&rp, reader), 0);
    cr_assert_eq(cmt_timeline_init(&shown, 50), 0);
    struct cmt_replay_step st;
    while (cmt_replay_next(rp, &st) > 0)
        cmt_timeline_observe(&shown, rp, &st);
    cmt_replay_finish(rp);
    cmt_timeline_finish(&shown, rp);
    cr_assert_eq(seen.device_count, 2);
    cr_assert_eq(seen.device_count, shown.device_count);
    cr_assert_eq(seen.width, shown.width);
    for (uint32_t d = 0; d < seen.device_count; d++)
        for (uint32_t k = 0; k < seen.max_points; k++) {
            const struct cmt_timeline_point *p = &seen.devices[d].points[k];
            const struct cmt_timeline_point *q = &shown.devices[d].points[k];
            cr_assert_eq(p->used, q->used, "dev %u bucket %u", d, k);
            cr_assert_eq(p->live_bytes, q->live_bytes, "dev %u bucket %u", d, k);
            cr_assert_eq(p->t_ns, q->t_ns, "dev %u bucket %u", d, k);
            cr_assert_eq(p->last_live_bytes, q->last_live_bytes, "dev %u bucket %u", d, k);
            cr_assert_eq(p->last_t_ns, q->last_t_ns, "dev %u bucket %u", d, k);
            cr_assert_eq(p->hole_bytes, q->hole_bytes, "dev %u bucket %u", d, k);
        }
    cmt_timeline_free(&seen);
    cmt_timeline_free(&shown);
    done(&b);
}

/* Moments (struct cmt_observer's before_t): before() runs before the first event after each
 * time is applied, with the state of every event up to it; one event past several moments
 * calls it once for each; a moment past the last event is never called (the observer's at
 * finish). */
struct moments {
    uint64_t times[4], live[4];
    size_t next, count;
};

static void moment_before(struct cmt_observer *self, const cmt_replay *r)
{
    struct moments *m = self->ctx;
    m->live[m->next] = cmt_replay_totals(r)->live_bytes;
    m->next++;
    self->before_t = m->next < m->count ? m->times[m->next] : UINT64_MAX;
}

Test(replay, a_moment_sees_the_state_of_every_event_up_to_its_time)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t s = tb_stack(&b, "a", 1);
    tb_alloc(&b, 0x7f0000000000, TB_MIB, s);     /* t = 1000 */
    tb_alloc(&b, 0x7f0000200000, 2 * TB_MIB, s); /* t = 2000: past 1000 and 1500 */
    b.t_ns += 5000;
    tb_alloc(&b, 0x7f0000400000, 4 * TB_MIB, s); /* t = 8000 */
    tb_finish(&b, 1);
    cr_assert_eq(cmt_reader_open_memory(&reader, b.buf.data, b.buf.len), 0);
    cr_assert_eq(cmt_replay_create(&rp, reader), 0);
    struct moments m = {.times = {1000, 1500, 3000, 9000}, .count = 4};
    struct cmt_observer o = {.before_t = m.times[0], .before = moment_before, .ctx = &m};
    cr_assert_eq(cmt_replay_run(rp, &o, 1), 0);
    cr_assert_eq(m.next, 3, "the moment past the last event is left to finish");
    cr_assert_eq(m.live[0], TB_MIB, "1000: the first allocation, not the second");
    cr_assert_eq(m.live[1], TB_MIB, "1500: the event at 2000 passes both moments");
    cr_assert_eq(m.live[2], 3 * TB_MIB, "3000: before the event at 8000");
    done(&b);
}
