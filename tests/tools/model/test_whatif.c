/* Tests of tools/model/whatif.* and `cumemtrace whatif` over traces written
 * with the format's writer. */
#include "whatif_fixture.h"

#include "oom.h"
#include "timeline.h"
#include "whatif.h"

/* Event k of a stream, every field. */
static struct cmt_whatif_event ev_at(const struct cmt_whatif_stream *s, size_t k)
{
    struct cmt_whatif_event e;
    cr_assert_eq(cmt_whatif_stream_event(s, k, &e), 0);
    return e;
}

static const char writeup_message[] =
    "CUDA out of memory. Tried to allocate 6.18 GiB (GPU 0; 24.00 GiB total capacity; "
    "11.39 GiB already allocated; 3.43 GiB free; 17.62 GiB reserved in total by PyTorch)";

static void load(struct tb *b, struct cmt_whatif_stream *s)
{
    cmt_reader *r = tb_reader(b);
    struct cmt_err err = {0};
    cr_assert_eq(cmt_whatif_stream_load(r, s, &err), 0, "%s", err.text);
    cmt_reader_close(r);
}

static struct cmt_whatif_setting split_mb(uint64_t mb)
{
    return (struct cmt_whatif_setting){.max_split_size = mb ? mb * MiB : UINT64_MAX};
}

/* ---- extracting the stream -------------------------------------------- */

Test(whatif_stream, writeup_trace_gives_the_tensor_stream_and_capacity)
{
    struct tb b;
    struct cmt_whatif_stream s;
    tb_writeup(&b);
    load(&b, &s);
    cr_assert_eq(s.allocs, 12);
    cr_assert_eq(s.frees, 4);
    cr_assert_eq(s.event_count, 16);
    cr_assert_eq(s.failed_allocs, 0);
    cr_assert(s.has_capacity);
    cr_assert_eq(s.device_total, 24 * GiB);
    cr_assert_eq(s.device_free, 21556 * MiB);
    cr_assert_str_eq(s.device_name, "GPU0");
    cr_assert_not(s.caching_detected, "%s", s.caching_reason);
    struct cmt_whatif_event last_event = ev_at(&s, s.event_count - 1);
    const struct cmt_whatif_event *last = &last_event;
    cr_assert_eq(last->size, X_SIZE);
    cr_assert_eq(last->seq, 15);
    cr_assert_str_eq(s.sites[last->site], "vae_decode demo.c:211");
    /* Ids are reused after frees: a (id of the first 1000 MiB tensor) comes back. */
    cr_assert_eq(ev_at(&s, 4).is_free, 1);
    cr_assert_eq(ev_at(&s, 5).id, ev_at(&s, 4).id);
    cmt_whatif_stream_free(&s);
    cmt_membuf_free(&b.buf);
}

Test(whatif_stream, async_calls_keep_their_stream_and_failures_are_requests)
{
    struct tb b;
    struct cmt_whatif_stream s;
    tb_open(&b, 8 * GiB, 6 * GiB);
    tb_event(&b, API_ALLOC_ASYNC, 0, P(0), 64 * MiB, 0x77, STACK_RAW);
    tb_event(&b, API_ALLOC, 2, 0, 64 * GiB, 0, STACK_RAW); /* failed: still a request */
    tb_event(&b, API_FREE_ASYNC, 0, P(0), 0, 0x77, STACK_RAW);
    tb_free(&b, P(5)); /* never allocated in the trace */
    tb_alloc(&b, P(1), 3 * MiB);
    tb_close(&b);
    load(&b, &s);
    /* Issue 16 item 6: the failed allocation is replayed (was: skipped, 3 events). */
    cr_assert_eq(s.event_count, 4);
    cr_assert_eq(ev_at(&s, 0).stream, 0x77);
    cr_assert_eq(ev_at(&s, 1).size, 64 * GiB);
    cr_assert_eq(ev_at(&s, 1).failed, 1);
    cr_assert_eq(ev_at(&s, 1).is_free, 0);
    cr_assert_eq(ev_at(&s, 1).id, s.id_count - 1); /* an id of its own, never freed */
    cr_assert_neq(ev_at(&s, 1).id, ev_at(&s, 0).id);
    cr_assert_neq(ev_at(&s, 1).id, ev_at(&s, 3).id);
    cr_assert_eq(ev_at(&s, 2).is_free, 1);
    cr_assert_eq(ev_at(&s, 3).stream, 0);
    cr_assert_eq(s.allocs, 2);
    cr_assert_eq(s.failed_allocs, 1);
    cr_assert_eq(s.unmatched_frees, 1);
    cmt_whatif_stream_free(&s);
    cmt_membuf_free(&b.buf);
}

