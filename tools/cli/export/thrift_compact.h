/* thrift_compact.h — internal: Apache Thrift's compact protocol, the subset Parquet's footer
 * and page headers use (parquet_writer.c): structs of i32, i64, binary, bool, list and struct
 * fields, written into a growing byte buffer. Written from Thrift's compact protocol spec:
 * a field is a header byte (the field id's delta from the previous one in the high nibble,
 * the type in the low; a long form when the delta is not 1..15), integers are zigzag ULEB128
 * varints, binary is a varint length and the bytes, a struct ends with a 0 byte.
 * Out of memory sticks: every later call does nothing and `failed` stays set. */
#ifndef CMT__THRIFT_COMPACT_H
#define CMT__THRIFT_COMPACT_H

#include <stddef.h>
#include <stdint.h>

/* The compact protocol's type codes. */
enum cmt__thrift_type {
    CMT__THRIFT_TRUE = 1,
    CMT__THRIFT_FALSE = 2,
    CMT__THRIFT_BYTE = 3,
    CMT__THRIFT_I32 = 5,
    CMT__THRIFT_I64 = 6,
    CMT__THRIFT_BINARY = 8,
    CMT__THRIFT_LIST = 9,
    CMT__THRIFT_STRUCT = 12,
};

/* The deepest nesting of structs a writer keeps the last field id of. */
#define CMT__THRIFT_MAX_DEPTH 8

/* A growing byte buffer (also the parquet writer's page buffers). */
struct cmt__bytes {
    uint8_t *p;
    size_t n, cap;
    int failed; /* out of memory: nothing more is appended */
};
/* Makes room for n more bytes (n stays). @return 0, or -1 (out of memory, and failed set). */
int cmt__bytes_reserve(struct cmt__bytes *b, size_t n);
/* Appends n bytes. @return 0, or -1 (out of memory, and failed set). */
int cmt__bytes_grow_put(struct cmt__bytes *b, const void *p, size_t n);
static inline int cmt__bytes_put(struct cmt__bytes *b, const void *p, size_t n)
{
    if (b->failed || b->n + n > b->cap || !n) /* !n: p may be NULL */
        return cmt__bytes_grow_put(b, p, n);
    __builtin_memcpy(b->p + b->n, p, n);
    b->n += n;
    return 0;
}
/* Appends v as an unsigned LEB128 varint. */
void cmt__bytes_uleb(struct cmt__bytes *b, uint64_t v);
/* Frees the bytes (the buffer may be reused). */
void cmt__bytes_free(struct cmt__bytes *b);

struct cmt__thrift {
    struct cmt__bytes *out;
    int16_t last[CMT__THRIFT_MAX_DEPTH]; /* the last field id at each depth */
    int depth;
};
/* Starts writing the fields of a top-level struct into out. */
void cmt__thrift_begin(struct cmt__thrift *t, struct cmt__bytes *out);
/* Fields of the current struct, in increasing id order. */
void cmt__thrift_byte(struct cmt__thrift *t, int16_t id, int8_t v);
void cmt__thrift_i32(struct cmt__thrift *t, int16_t id, int32_t v);
void cmt__thrift_i64(struct cmt__thrift *t, int16_t id, int64_t v);
void cmt__thrift_bool(struct cmt__thrift *t, int16_t id, int v);
void cmt__thrift_binary(struct cmt__thrift *t, int16_t id, const void *p, size_t n);
void cmt__thrift_string(struct cmt__thrift *t, int16_t id, const char *s);
/* A struct field: its fields follow, then cmt__thrift_end(). */
void cmt__thrift_struct(struct cmt__thrift *t, int16_t id);
/* A list field of n elements of `type`: n i32 values (cmt__thrift_list_i32), n strings
 * (cmt__thrift_list_string) or n structs (each cmt__thrift_list_struct, fields, end). */
void cmt__thrift_list(struct cmt__thrift *t, int16_t id, enum cmt__thrift_type type, uint32_t n);
void cmt__thrift_list_i32(struct cmt__thrift *t, int32_t v);
void cmt__thrift_list_string(struct cmt__thrift *t, const char *s);
void cmt__thrift_list_struct(struct cmt__thrift *t);
/* Ends the current struct (the top-level one too: its stop byte). */
void cmt__thrift_end(struct cmt__thrift *t);

#endif
