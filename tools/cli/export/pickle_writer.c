/* pickle_writer.c — see pickle_writer.h. Opcodes from CPython's Lib/pickletools.py. */
#include "export/pickle_writer.h"

#include <string.h>

#include "escape.h"

enum {
    OP_PROTO = 0x80,
    OP_STOP = '.',
    OP_MARK = '(',
    OP_EMPTY_DICT = '}',
    OP_SETITEMS = 'u',
    OP_EMPTY_LIST = ']',
    OP_APPENDS = 'e',
    OP_TUPLE2 = 0x86,
    OP_SHORT_BINUNICODE = 0x8c,
    OP_BINUNICODE = 'X',
    OP_BININT1 = 'K',
    OP_BININT2 = 'M',
    OP_BININT = 'J',
    OP_LONG1 = 0x8a,
    OP_NONE = 'N',
    OP_NEWTRUE = 0x88,
    OP_NEWFALSE = 0x89,
    OP_MEMOIZE = 0x94,
    OP_BINGET = 'h',
    OP_LONG_BINGET = 'j',
};

static void flush(struct cmt__pickle *p)
{
    if (!p->failed && p->n && fwrite(p->buf, 1, p->n, p->f) != p->n)
        p->failed = 1;
    p->n = 0;
}

static void put(struct cmt__pickle *p, const void *data, size_t n)
{
    if (p->n + n > sizeof p->buf) {
        flush(p);
        if (n > sizeof p->buf) {
            if (!p->failed && fwrite(data, 1, n, p->f) != n)
                p->failed = 1;
            return;
        }
    }
    memcpy(p->buf + p->n, data, n);
    p->n += n;
}

static void op(struct cmt__pickle *p, int code)
{
    if (p->n == sizeof p->buf)
        flush(p);
    p->buf[p->n++] = (unsigned char)code;
}

static void le32(struct cmt__pickle *p, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    put(p, b, 4);
}

void cmt__pickle_begin(struct cmt__pickle *p, FILE *f)
{
    p->f = f;
    p->memo = 0;
    p->failed = 0;
    p->n = 0;
    op(p, OP_PROTO);
    op(p, 4);
}

int cmt__pickle_end(struct cmt__pickle *p)
{
    op(p, OP_STOP);
    flush(p);
    return p->failed ? -1 : 0;
}

void cmt__pickle_dict(struct cmt__pickle *p)
{
    op(p, OP_EMPTY_DICT);
    op(p, OP_MARK);
}

void cmt__pickle_end_dict(struct cmt__pickle *p)
{
    op(p, OP_SETITEMS);
}

void cmt__pickle_list(struct cmt__pickle *p)
{
    op(p, OP_EMPTY_LIST);
    op(p, OP_MARK);
}

uint32_t cmt__pickle_list_memo(struct cmt__pickle *p)
{
    op(p, OP_EMPTY_LIST);
    op(p, OP_MEMOIZE); /* before MARK: the unpickler memoizes the top of its stack */
    op(p, OP_MARK);
    return p->memo++;
}

void cmt__pickle_end_list(struct cmt__pickle *p)
{
    op(p, OP_APPENDS);
}

void cmt__pickle_tuple2(struct cmt__pickle *p)
{
    op(p, OP_TUPLE2);
}

static void write_utf8(struct cmt__pickle *p, const unsigned char *s, int count_only, size_t *len)
{
    static const unsigned char replacement[3] = {0xef, 0xbf, 0xbd};
    size_t total = 0;
    while (*s) {
        size_t n = cmt__utf8_length(s);
        if (n) {
            if (!count_only)
                put(p, s, n);
            total += n;
            s += n;
        } else {
            if (!count_only)
                put(p, replacement, 3);
            total += 3;
            s++;
        }
    }
    *len = total;
}

void cmt__pickle_str(struct cmt__pickle *p, const char *s)
{
    const unsigned char *u = (const unsigned char *)(s ? s : "");
    size_t n;
    write_utf8(p, u, 1, &n);
    if (n < 256) {
        op(p, OP_SHORT_BINUNICODE);
        op(p, (int)n);
    } else {
        op(p, OP_BINUNICODE);
        le32(p, (uint32_t)n); /* a trace's strings are far below 4 GiB */
    }
    write_utf8(p, u, 0, &n);
}

/* LONG1: n bytes of little-endian two's complement, as short as the value allows. */
static void long1(struct cmt__pickle *p, uint64_t magnitude, int negative)
{
    unsigned char b[9];
    uint64_t v = negative ? (uint64_t)0 - magnitude : magnitude;
    size_t n = 0;
    for (int i = 0; i < 8; i++)
        b[n++] = (unsigned char)(v >> (8 * i));
    /* drop bytes that only repeat the sign */
    while (n > 1 && ((b[n - 1] == 0 && !(b[n - 2] & 0x80)) ||
                     (b[n - 1] == 0xff && (b[n - 2] & 0x80) && negative)))
        n--;
    if (!negative && (b[n - 1] & 0x80))
        b[n++] = 0; /* a positive value whose top bit is set needs a zero byte */
    op(p, OP_LONG1);
    op(p, (int)n);
    put(p, b, n);
}

void cmt__pickle_uint(struct cmt__pickle *p, uint64_t v)
{
    if (v < 256) {
        op(p, OP_BININT1);
        op(p, (int)v);
    } else if (v < 65536) {
        unsigned char b[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
        op(p, OP_BININT2);
        put(p, b, 2);
    } else if (v < UINT64_C(0x80000000)) {
        op(p, OP_BININT);
        le32(p, (uint32_t)v);
    } else {
        long1(p, v, 0);
    }
}

void cmt__pickle_int(struct cmt__pickle *p, int64_t v)
{
    if (v >= 0) {
        cmt__pickle_uint(p, (uint64_t)v);
    } else if (v >= INT32_MIN) {
        op(p, OP_BININT);
        le32(p, (uint32_t)(int32_t)v);
    } else {
        long1(p, (uint64_t)0 - (uint64_t)v, 1);
    }
}

void cmt__pickle_bool(struct cmt__pickle *p, int v)
{
    op(p, v ? OP_NEWTRUE : OP_NEWFALSE);
}

void cmt__pickle_none(struct cmt__pickle *p)
{
    op(p, OP_NONE);
}

uint32_t cmt__pickle_memoize(struct cmt__pickle *p)
{
    op(p, OP_MEMOIZE);
    return p->memo++;
}

void cmt__pickle_get(struct cmt__pickle *p, uint32_t index)
{
    if (index < 256) {
        op(p, OP_BINGET);
        op(p, (int)index);
    } else {
        op(p, OP_LONG_BINGET);
        le32(p, index);
    }
}
