/* parquet_writer.c — see parquet_writer.h. The numbers are parquet.thrift's: Type, Encoding,
 * CompressionCodec, PageType, FieldRepetitionType, ConvertedType and the field ids of
 * FileMetaData, SchemaElement, RowGroup, ColumnChunk, ColumnMetaData and PageHeader. */
#include "export/parquet_writer.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "cmt_debug.h"
#include "cmt_grow.h"
#include "export/thrift_compact.h"
#include "varint.h"

enum { TYPE_BOOLEAN = 0, TYPE_INT64 = 2, TYPE_DOUBLE = 5, TYPE_BYTE_ARRAY = 6 };
enum { ENC_PLAIN = 0, ENC_RLE = 3, ENC_DELTA_BINARY_PACKED = 5, ENC_RLE_DICTIONARY = 8 };
enum { CODEC_UNCOMPRESSED = 0, CODEC_ZSTD = 6 };
enum { PAGE_DATA = 0, PAGE_DICTIONARY = 2 };
enum { REPETITION_OPTIONAL = 1 };
enum { CONVERTED_UTF8 = 0, CONVERTED_UINT_64 = 14 };

/* PLAIN int64s, doubles and the dictionary indices are the host's bytes as they are. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "Parquet is little-endian");

/* DELTA_BINARY_PACKED's shape: blocks of 128 deltas in 4 miniblocks of 32. */
#define DELTA_BLOCK 128
#define DELTA_MINIBLOCKS 4
#define DELTA_MINIBLOCK (DELTA_BLOCK / DELTA_MINIBLOCKS)

/* What the footer says of one column chunk. */
struct chunk_meta {
    int32_t encoding;                       /* of the data page's values */
    int64_t dictionary_offset, data_offset; /* dictionary_offset -1: none */
    int64_t uncompressed, compressed;       /* page headers included */
};

/* A string column's dictionary for the current row group: the entries, PLAIN-encoded (a
 * 4-byte length and the bytes), and a hash set of their indices. */
struct dictionary {
    struct cmt__bytes plain;
    uint32_t *offsets; /* per entry: where it starts in plain */
    uint32_t count, cap;
    uint32_t *slots; /* index + 1, 0: empty; nslots a power of two */
    uint32_t nslots;
};

struct column {
    const char *name;
    char type;
    struct cmt__bytes def;    /* per row: 1 a value, 0 a null */
    struct cmt__bytes values; /* int64, double, a byte per bool, uint32 dictionary indices */
    uint64_t count;           /* non-null values */
    struct dictionary dict;
};

struct cmt__parquet {
    FILE *f;
    int zstd, failed;
    ZSTD_CCtx *cctx;
    struct column *columns;
    unsigned ncolumns, column;
    uint64_t group_rows, total_rows;
    int64_t offset;                                /* bytes written so far */
    struct cmt__bytes page, delta, packed, header; /* scratch */
    struct group_meta {
        int64_t rows, offset, uncompressed, compressed;
    } * groups;
    size_t ngroups, groups_cap;
    struct chunk_meta *chunks; /* of row group g, column i: chunks[g * ncolumns + i] */
    size_t chunks_cap;
};

/* ---- bits: LSB first, as the hybrid encoding, DELTA_BINARY_PACKED and PLAIN bools pack ---- */
struct bit_writer {
    struct cmt__bytes *out;
    uint64_t acc;
    unsigned n; /* bits held in acc, < 64 */
};

static void put_le(struct cmt__bytes *b, uint64_t v, unsigned bytes)
{
    uint8_t buf[8];
    for (unsigned i = 0; i < bytes; i++)
        buf[i] = (uint8_t)(v >> (8 * i));
    cmt__bytes_put(b, buf, bytes);
}

static void bits_put(struct bit_writer *w, uint64_t v, unsigned width)
{
    if (!width)
        return;
    if (width < 64)
        v &= (UINT64_C(1) << width) - 1;
    w->acc |= v << w->n;
    unsigned total = w->n + width;
    if (total >= 64) {
        put_le(w->out, w->acc, 8);
        w->acc = w->n ? v >> (64 - w->n) : 0;
        total -= 64;
    }
    w->n = total;
}