Test(whatif_stream, segment_sized_allocations_without_frees_are_detected)
{
    struct tb b;
    struct cmt_whatif_stream s;
    tb_open(&b, 24 * GiB, 20 * GiB);
    uint64_t sizes[] = {20 * MiB, 2 * MiB, 3000 * MiB, 6330 * MiB, 100 * MiB, 22 * MiB};
    for (int i = 0; i < 6; i++)
        tb_alloc(&b, P(i), sizes[i]);
    tb_close(&b);
    load(&b, &s);
    cr_assert(s.caching_detected);
    cr_assert(strstr(s.caching_reason, "6 of 6 allocations"), "%s", s.caching_reason);
    cmt_whatif_stream_free(&s);
    cmt_membuf_free(&b.buf);
}

Test(whatif_stream, release_and_retry_signature_is_detected)
{
    struct tb b;
    struct cmt_whatif_stream s;
    tb_open(&b, 24 * GiB, 20 * GiB);
    tb_alloc(&b, P(0), 1000 * MiB + 4096);
    tb_alloc(&b, P(1), 333 * KiB);
    tb_event(&b, API_ALLOC, 2, 0, 6330 * MiB, 0, STACK_RAW); /* out of memory */
    tb_free(&b, P(1));                                       /* cached blocks released */
    tb_alloc(&b, P(2), 6330 * MiB);                          /* the retry succeeds */
    tb_close(&b);
    load(&b, &s);
    cr_assert(s.caching_detected);
    cr_assert(strstr(s.caching_reason, "retried"), "%s", s.caching_reason);
    cmt_whatif_stream_free(&s);
    cmt_membuf_free(&b.buf);
}

Test(whatif_stream, a_trace_without_allocations_is_refused)
{
    struct tb b;
    struct cmt_whatif_stream s;
    tb_open(&b, 24 * GiB, 20 * GiB);
    tb_free(&b, P(1));
    tb_close(&b);
    cmt_reader *r = tb_reader(&b);
    struct cmt_err err = {0};
    cr_assert_eq(cmt_whatif_stream_load(r, &s, &err), CMT_EWHATIF_EMPTY);
    cr_assert_eq(err.code, CMT_EWHATIF_EMPTY);
    cr_assert(strstr(cmt_err_message(&err), "no device allocations"), "%s", err.text);
    cmt_reader_close(r);
    cmt_membuf_free(&b.buf);
}

/* ---- replaying the sweep ---------------------------------------------- */

/* The OOM message names the device whose events were kept (an OOM on cuda:1 said GPU 0). */
Test(whatif_run, the_oom_message_names_the_kept_device)
{
    struct tb b;
    struct cmt_whatif_stream s;
    tb_writeup(&b);
    load(&b, &s);
    s.device = 1;
    struct cmt_whatif_setting setting = split_mb(0);
    struct cmt_whatif_result result;
    cr_assert_eq(cmt_whatif_run(&s, s.device_free, s.device_total, &setting, 1, 1, &result), 0);
    cr_assert(result.oom);
    char msg[512];
    cmt_model_format_oom(&result.oom_info, msg, sizeof msg);
    cr_expect(strstr(msg, "GPU 1 has a total capacity"), "%s", msg);
    cmt_whatif_stream_free(&s);
    cmt_membuf_free(&b.buf);
}

/* The write-up's table, and the exact boundary: x's segment is 6330 MiB; a
 * split size up to 6330 MiB makes that cached block oversize (refused to the
 * 100 MiB tensor); from 6331 MiB on the tensor splits it. */
