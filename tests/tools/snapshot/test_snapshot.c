/* test_snapshot.c — the snapshot parser on the fixtures of every form (fixtures/, written by
 * make_fixtures.py, whose docstrings say what each holds) and on broken snapshots built here
 * with a small pickle emitter. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "snapshot.h"
#include "snapshot_test.h"

#define MIB (UINT64_C(1) << 20)

Test(snapshot, sniff_wants_a_pickle_header)
{
    cr_expect(cmt_snapshot_sniff("\x80\x04", 2));
    cr_expect(cmt_snapshot_sniff("\x80\x02", 2));
    cr_expect(!cmt_snapshot_sniff("\x80\x01", 2));
    cr_expect(!cmt_snapshot_sniff("\x80\x06", 2));
    cr_expect(!cmt_snapshot_sniff("\x89"
                                  "CMT",
                                  4));
    cr_expect(!cmt_snapshot_sniff("\x80", 1));
}

static const char *frame_name(const struct cmt_snapshot *s, uint32_t stack, uint32_t k)
{
    uint32_t n;
    const uint32_t *ids = cmt_snapshot_stack_frames(s, stack, &n);
    cr_assert(k < n, "stack %u has %u frames", stack, n);
    return s->frames[ids[k]].name;
}

Test(snapshot, reads_the_2_1_form)
{
    struct cmt_snapshot s;
    fixture_parse("full.pickle", &s);
    cr_expect_eq(s.flags, CMT_SNAPSHOT_TRACES | CMT_SNAPSHOT_SETTINGS);
    cr_expect_eq(s.protocol, 4);
    cr_expect_eq(s.ndevices, 2);
    cr_assert_eq(s.nsegments, 3);
    cr_expect_eq(s.nblocks, 7);
    cr_expect_eq(s.nentries, 14, "15 entries, one user_defined");
    cr_expect_eq(s.skipped_entries, 1);
    const struct cmt_snapshot_segment *b = &s.segments[1];
    cr_expect_eq(b->addr, 0x7F0001400000);
    cr_expect_eq(b->total_size, 2 * MIB);
    cr_expect(b->small);
    cr_expect_eq(b->nblocks, 2);
    cr_expect_eq(s.blocks[b->first_block].state, CMT_SNAPSHOT_ACTIVE_PENDING_FREE);
    cr_expect_eq(s.blocks[b->first_block].requested, 100);
    cr_expect_eq(s.segments[2].dev, 1);
    /* device 0's entries first, in file order */
    cr_expect_eq(s.entries[0].action, CMT_SNAPSHOT_FREE_REQUESTED);
    cr_expect(s.entries[0].has_time);
    cr_expect_eq(s.entries[0].time_us, 1700000000000010);
    const struct cmt_snapshot_entry *oom = &s.entries[7];
    cr_expect_eq(oom->action, CMT_SNAPSHOT_OOM);
    cr_expect_eq(oom->size, 40 * MIB);
    cr_expect_eq(oom->device_free, 10 * MIB);
    cr_expect_eq(s.entries[8].action, CMT_SNAPSHOT_SNAPSHOT);
    cr_expect_eq(s.entries[9].dev, 1);
    /* one frame list object in the pickle, one stack here */
    cr_expect_eq(s.entries[3].stack, s.entries[4].stack);
    cr_expect_neq(s.entries[3].stack, s.entries[0].stack);
    cr_expect_str_eq(frame_name(&s, s.entries[3].stack, 0), "torch::unwind::unwind()");
    uint32_t n;
    const uint32_t *ids = cmt_snapshot_stack_frames(&s, s.entries[3].stack, &n);
    cr_assert_eq(n, 3);
    cr_expect_str_eq(s.frames[ids[1]].name, "forward");
    cr_expect_str_eq(s.frames[ids[1]].file, "model.py");
    cr_expect_eq(s.frames[ids[1]].line, 42);
    const uint32_t *free_ids = cmt_snapshot_stack_frames(&s, s.entries[0].stack, &n);
    cr_expect_eq(free_ids[0], ids[0], "the same frame in two lists is one frame");
    cr_expect_str_eq(s.settings.conf, "max_split_size_mb:128,roundup_power2_divisions:4");
    cr_expect_eq(s.settings.max_split_size, (int64_t)(128 * MIB));
    for (int k = 0; k < CMT_SNAPSHOT_ROUNDUP_BUCKETS; k++)
        cr_expect_eq(s.settings.roundup_power2_divisions[k], 4);
    cmt_snapshot_free(&s);
}

