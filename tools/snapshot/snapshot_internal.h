/* snapshot_internal.h — the snapshot parser's interning tables (this folder only).
 *
 * Strings are interned by content into a pool of NUL-terminated copies, frames by content
 * (interned name and file pointers, line), and hash maps from a pickle node's address to what
 * was made of it let a node met again (through the memo) cost one lookup. */
#ifndef CMT_SNAPSHOT_INTERNAL_H
#define CMT_SNAPSHOT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* An open-addressing map from a non-NULL pointer to a uint32_t. */
struct cmt__ptr_map {
    const void **keys;
    uint32_t *values;
    size_t cap, count; /* cap is a power of two, or 0 */
};

/* @return 1 with *value set when `key` is there, 0 otherwise. */
int cmt__ptr_map_get(const struct cmt__ptr_map *m, const void *key, uint32_t *value);
/* Adds or replaces. @return 0 or CMT_ENOMEM. */
int cmt__ptr_map_put(struct cmt__ptr_map *m, const void *key, uint32_t value);
void cmt__ptr_map_free(struct cmt__ptr_map *m);

struct cmt__snapshot_strings;

/* @return a new empty pool, or NULL (out of memory). */
struct cmt__snapshot_strings *cmt__strings_create(void);
void cmt__strings_destroy(struct cmt__snapshot_strings *s);
/* @return the pool's copy of s[0 .. n-1] (NUL-terminated, the same pointer for the same
 * bytes), or NULL (out of memory). A NUL inside s ends the copy's C string early. */
const char *cmt__strings_intern(struct cmt__snapshot_strings *s, const char *text, size_t n);

/* Frames interned by content: an id (index into *frames) per distinct (name, file, line),
 * name and file being pool pointers. */
struct cmt__frame_table {
    struct cmt_snapshot_frame **frames; /* the snapshot's array, grown here */
    size_t *nframes, frames_cap;
    uint32_t *slots; /* 0 = empty, else frame id + 1 */
    size_t cap;
};

/* @return 0 with *id set, or CMT_ENOMEM. */
int cmt__frame_intern(struct cmt__frame_table *t, const char *name, const char *file, uint32_t line,
                      uint32_t *id);
void cmt__frame_table_free(struct cmt__frame_table *t);

#endif
