/* include/cumemtrace/annotate.h end to end: progs/annotate_pool.c reports a sub-allocator's
 * actions and prints each; the trace's ALLOCATOR and ALLOC_EVENT records must say the same,
 * in order among the driver's events, with stacks; without the shim the calls do nothing. */
#include "e2e_util.h"

#include "caching_model.h"

TestSuite(annotate, .init = e2e_setup, .fini = e2e_teardown);

struct report {
    char action[32];
    unsigned long long addr, size, requested;
};

/* The reports the program printed between the lines `from` and `to` (NULL: start, end). */
static int reports(const char *out, const char *from, const char *to, struct report *r, int max)
{
    int n = 0, on = from == NULL;
    for (const char *p = out; *p && n < max; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : "") {
        char word[32];
        if (sscanf(p, "%31s", word) != 1)
            continue;
        if (from && !strcmp(word, from))
            on = 1;
        if (to && !strcmp(word, to) && on)
            break;
        if (on && sscanf(p, "%31s %llu %llu %llu", r[n].action, &r[n].addr, &r[n].size,
                         &r[n].requested) == 4)
            n++;
    }
    return n;
}

struct alloc_trace {
    struct cmt_alloc_event ev[256];
    int n, allocators;
    uint32_t allocator_id;
    char name[64], version[64], conf[128];
    uint64_t alloc_seq, free_seq; /* of cuMemAlloc_v2 and cuMemFree_v2 */
    int segment_alloc_after_alloc, segment_free_before_free;
    cmt_reader *r;
};

static void load_allocs(struct alloc_trace *t, const char *path)
{
    memset(t, 0, sizeof *t);
    t->alloc_seq = t->free_seq = UINT64_MAX;
    cr_assert_eq(cmt_reader_open_file(&t->r, path, NULL), 0, "cannot open %s", path);
    cr_assert_eq(cmt_reader_preload(t->r), 0, "%s is damaged", path);
    struct cmt_record rec;
    int rc;
    while ((rc = cmt_reader_next(t->r, &rec)) > 0) {
        if (rec.type == CMT_REC_ALLOCATOR) {
            t->allocators++;
            t->allocator_id = rec.u.alloc_info.id;
            snprintf(t->name, sizeof t->name, "%s", rec.u.alloc_info.name);
            snprintf(t->version, sizeof t->version, "%s", rec.u.alloc_info.version);
            snprintf(t->conf, sizeof t->conf, "%s", rec.u.alloc_info.conf);
        } else if (rec.type == CMT_REC_ALLOC_EVENT && t->n < 256) {
            const struct cmt_alloc_event *a = &rec.u.alloc_event;
            if (a->action == CMT_AA_SEGMENT_ALLOC)
                t->segment_alloc_after_alloc = t->alloc_seq != UINT64_MAX;
            if (a->action == CMT_AA_SEGMENT_FREE)
                t->segment_free_before_free = t->free_seq == UINT64_MAX;
            t->ev[t->n++] = *a;
        } else if (rec.type == CMT_REC_EVENT) {
            const struct cmt_api *api = cmt_reader_api(t->r, rec.u.event.api);
            if (api && !strcmp(api->name, "cuMemAlloc_v2"))
                t->alloc_seq = rec.u.event.seq;
            if (api && !strcmp(api->name, "cuMemFree_v2"))
                t->free_seq = rec.u.event.seq;
        }
    }
    cr_assert_eq(rc, 0, "%s reads whole: %s", path, cmt_strerror(rc));
    cr_assert_eq(cmt_reader_seq_gaps(t->r), 0, "alloc events take no driver seqs");
}

static int frame_has(cmt_reader *r, uint32_t leaf, const char *needle)
{
    struct cmt_stack_node node;
    for (uint32_t id = leaf; id && cmt_reader_stack_node(r, id, &node) == 0; id = node.parent) {
        char frame[512];
        cmt_reader_format_frame(r, id, frame, sizeof frame);
        if (strstr(frame, needle))
            return 1;
    }
    return 0;
}

