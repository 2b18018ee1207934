/* pickle_writer.h — writes Python pickles (protocol 4), the subset PyTorch's memory snapshots
 * use: dicts, lists, 2-tuples, str, int, bool, None, and the memo (an object written once and
 * referred to again, as snapshots share their frame lists). Streaming: containers are opened,
 * filled and closed in order, so nothing is kept but the FILE's buffer.
 *
 * Strings are written as UTF-8; bytes that are not valid UTF-8 become U+FFFD, so Python's
 * unpickler (which decodes strictly) always loads the result. The first write error sticks:
 * every later call does nothing and cmt__pickle_end() reports it. */
#ifndef CMT__PICKLE_WRITER_H
#define CMT__PICKLE_WRITER_H

#include <stdint.h>
#include <stdio.h>

struct cmt__pickle {
    FILE *f;
    uint32_t memo; /* entries memoized so far (the next memo index) */
    int failed;
    size_t n; /* bytes in buf, written to f when it fills and at the end */
    unsigned char buf[1 << 16];
};

/* Starts a pickle on f (the PROTO opcode). */
void cmt__pickle_begin(struct cmt__pickle *p, FILE *f);
/* Ends it (STOP) and writes what is buffered to f. @return 0, or -1 when any write failed. */
int cmt__pickle_end(struct cmt__pickle *p);

/* A dict: open, then key and value pairs (any values), then close. */
void cmt__pickle_dict(struct cmt__pickle *p);
void cmt__pickle_end_dict(struct cmt__pickle *p);
/* A list: open, items, close. */
void cmt__pickle_list(struct cmt__pickle *p);
/* Opens a list and memoizes it. @return its memo index, for cmt__pickle_get(). */
uint32_t cmt__pickle_list_memo(struct cmt__pickle *p);
void cmt__pickle_end_list(struct cmt__pickle *p);
/* A 2-tuple of the two values written before it (TUPLE2). */
void cmt__pickle_tuple2(struct cmt__pickle *p);

void cmt__pickle_str(struct cmt__pickle *p, const char *s); /* NULL writes "" */
void cmt__pickle_int(struct cmt__pickle *p, int64_t v);
void cmt__pickle_uint(struct cmt__pickle *p, uint64_t v); /* any value (LONG1 above 2^31) */
void cmt__pickle_bool(struct cmt__pickle *p, int v);
void cmt__pickle_none(struct cmt__pickle *p);

/* Memoizes the object just written (a scalar, a closed container, a tuple). @return its memo
 * index, for cmt__pickle_get(). */
uint32_t cmt__pickle_memoize(struct cmt__pickle *p);
/* Writes a reference to memoized object `index` (the same object, not a copy). */
void cmt__pickle_get(struct cmt__pickle *p, uint32_t index);

#endif
