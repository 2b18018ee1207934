/* test_snapshot_trace.c — a snapshot converted to a trace and read back through the trace
 * reader: the records equal the snapshot's entries (order, actions, addresses, sizes, time),
 * the state before the window comes from the segments, frames print as "function file:line",
 * and the settings string is the recorded or a rebuilt one. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader.h"
#include "snapshot_test.h"
#include "snapshot_trace.h"

#define MIB (UINT64_C(1) << 20)
#define MAX_EVENTS 64

struct readback {
    struct cmt_membuf mb;
    cmt_reader *r;
    struct cmt_snapshot snap;
    struct cmt_snapshot_trace_stats st;
    struct cmt_alloc_event ev[MAX_EVENTS];
    size_t nev, nbefore; /* the first nbefore events carry the before flag */
    char conf[256];
    int devices, process, end;
};

static void convert(const char *name, struct readback *rb)
{
    memset(rb, 0, sizeof *rb);
    size_t len;
    unsigned char *b = fixture_bytes(name, &len);
    struct cmt_err err = {0};
    cr_assert_eq(cmt_snapshot_import(b, len, name, cmt_membuf_sink, &rb->mb, &err, &rb->st), 0,
                 "%s", err.text);
    cr_assert_eq(cmt_snapshot_parse(&rb->snap, b, len, &err), 0);
    free(b);
    cr_assert_eq(cmt_reader_open_memory(&rb->r, rb->mb.data, rb->mb.len), 0);
    struct cmt_record rec;
    int rc;
    while ((rc = cmt_reader_next(rb->r, &rec)) == 1) {
        switch (rec.type) {
        case CMT_REC_PROCESS:
            cr_expect_eq(rec.u.process.pid, 0);
            cr_expect_eq(rb->nev, 0, "PROCESS comes first");
            rb->process++;
            break;
        case CMT_REC_ALLOCATOR:
            cr_expect_eq(rec.u.alloc_info.id, CMT_SNAPSHOT_ALLOCATOR_ID);
            cr_expect_str_eq(rec.u.alloc_info.name, "pytorch-cuda-caching");
            snprintf(rb->conf, sizeof rb->conf, "%s", rec.u.alloc_info.conf);
            break;
        case CMT_REC_DEVICE: rb->devices++; break;
        case CMT_REC_END: rb->end++; break;
        case CMT_REC_ALLOC_EVENT:
            cr_assert(rb->nev < MAX_EVENTS);
            rb->ev[rb->nev] = rec.u.alloc_event;
            if (rec.u.alloc_event.v[CMT_AFIELD_FLAGS] & CMT_AFLAG_BEFORE) {
                cr_expect_eq(rb->nbefore, rb->nev, "before-events come first");
                rb->nbefore++;
            }
            rb->nev++;
            break;
        }
    }
    cr_assert_eq(rc, 0, "the trace reads to its end without damage");
    cr_expect_eq(rb->process, 1);
    cr_expect_eq(rb->end, 1);
    cr_expect_eq(rb->devices, (int)rb->snap.ndevices);
    cr_expect_eq(rb->st.events, rb->nev);
    cr_expect_eq(rb->st.before_blocks + rb->st.before_segments, rb->nbefore);
}

static void release(struct readback *rb)
{
    cmt_reader_close(rb->r);
    cmt_membuf_free(&rb->mb);
    cmt_snapshot_free(&rb->snap);
}

static int by_time(const void *a, const void *b)
{
    const struct cmt_snapshot_entry *x = *(const struct cmt_snapshot_entry *const *)a;
    const struct cmt_snapshot_entry *y = *(const struct cmt_snapshot_entry *const *)b;
    if (x->time_us != y->time_us)
        return x->time_us > y->time_us ? 1 : -1;
    return x < y ? -1 : 1;
}

