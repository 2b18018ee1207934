#include "trace_fixture.h"

#include <stdlib.h>
#include <zstd.h>

Test(writer_reader, round_trips_every_record_type)
{
    struct cmt_membuf buf = {0};
    fixture_write(&buf, 0);
    cmt_reader *r;
    cr_assert_eq(cmt_reader_open_memory(&r, buf.data, buf.len), 0);
    struct cmt_record rec;
    uint64_t events = 0, seen[CMT_REC_MAX] = {0};
    int rc;
    while ((rc = cmt_reader_next(r, &rec)) > 0) {
        seen[rec.type]++;
        switch (rec.type) {
        case CMT_REC_PROCESS:
            cr_assert_eq(rec.u.process.pid, 4242);
            cr_assert_eq(rec.u.process.start_mono_ns, 123456789);
            cr_assert_eq(rec.u.process.driver_version, 13000);
            cr_assert_str_eq(rec.u.process.hostname, "host");
            cr_assert_eq(rec.u.process.argc, 3);
            cr_assert_str_eq(rec.u.process.argv[2], "x y");
            break;
        case CMT_REC_ENV:
            cr_assert_str_eq(rec.u.env.value, "max_split_size_mb:6144");
            break;
        case CMT_REC_MODULE:
            cr_assert_eq(rec.u.module.base, 0x400000);
            cr_assert_eq(rec.u.module.build_id_len, 4);
            cr_assert_eq(rec.u.module.build_id[3], 0xef);
            break;
        case CMT_REC_DEVICE:
            cr_assert_eq(rec.u.device.total_bytes, 24ull << 30);
            break;
        case CMT_REC_EVENT: {
            const struct cmt_event *e = &rec.u.event;
            cr_assert_eq(e->seq, events);
            cr_assert_eq(e->t_ns, 1000 + events * 10);
            cr_assert_eq(e->api, 1 + (events & 1));
            cr_assert_eq(e->result, events == 7 ? 2 : 0);
            cr_assert_eq(e->fields, CMT_F(PTR) | CMT_F(SIZE));
            cr_assert_eq(e->v[CMT_FIELD_PTR], 0x7f0000000000ull + (events / 2) * 0x200000);
            cr_assert_eq(e->v[CMT_FIELD_SIZE], 12345678 + events);
            events++;
            break;
        }
        case CMT_REC_MEMINFO:
            cr_assert_eq(rec.u.meminfo.t_ns, 20000);
            cr_assert_eq(rec.u.meminfo.reason, CMT_MEMINFO_OOM);
            cr_assert_eq(rec.u.meminfo.free_bytes, 1 << 20);
            cr_assert_eq(rec.u.meminfo.seq, 7);
            break;
        case CMT_REC_SIGNAL:
            cr_assert_eq(rec.u.signal.signo, 11);
            break;
        case CMT_REC_END:
            cr_assert_eq(rec.u.end.events, FIXTURE_EVENTS);
            break;
        }
    }
    cr_assert_eq(rc, 0, "clean end expected, got %d (%s)", rc, cmt_reader_damage(r));
    for (int t = 1; t < CMT_REC_MAX; t++)
        cr_assert(seen[t] > 0, "record type %s not seen", cmt_record_name(t));
    cr_assert_eq(events, FIXTURE_EVENTS);
    cr_assert(cmt_reader_clean_exit(r));
    cr_assert_eq(cmt_reader_seq_gaps(r), 0);
    cr_assert_str_eq(cmt_reader_api(r, 2)->name, "cuMemFree_v2");
    cr_assert_str_eq(cmt_reader_thread_name(r, 77), "worker");
    struct cmt_stack_node n;
    cr_assert_eq(cmt_reader_stack_node(r, 2, &n), 0);
    cr_assert_eq(n.parent, 1);
    char frame[128];
    cmt_reader_format_frame(r, 2, frame, sizeof frame);
    cr_assert_str_eq(frame, "main prog.c:42");
    cmt_reader_format_frame(r, 1, frame, sizeof frame);
    cr_assert_str_eq(frame, "prog+0x1000");
    cmt_reader_close(r);
    cmt_membuf_free(&buf);
}

