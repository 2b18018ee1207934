/* snapshot_internal.h — the snapshot parser's interning tables and the folder's hash map (this
 * folder only).
 *
 * Strings are interned by content into a pool of NUL-terminated copies, frames by content
 * (interned name and file pointers, line), and hash maps from a pickle node's address to what
 * was made of it let a node met again (through the memo) cost one lookup. The same map keeps
 * the conversion's addresses (snapshot_trace.c). */
#ifndef CMT_SNAPSHOT_INTERNAL_H
#define CMT_SNAPSHOT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* An open-addressing map from a non-zero uint64_t (an address, a pointer) to a uint64_t:
 * linear probing, deletion by backward shift (no tombstones). Zero-initialised is empty. */
struct cmt__u64_map {
    uint64_t *keys, *values; /* key 0: an empty slot */
    size_t cap, count;       /* cap is a power of two, or 0 */
};

/* @return the value of `key`, or NULL when it is not there (key 0 never is). */
uint64_t *cmt__u64_map_find(const struct cmt__u64_map *m, uint64_t key);
/* Adds or replaces (key 0: nothing is kept). @return 0 or CMT_ENOMEM (the map unchanged). */
int cmt__u64_map_put(struct cmt__u64_map *m, uint64_t key, uint64_t value);
void cmt__u64_map_remove(struct cmt__u64_map *m, uint64_t key);
void cmt__u64_map_free(struct cmt__u64_map *m);

/* A pickle node's address as the key. @return 1 with *value set when it is there. */
static inline int cmt__node_map_get(const struct cmt__u64_map *m, const void *node, uint32_t *value)
{
    const uint64_t *v = cmt__u64_map_find(m, (uint64_t)(uintptr_t)node);
    if (v)
        *value = (uint32_t)*v;
    return v != NULL;
}

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