Test(snapshot, reads_2_0_history_blocks)
{
    struct cmt_snapshot s;
    fixture_parse("history.pickle", &s);
    cr_expect_eq(s.flags, CMT_SNAPSHOT_TRACES | CMT_SNAPSHOT_HISTORY | CMT_SNAPSHOT_NO_TIME);
    cr_assert_eq(s.nblocks, 3);
    uint64_t base = 0x7E0000000000;
    cr_expect_eq(s.blocks[0].addr, base, "no address: the segment's start");
    cr_expect_eq(s.blocks[1].addr, base + 20 * MIB, "then the sizes before it");
    cr_expect_eq(s.blocks[2].addr, base + 40 * MIB);
    cr_expect_eq(s.blocks[0].requested, 20 * MIB - 1000, "requested_size when present");
    cr_expect_eq(s.blocks[1].requested, 7 * MIB, "else the last history entry's real_size");
    cr_expect_str_eq(frame_name(&s, s.blocks[0].stack, 1), "forward", "the last entry's frames");
    cr_expect_str_eq(frame_name(&s, s.blocks[1].stack, 0), "init_weights");
    cr_expect_eq(s.blocks[2].stack, 0);
    cr_expect_eq(s.nentries, 1);
    cr_expect(!s.entries[0].has_time);
    cmt_snapshot_free(&s);
}

Test(snapshot, reads_a_bare_segment_list)
{
    struct cmt_snapshot s;
    fixture_parse("bare_list.pickle", &s);
    cr_expect_eq(s.flags, CMT_SNAPSHOT_BARE_LIST);
    cr_expect_eq(s.ndevices, 2, "devices 1 and 0");
    cr_assert_eq(s.nsegments, 2);
    cr_expect_eq(s.segments[0].dev, 1);
    cr_expect_eq(s.nentries, 0);
    cr_expect_null(s.settings.conf);
    cr_expect_eq(s.settings.max_split_size, -1);
    cmt_snapshot_free(&s);
}

Test(snapshot, reads_expandable_segments_and_entries_without_time)
{
    struct cmt_snapshot s;
    fixture_parse("expandable.pickle", &s);
    cr_expect(s.segments[0].expandable);
    cr_expect(s.settings.expandable_segments);
    cr_expect_eq(s.entries[0].action, CMT_SNAPSHOT_SEGMENT_MAP);
    cr_expect_eq(s.entries[2].action, CMT_SNAPSHOT_SEGMENT_UNMAP);
    cmt_snapshot_free(&s);
    fixture_parse("no_time.pickle", &s);
    cr_expect(s.flags & CMT_SNAPSHOT_NO_TIME);
    cr_expect_eq(s.nentries, 5);
    cr_expect_eq(s.entries[4].dev, 1);
    cmt_snapshot_free(&s);
}

/* ---- broken snapshots ---- */

static void expect_refused(const struct pk *p, int code, const char *text)
{
    struct cmt_snapshot s;
    struct cmt_err err = {0};
    int rc = cmt_snapshot_parse(&s, p->b, p->n, &err);
    cr_expect_eq(rc, code, "rc %d (%s), want %d", rc, err.text, code);
    cr_expect_eq(err.code, code, "the carrier holds the code returned");
    cr_expect_str_eq(cmt_err_message(&err), err.text, "the line printed is the text");
    cr_expect(strstr(err.text, text), "'%s' lacks '%s'", err.text, text);
    cr_expect_eq(s.nsegments, 0, "nothing left to free");
}

Test(snapshot, refuses_what_is_not_a_snapshot)
{
    struct pk p = {0};
    pk_begin(&p);
    pk_int(&p, 7);
    pk_end(&p);
    expect_refused(&p, CMT_ESNAPSHOT_FORM, "holds an int");
    pk_begin(&p);
    pk_dict(&p);
    pk_str(&p, "foo");
    pk_int(&p, 1);
    pk_setitems(&p);
    pk_end(&p);
    expect_refused(&p, CMT_ESNAPSHOT_FORM, "without 'segments' or 'device_traces'");
    pk_begin(&p);
    pk_raw(&p, "c", 1);
    pk_end(&p);
    expect_refused(&p, CMT_EPICKLE_CLASS, "pickle byte 2: opcode 0x63 (GLOBAL)");
    pk_begin(&p);
    pk_dict(&p);
    p.n--; /* drop the MARK: truncated right after the dict */
    expect_refused(&p, CMT_EPICKLE_TRUNCATED, "pickle byte");
    free(p.b);
}

