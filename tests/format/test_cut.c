/* A trace cut inside its only chunk keeps the whole events before the cut (issue 12 item 4):
 * the reader decodes the cut zstd frame as far as it goes. */
#include <inttypes.h>

#include "trace_fixture.h"
#include "varint.h"

#ifndef CMT_CUT_GROUP
#define CMT_CUT_GROUP CMT_GROUP_EVENTS_MAX
#endif

enum { CUT_EVENTS = 30000 };

static struct cmt_event cut_events[CUT_EVENTS];

/* One chunk: a PROCESS record, then CUT_EVENTS events of random addresses and sizes (about 8
 * raw bytes each, so the chunk spans several 128 KiB zstd blocks). */
static void write_one_chunk(struct cmt_membuf *buf)
{
    cmt_writer *w;
    struct cmt_writer_options opt = {.chunk_bytes = 16u << 20, .raw_literals = 1};
    cr_assert_eq(cmt_writer_create(&w, cmt_membuf_sink, buf, &opt), 0);
    const char *argv[] = {"./prog"};
    cr_assert_eq(cmt_writer_process(w, &(struct cmt_process){.pid = 1,
                                                             .exe = "/bin/prog",
                                                             .argc = 1,
                                                             .argv = argv,
                                                             .rank = -1,
                                                             .local_rank = -1,
                                                             .world_size = -1}),
                 0);
    uint64_t rng = 99, t = 0;
    for (int i = 0; i < CUT_EVENTS; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        struct cmt_event *e = &cut_events[i];
        *e = (struct cmt_event){.seq = (uint64_t)i,
                                .t_ns = t += 100 + (rng >> 60),
                                .tid = 7,
                                .api = 1 + (i & 1),
                                .fields = CMT_F(PTR) | CMT_F(SIZE)};
        e->v[CMT_FIELD_PTR] = 0x7f0000000000ull + ((rng >> 20) & 0xffffff000ull);
        e->v[CMT_FIELD_SIZE] = (rng >> 40) & 0xffffff;
        cr_assert_eq(cmt_writer_event(w, e), 0);
    }
    cr_assert_eq(cmt_writer_flush(w), 0);
    cmt_writer_destroy(w);
}

/* The events of each record of the decompressed chunk, and where each record ends. */
struct layout {
    size_t n, ends[CUT_EVENTS + 2];
    uint64_t events[CUT_EVENTS + 2];
};

static void chunk_layout(const uint8_t *raw, size_t len, struct layout *l)
{
    const uint8_t *p = raw, *end = raw + len;
    l->n = 0;
    while (p < end) {
        uint64_t type, rlen, count = 0;
        cr_assert_eq(cmt__get_varint(&p, end, &type), 0);
        cr_assert_eq(cmt__get_varint(&p, end, &rlen), 0);
        const uint8_t *q = p;
        if (type == CMT_REC_EVENTS)
            cr_assert_eq(cmt__get_varint(&q, end, &count), 0);
        p += rlen;
        l->ends[l->n] = (size_t)(p - raw);
        l->events[l->n++] = count;
    }
}

/* Bytes of the chunk that zstd itself decodes from the first `avail` bytes of its frame. */
static size_t decodable(ZSTD_DCtx *d, const uint8_t *frame, size_t avail, uint8_t *out, size_t cap)
{
    ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
    ZSTD_inBuffer in = {frame, avail, 0};
    ZSTD_outBuffer o = {out, cap, 0};
    while (in.pos < in.size) {
        size_t before = in.pos + o.pos;
        size_t rc = ZSTD_decompressStream(d, &o, &in);
        cr_assert(!ZSTD_isError(rc), "%s", ZSTD_getErrorName(rc));
        if (rc == 0 || in.pos + o.pos == before)
            break;
    }
    return o.pos;
}

/* Cut at a dense sample of offsets in the chunk: the events read are the first ones written,
 * all those in records that lie wholly in the part zstd can decode, and each step of the cut
 * adds at most one group of CMT_GROUP_EVENTS_MAX events. */
Test(cut, a_cut_chunk_keeps_every_whole_event_before_the_cut)
{
    struct cmt_membuf buf = {0};
    write_one_chunk(&buf);
    const size_t chunk = CMT_FILE_HEADER_SIZE, frame = chunk + CMT_CHUNK_HEADER_SIZE;
    uint32_t rsize;
    memcpy(&rsize, buf.data + chunk + 8, 4);
    cr_assert_gt(rsize, 3u << 17, "the chunk should span several zstd blocks");
    uint8_t *raw = malloc(rsize);
    size_t full = ZSTD_decompress(raw, rsize, buf.data + frame, buf.len - frame);
    cr_assert_eq(full, rsize);
    static struct layout l;
    chunk_layout(raw, rsize, &l);
    ZSTD_DCtx *d = ZSTD_createDCtx();
    uint64_t prev = 0, max_step = 0;
    size_t cuts = 0;
    for (size_t cut = frame; cut < buf.len; cut += cut + 64 < buf.len ? 61 : 1, cuts++) {
        size_t ok = decodable(d, buf.data + frame, cut - frame, raw, rsize);
        uint64_t whole = 0;
        for (size_t i = 0; i < l.n && l.ends[i] <= ok; i++)
            whole += l.events[i];
        cmt_reader *r;
        cr_assert_eq(cmt_reader_open_memory(&r, buf.data, cut), 0);
        struct cmt_record rec;
        uint64_t got = 0;
        int rc;
        while ((rc = cmt_reader_next(r, &rec)) > 0) {
            if (rec.type != CMT_REC_EVENT)
                continue;
            const struct cmt_event *e = &rec.u.event, *want = &cut_events[got];
            cr_assert(e->seq == want->seq && e->t_ns == want->t_ns &&
                          e->v[CMT_FIELD_PTR] == want->v[CMT_FIELD_PTR] &&
                          e->v[CMT_FIELD_SIZE] == want->v[CMT_FIELD_SIZE],
                      "cut %zu: event %" PRIu64 " differs", cut, got);
            got++;
        }
        cr_assert_eq(rc, CMT_ETRUNCATED, "cut %zu", cut);
        cr_assert_eq(cmt_reader_damage_offset(r), chunk);
        cr_assert_geq(got, whole, "cut %zu: %" PRIu64 " events of %" PRIu64 " whole", cut, got,
                      whole);
        cr_assert_geq(got, prev, "cut %zu: events went backwards", cut);
        if (got - prev > max_step)
            max_step = got - prev;
        prev = got;
        cmt_reader_close(r);
    }
    cr_assert_eq(prev, CUT_EVENTS, "a frame cut in its checksum keeps every event");
    cr_assert_leq(max_step, CMT_CUT_GROUP, "a cut lost %" PRIu64 " events", max_step);
    cr_log_info("%zu cuts of a %zu-byte chunk; at most %" PRIu64 " events appear at once\n", cuts,
                buf.len - chunk, max_step);
    ZSTD_freeDCtx(d);
    free(raw);
    cmt_membuf_free(&buf);
}