Test(whatif_run, writeup_oom_exactly_for_split_sizes_above_the_request)
{
    struct tb b;
    struct cmt_whatif_stream s;
    tb_writeup(&b);
    load(&b, &s);
    uint64_t mb[] = {0, 2147483647, 8192, 7168, 6331, 6330, 6144, 5120, 4096, 1024, 20};
    bool oom[] = {true, true, true, true, true, false, false, false, false, false, false};
    size_t n = sizeof mb / sizeof mb[0];
    struct cmt_whatif_setting settings[16];
    struct cmt_whatif_result results[16];
    for (size_t i = 0; i < n; i++)
        settings[i] = split_mb(mb[i]);
    cr_assert_eq(cmt_whatif_run(&s, s.device_free, s.device_total, settings, n, 2, results), 0);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(results[i].error, 0);
        cr_assert_eq(results[i].oom, oom[i], "max_split_size_mb %llu", (unsigned long long)mb[i]);
        if (!oom[i])
            continue;
        char msg[512];
        cmt_model_format_oom_as(&results[i].oom_info, CMT_MODEL_OOM_1X, msg, sizeof msg);
        cr_assert(strstr(msg, writeup_message), "%s", msg);
        cr_assert_eq(results[i].oom_event, 15);
        cr_assert_eq(results[i].peak_reserved, 18044 * MiB);
        cr_assert_eq(results[i].alloc_retries, 1);
    }
    /* 6144: x1's 6330 MiB segment is oversize and kept whole; t takes its own
   * 100 MiB segment: reserved 18044 + 100 MiB, 8 device allocations. */
    cr_assert_eq(results[6].peak_reserved, 18144 * MiB);
    cr_assert_eq(results[6].device_alloc_calls, 8);
    cr_assert_eq(results[6].events_replayed, 16);
    cmt_whatif_stream_free(&s);
    cmt_membuf_free(&b.buf);
}

Test(whatif_run, threads_give_the_same_results_as_one)
{
    struct tb b;
    struct cmt_whatif_stream s;
    tb_writeup(&b);
    load(&b, &s);
    struct cmt_whatif_setting settings[12];
    struct cmt_whatif_result one[12], many[12];
    for (int i = 0; i < 12; i++) {
        settings[i] = split_mb(i == 0 ? 0 : 1024 * (uint64_t)i);
        settings[i].expandable_segments = i % 3 == 0;
        settings[i].roundup_power2_divisions = i % 4 == 1 ? 4 : 0;
    }
    cmt_whatif_run(&s, s.device_free, s.device_total, settings, 12, 1, one);
    cmt_whatif_run(&s, s.device_free, s.device_total, settings, 12, 4, many);
    for (int i = 0; i < 12; i++) {
        cr_assert_eq(one[i].oom, many[i].oom);
        cr_assert_eq(one[i].peak_reserved, many[i].peak_reserved);
        cr_assert_eq(one[i].device_alloc_calls, many[i].device_alloc_calls);
    }
    /* Expandable segments avoid the OOM whatever the split size. */
    cr_assert_not(one[0].oom);
    cmt_whatif_stream_free(&s);
    cmt_membuf_free(&b.buf);
}

Test(whatif_run, recommendation_and_the_exact_rule)
{
    struct tb b;
    struct cmt_whatif_stream s;
    tb_writeup(&b);
    load(&b, &s);
    uint64_t mb[] = {0, 4096, 5120, 6144, 7168, 8192};
    struct cmt_whatif_setting settings[6];
    struct cmt_whatif_result results[6];
    for (int i = 0; i < 6; i++)
        settings[i] = split_mb(mb[i]);
    cmt_whatif_run(&s, s.device_free, s.device_total, settings, 6, 0, results);
    struct cmt_whatif_recommendation rec;
    cmt_whatif_recommend(results, 6, &rec);
    /* 4096, 5120 and 6144 tie on peak reserved: the largest split size wins. */
    cr_assert_eq(rec.best, 3);
    cr_assert_eq(rec.rule, 3);
    cr_assert_eq(rec.smallest_failing_request, 6330 * MiB);
    cr_assert_eq(rec.exact_max_split_mb, 6330);
    char conf[64];
    cmt_whatif_setting_conf(&results[rec.best].setting, conf, sizeof conf);
    cr_assert_str_eq(conf, "max_split_size_mb:6144");
    cmt_whatif_stream_free(&s);
    cmt_membuf_free(&b.buf);
}

Test(whatif_run, nothing_recommended_when_every_setting_fails)
{
    struct cmt_whatif_event ev[] = {{.size = 10 * GiB, .id = 0}};
    struct cmt_whatif_stream s;
    cr_assert_eq(cmt_whatif_stream_from_events(ev, 1, 1, 0, 0, &s), 0);
    struct cmt_whatif_setting st[2] = {split_mb(0), split_mb(4096)};
    struct cmt_whatif_result res[2];
    cmt_whatif_run(&s, 8 * GiB, 8 * GiB, st, 2, 2, res);
    struct cmt_whatif_recommendation rec;
    cmt_whatif_recommend(res, 2, &rec);
    cr_assert(res[0].oom && res[1].oom);
    cr_assert_eq(rec.best, -1);
    cr_assert_eq(rec.rule, -1);
    cr_assert_eq(rec.exact_max_split_mb, 10240);
    cmt_whatif_stream_free(&s);
}

