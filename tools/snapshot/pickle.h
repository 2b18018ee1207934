/* pickle.h — a decoder of Python pickles that hold plain data (protocols 2 to 5).
 *
 * Decodes a pickle held in a memory buffer into a tree of values kept in one arena: None,
 * bools, ints (up to 64 bits, signed or unsigned), floats, str, bytes, lists, tuples, dicts
 * and sets. It never imports or instantiates anything: the opcodes that would (GLOBAL,
 * STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX, EXT*, PERSID, BINPERSID, the
 * out-of-band buffer opcodes) are an error, as are the text opcodes of protocols 0 and 1.
 *
 * One pass over the bytes, no recursion. The memo (MEMOIZE, BINPUT, LONG_BINPUT, BINGET,
 * LONG_BINGET) stores pointers, so a value read through it is the same node as the one
 * memoised: shared sub-trees stay shared (PyTorch snapshots share every frame list), and the
 * tree is a graph that may even hold cycles (a list appended to itself). Code that walks it
 * must therefore follow known shapes, or bound its own depth; nothing here recurses.
 *
 * str and bytes values point into the input buffer (not NUL-terminated, not copied, UTF-8
 * not checked): the buffer must outlive the document. Ints, floats and containers live in
 * the document's arena. A dict keeps its pairs in pickle order, duplicates included;
 * cmt_pickle_dict_get() returns the last one, as Python's dict would.
 *
 * Limits bound what hostile input can make the decoder do: the stack, the mark stack (the
 * nesting of MARK ... APPENDS/SETITEMS/TUPLE), the number of values and the memo. The work
 * and the memory are linear in the input's length.
 *
 * Errors are CMT_EPICKLE_* codes (format/cmt_error.h), a one-line description in struct
 * cmt_err and, in an out-parameter of its own, the byte offset of the opcode at fault: a number
 * the caller places in its own sentence ("pickle byte 4096: ..."), so it stays out of the text. */
#ifndef CMT_PICKLE_H
#define CMT_PICKLE_H

#include <stddef.h>
#include <stdint.h>

#include "cmt_error.h"

enum cmt_pickle_type {
    CMT_PICKLE_NONE,
    CMT_PICKLE_BOOL,  /* u.i is 0 or 1 */
    CMT_PICKLE_INT,   /* u.i; CMT_PICKLE_UNSIGNED in flags: read u.u (a value above INT64_MAX) */
    CMT_PICKLE_FLOAT, /* u.f */
    CMT_PICKLE_STR,   /* u.s, n bytes of UTF-8 */
    CMT_PICKLE_BYTES, /* u.s, n bytes (bytes, bytearray, and protocol 2's str) */
    CMT_PICKLE_LIST,  /* u.items[0 .. n-1] */
    CMT_PICKLE_TUPLE, /* u.items[0 .. n-1] */
    CMT_PICKLE_DICT,  /* u.items[2k] key, u.items[2k+1] value, k < n */
    CMT_PICKLE_SET,   /* u.items[0 .. n-1] (set and frozenset) */
};

#define CMT_PICKLE_UNSIGNED 0x01u

struct cmt_pickle_value {
    uint8_t type;  /* enum cmt_pickle_type */
    uint8_t flags; /* CMT_PICKLE_UNSIGNED */
    uint32_t n;    /* bytes of a str/bytes, items of a list/tuple/set, pairs of a dict */
    uint32_t cap;  /* the decoder's: room in items */
    union {
        int64_t i;
        uint64_t u;
        double f;
        const char *s;
        struct cmt_pickle_value **items;
    } u;
};

/* Bounds on what one decode may build; a zero field takes its default. */
struct cmt_pickle_limits {
    uint32_t max_stack;  /* values on the stack at once (default 1 << 20) */
    uint32_t max_marks;  /* open MARKs at once (default 256) */
    uint64_t max_values; /* values created (default: no bound beyond the input's length) */
};

typedef struct cmt_pickle cmt_pickle;

/* Decodes the pickle in data[0 .. len-1], which must stay valid while the document is used.
 * Bytes after STOP are ignored. `limits` may be NULL (defaults); `err` may be NULL.
 * @return 0 with *out set; CMT_EPICKLE_TRUNCATED (the input ends inside an opcode or before
 * STOP), CMT_EPICKLE_OPCODE (an opcode this decoder does not read), CMT_EPICKLE_CLASS (an
 * opcode that would import or build an object), CMT_EPICKLE_MALFORMED (stack underflow, a
 * missing MARK, an unknown memo key, APPEND to a non-list...), CMT_EPICKLE_LIMIT (a bound of
 * `limits` reached, an int wider than 64 bits), CMT_EPICKLE_PROTOCOL (PROTO above 5),
 * CMT_ENOMEM. On failure *out is NULL, err says what is wrong in one line ("opcode 0x63 (GLOBAL)
 * would import or build a Python object; ...", under 160 bytes) and *offset is the byte offset
 * of the opcode at fault (0 when none was read). `err` and `offset` may be NULL. */
int cmt_pickle_decode(cmt_pickle **out, const void *data, size_t len,
                      const struct cmt_pickle_limits *limits, struct cmt_err *err,
                      uint64_t *offset);

/* Frees the document and every value in it (NULL does nothing). */
void cmt_pickle_free(cmt_pickle *doc);

/* @return the value STOP returned (never NULL for a decoded document). */
const struct cmt_pickle_value *cmt_pickle_root(const cmt_pickle *doc);

/* @return the protocol of the PROTO opcode (0 when the pickle has none). */
int cmt_pickle_protocol(const cmt_pickle *doc);

/* @return the number of values the decode created (the size of the arena's tree). */
uint64_t cmt_pickle_value_count(const cmt_pickle *doc);

/* The value of str key `key` in dict `d` (the last pair with that key).
 * @return NULL when d is NULL or not a dict, or has no such key. */
const struct cmt_pickle_value *cmt_pickle_dict_get(const struct cmt_pickle_value *d,
                                                   const char *key);

/* @return 1 when v is a str equal to the NUL-terminated `s`, 0 otherwise (v may be NULL). */
int cmt_pickle_str_is(const struct cmt_pickle_value *v, const char *s);

/* Reads an int (or a bool) as a signed 64-bit value. @return 0; CMT_EINVAL when v is NULL,
 * not an int/bool, or an unsigned value above INT64_MAX. */
int cmt_pickle_get_i64(const struct cmt_pickle_value *v, int64_t *out);

/* Reads a non-negative int (or a bool) as an unsigned 64-bit value. @return 0; CMT_EINVAL
 * when v is NULL, not an int/bool, or negative. */
int cmt_pickle_get_u64(const struct cmt_pickle_value *v, uint64_t *out);

/* Reads a float, or an int as a float. @return 0; CMT_EINVAL when v is neither. */
int cmt_pickle_get_double(const struct cmt_pickle_value *v, double *out);

/* @return the type's name ("None", "int", "str", "list", ...), "?" when out of range. */
const char *cmt_pickle_type_name(unsigned type);

#endif