static void bits_flush(struct bit_writer *w)
{
    put_le(w->out, w->acc, (w->n + 7) / 8);
    w->acc = 0;
    w->n = 0;
}

static unsigned width_of(uint64_t v)
{
    return v ? 64u - (unsigned)__builtin_clzll(v) : 0;
}

/* The RLE / bit-packed hybrid of n values of `width` bits: one RLE run when they are all
 * equal, else one bit-packed run (zero-padded to a multiple of 8 values). */
static void hybrid(struct cmt__bytes *out, const uint32_t *v, const uint8_t *v8, size_t n,
                   unsigned width)
{
#define HYBRID_AT(i) (v ? v[i] : v8[i])
    size_t i = 1;
    while (i < n && HYBRID_AT(i) == HYBRID_AT(0))
        i++;
    if (n && i == n) {
        cmt__bytes_uleb(out, (uint64_t)n << 1);
        put_le(out, HYBRID_AT(0), (width + 7) / 8);
        return;
    }
    size_t groups = (n + 7) / 8;
    cmt__bytes_uleb(out, (uint64_t)groups << 1 | 1);
    struct bit_writer w = {out, 0, 0};
    for (i = 0; i < groups * 8; i++)
        bits_put(&w, i < n ? HYBRID_AT(i) : 0, width);
    bits_flush(&w);
#undef HYBRID_AT
}

/* DELTA_BINARY_PACKED of n int64 values. */
static void delta_binary_packed(struct cmt__bytes *out, const int64_t *v, size_t n)
{
    cmt__bytes_uleb(out, DELTA_BLOCK);
    cmt__bytes_uleb(out, DELTA_MINIBLOCKS);
    cmt__bytes_uleb(out, n);
    uint64_t first = n ? (uint64_t)v[0] : 0;
    cmt__bytes_uleb(out, cmt__zigzag((int64_t)first));
    uint64_t d[DELTA_BLOCK];
    for (size_t at = 1; at < n; at += DELTA_BLOCK) {
        size_t m = n - at < DELTA_BLOCK ? n - at : DELTA_BLOCK;
        int64_t min = INT64_MAX;
        for (size_t i = 0; i < m; i++) {
            d[i] = (uint64_t)v[at + i] - (uint64_t)v[at + i - 1];
            if ((int64_t)d[i] < min)
                min = (int64_t)d[i];
        }
        cmt__bytes_uleb(out, cmt__zigzag(min));
        uint8_t widths[DELTA_MINIBLOCKS] = {0};
        for (size_t i = 0; i < m; i++) {
            d[i] -= (uint64_t)min;
            unsigned w = width_of(d[i]);
            if (w > widths[i / DELTA_MINIBLOCK])
                widths[i / DELTA_MINIBLOCK] = (uint8_t)w;
        }
        cmt__bytes_put(out, widths, sizeof widths);
        struct bit_writer w = {out, 0, 0};
        for (size_t mb = 0; mb * DELTA_MINIBLOCK < m; mb++) {
            for (size_t i = mb * DELTA_MINIBLOCK; i < (mb + 1) * DELTA_MINIBLOCK; i++)
                bits_put(&w, i < m ? d[i] : 0, widths[mb]);
            bits_flush(&w);
        }
    }
}

/* ---- pages ---- */
static void emit(struct cmt__parquet *w, const void *p, size_t n)
{
    if (w->failed || (n && fwrite(p, 1, n, w->f) != n))
        w->failed = 1;
    w->offset += (int64_t)n;
}