Test(whatif_run, stream_from_events_refuses_bad_ids)
{
    struct cmt_whatif_stream s;
    struct cmt_whatif_event double_free[] = {
        {.size = 1, .id = 0}, {.id = 0, .is_free = 1}, {.id = 0, .is_free = 1}};
    struct cmt_whatif_event out_of_range[] = {{.size = 1, .id = 3}};
    cr_assert_eq(cmt_whatif_stream_from_events(double_free, 3, 1, 0, 0, &s), CMT_EINVALID);
    cr_assert_eq(cmt_whatif_stream_from_events(out_of_range, 1, 1, 0, 0, &s), CMT_EINVALID);
}

Test(whatif_run, default_ladder)
{
    uint64_t mb[5];
    cr_assert_eq(cmt_whatif_default_ladder(X_SIZE, mb), 5);
    uint64_t want[] = {4096, 5120, 6144, 7168, 8192};
    for (int i = 0; i < 5; i++)
        cr_assert_eq(mb[i], want[i]);
    /* 100 MiB: step 32 around 96: 32, 64, 96, 128, 160. */
    size_t n = cmt_whatif_default_ladder(100 * MiB, mb);
    cr_assert_eq(n, 5);
    cr_assert_eq(mb[0], 32);
    cr_assert_eq(mb[4], 160);
    /* Tiny requests: nothing below 20 MiB. */
    n = cmt_whatif_default_ladder(10 * MiB, mb);
    for (size_t i = 0; i < n; i++)
        cr_assert_geq(mb[i], 20);
}

/* ---- one pass, many observers ------------------------------------------ */

Test(whatif_stream, one_pass_with_oom_and_timeline_collects_the_same_stream)
{
    struct tb b;
    struct cmt_whatif_stream alone, shared;
    tb_open(&b, 24 * GiB, 20 * GiB);
    tb_alloc(&b, P(0), 3000 * MiB);
    tb_alloc(&b, P(1), 100 * MiB);
    tb_free(&b, P(0));
    tb_event(&b, API_ALLOC, 2, 0, 30 * GiB, 0, STACK_RAW); /* out of memory */
    tb_alloc(&b, P(1), 200 * MiB); /* reused without a free: the old tensor ends */
    tb_close(&b);
    load(&b, &alone);
    cr_assert_eq(alone.event_count, 6); /* the failed request too (issue 16 item 6; was 5) */
    cmt_reader *r = tb_reader(&b);
    cmt_replay *rp;
    cmt_oom *oom;
    struct cmt_timeline tl;
    struct cmt_whatif_collector *c;
    cr_assert_eq(cmt_replay_create(&rp, r), 0);
    cr_assert_eq(cmt_oom_create(&oom), 0);
    cr_assert_eq(cmt_timeline_init(&tl, 100), 0);
    cr_assert_eq(cmt_whatif_collector_create(&c, &shared), 0);
    struct cmt_observer obs[] = {cmt_oom_observer(oom), cmt_timeline_observer(&tl),
                                 cmt_whatif_observer(c)};
    int rc = cmt_replay_run(rp, obs, 3);
    struct cmt_err err = {0};
    cr_assert_eq(cmt_whatif_collector_end(c, rc, &err), 0, "%s", err.text);
    cr_assert_eq(shared.event_count, alone.event_count);
    cr_assert_eq(shared.failed_allocs, 1);
    for (size_t k = 0; k < alone.event_count; k++) {
        cr_assert_eq(ev_at(&shared, k).id, ev_at(&alone, k).id);
        cr_assert_eq(ev_at(&shared, k).size, ev_at(&alone, k).size);
        cr_assert_str_eq(shared.sites[ev_at(&shared, k).site], alone.sites[ev_at(&alone, k).site]);
    }
    cr_assert_eq(cmt_oom_count(oom), 1);
    cr_assert_eq(cmt_oom_episode(oom, 0)->request_bytes, 30 * GiB);
    cr_assert_eq(tl.device_count, 1); /* device 0's series: one per device seen */
    cr_assert_eq(tl.devices[0].dev, 0);
    cmt_whatif_collector_destroy(c);
    cmt_whatif_stream_free(&shared);
    cmt_whatif_stream_free(&alone);
    cmt_timeline_free(&tl);
    cmt_oom_destroy(oom);
    cmt_replay_destroy(rp);
    cmt_reader_close(r);
    cmt_membuf_free(&b.buf);
}