/* Every event after the before-state is the snapshot entry at its place in `order`. */
static void expect_entries(const struct readback *rb, const struct cmt_snapshot_entry **order)
{
    cr_assert_eq(rb->nev - rb->nbefore, rb->snap.nentries);
    uint64_t t0 = order[0]->time_us, last = 0;
    for (size_t k = 0; k < rb->snap.nentries; k++) {
        const struct cmt_alloc_event *e = &rb->ev[rb->nbefore + k];
        const struct cmt_snapshot_entry *s = order[k];
        cr_expect_str_eq(cmt_alloc_action_name(e->action), cmt_snapshot_action_name(s->action),
                         "event %zu", k);
        cr_expect_eq(e->dev, s->dev, "event %zu", k);
        if (e->fields & CMT_AF(ADDR))
            cr_expect_eq(e->v[CMT_AFIELD_ADDR], s->addr, "event %zu", k);
        if (e->action == CMT_AA_ALLOC || e->action == CMT_AA_FREE_REQUESTED ||
            e->action == CMT_AA_FREE_COMPLETED)
            cr_expect_eq(e->v[CMT_AFIELD_REQUESTED], s->size, "event %zu", k);
        else if (e->fields & CMT_AF(SIZE))
            cr_expect_eq(e->v[CMT_AFIELD_SIZE], s->size, "event %zu", k);
        if (s->has_time)
            cr_expect_eq(e->t_ns, (s->time_us - t0) * 1000, "event %zu", k);
        cr_expect_geq(e->t_ns, last, "time never goes back");
        last = e->t_ns;
    }
}

static const struct cmt_alloc_event *find(const struct readback *rb, size_t from, uint32_t action,
                                          uint64_t addr)
{
    for (size_t k = from; k < rb->nev; k++)
        if (rb->ev[k].action == action && rb->ev[k].v[CMT_AFIELD_ADDR] == addr)
            return &rb->ev[k];
    cr_assert_fail("no %s at %#llx", cmt_alloc_action_name(action), (unsigned long long)addr);
    return NULL;
}

Test(snapshot_trace, full_form_round_trips_in_time_order)
{
    struct readback rb;
    convert("full.pickle", &rb);
    cr_expect_str_eq(rb.conf, "max_split_size_mb:128,roundup_power2_divisions:4");
    cr_expect_str_eq(cmt_reader_process(rb.r)->exe, "pytorch-snapshot:full.pickle");
    cr_expect_eq(cmt_reader_process(rb.r)->start_wall_ns, 1700000000000010ull * 1000);
    const struct cmt_snapshot_entry *order[32];
    for (size_t i = 0; i < rb.snap.nentries; i++)
        order[i] = &rb.snap.entries[i];
    qsort(order, rb.snap.nentries, sizeof *order, by_time); /* the two devices merged */
    expect_entries(&rb, order);
    /* before: segment C (freed in the window), segment A (never allocated in it); block
     * A+12MiB (freed in it), block A (active at dump time, from the segments) */
    uint64_t A = 0x7F0000000000, B = 0x7F0001400000, C = 0x7F0010000000;
    cr_assert_eq(rb.nbefore, 4);
    cr_expect_eq(rb.ev[0].action, CMT_AA_SEGMENT_ALLOC);
    cr_expect_eq(rb.ev[0].v[CMT_AFIELD_ADDR], C);
    cr_expect_eq(rb.ev[1].v[CMT_AFIELD_ADDR], A);
    cr_expect_eq(rb.ev[1].v[CMT_AFIELD_SIZE], 20 * MIB);
    cr_expect_eq(rb.ev[2].action, CMT_AA_ALLOC);
    cr_expect_eq(rb.ev[2].v[CMT_AFIELD_ADDR], A + 12 * MIB);
    cr_expect_eq(rb.ev[2].v[CMT_AFIELD_SIZE], 6 * MIB, "round_size of the free's 6 MiB");
    cr_expect_eq(rb.ev[3].v[CMT_AFIELD_ADDR], A);
    cr_expect_eq(rb.ev[3].v[CMT_AFIELD_SIZE], 8 * MIB);
    cr_expect_eq(rb.ev[3].v[CMT_AFIELD_SEGMENT], A);
    cr_expect_neq(rb.ev[3].stack, 0, "a dump-time block keeps its frames");
    cr_expect_eq(rb.ev[0].t_ns, 0);
    /* a live alloc gets its block's exact size; a freed small one round_size's 512 */
    const struct cmt_alloc_event *a = find(&rb, rb.nbefore, CMT_AA_ALLOC, A + 8 * MIB);
    cr_expect_eq(a->v[CMT_AFIELD_SIZE], 4 * MIB);
    cr_expect_eq(a->v[CMT_AFIELD_SEGMENT], A);
    const struct cmt_alloc_event *f = find(&rb, rb.nbefore, CMT_AA_FREE_REQUESTED, B);
    cr_expect_eq(f->v[CMT_AFIELD_SIZE], 512, "the free carries its alloc's size");
    const struct cmt_alloc_event *small = find(&rb, rb.nbefore, CMT_AA_ALLOC, B);
    cr_expect_eq(small->v[CMT_AFIELD_FLAGS], CMT_AFLAG_SMALL);
    /* the oom: 12 MiB allocated (8 before + 4; the small block's free was requested), 22 MiB
     * reserved (A and B; C was given back) */
    size_t k;
    for (k = rb.nbefore; k < rb.nev && rb.ev[k].action != CMT_AA_OOM; k++)
        ;
    cr_assert_lt(k, rb.nev);
    cr_expect_eq(rb.ev[k].dev, 0);
    cr_expect_eq(rb.ev[k].v[CMT_AFIELD_SIZE], 40 * MIB);
    cr_expect_eq(rb.ev[k].v[CMT_AFIELD_DEVICE_FREE], 10 * MIB);
    cr_expect_eq(rb.ev[k].v[CMT_AFIELD_ALLOCATED], 12 * MIB);
    cr_expect_eq(rb.ev[k].v[CMT_AFIELD_RESERVED], 22 * MIB);
    release(&rb);
}