/* Compresses n bytes at p into w->packed (or copies them). @return 0, or -1. */
static int compress_body(struct cmt__parquet *w, const void *p, size_t n)
{
    w->packed.n = 0;
    if (!w->zstd)
        return cmt__bytes_put(&w->packed, p, n);
    if (cmt__bytes_reserve(&w->packed, ZSTD_compressBound(n)) != 0)
        return -1;
    size_t got = ZSTD_compressCCtx(w->cctx, w->packed.p, w->packed.cap, p, n,
                                   CMT__PARQUET_ZSTD_LEVEL);
    if (ZSTD_isError(got))
        return -1;
    w->packed.n = got;
    return 0;
}

/* Writes a page (its header, then w->packed, the compressed `body`) and counts it in m. */
static void write_page(struct cmt__parquet *w, struct chunk_meta *m, int type, size_t body,
                       uint32_t values, int32_t encoding)
{
    struct cmt__thrift t;
    if (body > INT32_MAX || w->packed.n > INT32_MAX) /* a page's size is an i32 */
        w->failed = 1;
    w->header.n = 0;
    cmt__thrift_begin(&t, &w->header);
    cmt__thrift_i32(&t, 1, type);
    cmt__thrift_i32(&t, 2, (int32_t)body);
    cmt__thrift_i32(&t, 3, (int32_t)w->packed.n);
    cmt__thrift_struct(&t, type == PAGE_DATA ? 5 : 7);
    cmt__thrift_i32(&t, 1, (int32_t)values);
    cmt__thrift_i32(&t, 2, encoding);
    if (type == PAGE_DATA) {
        cmt__thrift_i32(&t, 3, ENC_RLE); /* definition levels */
        cmt__thrift_i32(&t, 4, ENC_RLE); /* repetition levels (none: a flat schema) */
    }
    cmt__thrift_end(&t);
    cmt__thrift_end(&t);
    if (w->header.failed)
        w->failed = 1;
    if (type == PAGE_DATA)
        m->data_offset = w->offset;
    else
        m->dictionary_offset = w->offset;
    emit(w, w->header.p, w->header.n);
    emit(w, w->packed.p, w->packed.n);
    m->uncompressed += (int64_t)(w->header.n + body);
    m->compressed += (int64_t)(w->header.n + w->packed.n);
}

/* The page's definition levels: a 4-byte length, then the hybrid of width 1. */
static void definition_levels(struct cmt__bytes *page, const struct column *c)
{
    size_t at = page->n;
    put_le(page, 0, 4);
    hybrid(page, NULL, c->def.p, c->def.n, 1);
    if (!page->failed)
        cmt__put_le32(page->p + at, (uint32_t)(page->n - at - 4));
}

/* An INT64 column's values after the levels in w->page: PLAIN or DELTA_BINARY_PACKED,
 * whichever is smaller (compressed, when the pages are) over the first
 * CMT__PARQUET_INT64_SAMPLE values. @return its encoding. */
static int32_t int64_values(struct cmt__parquet *w, const struct column *c)
{
    const int64_t *v = (const int64_t *)(const void *)c->values.p;
    size_t n = c->count, sample = n < CMT__PARQUET_INT64_SAMPLE ? n : CMT__PARQUET_INT64_SAMPLE;
    w->delta.n = 0;
    delta_binary_packed(&w->delta, v, sample);
    size_t delta = w->delta.n, plain = sample * sizeof *v;
    if (w->zstd) {
        if (compress_body(w, w->delta.p, w->delta.n) != 0)
            w->failed = 1;
        delta = w->packed.n;
        if (compress_body(w, v, plain) != 0)
            w->failed = 1;
        plain = w->packed.n;
    }
    if (plain <= delta) {
        cmt__bytes_put(&w->page, v, n * sizeof *v); /* PLAIN: little-endian int64s */
        return ENC_PLAIN;
    }
    if (sample == n) /* the sample was the whole chunk: its encoding is the page's */
        cmt__bytes_put(&w->page, w->delta.p, w->delta.n);
    else
        delta_binary_packed(&w->page, v, n);
    return ENC_DELTA_BINARY_PACKED;
}