/* max_non_split_rounding_mb is a whatif setting: with 64 MiB the 120 MiB
 * request (>= max_split_size) reuses the cached 150 MiB block; with the
 * default 20 MiB (a zero field) it takes a segment of its own. */
Test(whatif_run, max_non_split_rounding_is_a_setting)
{
    struct cmt_whatif_event ev[] = {
        {.size = 150 * MiB, .id = 0}, {.is_free = 1, .id = 0}, {.size = 120 * MiB, .id = 1}};
    struct cmt_whatif_stream s;
    cr_assert_eq(cmt_whatif_stream_from_events(ev, 3, 2, 0, 0, &s), 0);
    struct cmt_whatif_setting st[2] = {
        {.max_split_size = 100 * MiB},
        {.max_split_size = 100 * MiB, .max_non_split_rounding = 64 * MiB}};
    struct cmt_whatif_result res[2];
    cmt_whatif_run(&s, GiB, GiB, st, 2, 1, res);
    cr_assert_not(res[0].oom || res[1].oom);
    cr_assert_eq(res[0].peak_reserved, 270 * MiB);
    cr_assert_eq(res[0].device_alloc_calls, 2);
    cr_assert_eq(res[1].peak_reserved, 150 * MiB);
    cr_assert_eq(res[1].device_alloc_calls, 1);
    char conf[96];
    cmt_whatif_setting_conf(&st[0], conf, sizeof conf);
    cr_assert_str_eq(conf, "max_split_size_mb:100");
    cmt_whatif_setting_conf(&st[1], conf, sizeof conf);
    cr_assert_str_eq(conf, "max_split_size_mb:100,max_non_split_rounding_mb:64");
    struct cmt_whatif_setting d;
    cmt_whatif_setting_default(&d);
    cr_assert_eq(d.max_non_split_rounding, 20 * MiB);
    cmt_whatif_stream_free(&s);
}

/* ---- issue 16 items 4, 5 and 7 ---------------------------------------- */

/* Push n varied events, read them back through a cursor and (every `every`th) one by one.
 * @return the stream's bytes in memory once every event was pushed. */
static size_t roundtrip(size_t N, size_t every)
{
    struct cmt_whatif_stream s;
    memset(&s, 0, sizeof s);
    uint64_t rng = 16;
    struct cmt_whatif_event *want = calloc(N, sizeof *want);
    cr_assert(want);
    uint32_t fresh = 0;
    for (size_t k = 0; k < N; k++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        bool is_free = k % 3 == 2;
        want[k] = (struct cmt_whatif_event){
            .size = is_free ? 0 : (rng >> 20) % (k % 7 ? (1ull << 40) : UINT64_MAX),
            .stream = is_free               ? 0
                      : (rng >> 8) % 3 == 0 ? rng
                                            : 0,
            .t_ns = k % 11 ? 1000 * k : 1000 * k - 999, /* goes back now and then */
            .seq = k * 2 + (rng & 1),
            .id = (uint32_t)(k % 5 == 4 && !is_free ? CMT_WHATIF_NEW_ID : (rng >> 33) % 100000),
            .site = is_free ? 0 : (uint32_t)(rng >> 40),
            .is_free = is_free,
            .failed = !is_free && k % 5 == 4};
        fresh += want[k].id == CMT_WHATIF_NEW_ID;
        cr_assert_eq(cmt_whatif_stream_push(&s, &want[k]), 0);
    }
    s.id_count = 100000;
    cmt_whatif_stream_finish(&s);
    cr_assert_eq(s.event_count, N);
    cr_assert_eq(s.id_count, 100000 + fresh);
    cr_assert_lt(cmt_whatif_stream_bytes(&s), N * sizeof(struct cmt_whatif_event) / 2);
    struct cmt_whatif_cursor c;
    struct cmt_whatif_event e;
    uint32_t new_ids = 0;
    cmt_whatif_cursor_init(&c, &s);
    for (size_t k = 0; k < N; k++) {
        cr_assert(cmt_whatif_cursor_next(&c, &e));
        uint32_t id = want[k].id == CMT_WHATIF_NEW_ID ? 100000 + new_ids++ : want[k].id;
        cr_assert_eq(e.id, id, "event %zu", k);
        cr_assert_eq(e.size, want[k].size);
        cr_assert_eq(e.stream, want[k].stream);
        cr_assert_eq(e.is_free, want[k].is_free);
        cr_assert_eq(e.failed, want[k].failed);
        if (k % every)
            continue;
        struct cmt_whatif_event all = ev_at(&s, k);
        cr_assert_eq(all.id, id, "event %zu", k);
        cr_assert_eq(all.seq, want[k].seq);
        cr_assert_eq(all.t_ns, want[k].t_ns);
        cr_assert_eq(all.site, want[k].site);
        cr_assert_eq(all.size, want[k].size);
    }
    cr_assert_not(cmt_whatif_cursor_next(&c, &e));
    cr_assert_eq(cmt_whatif_stream_event(&s, N, &e), CMT_EINVALID);
    cr_assert_eq(cmt_whatif_stream_push(&s, &want[0]), CMT_EINVALID); /* finished */
    size_t memory = cmt_whatif_stream_memory(&s);
    cmt_whatif_stream_free(&s);
    free(want);
    return memory;
}

