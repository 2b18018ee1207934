/* thrift_compact.c — see thrift_compact.h. */
#include "export/thrift_compact.h"

#include <stdlib.h>
#include <string.h>

#include "cmt_grow.h"
#include "varint.h"

int cmt__bytes_reserve(struct cmt__bytes *b, size_t n)
{
    if (b->failed)
        return -1;
    if (CMT_GROW(b->p, b->cap, b->n + n, 4096) != 0) {
        b->failed = 1;
        return -1;
    }
    return 0;
}

int cmt__bytes_grow_put(struct cmt__bytes *b, const void *p, size_t n)
{
    if (cmt__bytes_reserve(b, n) != 0)
        return -1;
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
    return 0;
}

void cmt__bytes_uleb(struct cmt__bytes *b, uint64_t v)
{
    uint8_t buf[CMT__VARINT_MAX];
    cmt__bytes_put(b, buf, (size_t)(cmt__put_varint(buf, v) - buf));
}

void cmt__bytes_free(struct cmt__bytes *b)
{
    free(b->p);
    *b = (struct cmt__bytes){0};
}

void cmt__thrift_begin(struct cmt__thrift *t, struct cmt__bytes *out)
{
    t->out = out;
    t->depth = 0;
    t->last[0] = 0;
}

/* The field's header: the short form when the id follows the last by 1..15. */
static void field(struct cmt__thrift *t, int16_t id, int type)
{
    int16_t *last = &t->last[t->depth];
    int delta = id - *last;
    if (delta > 0 && delta <= 15) {
        uint8_t h = (uint8_t)(delta << 4 | type);
        cmt__bytes_put(t->out, &h, 1);
    } else {
        uint8_t h = (uint8_t)type;
        cmt__bytes_put(t->out, &h, 1);
        cmt__bytes_uleb(t->out, cmt__zigzag(id));
    }
    *last = id;
}

void cmt__thrift_byte(struct cmt__thrift *t, int16_t id, int8_t v)
{
    field(t, id, CMT__THRIFT_BYTE);
    uint8_t b = (uint8_t)v; /* a byte is written as it is, not as a varint */
    cmt__bytes_put(t->out, &b, 1);
}

void cmt__thrift_i32(struct cmt__thrift *t, int16_t id, int32_t v)
{
    field(t, id, CMT__THRIFT_I32);
    cmt__bytes_uleb(t->out, cmt__zigzag(v));
}

void cmt__thrift_i64(struct cmt__thrift *t, int16_t id, int64_t v)
{
    field(t, id, CMT__THRIFT_I64);
    cmt__bytes_uleb(t->out, cmt__zigzag(v));
}

void cmt__thrift_bool(struct cmt__thrift *t, int16_t id, int v)
{
    field(t, id, v ? CMT__THRIFT_TRUE : CMT__THRIFT_FALSE);
}

void cmt__thrift_binary(struct cmt__thrift *t, int16_t id, const void *p, size_t n)
{
    field(t, id, CMT__THRIFT_BINARY);
    cmt__bytes_uleb(t->out, n);
    cmt__bytes_put(t->out, p, n);
}

void cmt__thrift_string(struct cmt__thrift *t, int16_t id, const char *s)
{
    cmt__thrift_binary(t, id, s, strlen(s));
}

/* Enters a struct: its field ids start again from 0. */
static void push(struct cmt__thrift *t)
{
    if (t->depth + 1 >= CMT__THRIFT_MAX_DEPTH) {
        t->out->failed = 1; /* deeper than Parquet's structs go: a bug */
        return;
    }
    t->last[++t->depth] = 0;
}

void cmt__thrift_struct(struct cmt__thrift *t, int16_t id)
{
    field(t, id, CMT__THRIFT_STRUCT);
    push(t);
}

void cmt__thrift_list(struct cmt__thrift *t, int16_t id, enum cmt__thrift_type type, uint32_t n)
{
    field(t, id, CMT__THRIFT_LIST);
    uint8_t h = (uint8_t)((n < 15 ? n : 15) << 4 | type);
    cmt__bytes_put(t->out, &h, 1);
    if (n >= 15)
        cmt__bytes_uleb(t->out, n);
}

void cmt__thrift_list_i32(struct cmt__thrift *t, int32_t v)
{
    cmt__bytes_uleb(t->out, cmt__zigzag(v));
}

void cmt__thrift_list_string(struct cmt__thrift *t, const char *s)
{
    size_t n = strlen(s);
    cmt__bytes_uleb(t->out, n);
    cmt__bytes_put(t->out, s, n);
}

void cmt__thrift_list_struct(struct cmt__thrift *t)
{
    push(t);
}

void cmt__thrift_end(struct cmt__thrift *t)
{
    uint8_t stop = 0;
    cmt__bytes_put(t->out, &stop, 1);
    if (t->depth > 0)
        t->depth--;
}