/* A string column: its dictionary page, then its indices after the levels. */
static int32_t string_values(struct cmt__parquet *w, struct column *c, struct chunk_meta *m)
{
    if (compress_body(w, c->dict.plain.p, c->dict.plain.n) != 0)
        w->failed = 1;
    write_page(w, m, PAGE_DICTIONARY, c->dict.plain.n, c->dict.count, ENC_PLAIN);
    unsigned width = width_of(c->dict.count - 1);
    uint8_t b = (uint8_t)width;
    cmt__bytes_put(&w->page, &b, 1);
    hybrid(&w->page, (const uint32_t *)(const void *)c->values.p, NULL, c->count, width);
    return ENC_RLE_DICTIONARY;
}

static void plain_values(struct cmt__parquet *w, const struct column *c)
{
    if (c->type != CMT__PARQUET_BOOLEAN) {
        cmt__bytes_put(&w->page, c->values.p, c->values.n);
        return;
    }
    struct bit_writer bw = {&w->page, 0, 0};
    for (size_t i = 0; i < c->values.n; i++)
        bits_put(&bw, c->values.p[i], 1);
    bits_flush(&bw);
}

/* One column's chunk of the current row group. */
static void write_chunk(struct cmt__parquet *w, struct column *c, struct chunk_meta *m)
{
    *m = (struct chunk_meta){.dictionary_offset = -1};
    w->page.n = 0;
    definition_levels(&w->page, c);
    int32_t encoding = ENC_PLAIN;
    if (c->count && (c->type == CMT__PARQUET_INT64 || c->type == CMT__PARQUET_UINT64))
        encoding = int64_values(w, c);
    else if (c->count && c->type == CMT__PARQUET_STRING)
        encoding = string_values(w, c, m);
    else if (c->count)
        plain_values(w, c);
    if (compress_body(w, w->page.p, w->page.n) != 0)
        w->failed = 1;
    write_page(w, m, PAGE_DATA, w->page.n, (uint32_t)c->def.n, encoding);
    m->encoding = encoding;
}

static void reset_column(struct column *c)
{
    c->def.n = 0;
    c->values.n = 0;
    c->count = 0;
    c->dict.plain.n = 0;
    c->dict.count = 0;
    if (c->dict.slots)
        memset(c->dict.slots, 0, c->dict.nslots * sizeof *c->dict.slots);
}

/* Writes the row group held (if any rows) and starts the next. */
static void write_group(struct cmt__parquet *w)
{
    if (!w->group_rows || w->failed)
        return;
    struct group_meta g = {.rows = (int64_t)w->group_rows, .offset = w->offset};
    if (CMT_GROW(w->groups, w->groups_cap, w->ngroups + 1, 4) != 0 ||
        CMT_GROW(w->chunks, w->chunks_cap, (w->ngroups + 1) * w->ncolumns, 4 * w->ncolumns) != 0) {
        w->failed = 1;
        return;
    }
    for (unsigned i = 0; i < w->ncolumns; i++) {
        struct chunk_meta *m = &w->chunks[w->ngroups * w->ncolumns + i];
        write_chunk(w, &w->columns[i], m);
        g.uncompressed += m->uncompressed;
        g.compressed += m->compressed;
        reset_column(&w->columns[i]);
    }
    w->groups[w->ngroups++] = g;
    w->total_rows += w->group_rows;
    w->group_rows = 0;
}

/* ---- the footer ---- */
/* The physical type of each enum cmt__parquet_type. */
static const int32_t physical[128] = {[CMT__PARQUET_INT64] = TYPE_INT64,
                                      [CMT__PARQUET_UINT64] = TYPE_INT64,
                                      [CMT__PARQUET_BOOLEAN] = TYPE_BOOLEAN,
                                      [CMT__PARQUET_DOUBLE] = TYPE_DOUBLE,
                                      [CMT__PARQUET_STRING] = TYPE_BYTE_ARRAY};