Test(whatif_stream, the_compact_encoding_gives_back_every_field)
{
    roundtrip(5000, 1);
}

/* 400000 events take about 8 MiB: most of it goes to the temporary file, and reads back. */
Test(whatif_stream, a_long_stream_keeps_a_bounded_tail_in_memory)
{
    size_t memory = roundtrip(400000, 97);
    cr_assert_leq(memory, 3 * (CMT_WHATIF_LOG_TAIL + 4096), "%zu bytes in memory", memory);
}

/* Without a writable temporary directory the stream stays whole in memory, and correct. */
Test(whatif_stream, without_a_temporary_file_the_stream_stays_in_memory)
{
    setenv("TMPDIR", "/nonexistent/cumemtrace-test", 1);
    size_t memory = roundtrip(400000, 97);
    unsetenv("TMPDIR");
    cr_assert_gt(memory, 3 * (CMT_WHATIF_LOG_TAIL + 4096), "%zu bytes in memory", memory);
}

/* After the OOM path releases two cached segments, first fit puts the next segment where they
 * were and never-reuse above everything; two free 50 MiB blocks then tie, the lower address
 * goes first, and only under never-reuse is the whole (releasable) one left for the last
 * request. */
static void release_tie(struct cmt_whatif_stream *s)
{
    static const struct {
        int free;
        uint32_t id;
        uint64_t mib;
    } script[] = {{0, 0, 40}, {0, 1, 40}, {0, 2, 100}, {1, 0, 0},  {1, 1, 0},  {0, 3, 50},
                  {1, 2, 0},  {0, 4, 50}, {1, 3, 0},   {0, 5, 50}, {0, 6, 100}};
    struct cmt_whatif_event ev[11];
    for (size_t k = 0; k < 11; k++)
        ev[k] = (struct cmt_whatif_event){.size = script[k].mib * MiB,
                                          .seq = k,
                                          .id = script[k].id,
                                          .is_free = (uint8_t)script[k].free};
    cr_assert_eq(cmt_whatif_stream_from_events(ev, 11, 7, 220 * MiB, 220 * MiB, s), 0);
}

Test(whatif_run, an_oom_verdict_that_depends_on_the_addresses_is_borderline)
{
    struct cmt_whatif_stream s;
    release_tie(&s);
    struct cmt_whatif_setting st[2];
    cmt_whatif_setting_default(&st[0]);
    st[1] = split_mb(4096);
    struct cmt_whatif_result res[2];
    struct cmt_whatif_device dev = {
        .capacity = 220 * MiB, .device_total = 220 * MiB, .check_other_policy = true};
    cr_assert_eq(cmt_whatif_run_on(&s, &dev, st, 2, 1, res), 0);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(res[i].address_policy, CMT_MODEL_ADDRESSES_NEVER_REUSE);
        cr_assert_not(res[i].oom, "never-reuse fits");
        cr_assert(res[i].addresses_diverged);
        cr_assert(res[i].other_checked);
        cr_assert(res[i].other_oom, "first fit runs out of memory");
        cr_assert_eq(res[i].other_oom_event, 10);
        cr_assert(res[i].borderline);
    }
    /* The other way round: first fit's figures, never-reuse checked. */
    dev.address_policy = CMT_MODEL_ADDRESSES_FIRST_FIT;
    cr_assert_eq(cmt_whatif_run_on(&s, &dev, st, 1, 1, res), 0);
    cr_assert(res[0].oom);
    cr_assert_eq(res[0].oom_event, 10);
    cr_assert(res[0].borderline);
    cr_assert_not(res[0].other_oom);
    /* Without the check nothing is borderline. */
    dev.check_other_policy = false;
    cr_assert_eq(cmt_whatif_run_on(&s, &dev, st, 1, 1, res), 0);
    cr_assert_not(res[0].other_checked);
    cr_assert_not(res[0].borderline);
    dev.address_policy = CMT_MODEL_ADDRESS_POLICY_COUNT;
    cr_assert_eq(cmt_whatif_run_on(&s, &dev, st, 1, 1, res), CMT_EINVALID);
    cmt_whatif_stream_free(&s);
}