Test(snapshot_trace, frames_print_as_function_file_line)
{
    struct readback rb;
    convert("full.pickle", &rb);
    const struct cmt_alloc_event *a = find(&rb, rb.nbefore, CMT_AA_ALLOC, 0x7F0000800000);
    const char *want[] = {"torch::unwind::unwind()", "forward model.py:42", "<module> train.py:7"};
    uint32_t node = a->stack;
    for (int k = 0; k < 3; k++) {
        char buf[128];
        cr_assert_neq(node, 0, "frame %d", k);
        cmt_reader_format_frame(rb.r, node, buf, sizeof buf);
        cr_expect_str_eq(buf, want[k]);
        struct cmt_stack_node n;
        cr_assert_eq(cmt_reader_stack_node(rb.r, node, &n), 0);
        node = n.parent;
    }
    cr_expect_eq(node, 0, "the outermost frame is a root");
    const struct cmt_alloc_event *b = find(&rb, rb.nbefore, CMT_AA_ALLOC, 0x7F1000000000);
    cr_expect_eq(b->stack, a->stack, "one frame list, one leaf node");
    cr_expect_leq(rb.st.stack_nodes, 8, "the trie shares common callers");
    release(&rb);
}

Test(snapshot_trace, entries_without_time_keep_device_order)
{
    struct readback rb;
    convert("no_time.pickle", &rb);
    const struct cmt_snapshot_entry *order[8];
    for (size_t i = 0; i < rb.snap.nentries; i++)
        order[i] = &rb.snap.entries[i];
    expect_entries(&rb, order);
    for (size_t k = rb.nbefore; k < rb.nev; k++)
        cr_expect_eq(rb.ev[k].t_ns, (k - rb.nbefore + 1) * 1000, "1 us apart");
    cr_expect_eq(cmt_reader_process(rb.r)->start_wall_ns, 0);
    cr_expect_str_eq(rb.conf, "", "no settings in the file");
    release(&rb);
}

Test(snapshot_trace, history_blocks_become_before_allocations)
{
    struct readback rb;
    convert("history.pickle", &rb);
    cr_assert_eq(rb.nbefore, 3, "the segment and its two active blocks");
    cr_expect_eq(rb.ev[0].action, CMT_AA_SEGMENT_ALLOC);
    cr_expect_eq(rb.ev[0].v[CMT_AFIELD_SIZE], 42 * MIB);
    cr_expect_eq(rb.ev[1].v[CMT_AFIELD_REQUESTED], 20 * MIB - 1000);
    cr_expect_eq(rb.ev[2].v[CMT_AFIELD_ADDR], 0x7E0000000000 + 20 * MIB);
    char buf[128];
    cmt_reader_format_frame(rb.r, rb.ev[2].stack, buf, sizeof buf);
    cr_expect_str_eq(buf, "init_weights model.py:12");
    cr_expect_eq(rb.ev[3].action, CMT_AA_SNAPSHOT);
    release(&rb);
}