static void write_schema(struct cmt__thrift *t, const struct cmt__parquet *w)
{
    cmt__thrift_list(t, 2, CMT__THRIFT_STRUCT, w->ncolumns + 1);
    cmt__thrift_list_struct(t); /* the root */
    cmt__thrift_string(t, 4, "schema");
    cmt__thrift_i32(t, 5, (int32_t)w->ncolumns);
    cmt__thrift_end(t);
    for (unsigned i = 0; i < w->ncolumns; i++) {
        const struct column *c = &w->columns[i];
        cmt__thrift_list_struct(t);
        cmt__thrift_i32(t, 1, physical[(unsigned char)c->type]);
        cmt__thrift_i32(t, 3, REPETITION_OPTIONAL);
        cmt__thrift_string(t, 4, c->name);
        if (c->type == CMT__PARQUET_STRING) {
            cmt__thrift_i32(t, 6, CONVERTED_UTF8);
            cmt__thrift_struct(t, 10); /* LogicalType */
            cmt__thrift_struct(t, 1);  /* STRING: StringType, no fields */
            cmt__thrift_end(t);
            cmt__thrift_end(t);
        } else if (c->type == CMT__PARQUET_UINT64) {
            cmt__thrift_i32(t, 6, CONVERTED_UINT_64);
            cmt__thrift_struct(t, 10);  /* LogicalType */
            cmt__thrift_struct(t, 10);  /* INTEGER: IntType */
            cmt__thrift_byte(t, 1, 64); /* bitWidth */
            cmt__thrift_bool(t, 2, 0);  /* isSigned */
            cmt__thrift_end(t);
            cmt__thrift_end(t);
        }
        cmt__thrift_end(t);
    }
}

static void write_column_meta(struct cmt__thrift *t, const struct cmt__parquet *w,
                              const struct column *c, const struct chunk_meta *m, int64_t rows)
{
    int dict = m->dictionary_offset >= 0;
    cmt__thrift_list_struct(t); /* ColumnChunk */
    cmt__thrift_i64(t, 2, dict ? m->dictionary_offset : m->data_offset);
    cmt__thrift_struct(t, 3); /* ColumnMetaData */
    cmt__thrift_i32(t, 1, physical[(unsigned char)c->type]);
    cmt__thrift_list(t, 2, CMT__THRIFT_I32, m->encoding == ENC_PLAIN ? 2 : 3);
    cmt__thrift_list_i32(t, ENC_RLE);
    cmt__thrift_list_i32(t, ENC_PLAIN);
    if (m->encoding != ENC_PLAIN)
        cmt__thrift_list_i32(t, m->encoding);
    cmt__thrift_list(t, 3, CMT__THRIFT_BINARY, 1);
    cmt__thrift_list_string(t, c->name);
    cmt__thrift_i32(t, 4, w->zstd ? CODEC_ZSTD : CODEC_UNCOMPRESSED);
    cmt__thrift_i64(t, 5, rows); /* values, nulls included */
    cmt__thrift_i64(t, 6, m->uncompressed);
    cmt__thrift_i64(t, 7, m->compressed);
    cmt__thrift_i64(t, 9, m->data_offset);
    if (dict)
        cmt__thrift_i64(t, 11, m->dictionary_offset);
    cmt__thrift_end(t);
    cmt__thrift_end(t);
}

static void write_footer(struct cmt__parquet *w)
{
    struct cmt__thrift t;
    w->header.n = 0;
    cmt__thrift_begin(&t, &w->header);
    cmt__thrift_i32(&t, 1, 1); /* version */
    write_schema(&t, w);
    cmt__thrift_i64(&t, 3, (int64_t)w->total_rows);
    cmt__thrift_list(&t, 4, CMT__THRIFT_STRUCT, (uint32_t)w->ngroups);
    for (size_t g = 0; g < w->ngroups; g++) {
        cmt__thrift_list_struct(&t); /* RowGroup */
        cmt__thrift_list(&t, 1, CMT__THRIFT_STRUCT, w->ncolumns);
        for (unsigned i = 0; i < w->ncolumns; i++)
            write_column_meta(&t, w, &w->columns[i], &w->chunks[g * w->ncolumns + i],
                              w->groups[g].rows);
        cmt__thrift_i64(&t, 2, w->groups[g].uncompressed);
        cmt__thrift_i64(&t, 3, w->groups[g].rows);
        cmt__thrift_i64(&t, 5, w->groups[g].offset);
        cmt__thrift_i64(&t, 6, w->groups[g].compressed);
        cmt__thrift_end(&t);
    }
    cmt__thrift_string(&t, 6, "cumemtrace");
    cmt__thrift_end(&t);
    if (w->header.failed)
        w->failed = 1;
    emit(w, w->header.p, w->header.n);
    uint8_t tail[8] = {0, 0, 0, 0, 'P', 'A', 'R', '1'}; /* the footer's length, the magic */
    cmt__put_le32(tail, (uint32_t)w->header.n);
    emit(w, tail, sizeof tail);
}