Test(whatif_run, addresses_that_cannot_differ_are_not_replayed_twice)
{
    struct tb b;
    struct cmt_whatif_stream s;
    tb_writeup(&b);
    load(&b, &s);
    struct cmt_whatif_setting st[3] = {split_mb(0), split_mb(4096), split_mb(8192)};
    cmt_whatif_setting_default(&st[0]);
    struct cmt_whatif_result res[3];
    struct cmt_whatif_device dev = {
        .capacity = s.device_free, .device_total = s.device_total, .check_other_policy = true};
    cr_assert_eq(cmt_whatif_run_on(&s, &dev, st, 3, 1, res), 0);
    for (int i = 0; i < 3; i++) {
        cr_assert_not(res[i].addresses_diverged, "setting %d", i);
        cr_assert_not(res[i].other_checked);
        cr_assert_not(res[i].borderline);
    }
    cmt_whatif_stream_free(&s);
    cmt_membuf_free(&b.buf);
}

Test(whatif_run, the_recommendation_prefers_a_setting_that_fits_under_both_policies)
{
    struct cmt_whatif_result res[2];
    memset(res, 0, sizeof res);
    cmt_whatif_setting_default(&res[0].setting);
    res[1].setting = split_mb(4096);
    res[0].peak_reserved = 1 * GiB; /* lower, but borderline */
    res[0].borderline = true;
    res[1].peak_reserved = 2 * GiB;
    struct cmt_whatif_recommendation rec;
    cmt_whatif_recommend(res, 2, &rec);
    cr_assert_eq(rec.best, 1);
    res[1].borderline = true;
    cmt_whatif_recommend(res, 2, &rec);
    cr_assert_eq(rec.best, 0, "all borderline: the lowest peak");
}

/* Old cached segments are collected once reserved passes threshold x cap: only with a memory
 * fraction (PyTorch 2.x), and the cap refuses before the driver is asked. */
Test(whatif_run, garbage_collection_acts_only_with_a_memory_fraction)
{
    /* Two cached 300 MiB segments, then a request they cannot hold: over threshold x cap
     * (0.5 x 0.9 GiB) GC releases them first, so no retry; without GC the 400 MiB is over the
     * cap, so release-and-retry. */
    struct cmt_whatif_event ev[] = {{.size = 300 * MiB, .id = 0},
                                    {.size = 300 * MiB, .id = 1},
                                    {.id = 0, .is_free = 1},
                                    {.id = 1, .is_free = 1},
                                    {.size = 400 * MiB, .id = 2}};
    struct cmt_whatif_stream s;
    cr_assert_eq(cmt_whatif_stream_from_events(ev, 5, 3, GiB, GiB, &s), 0);
    struct cmt_whatif_setting gc, none;
    cmt_whatif_setting_default(&gc);
    cmt_whatif_setting_default(&none);
    gc.garbage_collection_threshold = 0.5;
    struct cmt_whatif_result r_gc, r_none, r_nofrac, r_nogc_frac;
    struct cmt_whatif_device dev = {.capacity = GiB, .device_total = GiB, .memory_fraction = 0.9};
    cr_assert_eq(cmt_whatif_run_on(&s, &dev, &gc, 1, 1, &r_gc), 0);
    cr_assert_eq(cmt_whatif_run_on(&s, &dev, &none, 1, 1, &r_nogc_frac), 0);
    dev.memory_fraction = 0;
    cr_assert_eq(cmt_whatif_run_on(&s, &dev, &gc, 1, 1, &r_nofrac), 0);
    cr_assert_eq(cmt_whatif_run_on(&s, &dev, &none, 1, 1, &r_none), 0);
    /* Without a fraction the threshold changes nothing. */
    cr_assert_eq(r_nofrac.peak_reserved, r_none.peak_reserved);
    cr_assert_eq(r_nofrac.device_free_calls, r_none.device_free_calls);
    cr_assert_eq(r_nofrac.oom, r_none.oom);
    cr_assert_eq(r_none.alloc_retries, 0);
    cr_assert_eq(r_none.device_free_calls, 0, "1000 MiB fits the device");
    /* With one, GC releases the old segments before the cap is reached. */
    cr_assert_eq(r_gc.alloc_retries, 0);
    cr_assert_eq(r_gc.device_free_calls, 2);
    cr_assert_eq(r_nogc_frac.alloc_retries, 1);
    cr_assert_eq(r_nogc_frac.device_free_calls, 2);
    cr_assert_not(r_gc.oom);
    cr_assert_eq(
        cmt_whatif_run_on(&s, &(struct cmt_whatif_device){.capacity = GiB, .memory_fraction = 1.5},
                          &gc, 1, 1, &r_gc),
        CMT_EINVALID);
    cmt_whatif_stream_free(&s);
}