/* {"segments": [ {fields...} ]} with one segment dict whose fields the caller writes. */
static void one_segment(struct pk *p, void (*fields)(struct pk *))
{
    pk_begin(p);
    pk_dict(p);
    pk_str(p, "segments");
    pk_list(p);
    pk_dict(p);
    fields(p);
    pk_setitems(p);
    pk_appends(p);
    pk_setitems(p);
    pk_end(p);
}

static void no_total_size(struct pk *p)
{
    pk_str(p, "address");
    pk_int(p, 4096);
}

static void str_size(struct pk *p)
{
    no_total_size(p);
    pk_str(p, "total_size");
    pk_str(p, "big");
}

static void bad_device(struct pk *p)
{
    no_total_size(p);
    pk_str(p, "total_size");
    pk_int(p, 2 * MIB);
    pk_str(p, "device");
    pk_int(p, 5000);
}

static void bad_state(struct pk *p)
{
    no_total_size(p);
    pk_str(p, "total_size");
    pk_int(p, 2 * MIB);
    pk_str(p, "blocks");
    pk_list(p);
    pk_dict(p);
    pk_str(p, "size");
    pk_int(p, 512);
    pk_str(p, "state");
    pk_str(p, "zombie");
    pk_setitems(p);
    pk_appends(p);
}

static void negative_size(struct pk *p)
{
    no_total_size(p);
    pk_str(p, "total_size");
    pk_int(p, -5);
}

Test(snapshot, a_bad_field_is_named_with_its_place)
{
    struct pk p = {0};
    one_segment(&p, no_total_size);
    expect_refused(&p, CMT_ESNAPSHOT_FIELD, "segments[0]: total_size: missing");
    one_segment(&p, str_size);
    expect_refused(&p, CMT_ESNAPSHOT_FIELD, "total_size: a str where a non-negative int belongs");
    one_segment(&p, bad_device);
    expect_refused(&p, CMT_ESNAPSHOT_FIELD, "device: 5000 is not a device ordinal");
    one_segment(&p, bad_state);
    expect_refused(&p, CMT_ESNAPSHOT_FIELD, "segments[0].blocks[0]: state: 'zombie'");
    one_segment(&p, negative_size);
    expect_refused(&p, CMT_ESNAPSHOT_FIELD, "total_size: -5 is negative");
    free(p.b);
}

Test(snapshot, a_trace_entry_needs_an_action)
{
    struct pk p = {0};
    pk_begin(&p);
    pk_dict(&p);
    pk_str(&p, "device_traces");
    pk_list(&p);
    pk_list(&p);
    pk_dict(&p);
    pk_str(&p, "addr");
    pk_int(&p, 1);
    pk_setitems(&p);
    pk_appends(&p);
    pk_appends(&p);
    pk_setitems(&p);
    pk_end(&p);
    expect_refused(&p, CMT_ESNAPSHOT_FIELD, "device_traces[0][0]: action: missing");
    free(p.b);
}

static void many_keys(struct pk *p)
{
    no_total_size(p);
    for (int k = 0; k < 300; k++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", k);
        pk_str(p, key);
        pk_int(p, k);
    }
}

Test(snapshot, shared_objects_cannot_multiply_the_work)
{
    struct pk p = {0};
    one_segment(&p, many_keys);
    expect_refused(&p, CMT_ESNAPSHOT_FIELD, "segments[0]: segment dict of 301 keys (at most");
    /* one block dict named 1000 times in one blocks list, that segment 1000 times in the
     * segment list: 10^6 blocks from a few kB */
    pk_begin(&p);
    pk_dict(&p);
    pk_str(&p, "segments");
    pk_list(&p);
    pk_dict(&p);
    no_total_size(&p);
    pk_str(&p, "total_size");
    pk_int(&p, 1u << 30);
    pk_str(&p, "blocks");
    pk_list(&p);
    pk_dict(&p);
    pk_str(&p, "size");
    pk_int(&p, 512);
    pk_setitems(&p);
    pk_put(&p, 1);
    for (int k = 1; k < 1000; k++)
        pk_get(&p, 1);
    pk_appends(&p);
    pk_setitems(&p);
    pk_put(&p, 2);
    for (int k = 1; k < 1000; k++)
        pk_get(&p, 2);
    pk_appends(&p);
    pk_setitems(&p);
    pk_end(&p);
    cr_assert_lt(p.n, 8000);
    expect_refused(&p, CMT_ESNAPSHOT_FIELD, "names more objects than its");
    free(p.b);
}