/* The trace's alloc events are the reports, one for one, in order. */
static void same_events(const struct alloc_trace *t, const struct report *rep, int n)
{
    cr_assert_eq(t->n, n, "%d alloc events in the trace, %d reported", t->n, n);
    for (int i = 0; i < n; i++) {
        const struct cmt_alloc_event *a = &t->ev[i];
        cr_assert_str_eq(cmt_alloc_action_name(a->action), rep[i].action, "event %d", i);
        cr_assert_eq(a->allocator, t->allocator_id);
        cr_assert_eq(a->dev, 0);
        cr_assert(a->fields & CMT_AF(SIZE));
        cr_assert_eq(a->v[CMT_AFIELD_SIZE], rep[i].size, "event %d size", i);
        if (a->action != CMT_AA_OOM) {
            cr_assert_eq(a->v[CMT_AFIELD_ADDR], rep[i].addr, "event %d addr", i);
            cr_assert_eq(a->v[CMT_AFIELD_STREAM], 7);
        }
        if (a->action == CMT_AA_ALLOC) {
            cr_assert_eq(a->v[CMT_AFIELD_REQUESTED], rep[i].requested);
            cr_assert_eq(a->v[CMT_AFIELD_FLAGS], CMT_AFLAG_SMALL);
            cr_assert(frame_has(t->r, a->stack, "make_tensor"), "the alloc's stack");
            char leaf[512];
            cmt_reader_format_frame(t->r, a->stack, leaf, sizeof leaf);
            cr_assert(strstr(leaf, "pool_alloc annotate_pool.c:"),
                      "the first frame is the allocator's call, not annotate.h: %s", leaf);
        }
        if (a->action == CMT_AA_OOM) {
            cr_assert_eq(a->v[CMT_AFIELD_DEVICE_FREE], 1u << 20);
            cr_assert_eq(a->v[CMT_AFIELD_DEVICE_TOTAL], 24ull << 30);
            cr_assert_eq(a->v[CMT_AFIELD_ALLOCATED], 3584);
            cr_assert_eq(a->v[CMT_AFIELD_RESERVED], 8u << 20);
            cr_assert(a->stack, "an OOM report has its stack");
        }
        if (a->action == CMT_AA_FREE_REQUESTED)
            cr_assert_eq(a->stack, 0, "frees are not unwound by default");
    }
}

static void same_allocator(const struct alloc_trace *t, const char *out)
{
    unsigned id = 0;
    cr_assert(sscanf(strstr(out, "allocator "), "allocator %u", &id) == 1);
    cr_assert_eq(t->allocators, 1);
    cr_assert_eq(t->allocator_id, id);
    cr_assert_geq(id, 1);
    cr_assert_str_eq(t->name, "test-pool");
    cr_assert_str_eq(t->version, "1.2");
    cr_assert_str_eq(t->conf, "block:512,segment:8MiB");
}

Test(annotate, reports_become_alloc_events_in_order_with_stacks)
{
    static struct run r;
    static struct report rep[64];
    char path[NAME_MAX + 1];
    e2e_record_one(&r, path, NULL, "tests/progs/annotate_pool", NULL, 0);
    int n = reports(r.out, NULL, NULL, rep, 64);
    cr_assert_eq(n, 9, "stdout: %s", r.out);
    static struct alloc_trace t;
    load_allocs(&t, path);
    same_allocator(&t, r.out);
    same_events(&t, rep, n);
    /* in their place among the driver's events: SEQ names the last one before */
    cr_assert(t.segment_alloc_after_alloc && t.segment_free_before_free);
    cr_assert(t.ev[0].fields & CMT_AF(SEQ));
    cr_assert_eq(t.ev[0].v[CMT_AFIELD_SEQ], t.alloc_seq);
    cr_assert_eq(t.ev[n - 1].v[CMT_AFIELD_SEQ], t.free_seq - 1);
    cmt_reader_close(t.r);
}