Test(whatif_run, the_fraction_cap_refuses_before_the_driver)
{
    struct cmt_whatif_event ev[] = {{.size = 600 * MiB, .id = 0}, {.size = 600 * MiB, .id = 1}};
    struct cmt_whatif_stream s;
    cr_assert_eq(cmt_whatif_stream_from_events(ev, 2, 2, GiB, GiB, &s), 0);
    struct cmt_whatif_setting st;
    cmt_whatif_setting_default(&st);
    struct cmt_whatif_result r;
    struct cmt_whatif_device dev = {.capacity = GiB, .device_total = GiB, .memory_fraction = 0.5};
    cr_assert_eq(cmt_whatif_run_on(&s, &dev, &st, 1, 1, &r), 0);
    cr_assert(r.oom);
    cr_assert_eq(r.oom_event, 0, "600 MiB is over the 512 MiB cap");
    cr_assert_eq(r.device_alloc_calls, 0, "the driver is never asked");
    cr_assert_eq(r.stats.num_ooms, 1);
    cr_assert_eq(r.oom_info.allowed, 512 * MiB);
    cmt_whatif_stream_free(&s);
}

Test(whatif_stream, the_pytorch_version_comes_from_env_records)
{
    cr_assert(cmt_whatif_torch_prints_1x("1.13.1"));
    cr_assert(cmt_whatif_torch_prints_1x("2.0.1+cu118"));
    cr_assert(cmt_whatif_torch_prints_1x("0.4.1"));
    cr_assert_not(cmt_whatif_torch_prints_1x("2.1.0a0+32f93b1"));
    cr_assert_not(cmt_whatif_torch_prints_1x("2.6.0"));
    cr_assert_not(cmt_whatif_torch_prints_1x("10.0"));
    cr_assert_not(cmt_whatif_torch_prints_1x(""));
    cr_assert_not(cmt_whatif_torch_prints_1x("v1.13"));
    cr_assert_not(cmt_whatif_torch_prints_1x(NULL));
    struct tb b;
    struct cmt_whatif_stream s;
    tb_open(&b, 8 * GiB, 6 * GiB);
    cr_assert_eq(cmt_writer_env(b.w, "PYTORCH_BUILD_VERSION", "1.12.0"), 0);
    cr_assert_eq(cmt_writer_env(b.w, "PYTORCH_VERSION", "1.13.1 extra"), 0);
    tb_alloc(&b, P(0), 64 * MiB);
    tb_close(&b);
    load(&b, &s);
    cr_assert_str_eq(s.torch_version, "1.13.1", "PYTORCH_VERSION first");
    cr_assert_str_eq(s.torch_version_source, "PYTORCH_VERSION");
    cmt_whatif_stream_free(&s);
    cmt_membuf_free(&b.buf);
    tb_open(&b, 8 * GiB, 6 * GiB);
    cr_assert_eq(cmt_writer_module(
                     b.w, &(struct cmt_module){1,
                                               "/opt/conda/pkgs/pytorch-1.13.1-py3.9_cuda11.7/lib/"
                                               "python3.9/site-packages/torch/lib/libc10_cuda.so",
                                               0x7000000, 0x100000, NULL, 0}),
                 0);
    tb_alloc(&b, P(0), 64 * MiB);
    tb_close(&b);
    load(&b, &s);
    cr_assert_str_eq(s.torch_version, "1.13.1");
    cr_assert_str_eq(s.torch_version_source, "a loaded module's path");
    cmt_whatif_stream_free(&s);
    cmt_membuf_free(&b.buf);
    tb_writeup(&b);
    load(&b, &s);
    cr_assert_str_empty(s.torch_version);
    cmt_whatif_stream_free(&s);
    cmt_membuf_free(&b.buf);
}