/* ---- cells ---- */
/* The column of the next cell, its definition level appended; NULL after the last column. */
static struct column *cell(struct cmt__parquet *w, int defined)
{
    CMT_ASSERT(w->column < w->ncolumns);
    if (w->column >= w->ncolumns)
        return NULL;
    struct column *c = &w->columns[w->column++];
    uint8_t d = (uint8_t)defined;
    if (cmt__bytes_put(&c->def, &d, 1) != 0)
        w->failed = 1;
    c->count += (uint64_t)defined;
    return c;
}

static void value(struct cmt__parquet *w, struct column *c, const void *p, size_t n)
{
    if (cmt__bytes_put(&c->values, p, n) != 0)
        w->failed = 1;
}

/* A cell of the wrong type: a bug; a null in release builds. */
static int mistyped(struct cmt__parquet *w, char type)
{
    int bad = w->column < w->ncolumns && w->columns[w->column].type != type;
    CMT_ASSERT(!bad);
    if (bad)
        cmt__parquet_null(w);
    return bad;
}

void cmt__parquet_null(struct cmt__parquet *w)
{
    cell(w, 0);
}

/* An integer cell: its 64 bits in an INT64 column of `type`, or its value in a DOUBLE one. */
static void integer(struct cmt__parquet *w, char type, uint64_t bits, double as_double)
{
    if (w->column < w->ncolumns && w->columns[w->column].type == CMT__PARQUET_DOUBLE) {
        cmt__parquet_double(w, as_double);
        return;
    }
    struct column *c = mistyped(w, type) ? NULL : cell(w, 1);
    if (c)
        value(w, c, &bits, sizeof bits);
}

void cmt__parquet_i64(struct cmt__parquet *w, int64_t v)
{
    integer(w, CMT__PARQUET_INT64, (uint64_t)v, (double)v);
}

void cmt__parquet_u64(struct cmt__parquet *w, uint64_t v)
{
    integer(w, CMT__PARQUET_UINT64, v, (double)v);
}

void cmt__parquet_bool(struct cmt__parquet *w, int v)
{
    struct column *c = mistyped(w, CMT__PARQUET_BOOLEAN) ? NULL : cell(w, 1);
    uint8_t b = v != 0;
    if (c)
        value(w, c, &b, 1);
}

void cmt__parquet_double(struct cmt__parquet *w, double v)
{
    struct column *c = mistyped(w, CMT__PARQUET_DOUBLE) ? NULL : cell(w, 1);
    if (c)
        value(w, c, &v, sizeof v);
}

static uint32_t hash_bytes(const char *s, size_t n)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

/* Doubles the hash set (and the offsets). @return 0, or -1. */
static int dictionary_grow(struct dictionary *d)
{
    uint32_t nslots = d->nslots ? d->nslots * 2 : 64;
    uint32_t *slots = calloc(nslots, sizeof *slots);
    uint32_t *offsets = realloc(d->offsets, nslots / 2 * sizeof *offsets);
    if (offsets)
        d->offsets = offsets;
    if (!slots || !offsets) {
        free(slots);
        return -1;
    }
    for (uint32_t i = 0; i < d->count; i++) {
        const uint8_t *e = d->plain.p + d->offsets[i];
        uint32_t len = cmt__get_le32(e);
        uint32_t h = hash_bytes((const char *)e + 4, len) & (nslots - 1);
        while (slots[h])
            h = (h + 1) & (nslots - 1);
        slots[h] = i + 1;
    }
    free(d->slots);
    d->slots = slots;
    d->nslots = nslots;
    d->cap = nslots / 2;
    return 0;
}