Test(writer_reader, small_chunks_keep_deltas_correct)
{
    struct cmt_membuf one = {0}, many = {0};
    fixture_write(&one, 0);
    fixture_write(&many, 256);
    cr_assert(many.len > one.len); /* more chunk headers and frames */
    cmt_reader *a, *b;
    cr_assert_eq(cmt_reader_open_memory(&a, one.data, one.len), 0);
    cr_assert_eq(cmt_reader_open_memory(&b, many.data, many.len), 0);
    struct cmt_record ra, rb;
    int rca, rcb;
    while ((rca = cmt_reader_next(a, &ra)) > 0) {
        rcb = cmt_reader_next(b, &rb);
        cr_assert_eq(rcb, 1);
        cr_assert_eq(ra.type, rb.type);
        if (ra.type == CMT_REC_EVENT) {
            cr_assert_eq(ra.u.event.seq, rb.u.event.seq);
            cr_assert_eq(ra.u.event.t_ns, rb.u.event.t_ns);
        }
    }
    cr_assert_eq(rca, 0);
    cr_assert_eq(cmt_reader_next(b, &rb), 0);
    cmt_reader_close(a);
    cmt_reader_close(b);
    cmt_membuf_free(&one);
    cmt_membuf_free(&many);
}

Test(writer_reader, skips_unknown_record_types)
{
    struct cmt_membuf buf = {0};
    cmt_writer *w;
    cr_assert_eq(cmt_writer_create(&w, cmt_membuf_sink, &buf, NULL), 0);
    cr_assert_eq(cmt_writer_note(w, &(struct cmt_note){0, "before"}), 0);
    cr_assert_eq(cmt_writer_flush(w), 0);
    cmt_writer_destroy(w);
    /* Hand-build a chunk holding an unknown type 99 followed by a NOTE. */
    uint8_t raw[] = {99, 3, 1, 2, 3, CMT_REC_NOTE, 7, 0, 5, 'a', 'f', 't', 'e', 'r'};
    size_t bound = ZSTD_compressBound(sizeof raw);
    uint8_t *chunk = malloc(16 + bound);
    size_t n = ZSTD_compress(chunk + 16, bound, raw, sizeof raw, 1);
    uint32_t hdr[4] = {CMT_CHUNK_MAGIC, (uint32_t)n, sizeof raw, 2};
    memcpy(chunk, hdr, 16); /* little-endian host */
    cmt_membuf_sink(&buf, chunk, 16 + n);
    free(chunk);
    cmt_reader *r;
    cr_assert_eq(cmt_reader_open_memory(&r, buf.data, buf.len), 0);
    struct cmt_record rec;
    cr_assert_eq(cmt_reader_next(r, &rec), 1);
    cr_assert_str_eq(rec.u.note.text, "before");
    cr_assert_eq(cmt_reader_next(r, &rec), 1);
    cr_assert_eq(rec.type, CMT_REC_NOTE);
    cr_assert_str_eq(rec.u.note.text, "after");
    cr_assert_eq(cmt_reader_next(r, &rec), 0);
    cmt_reader_close(r);
    cmt_membuf_free(&buf);
}

Test(writer_reader, compresses_repetitive_events_below_four_bytes_each)
{
    struct cmt_membuf buf = {0};
    cmt_writer *w;
    cr_assert_eq(cmt_writer_create(&w, cmt_membuf_sink, &buf, NULL), 0);
    uint64_t t = 0;
    for (uint64_t i = 0; i < 100000; i++) {
        struct cmt_event e = {.seq = i, .t_ns = t += 40 + (i * 7919) % 23, .tid = 1000,
                              .api = 1 + (i & 1), .dev = 0, .stack = 9,
                              .fields = CMT_F(PTR) | ((i & 1) ? 0 : CMT_F(SIZE))};
        e.v[CMT_FIELD_PTR] = 0x7f0000000000ull;
        e.v[CMT_FIELD_SIZE] = 1 << 20;
        cr_assert_eq(cmt_writer_event(w, &e), 0);
    }
    cr_assert_eq(cmt_writer_flush(w), 0);
    cmt_writer_destroy(w);
    cr_assert_lt((double)buf.len / 100000, 4.0, "%.2f bytes/event", (double)buf.len / 100000);
    cmt_membuf_free(&buf);
}
