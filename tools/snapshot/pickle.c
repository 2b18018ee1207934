/* pickle.c — the plain-data pickle decoder (see pickle.h): one pass, a value stack, a mark
 * stack, a memo of pointers, every value in a bump arena freed at once. */
#include "pickle.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"

/* Every opcode of protocols 0 to 5: X(name, byte, what this decoder does with it).
 * READ: decoded; CLASS: would import or build an object (refused); TEXT: a text opcode of
 * protocols 0/1 that protocols 2 to 5 never write for plain data (refused). */
#define CMT_PICKLE_OPCODES(X)       \
    X(MARK, '(', READ)              \
    X(STOP, '.', READ)              \
    X(POP, '0', READ)               \
    X(POP_MARK, '1', READ)          \
    X(DUP, '2', READ)               \
    X(FLOAT, 'F', TEXT)             \
    X(INT, 'I', TEXT)               \
    X(BININT, 'J', READ)            \
    X(BININT1, 'K', READ)           \
    X(LONG, 'L', TEXT)              \
    X(BININT2, 'M', READ)           \
    X(NONE, 'N', READ)              \
    X(PERSID, 'P', CLASS)           \
    X(BINPERSID, 'Q', CLASS)        \
    X(REDUCE, 'R', CLASS)           \
    X(STRING, 'S', TEXT)            \
    X(BINSTRING, 'T', READ)         \
    X(SHORT_BINSTRING, 'U', READ)   \
    X(UNICODE, 'V', TEXT)           \
    X(BINUNICODE, 'X', READ)        \
    X(APPEND, 'a', READ)            \
    X(BUILD, 'b', CLASS)            \
    X(GLOBAL, 'c', CLASS)           \
    X(DICT, 'd', READ)              \
    X(EMPTY_DICT, '}', READ)        \
    X(APPENDS, 'e', READ)           \
    X(GET, 'g', TEXT)               \
    X(BINGET, 'h', READ)            \
    X(INST, 'i', CLASS)             \
    X(LONG_BINGET, 'j', READ)       \
    X(LIST, 'l', READ)              \
    X(EMPTY_LIST, ']', READ)        \
    X(OBJ, 'o', CLASS)              \
    X(PUT, 'p', TEXT)               \
    X(BINPUT, 'q', READ)            \
    X(LONG_BINPUT, 'r', READ)       \
    X(SETITEM, 's', READ)           \
    X(TUPLE, 't', READ)             \
    X(EMPTY_TUPLE, ')', READ)       \
    X(SETITEMS, 'u', READ)          \
    X(BINFLOAT, 'G', READ)          \
    X(PROTO, 0x80, READ)            \
    X(NEWOBJ, 0x81, CLASS)          \
    X(EXT1, 0x82, CLASS)            \
    X(EXT2, 0x83, CLASS)            \
    X(EXT4, 0x84, CLASS)            \
    X(TUPLE1, 0x85, READ)           \
    X(TUPLE2, 0x86, READ)           \
    X(TUPLE3, 0x87, READ)           \
    X(NEWTRUE, 0x88, READ)          \
    X(NEWFALSE, 0x89, READ)         \
    X(LONG1, 0x8a, READ)            \
    X(LONG4, 0x8b, READ)            \
    X(BINBYTES, 'B', READ)          \
    X(SHORT_BINBYTES, 'C', READ)    \
    X(SHORT_BINUNICODE, 0x8c, READ) \
    X(BINUNICODE8, 0x8d, READ)      \
    X(BINBYTES8, 0x8e, READ)        \
    X(EMPTY_SET, 0x8f, READ)        \
    X(ADDITEMS, 0x90, READ)         \
    X(FROZENSET, 0x91, READ)        \
    X(NEWOBJ_EX, 0x92, CLASS)       \
    X(STACK_GLOBAL, 0x93, CLASS)    \
    X(MEMOIZE, 0x94, READ)          \
    X(FRAME, 0x95, READ)            \
    X(BYTEARRAY8, 0x96, READ)       \
    X(NEXT_BUFFER, 0x97, CLASS)     \
    X(READONLY_BUFFER, 0x98, CLASS)

enum {
#define OP_ENUM(name, byte, what) OP_##name = byte,
    CMT_PICKLE_OPCODES(OP_ENUM)
#undef OP_ENUM
};