Test(snapshot_trace, expandable_segments_map_what_predates_the_window)
{
    struct readback rb;
    convert("expandable.pickle", &rb);
    uint64_t E = 0x7D0000000000;
    cr_expect_str_eq(rb.conf, "expandable_segments:True");
    /* 20 MiB at E+40MiB (unmapped in the window, mapped before it), then the dump-time
     * segment's 40 MiB less the 20 MiB mapped in the window */
    cr_assert_eq(rb.nbefore, 3, "two mappings and the block at E");
    cr_expect_eq(rb.ev[0].action, CMT_AA_SEGMENT_MAP);
    cr_expect_eq(rb.ev[0].v[CMT_AFIELD_ADDR], E + 40 * MIB);
    cr_expect_eq(rb.ev[0].v[CMT_AFIELD_FLAGS], CMT_AFLAG_BEFORE | CMT_AFLAG_EXPANDABLE);
    cr_expect_eq(rb.ev[1].v[CMT_AFIELD_ADDR], E);
    cr_expect_eq(rb.ev[1].v[CMT_AFIELD_SIZE], 20 * MIB);
    cr_expect_eq(rb.ev[2].v[CMT_AFIELD_FLAGS], CMT_AFLAG_BEFORE | CMT_AFLAG_EXPANDABLE);
    const struct cmt_alloc_event *map = &rb.ev[rb.nbefore];
    cr_expect_eq(map->v[CMT_AFIELD_FLAGS], CMT_AFLAG_EXPANDABLE);
    release(&rb);
}

Test(snapshot_trace, settings_without_a_string_are_rebuilt)
{
    struct readback rb;
    convert("rebuilt_settings.pickle", &rb);
    cr_expect_str_eq(rb.conf, "max_split_size_mb:256,expandable_segments:True");
    cr_expect_eq(rb.nev, 0);
    release(&rb);
}

Test(snapshot_trace, the_end_state_is_pytorchs_accounting)
{
    static const char *const names[] = {"full.pickle", "history.pickle", "bare_list.pickle",
                                        "no_time.pickle", "expandable.pickle"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        struct readback rb;
        convert(names[i], &rb);
        uint64_t active = 0, reserved = 0, want_active = 0, want_reserved = 0;
        for (size_t k = 0; k < rb.nev; k++) {
            const struct cmt_alloc_event *e = &rb.ev[k];
            uint64_t size = e->v[CMT_AFIELD_SIZE];
            if (e->action == CMT_AA_ALLOC)
                active += size;
            else if (e->action == CMT_AA_FREE_COMPLETED)
                active -= size;
            else if (e->action == CMT_AA_SEGMENT_ALLOC || e->action == CMT_AA_SEGMENT_MAP)
                reserved += size;
            else if (e->action == CMT_AA_SEGMENT_FREE || e->action == CMT_AA_SEGMENT_UNMAP)
                reserved -= size;
        }
        for (size_t k = 0; k < rb.snap.nsegments; k++)
            want_reserved += rb.snap.segments[k].total_size;
        for (size_t k = 0; k < rb.snap.nblocks; k++)
            if (rb.snap.blocks[k].state != CMT_SNAPSHOT_INACTIVE)
                want_active += rb.snap.blocks[k].size;
        cr_expect_eq(active, want_active, "%s", names[i]);
        cr_expect_eq(reserved, want_reserved, "%s", names[i]);
        release(&rb);
    }
}

/* segment_pool_id becomes the segment's pool: 0 for the default pool (the field left out),
 * the pair packed for a private pool (a CUDA graph's (0, 1)). */
Test(snapshot_trace, a_private_pool_is_the_segments_pool)
{
    struct readback rb;
    convert("graph_pool.pickle", &rb);
    int seen = 0;
    for (size_t i = 0; i < rb.nev; i++) {
        const struct cmt_alloc_event *e = &rb.ev[i];
        if (e->action != CMT_AA_SEGMENT_ALLOC)
            continue;
        seen++;
        if (e->v[CMT_AFIELD_ADDR] == 0x7F0002000000)
            cr_expect(e->fields & CMT_AF(POOL) && e->v[CMT_AFIELD_POOL] == 1, "pool %llu",
                      (unsigned long long)e->v[CMT_AFIELD_POOL]);
        else
            cr_expect(!(e->fields & CMT_AF(POOL)), "the default pool");
    }
    cr_expect_eq(seen, 2);
    release(&rb);
}