/* The index of s in the dictionary, added when new. @return it, or -1 when out of memory. */
static int64_t dictionary_index(struct dictionary *d, const char *s, size_t n)
{
    if (d->count >= d->cap && dictionary_grow(d) != 0)
        return -1;
    uint32_t h = hash_bytes(s, n) & (d->nslots - 1);
    for (; d->slots[h]; h = (h + 1) & (d->nslots - 1)) {
        const uint8_t *e = d->plain.p + d->offsets[d->slots[h] - 1];
        uint32_t len = cmt__get_le32(e);
        if (len == n && memcmp(e + 4, s, n) == 0)
            return d->slots[h] - 1;
    }
    if (d->plain.n + n + 4 > INT32_MAX) /* a page's size is an i32 */
        return -1;
    d->offsets[d->count] = (uint32_t)d->plain.n;
    put_le(&d->plain, n, 4);
    if (cmt__bytes_put(&d->plain, s, n) != 0)
        return -1;
    d->slots[h] = ++d->count;
    return d->count - 1;
}

void cmt__parquet_string(struct cmt__parquet *w, const char *s, size_t n)
{
    struct column *c = mistyped(w, CMT__PARQUET_STRING) ? NULL : cell(w, 1);
    if (!c)
        return;
    int64_t i = dictionary_index(&c->dict, s, n);
    uint32_t index = i < 0 ? 0 : (uint32_t)i;
    if (i < 0)
        w->failed = 1;
    value(w, c, &index, sizeof index);
}

void cmt__parquet_row_end(struct cmt__parquet *w)
{
    CMT_ASSERT(w->column == w->ncolumns);
    w->column = 0;
    if (++w->group_rows >= CMT__PARQUET_GROUP_ROWS)
        write_group(w);
}

/* ---- the file ---- */
struct cmt__parquet *cmt__parquet_open(FILE *f, const char *const *names, const char *types,
                                       unsigned ncolumns, int zstd)
{
    struct cmt__parquet *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    *w = (struct cmt__parquet){.f = f, .zstd = zstd, .ncolumns = ncolumns};
    w->columns = calloc(ncolumns ? ncolumns : 1, sizeof *w->columns);
    w->cctx = zstd ? ZSTD_createCCtx() : NULL;
    int bad = !w->columns || (zstd && !w->cctx) || strlen(types) != ncolumns;
    for (unsigned i = 0; !bad && i < ncolumns; i++) {
        w->columns[i].name = names[i];
        w->columns[i].type = types[i];
        bad = !strchr("iubds", types[i]);
    }
    if (bad) {
        w->failed = 1;
        cmt__parquet_close(w);
        return NULL;
    }
    emit(w, "PAR1", 4);
    return w;
}

int cmt__parquet_close(struct cmt__parquet *w)
{
    if (!w)
        return -1;
    if (!w->failed && w->ncolumns && w->columns) {
        write_group(w);
        write_footer(w);
    }
    int rc = w->failed ? -1 : 0;
    for (unsigned i = 0; w->columns && i < w->ncolumns; i++) {
        struct column *c = &w->columns[i];
        cmt__bytes_free(&c->def);
        cmt__bytes_free(&c->values);
        cmt__bytes_free(&c->dict.plain);
        free(c->dict.offsets);
        free(c->dict.slots);
    }
    free(w->columns);
    free(w->groups);
    free(w->chunks);
    cmt__bytes_free(&w->page);
    cmt__bytes_free(&w->delta);
    cmt__bytes_free(&w->packed);
    cmt__bytes_free(&w->header);
    ZSTD_freeCCtx(w->cctx);
    free(w);
    return rc;
}