static const char *opcode_name(unsigned op, int *is_class)
{
    switch (op) {
#define OP_CASE(name, byte, what) \
    case byte: *is_class = strcmp(#what, "CLASS") == 0; return #name;
        CMT_PICKLE_OPCODES(OP_CASE)
#undef OP_CASE
    }
    *is_class = 0;
    return NULL;
}

/* ---- the arena ---- */

struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

#define ARENA_BLOCK (1u << 20)
#define SMALL_INT_MIN (-8)
#define SMALL_INT_MAX 1023

struct cmt_pickle {
    struct arena_block *blocks;
    const struct cmt_pickle_value *root;
    int protocol;
    uint64_t values;
    struct cmt_pickle_value none, true_, false_;
    struct cmt_pickle_value small_ints[SMALL_INT_MAX - SMALL_INT_MIN + 1];
};

static void *arena_alloc(cmt_pickle *doc, size_t size)
{
    size = (size + 7) & ~(size_t)7; /* values and pointers need no more than 8 */
    struct arena_block *b = doc->blocks;
    if (!b || b->cap - b->used < size) {
        size_t cap = size > ARENA_BLOCK / 4 ? size : ARENA_BLOCK;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->cap = cap;
        b->used = 0;
        if (cap == size && doc->blocks) { /* a big one goes behind, keeping the current block */
            b->next = doc->blocks->next;
            doc->blocks->next = b;
        } else {
            b->next = doc->blocks;
            doc->blocks = b;
        }
    }
    void *p = b->data + b->used;
    b->used += size;
    return p;
}

/* ---- the decoder ---- */

typedef struct cmt_pickle_value value;

struct decoder {
    cmt_pickle *doc;
    const uint8_t *start, *p, *end, *op_at;
    value **stack;
    size_t sp, stack_cap;
    size_t *marks;
    size_t nmarks, marks_cap;
    size_t base; /* stack index of the innermost mark (0 when none) */
    value **memo;
    size_t memo_cap, memo_count;
    struct cmt_pickle_limits lim;
    struct cmt_err *err;
    uint64_t *offset;
};

static int fail(struct decoder *d, int code, const char *fmt, ...)
{
    if (d->offset)
        *d->offset = (uint64_t)(d->op_at - d->start);
    if (!d->err)
        return code;
    char what[160]; /* the room the messages had: each is one short sentence */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return cmt_err_set(d->err, code, "%s", what);
}

static int truncated(struct decoder *d)
{
    return fail(d, CMT_EPICKLE_TRUNCATED, "the input ends inside opcode 0x%02x", *d->op_at);
}

static value *new_value(struct decoder *d, uint8_t type)
{
    if (d->lim.max_values && d->doc->values >= d->lim.max_values)
        return NULL;
    value *v = arena_alloc(d->doc, sizeof *v);
    if (!v)
        return NULL;
    d->doc->values++;
    v->type = type;
    v->flags = 0;
    v->n = 0;
    v->cap = 0;
    v->u.items = NULL;
    return v;
}

static int no_value(struct decoder *d)
{
    if (d->lim.max_values && d->doc->values >= d->lim.max_values)
        return fail(d, CMT_EPICKLE_LIMIT, "more than %llu values",
                    (unsigned long long)d->lim.max_values);
    return fail(d, CMT_ENOMEM, "out of memory");
}

static int push(struct decoder *d, value *v)
{
    if (d->sp >= d->lim.max_stack)
        return fail(d, CMT_EPICKLE_LIMIT, "more than %u values on the stack", d->lim.max_stack);
    if (d->sp == d->stack_cap) {
        size_t cap = d->stack_cap ? d->stack_cap * 2 : 256;
        value **s = realloc(d->stack, cap * sizeof *s);
        if (!s)
            return fail(d, CMT_ENOMEM, "out of memory");
        d->stack = s;
        d->stack_cap = cap;
    }
    d->stack[d->sp++] = v;
    return 0;
}

/* Makes sure `need` values lie above the innermost mark. */
static int need(struct decoder *d, size_t n, const char *what)
{
    if (d->sp - d->base < n)
        return fail(d, CMT_EPICKLE_MALFORMED, "%s needs %zu value%s on the stack", what, n,
                    n == 1 ? "" : "s");
    return 0;
}

static int pop_mark(struct decoder *d, size_t *mark, const char *what)
{
    if (!d->nmarks)
        return fail(d, CMT_EPICKLE_MALFORMED, "%s without a MARK", what);
    *mark = d->marks[--d->nmarks];
    d->base = d->nmarks ? d->marks[d->nmarks - 1] : 0;
    return 0;
}

static int add_items(struct decoder *d, value *c, value *const *items, size_t n)
{
    if (n > UINT32_MAX - c->n || (c->type == CMT_PICKLE_DICT && c->n + n > UINT32_MAX / 2))
        return fail(d, CMT_EPICKLE_LIMIT, "a container of more than 2^31 items");
    size_t slots = c->type == CMT_PICKLE_DICT ? 2 : 1;
    size_t used = (size_t)c->n * slots, want = used + n * slots;
    if (want > c->cap) {
        size_t cap = c->cap ? (size_t)c->cap * 2 : 4;
        if (cap < want)
            cap = want;
        if (cap > UINT32_MAX)
            cap = UINT32_MAX;
        value **a = arena_alloc(d->doc, cap * sizeof *a);
        if (!a)
            return fail(d, CMT_ENOMEM, "out of memory");
        if (used)
            memcpy(a, c->u.items, used * sizeof *a);
        c->u.items = a;
        c->cap = (uint32_t)cap;
    }
    memcpy(c->u.items + used, items, n * slots * sizeof *items);
    c->n += (uint32_t)n;
    return 0;
}

static int push_int(struct decoder *d, int64_t i)
{
    if (i >= SMALL_INT_MIN && i <= SMALL_INT_MAX)
        return push(d, &d->doc->small_ints[i - SMALL_INT_MIN]);
    value *v = new_value(d, CMT_PICKLE_INT);
    if (!v)
        return no_value(d);
    v->u.i = i;
    return push(d, v);
}

/* LONG1/LONG4: n bytes of little-endian two's complement. */
static int push_long(struct decoder *d, const uint8_t *b, size_t n)
{
    if (n == 0)
        return push_int(d, 0);
    int negative = b[n - 1] >> 7;
    size_t width = n;
    /* drop sign-extension bytes beyond 8 */
    while (width > 8 && b[width - 1] == (negative ? 0xff : 0x00))
        width--;
    uint64_t u = 0;
    if (width > 8 || (width == 8 && negative != (b[7] >> 7))) {
        if (width == 8 && !negative) { /* 2^63 .. 2^64-1: 8 bytes and a 0x00 sign byte */
            for (size_t k = 0; k < 8; k++)
                u |= (uint64_t)b[k] << (8 * k);
            value *v = new_value(d, CMT_PICKLE_INT);
            if (!v)
                return no_value(d);
            v->u.u = u;
            v->flags = CMT_PICKLE_UNSIGNED;
            return push(d, v);
        }
        return fail(d, CMT_EPICKLE_LIMIT, "an int wider than 64 bits (%zu bytes)", n);
    }
    for (size_t k = 0; k < width; k++)
        u |= (uint64_t)b[k] << (8 * k);
    if (negative && width < 8)
        u |= ~(uint64_t)0 << (8 * width);
    return push_int(d, (int64_t)u);
}

static uint64_t le(const uint8_t *b, int n)
{
    uint64_t u = 0;
    for (int k = 0; k < n; k++)
        u |= (uint64_t)b[k] << (8 * k);
    return u;
}

/* Reads an n-byte little-endian length, then that many bytes. */
static int take_sized(struct decoder *d, int n, const uint8_t **bytes, uint64_t *len)
{
    if (d->end - d->p < n)
        return truncated(d);
    *len = le(d->p, n);
    d->p += n;
    if (*len > (uint64_t)(d->end - d->p))
        return fail(d, CMT_EPICKLE_TRUNCATED,
                    "a string of %llu bytes runs past the end of the input",
                    (unsigned long long)*len);
    if (*len > UINT32_MAX)
        return fail(d, CMT_EPICKLE_LIMIT, "a string of more than 4 GiB");
    *bytes = d->p;
    d->p += *len;
    return 0;
}

static int push_string(struct decoder *d, uint8_t type, int len_bytes)
{
    const uint8_t *s = NULL;
    uint64_t n = 0;
    int rc = take_sized(d, len_bytes, &s, &n);
    if (rc)
        return rc;
    value *v = new_value(d, type);
    if (!v)
        return no_value(d);
    v->u.s = (const char *)s;
    v->n = (uint32_t)n;
    return push(d, v);
}

static int memo_put(struct decoder *d, uint64_t index)
{
    if (d->sp == d->base)
        return fail(d, CMT_EPICKLE_MALFORMED, "memo store with an empty stack");
    if (index >= d->memo_cap) {
        /* legitimate pickles number memo entries densely from 0, each store costing at least
         * one byte of input: an index beyond the input's length is hostile */
        if (index > (uint64_t)(d->end - d->start) + 1024)
            return fail(d, CMT_EPICKLE_LIMIT, "memo index %llu is beyond the input's length",
                        (unsigned long long)index);
        size_t cap = d->memo_cap ? d->memo_cap : 1024;
        while (cap <= index)
            cap *= 2;
        value **m = realloc(d->memo, cap * sizeof *m);
        if (!m)
            return fail(d, CMT_ENOMEM, "out of memory");
        memset(m + d->memo_cap, 0, (cap - d->memo_cap) * sizeof *m);
        d->memo = m;
        d->memo_cap = cap;
    }
    if (!d->memo[index])
        d->memo_count++;
    d->memo[index] = d->stack[d->sp - 1];
    return 0;
}

static int memo_get(struct decoder *d, uint64_t index)
{
    if (index >= d->memo_cap || !d->memo[index])
        return fail(d, CMT_EPICKLE_MALFORMED, "memo key %llu was never stored",
                    (unsigned long long)index);
    return push(d, d->memo[index]);
}

/* TUPLE, LIST, DICT, FROZENSET: the values above the mark become one container. */
static int build_from_mark(struct decoder *d, uint8_t type, const char *what)
{
    size_t mark = 0;
    int rc = pop_mark(d, &mark, what);
    if (rc)
        return rc;
    size_t n = d->sp - mark;
    if (type == CMT_PICKLE_DICT && n % 2)
        return fail(d, CMT_EPICKLE_MALFORMED, "%s with an odd number of values", what);
    value *v = new_value(d, type);
    if (!v)
        return no_value(d);
    if (n && (rc = add_items(d, v, d->stack + mark, type == CMT_PICKLE_DICT ? n / 2 : n)))
        return rc;
    d->sp = mark;
    return push(d, v);
}

static int build_tuple(struct decoder *d, size_t n, const char *what)
{
    int rc = need(d, n, what);
    if (rc)
        return rc;
    value *v = new_value(d, CMT_PICKLE_TUPLE);
    if (!v)
        return no_value(d);
    if (n && (rc = add_items(d, v, d->stack + d->sp - n, n)))
        return rc;
    d->sp -= n;
    return push(d, v);
}

/* APPENDS, SETITEMS, ADDITEMS: the values above the mark go into the container below it. */
static int extend_from_mark(struct decoder *d, uint8_t type, const char *what)
{
    size_t mark = 0;
    int rc = pop_mark(d, &mark, what);
    if (rc)
        return rc;
    if (mark == 0 || mark <= d->base)
        return fail(d, CMT_EPICKLE_MALFORMED, "%s with nothing below its MARK", what);
    value *c = d->stack[mark - 1];
    if (c->type != type)
        return fail(d, CMT_EPICKLE_MALFORMED, "%s into a %s", what, cmt_pickle_type_name(c->type));
    size_t n = d->sp - mark;
    if (type == CMT_PICKLE_DICT && n % 2)
        return fail(d, CMT_EPICKLE_MALFORMED, "%s with an odd number of values", what);
    if (n && (rc = add_items(d, c, d->stack + mark, type == CMT_PICKLE_DICT ? n / 2 : n)))
        return rc;
    d->sp = mark;
    return 0;
}

static int push_new(struct decoder *d, uint8_t type)
{
    value *v = new_value(d, type);
    return v ? push(d, v) : no_value(d);
}

static int refuse(struct decoder *d, unsigned op)
{
    int is_class;
    const char *name = opcode_name(op, &is_class);
    if (!name)
        return fail(d, CMT_EPICKLE_OPCODE, "unknown opcode 0x%02x", op);
    if (is_class)
        return fail(d, CMT_EPICKLE_CLASS,
                    "opcode 0x%02x (%s) would import or build a Python object; plain data never "
                    "needs it",
                    op, name);
    return fail(d, CMT_EPICKLE_OPCODE,
                "opcode 0x%02x (%s) is a protocol 0/1 text opcode, not read here", op, name);
}

#define FIXED(n)                 \
    do {                         \
        if (d->end - d->p < (n)) \
            return truncated(d); \
    } while (0)

/* Containers and the stack. @return 1 when `op` is not one of them. */
static int step_structure(struct decoder *d, unsigned op)
{
    size_t mark = 0;
    int rc;
    switch (op) {
    case OP_MARK:
        if (d->nmarks == d->lim.max_marks)
            return fail(d, CMT_EPICKLE_LIMIT, "more than %u nested MARKs", d->lim.max_marks);
        if (d->nmarks == d->marks_cap) {
            size_t cap = d->marks_cap ? d->marks_cap * 2 : 32;
            size_t *m = realloc(d->marks, cap * sizeof *m);
            if (!m)
                return fail(d, CMT_ENOMEM, "out of memory");
            d->marks = m;
            d->marks_cap = cap;
        }
        d->marks[d->nmarks++] = d->sp;
        d->base = d->sp;
        return 0;
    case OP_POP:
        if (d->sp > d->base) {
            d->sp--;
            return 0;
        }
        return pop_mark(d, &mark, "POP");
    case OP_POP_MARK:
        if ((rc = pop_mark(d, &mark, "POP_MARK")))
            return rc;
        d->sp = mark;
        return 0;
    case OP_DUP:
        if ((rc = need(d, 1, "DUP")))
            return rc;
        return push(d, d->stack[d->sp - 1]);
    case OP_EMPTY_LIST: return push_new(d, CMT_PICKLE_LIST);
    case OP_EMPTY_DICT: return push_new(d, CMT_PICKLE_DICT);
    case OP_EMPTY_TUPLE: return push_new(d, CMT_PICKLE_TUPLE);
    case OP_EMPTY_SET: return push_new(d, CMT_PICKLE_SET);
    case OP_TUPLE: return build_from_mark(d, CMT_PICKLE_TUPLE, "TUPLE");
    case OP_LIST: return build_from_mark(d, CMT_PICKLE_LIST, "LIST");
    case OP_DICT: return build_from_mark(d, CMT_PICKLE_DICT, "DICT");
    case OP_FROZENSET: return build_from_mark(d, CMT_PICKLE_SET, "FROZENSET");
    case OP_TUPLE1: return build_tuple(d, 1, "TUPLE1");
    case OP_TUPLE2: return build_tuple(d, 2, "TUPLE2");
    case OP_TUPLE3: return build_tuple(d, 3, "TUPLE3");
    case OP_APPENDS: return extend_from_mark(d, CMT_PICKLE_LIST, "APPENDS");
    case OP_SETITEMS: return extend_from_mark(d, CMT_PICKLE_DICT, "SETITEMS");
    case OP_ADDITEMS: return extend_from_mark(d, CMT_PICKLE_SET, "ADDITEMS");
    case OP_APPEND:
        if ((rc = need(d, 2, "APPEND")))
            return rc;
        if (d->stack[d->sp - 2]->type != CMT_PICKLE_LIST)
            return fail(d, CMT_EPICKLE_MALFORMED, "APPEND to a %s",
                        cmt_pickle_type_name(d->stack[d->sp - 2]->type));
        if ((rc = add_items(d, d->stack[d->sp - 2], d->stack + d->sp - 1, 1)))
            return rc;
        d->sp--;
        return 0;
    case OP_SETITEM:
        if ((rc = need(d, 3, "SETITEM")))
            return rc;
        if (d->stack[d->sp - 3]->type != CMT_PICKLE_DICT)
            return fail(d, CMT_EPICKLE_MALFORMED, "SETITEM into a %s",
                        cmt_pickle_type_name(d->stack[d->sp - 3]->type));
        if ((rc = add_items(d, d->stack[d->sp - 3], d->stack + d->sp - 2, 1)))
            return rc;
        d->sp -= 2;
        return 0;
    }
    return 1;
}

/* Scalars, strings, the memo and framing. @return 1 when `op` is not one of them. */
static int step_scalar(struct decoder *d, unsigned op)
{
    const uint8_t *b = d->p;
    switch (op) {
    case OP_NONE: return push(d, &d->doc->none);
    case OP_NEWTRUE: return push(d, &d->doc->true_);
    case OP_NEWFALSE: return push(d, &d->doc->false_);
    case OP_BININT1:
        FIXED(1);
        d->p += 1;
        return push_int(d, b[0]);
    case OP_BININT2:
        FIXED(2);
        d->p += 2;
        return push_int(d, (int64_t)le(b, 2));
    case OP_BININT:
        FIXED(4);
        d->p += 4;
        return push_int(d, (int32_t)(uint32_t)le(b, 4));
    case OP_LONG1:
        FIXED(1);
        {
            size_t n = b[0];
            if ((size_t)(d->end - d->p) < 1 + n)
                return truncated(d);
            d->p += 1 + n;
            return push_long(d, b + 1, n);
        }
    case OP_LONG4:
        FIXED(4);
        {
            uint64_t n = le(b, 4);
            if (n & 0x80000000u)
                return fail(d, CMT_EPICKLE_MALFORMED, "LONG4 with a negative length");
            if ((uint64_t)(d->end - d->p) < 4 + n)
                return truncated(d);
            d->p += 4 + n;
            return push_long(d, b + 4, (size_t)n);
        }
    case OP_BINFLOAT:
        FIXED(8);
        {
            uint64_t u = 0;
            for (int k = 0; k < 8; k++)
                u = u << 8 | b[k];
            d->p += 8;
            value *v = new_value(d, CMT_PICKLE_FLOAT);
            if (!v)
                return no_value(d);
            memcpy(&v->u.f, &u, sizeof u);
            return push(d, v);
        }
    case OP_SHORT_BINUNICODE: return push_string(d, CMT_PICKLE_STR, 1);
    case OP_BINUNICODE: return push_string(d, CMT_PICKLE_STR, 4);
    case OP_BINUNICODE8: return push_string(d, CMT_PICKLE_STR, 8);
    case OP_SHORT_BINBYTES:
    case OP_SHORT_BINSTRING: return push_string(d, CMT_PICKLE_BYTES, 1);
    case OP_BINBYTES: return push_string(d, CMT_PICKLE_BYTES, 4);
    case OP_BINSTRING:
        FIXED(4);
        if (b[3] & 0x80)
            return fail(d, CMT_EPICKLE_MALFORMED, "BINSTRING with a negative length");
        return push_string(d, CMT_PICKLE_BYTES, 4);
    case OP_BINBYTES8:
    case OP_BYTEARRAY8: return push_string(d, CMT_PICKLE_BYTES, 8);
    case OP_MEMOIZE: return memo_put(d, d->memo_count);
    case OP_BINPUT:
        FIXED(1);
        d->p += 1;
        return memo_put(d, b[0]);
    case OP_LONG_BINPUT:
        FIXED(4);
        d->p += 4;
        return memo_put(d, le(b, 4));
    case OP_BINGET:
        FIXED(1);
        d->p += 1;
        return memo_get(d, b[0]);
    case OP_LONG_BINGET:
        FIXED(4);
        d->p += 4;
        return memo_get(d, le(b, 4));
    case OP_FRAME: /* framing only groups opcodes for buffered readers: check and go on */
        FIXED(8);
        d->p += 8;
        if (le(b, 8) > (uint64_t)(d->end - d->p))
            return fail(d, CMT_EPICKLE_TRUNCATED,
                        "a FRAME of %llu bytes runs past the end of the input (%llu bytes left)",
                        (unsigned long long)le(b, 8), (unsigned long long)(d->end - d->p));
        return 0;
    case OP_PROTO:
        FIXED(1);
        d->p += 1;
        if (b[0] > 5)
            return fail(d, CMT_EPICKLE_PROTOCOL, "protocol %u (this decoder reads 2 to 5)", b[0]);
        d->doc->protocol = b[0];
        return 0;
    }
    return 1;
}

static int run(struct decoder *d)
{
    while (d->p < d->end) {
        d->op_at = d->p;
        unsigned op = *d->p++;
        if (op == OP_STOP) {
            if (d->sp == d->base)
                return fail(d, CMT_EPICKLE_MALFORMED, "STOP with an empty stack");
            d->doc->root = d->stack[d->sp - 1];
            return 0;
        }
        int rc = step_scalar(d, op);
        if (rc == 1)
            rc = step_structure(d, op);
        if (rc == 1)
            rc = refuse(d, op);
        if (rc)
            return rc;
    }
    d->op_at = d->end;
    return fail(d, CMT_EPICKLE_TRUNCATED, "the input ends before STOP");
}

static void init_constants(cmt_pickle *doc)
{
    doc->none.type = CMT_PICKLE_NONE;
    doc->true_.type = CMT_PICKLE_BOOL;
    doc->true_.u.i = 1;
    doc->false_.type = CMT_PICKLE_BOOL;
    for (int i = SMALL_INT_MIN; i <= SMALL_INT_MAX; i++) {
        doc->small_ints[i - SMALL_INT_MIN].type = CMT_PICKLE_INT;
        doc->small_ints[i - SMALL_INT_MIN].u.i = i;
    }
}

int cmt_pickle_decode(cmt_pickle **out, const void *data, size_t len,
                      const struct cmt_pickle_limits *limits, struct cmt_err *err, uint64_t *offset)
{
    *out = NULL;
    if (offset)
        *offset = 0;
    cmt_err_sys(err, 0, 0);
    cmt_pickle *doc = calloc(1, sizeof *doc);
    if (!doc)
        return cmt_err_set(err, CMT_ENOMEM, "out of memory");
    init_constants(doc);
    struct decoder d = {.doc = doc,
                        .start = data,
                        .p = data,
                        .end = (const uint8_t *)data + len,
                        .err = err,
                        .offset = offset};
    d.op_at = d.p;
    if (limits)
        d.lim = *limits;
    if (!d.lim.max_stack)
        d.lim.max_stack = 1u << 20;
    if (!d.lim.max_marks)
        d.lim.max_marks = 256;
    int rc = run(&d);
    free(d.stack);
    free(d.marks);
    free(d.memo);
    if (rc) {
        cmt_pickle_free(doc);
        return rc;
    }
    *out = doc;
    return 0;
}

void cmt_pickle_free(cmt_pickle *doc)
{
    if (!doc)
        return;
    for (struct arena_block *b = doc->blocks, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(doc);
}

const struct cmt_pickle_value *cmt_pickle_root(const cmt_pickle *doc)
{
    return doc->root;
}

int cmt_pickle_protocol(const cmt_pickle *doc)
{
    return doc->protocol;
}

uint64_t cmt_pickle_value_count(const cmt_pickle *doc)
{
    return doc->values;
}

/* ---- reading values ---- */

int cmt_pickle_str_is(const struct cmt_pickle_value *v, const char *s)
{
    if (!v || v->type != CMT_PICKLE_STR)
        return 0;
    size_t n = strlen(s);
    return v->n == n && memcmp(v->u.s, s, n) == 0;
}

const struct cmt_pickle_value *cmt_pickle_dict_get(const struct cmt_pickle_value *d,
                                                   const char *key)
{
    if (!d || d->type != CMT_PICKLE_DICT)
        return NULL;
    size_t n = strlen(key);
    for (uint32_t k = d->n; k-- > 0;) {
        const value *kv = d->u.items[2 * k];
        if (kv->type == CMT_PICKLE_STR && kv->n == n && memcmp(kv->u.s, key, n) == 0)
            return d->u.items[2 * k + 1];
    }
    return NULL;
}

int cmt_pickle_get_i64(const struct cmt_pickle_value *v, int64_t *out)
{
    if (!v || (v->type != CMT_PICKLE_INT && v->type != CMT_PICKLE_BOOL) ||
        (v->flags & CMT_PICKLE_UNSIGNED))
        return CMT_EINVALID;
    *out = v->u.i;
    return 0;
}

int cmt_pickle_get_u64(const struct cmt_pickle_value *v, uint64_t *out)
{
    if (!v || (v->type != CMT_PICKLE_INT && v->type != CMT_PICKLE_BOOL) ||
        (!(v->flags & CMT_PICKLE_UNSIGNED) && v->u.i < 0))
        return CMT_EINVALID;
    *out = v->u.u;
    return 0;
}

int cmt_pickle_get_double(const struct cmt_pickle_value *v, double *out)
{
    if (!v)
        return CMT_EINVALID;
    if (v->type == CMT_PICKLE_FLOAT)
        *out = v->u.f;
    else if (v->type == CMT_PICKLE_INT || v->type == CMT_PICKLE_BOOL)
        *out = (v->flags & CMT_PICKLE_UNSIGNED) ? (double)v->u.u : (double)v->u.i;
    else
        return CMT_EINVALID;
    return 0;
}

const char *cmt_pickle_type_name(unsigned type)
{
    static const char *const names[] = {"None",  "bool", "int",   "float", "str",
                                        "bytes", "list", "tuple", "dict",  "set"};
    return type < sizeof names / sizeof *names ? names[type] : "?";
}