Test(annotate, without_the_shim_every_call_is_a_no_op)
{
    static struct run r;
    char prog[PATH_MAX];
    char *argv[] = {(char *)e2e_path(prog, "tests/progs/annotate_pool"), NULL};
    e2e_run(&r, argv);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "allocator 0\n"), "no shim: id 0: %s", r.out);
    static struct report rep[64];
    cr_assert_eq(reports(r.out, NULL, NULL, rep, 64), 9, "the program runs on unchanged");
    char names[2][NAME_MAX + 1];
    cr_assert_eq(e2e_traces(names, 2), 0);
}

Test(annotate, a_forked_child_names_the_allocator_in_its_own_trace)
{
    static struct run r;
    const char *args[] = {"fork", NULL};
    e2e_record(&r, NULL, "tests/progs/annotate_pool", args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char names[4][NAME_MAX + 1];
    cr_assert_eq(e2e_traces(names, 4), 2, "%s", r.err);
    static struct report parent[64], child[64];
    int np = reports(r.out, NULL, "child", parent, 64);
    np += reports(r.out, "parent", NULL, parent + np, 64 - np);
    int nc = reports(r.out, "child", "parent", child, 64);
    cr_assert_eq(nc, 7, "%s", r.out);
    static struct alloc_trace a, b;
    load_allocs(&a, names[0]);
    load_allocs(&b, names[1]);
    const struct alloc_trace *tp = a.alloc_seq != UINT64_MAX ? &a : &b;
    const struct alloc_trace *tc = tp == &a ? &b : &a;
    same_allocator(tp, r.out);
    same_allocator(tc, r.out);
    same_events(tp, parent, np);
    same_events(tc, child, nc);
    cmt_reader_close(a.r);
    cmt_reader_close(b.r);
}

Test(annotate, a_killed_process_keeps_every_report)
{
    static struct run r;
    const char *args[] = {"kill", NULL};
    char path[NAME_MAX + 1];
    e2e_record_one(&r, path, NULL, "tests/progs/annotate_pool", args, 128 + SIGKILL);
    static struct report rep[64];
    int n = reports(r.out, NULL, NULL, rep, 64);
    cr_assert_eq(n, 8, "%s", r.out);
    static struct alloc_trace t;
    load_allocs(&t, path);
    same_allocator(&t, r.out);
    same_events(&t, rep, n);
    cmt_reader_close(t.r);
}

/* 20 threads interleave driver calls and reports: in the file, every thread's records keep
 * its cycle (cuMemAlloc, segment_alloc, alloc, free_requested, segment_free, cuMemFree), and
 * each report's SEQ is the seq of the last EVENT before it: file order is event order. */
Test(annotate, threads_keep_their_order_among_the_driver_events)
{
    static struct run r;
    const char *args[] = {"threads", NULL};
    char path[NAME_MAX + 1];
    e2e_record_one(&r, path, NULL, "tests/progs/annotate_pool", args, 0);
    int nthreads = 0, cycles = 0;
    cr_assert_eq(sscanf(strstr(r.out, "threads "), "threads %d cycles %d", &nthreads, &cycles), 2);
    cmt_reader *rd;
    cr_assert_eq(cmt_reader_open_file(&rd, path, NULL), 0);
    cr_assert_eq(cmt_reader_preload(rd), 0, "%s is damaged", path);
    struct {
        uint32_t tid;
        int step;
        uint64_t ptr;
        int done;
    } th[64] = {{0}};
    int nth = 0, rc, reports = 0;
    uint64_t last_seq = UINT64_MAX;
    struct cmt_record rec;
    while ((rc = cmt_reader_next(rd, &rec)) > 0) {
        uint32_t tid;
        int step;
        uint64_t ptr;
        if (rec.type == CMT_REC_EVENT) {
            const struct cmt_api *api = cmt_reader_api(rd, rec.u.event.api);
            last_seq = rec.u.event.seq;
            if (!api || (strcmp(api->name, "cuMemAlloc_v2") && strcmp(api->name, "cuMemFree_v2")))
                continue;
            tid = rec.u.event.tid;
            step = api->name[5] == 'A' ? 0 : 5;
            ptr = rec.u.event.v[CMT_FIELD_PTR];
        } else if (rec.type == CMT_REC_ALLOC_EVENT) {
            const struct cmt_alloc_event *a = &rec.u.alloc_event;
            tid = a->tid;
            step = a->action == CMT_AA_SEGMENT_ALLOC    ? 1
                   : a->action == CMT_AA_ALLOC          ? 2
                   : a->action == CMT_AA_FREE_REQUESTED ? 3
                   : a->action == CMT_AA_SEGMENT_FREE   ? 4
                                                        : -1;
            ptr = a->v[CMT_AFIELD_ADDR];
            cr_assert(a->fields & CMT_AF(SEQ));
            cr_assert_eq(a->v[CMT_AFIELD_SEQ], last_seq, "SEQ names the last EVENT before it");
            reports++;
        } else {
            continue;
        }
        int k = 0;
        while (k < nth && th[k].tid != tid)
            k++;
        if (k == nth) {
            cr_assert_lt(nth, 64);
            th[nth++].tid = tid;
        }
        cr_assert_eq(step, th[k].step, "thread %u: step %d where %d was due", tid, step,
                     th[k].step);
        if (step == 0)
            th[k].ptr = ptr;
        cr_assert_eq(ptr, th[k].ptr, "thread %u: the cycle's pointer", tid);
        th[k].step = (step + 1) % 6;
        th[k].done += step == 5;
    }
    cr_assert_eq(rc, 0);
    cr_assert_eq(cmt_reader_seq_gaps(rd), 0);
    int threads_cycling = 0;
    for (int k = 0; k < nth; k++)
        if (th[k].done) {
            threads_cycling++;
            cr_assert_eq(th[k].done, cycles, "thread %u: every cycle", th[k].tid);
            cr_assert_eq(th[k].step, 0);
        }
    cr_assert_eq(threads_cycling, nthreads);
    cr_assert_eq(reports, nthreads * cycles * 4);
    cmt_reader_close(rd);
}

/* ---- the demo's PyTorch stand-in reports through annotate.h ---- */

#define DEMO "libexec/cumemtrace/demo_diffusion"

static void leaf_of(cmt_reader *r, uint32_t stack, char *out, size_t size)
{
    out[0] = 0;
    if (stack)
        cmt_reader_format_frame(r, stack, out, size);
}

/* The caching-on run carries the tensor stream the caching-off run shows the driver: the same
 * requests from the same lines, then the OOM of the one that fails, with the figures of the
 * message the program printed; its segments are the driver's allocations. */
Test(annotate, the_demo_caching_on_run_carries_the_tensor_stream)
{
    static struct run off, on;
    char path_off[NAME_MAX + 1], path_on[NAME_MAX + 1];
    setenv("PYTORCH_NO_CUDA_MEMORY_CACHING", "1", 1);
    e2e_record_one(&off, path_off, NULL, DEMO, NULL, 0);
    unsetenv("PYTORCH_NO_CUDA_MEMORY_CACHING");
    static struct trace toff;
    trace_load(&toff, path_off);
    cr_assert_gt(count_api(&toff, "cuMemAlloc_v2", 0), 1);
    cr_assert_eq(rename(path_off, "off.cmt.keep"), 0);
    e2e_record_one(&on, path_on, NULL, DEMO, NULL, 1);
    static struct alloc_trace ton;
    load_allocs(&ton, path_on);
    cr_assert_eq(ton.allocators, 1);
    cr_assert_str_eq(ton.name, "pytorch-cuda-caching");
    cr_assert_str_eq(ton.version, "2.6.0");
    cr_assert_str_eq(ton.conf, "", "PYTORCH_CUDA_ALLOC_CONF unset: the defaults");
    size_t k = 0; /* the caching-off run's next cuMemAlloc_v2 */
    int allocs = 0, ooms = 0;
    for (int i = 0; i < ton.n; i++) {
        const struct cmt_alloc_event *a = &ton.ev[i];
        if (a->action != CMT_AA_ALLOC && a->action != CMT_AA_OOM)
            continue;
        while (k < toff.n && strcmp(api_of(&toff, &toff.ev[k]), "cuMemAlloc_v2"))
            k++;
        cr_assert_lt(k, toff.n, "more tensors with caching on than off");
        const struct cmt_event *d = &toff.ev[k++];
        char want[512], got[512];
        leaf_of(toff.r, d->stack, want, sizeof want);
        leaf_of(ton.r, a->stack, got, sizeof got);
        cr_assert_str_eq(got, want, "tensor %d is asked for from the same line", allocs + ooms);
        if (a->action == CMT_AA_ALLOC) {
            allocs++;
            cr_assert_eq(a->v[CMT_AFIELD_REQUESTED], d->v[CMT_FIELD_SIZE]);
            cr_assert_geq(a->v[CMT_AFIELD_SIZE], a->v[CMT_AFIELD_REQUESTED]);
            cr_assert(a->v[CMT_AFIELD_SEGMENT] <= a->v[CMT_AFIELD_ADDR]);
            continue;
        }
        ooms++; /* 6330 MiB - 768 KiB: a multiple of 512, so rounded = requested */
        cr_assert_eq(a->v[CMT_AFIELD_SIZE], d->v[CMT_FIELD_SIZE]);
        char figure[64], text[128];
        uint64_t figures[][2] = {{a->v[CMT_AFIELD_SIZE], 0},
                                 {a->v[CMT_AFIELD_DEVICE_TOTAL], 1},
                                 {a->v[CMT_AFIELD_ALLOCATED], 2},
                                 {a->v[CMT_AFIELD_DEVICE_FREE], 3},
                                 {a->v[CMT_AFIELD_RESERVED], 4}};
        const char *format[] = {"Tried to allocate %s", "%s total capacity", "%s already allocated",
                                "%s free", "%s reserved in total"};
        for (int f = 0; f < 5; f++) {
            cmt_model_format_size(figures[f][0], figure, sizeof figure);
            snprintf(text, sizeof text, format[figures[f][1]], figure);
            cr_assert(strstr(on.err, text), "the OOM event's figure '%s' is the message's: %s",
                      text, on.err);
        }
    }
    cr_assert_eq(ooms, 1);
    cr_assert_eq(allocs + 1, (int)count_api(&toff, "cuMemAlloc_v2", 0), "all but the last");
    /* every successful driver allocation of the caching-on run is a segment_alloc */
    static struct trace tdrv;
    trace_load(&tdrv, path_on);
    int segments = 0;
    for (int i = 0; i < ton.n; i++)
        if (ton.ev[i].action == CMT_AA_SEGMENT_ALLOC) {
            int found = 0;
            for (size_t e = 0; e < tdrv.n; e++)
                found |= !strcmp(api_of(&tdrv, &tdrv.ev[e]), "cuMemAlloc_v2") &&
                         tdrv.ev[e].result == 0 &&
                         tdrv.ev[e].v[CMT_FIELD_PTR] == ton.ev[i].v[CMT_AFIELD_ADDR] &&
                         tdrv.ev[e].v[CMT_FIELD_SIZE] == ton.ev[i].v[CMT_AFIELD_SIZE];
            cr_assert(found, "segment %d is a cuMemAlloc_v2", segments);
            segments++;
        }
    size_t ok = 0;
    for (size_t e = 0; e < tdrv.n; e++)
        ok += !strcmp(api_of(&tdrv, &tdrv.ev[e]), "cuMemAlloc_v2") && tdrv.ev[e].result == 0;
    cr_assert_eq((size_t)segments, ok);
    trace_free(&tdrv);
    trace_free(&toff);
    cmt_reader_close(ton.r);
}

Test(annotate, the_demo_names_the_settings_it_ran_under)
{
    static struct run r;
    char path[NAME_MAX + 1];
    setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:6144", 1);
    e2e_record_one(&r, path, NULL, DEMO, NULL, 0);
    unsetenv("PYTORCH_CUDA_ALLOC_CONF");
    static struct alloc_trace t;
    load_allocs(&t, path);
    cr_assert_str_eq(t.conf, "max_split_size_mb:6144");
    for (int i = 0; i < t.n; i++)
        cr_assert_neq(t.ev[i].action, CMT_AA_OOM, "the setting avoids the OOM");
    cmt_reader_close(t.r);
}
