/* model_set.c — ordered sets of blocks for the caching-allocator model.
 *
 * PyTorch keeps free blocks in std::set ordered by (stream, size, address);
 * a replay of millions of events needs the same ordered best fit, and it runs
 * one or two set operations per event, so their constant factor is the
 * replay's speed. A set here is a sorted sequence of chunks of up to
 * CMT__CHUNK keys each (a two-level B+tree): the keys sit in the chunks
 * themselves, so a search is a binary search over the chunks' last keys (one
 * contiguous array) and then over one chunk, and an insert or erase moves at
 * most one chunk's tail. That is several times faster than the treap it
 * replaced, whose every level was a dependent load of another block.
 *
 * No operation allocates: chunks come from one pool per model, sized by
 * cmt__sets_reserve from the number of block slots. That bound holds because
 * any two neighbouring chunks of a set hold more than CMT__CHUNK / 2 keys
 * (a full chunk splits in two halves; after an erase a chunk merges with a
 * neighbour when both fit in half a chunk; an empty chunk is dropped), so a
 * set of n keys uses at most 2n / (CMT__CHUNK / 2 + 1) + 1 chunks. Keys are
 * unique: two blocks of a pool never share an address.
 *
 * A block in a set knows the chunk that holds its key (cmt__block.chunk, kept wherever a key
 * lands in a chunk), and a chunk its position (chunk_position), so finding a block to erase or
 * replace it is two loads and a scan of one chunk instead of two searches. A replace whose new
 * key leaves the old key's chunk searches only the side it moved to.
 *
 * The slots past a chunk's fill and the last keys past a set's chunk_count hold SENTINEL, so
 * every search runs over a power of two of keys with branch-free steps (below). */
#include "model_internal.h"

#include <stdlib.h>
#include <string.h>

#define HALF (CMT__CHUNK / 2)

/* The searches are the replay's inner loop: keep them inlined where GCC's size limits would
 * make a call of them. So are locate and erase_at, whose calls cost more than their work. */
#if defined(__GNUC__)
#define INLINE static inline __attribute__((always_inline))
#else
#define INLINE static inline
#endif

/* a < b for keys as one 192-bit number (stream, size, address). On x86-64
 * that is the borrow out of a - b: one compare and two subtract-with-borrow
 * instructions, which GCC does not emit for a three-word chain written in C.
 * The portable form compares (size, address) as one 128-bit number and
 * carries its borrow into the stream's comparison (in 65 bits). */
INLINE bool less(const struct cmt__set_key *a, const struct cmt__set_key *b)
{
#if defined(__GNUC__) && defined(__x86_64__)
    uint64_t size = a->size, stream = a->stream;
    bool lt;
    __asm__("cmpq %[b_address], %[a_address]\n\t"
            "sbbq %[b_size], %[size]\n\t"
            "sbbq %[b_stream], %[stream]"
            : "=@ccb"(lt), [size] "+r"(size), [stream] "+r"(stream)
            : [a_address] "r"(a->address), [b_address] "rm"(b->address), [b_size] "rm"(b->size),
              [b_stream] "rm"(b->stream));
    return lt;
#else
    unsigned __int128 la = (unsigned __int128)a->size << 64 | a->address;
    unsigned __int128 lb = (unsigned __int128)b->size << 64 | b->address;
    return (unsigned __int128)a->stream < (unsigned __int128)b->stream + (la < lb);
#endif
}

/* a < b, or a <= b when or_equal. The searches below use it without
 * branches: a mispredicted branch per step would cost more than the whole
 * comparison. */
INLINE bool before(const struct cmt__set_key *a, const struct cmt__set_key *b, bool or_equal)
{
    return or_equal ? !less(b, a) : less(a, b);
}

static struct cmt__set_key key_of(const struct cmt_model *m, const struct cmt__set *s,
                                  uint32_t node)
{
    const struct cmt__block *b = cmt__b(m, node);
    struct cmt__set_key e = {b->stream, s->by_size ? b->size : 0, b->address, node};
    return e;
}

static inline struct cmt__set_key *chunk(const struct cmt_model *m, const struct cmt__set *s,
                                         uint32_t c)
{
    return &m->chunk_entries[(size_t)s->ids[c] * CMT__CHUNK];
}

/* base + half when probe is before key (see before), else base: one step of the search
 * below. On x86-64 the comparison's borrow feeds a conditional move (GCC turns the
 * portable form into a branch, which mispredicts half the time). */
INLINE const struct cmt__set_key *step(const struct cmt__set_key *base, uint32_t half,
                                       const struct cmt__set_key *key, bool past_equal)
{
    const struct cmt__set_key *moved = base + half, *probe = moved - 1;
#if defined(__GNUC__) && defined(__x86_64__)
    if (past_equal) { /* probe <= key: no borrow out of key - probe */
        uint64_t size = key->size, stream = key->stream;
        __asm__("cmpq %[p_address], %[k_address]\n\t"
                "sbbq %[p_size], %[size]\n\t"
                "sbbq %[p_stream], %[stream]\n\t"
                "cmovaeq %[moved], %[base]"
                : [base] "+r"(base), [size] "+r"(size), [stream] "+r"(stream)
                : [k_address] "r"(key->address), [p_address] "m"(probe->address),
                  [p_size] "m"(probe->size), [p_stream] "m"(probe->stream), [moved] "r"(moved)
                : "cc");
    } else { /* probe < key: a borrow out of probe - key */
        uint64_t size = probe->size, stream = probe->stream;
        __asm__("cmpq %[k_address], %[p_address]\n\t"
                "sbbq %[k_size], %[size]\n\t"
                "sbbq %[k_stream], %[stream]\n\t"
                "cmovbq %[moved], %[base]"
                : [base] "+r"(base), [size] "+r"(size), [stream] "+r"(stream)
                : [p_address] "r"(probe->address), [k_address] "rm"(key->address),
                  [k_size] "rm"(key->size), [k_stream] "rm"(key->stream), [moved] "r"(moved)
                : "cc");
    }
    return base;
#else
    return before(probe, key, past_equal) ? moved : base;
#endif
}

/* A chunk's slots past its fill, and a set's last keys past its chunk_count, hold SENTINEL,
 * which sorts after every key (sizes stay below 2^60). So a search runs over a power of two
 * of keys: steps that halve a power of two, no remainder to track. */
static const struct cmt__set_key SENTINEL = {UINT64_MAX, UINT64_MAX, UINT64_MAX, CMT__NIL};

/* The first chunk from lo on whose last key is >= key (> key when past_equal), where the
 * caller knows that chunk is below hi (or that none is, hi being chunk_count); hi when
 * there is none. Branch-free lower bound over the smallest power of two of last keys from lo
 * that covers hi - lo: the keys past hi are larger or SENTINEL (chunk_capacity is a power of
 * two). */
INLINE uint32_t find_chunk_in(const struct cmt__set *s, const struct cmt__set_key *key,
                              bool past_equal, uint32_t lo, uint32_t hi)
{
    uint32_t n = hi - lo;
    if (n == 0)
        return lo;
    const struct cmt__set_key *base = s->last + lo;
    /* The steps unrolled: a jump to the first of them instead of a loop's count. */
    /* clang-format off */
#define STEP(k) case k: base = step(base, 1u << (k - 1), key, past_equal); __attribute__((fallthrough));
    switch (n == 1 ? 0 : 32 - __builtin_clz(n - 1)) {
    STEP(31) STEP(30) STEP(29) STEP(28) STEP(27) STEP(26) STEP(25) STEP(24) STEP(23) STEP(22)
    STEP(21) STEP(20) STEP(19) STEP(18) STEP(17) STEP(16) STEP(15) STEP(14) STEP(13) STEP(12)
    STEP(11) STEP(10) STEP(9) STEP(8) STEP(7) STEP(6) STEP(5) STEP(4) STEP(3) STEP(2) STEP(1)
    default: break;
    }
#undef STEP
    /* clang-format on */
    return (uint32_t)(base - s->last) + before(base, key, past_equal);
}

/* The first chunk whose last key is >= key (> key when past_equal); chunk_count when there
 * is none. */
INLINE uint32_t find_chunk(const struct cmt__set *s, const struct cmt__set_key *key,
                           bool past_equal)
{
    return find_chunk_in(s, key, past_equal, 0, s->chunk_count);
}

INLINE uint32_t find_in_chunk(const struct cmt__set_key *e, const struct cmt__set_key *key,
                              bool past_equal)
{
    _Static_assert(CMT__CHUNK == 16, "four steps search a chunk");
    const struct cmt__set_key *base = step(e, 8, key, past_equal);
    base = step(base, 4, key, past_equal);
    base = step(base, 2, key, past_equal);
    base = step(base, 1, key, past_equal);
    return (uint32_t)(base - e) + before(base, key, past_equal);
}

static void clear(struct cmt__set_key *e, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++)
        e[k] = SENTINEL;
}

/* The chunks from position c on moved: record where they are now. */
static void renumber(struct cmt_model *m, const struct cmt__set *s, uint32_t c)
{
    for (; c < s->chunk_count; c++)
        m->chunk_position[s->ids[c]] = c;
}

/* Keys e[0, n) now sit in chunk `id`: tell their blocks. */
static void claim(struct cmt_model *m, const struct cmt__set_key *e, uint32_t n, uint32_t id)
{
    for (uint32_t k = 0; k < n; k++)
        cmt__b(m, e[k].slot)->chunk = id;
}

/* Open an empty chunk at position c of the sequence. */
static void chunk_open(struct cmt_model *m, struct cmt__set *s, uint32_t c)
{
    uint32_t tail = s->chunk_count - c;
    memmove(&s->ids[c + 1], &s->ids[c], tail * sizeof *s->ids);
    memmove(&s->fill[c + 1], &s->fill[c], tail * sizeof *s->fill);
    memmove(&s->last[c + 1], &s->last[c], tail * sizeof *s->last);
    s->ids[c] = m->chunk_free[--m->chunk_free_count];
    s->fill[c] = 0;
    clear(chunk(m, s, c), CMT__CHUNK);
    s->chunk_count++;
    renumber(m, s, c);
}

static void chunk_close(struct cmt_model *m, struct cmt__set *s, uint32_t c)
{
    m->chunk_free[m->chunk_free_count++] = s->ids[c];
    uint32_t tail = s->chunk_count - c - 1;
    memmove(&s->ids[c], &s->ids[c + 1], tail * sizeof *s->ids);
    memmove(&s->fill[c], &s->fill[c + 1], tail * sizeof *s->fill);
    memmove(&s->last[c], &s->last[c + 1], tail * sizeof *s->last);
    s->chunk_count--;
    s->last[s->chunk_count] = SENTINEL;
    renumber(m, s, c);
}

/* Append chunk c + 1 to chunk c (they fit in one) and drop it. */
static void chunk_merge_next(struct cmt_model *m, struct cmt__set *s, uint32_t c)
{
    memcpy(chunk(m, s, c) + s->fill[c], chunk(m, s, c + 1),
           s->fill[c + 1] * sizeof(struct cmt__set_key));
    claim(m, chunk(m, s, c) + s->fill[c], s->fill[c + 1], s->ids[c]);
    s->fill[c] += s->fill[c + 1];
    s->last[c] = s->last[c + 1];
    chunk_close(m, s, c + 1);
}

/* Insert node's key, whose chunk lies in [lo, hi) (hi = chunk_count: or past the last). */
INLINE void insert_in(struct cmt_model *m, struct cmt__set *s, uint32_t node, uint32_t lo,
                      uint32_t hi)
{
    struct cmt__set_key key = key_of(m, s, node);
    if (s->chunk_count == 0)
        chunk_open(m, s, 0);
    uint32_t c = find_chunk_in(s, &key, false, lo, hi > s->chunk_count ? s->chunk_count : hi);
    if (c == s->chunk_count)
        c--;
    if (s->fill[c] == CMT__CHUNK) {
        chunk_open(m, s, c + 1);
        memcpy(chunk(m, s, c + 1), chunk(m, s, c) + HALF,
               (CMT__CHUNK - HALF) * sizeof(struct cmt__set_key));
        claim(m, chunk(m, s, c + 1), CMT__CHUNK - HALF, s->ids[c + 1]);
        clear(chunk(m, s, c) + HALF, CMT__CHUNK - HALF);
        s->fill[c] = HALF;
        s->fill[c + 1] = CMT__CHUNK - HALF;
        s->last[c + 1] = s->last[c];
        s->last[c] = chunk(m, s, c)[HALF - 1];
        if (before(&s->last[c], &key, false))
            c++;
    }
    struct cmt__set_key *e = chunk(m, s, c);
    uint32_t n = s->fill[c];
    uint32_t p = find_in_chunk(e, &key, false);
    memmove(&e[p + 1], &e[p], (n - p) * sizeof *e);
    e[p] = key;
    cmt__b(m, node)->chunk = s->ids[c];
    s->fill[c] = n + 1;
    s->last[c] = e[n];
    s->count++;
}

void cmt__set_insert(struct cmt_model *m, struct cmt__set *s, uint32_t node)
{
    insert_in(m, s, node, 0, UINT32_MAX);
}

/* Where node's key is: the last search's hint when it still points at the node (a lower
 * bound is usually followed by the erase of what it found), else the node's chunk, else a
 * search (a block's chunk is only a hint: it is checked). @return false when node is not in
 * the set. */
INLINE bool locate(const struct cmt_model *m, struct cmt__set *s, uint32_t node, uint32_t *cp,
                   uint32_t *pp)
{
    uint32_t c = s->hint_chunk, p = s->hint_pos;
    if (c < s->chunk_count && p < s->fill[c] && chunk(m, s, c)[p].slot == node) {
        *cp = c;
        *pp = p;
        return true;
    }
    uint32_t id = cmt__b(m, node)->chunk;
    if (id < m->chunk_capacity) {
        c = m->chunk_position[id];
        if (c < s->chunk_count && s->ids[c] == id) {
            const struct cmt__set_key *e = chunk(m, s, c);
            for (p = 0; p < s->fill[c]; p++)
                if (e[p].slot == node) {
                    *cp = c;
                    *pp = p;
                    return true;
                }
        }
    }
    struct cmt__set_key key = key_of(m, s, node);
    c = find_chunk(s, &key, false);
    if (c == s->chunk_count)
        return false;
    const struct cmt__set_key *e = chunk(m, s, c);
    p = find_in_chunk(e, &key, false);
    if (p == s->fill[c] || e[p].slot != node)
        return false;
    *cp = c;
    *pp = p;
    return true;
}

INLINE void erase_at(struct cmt_model *m, struct cmt__set *s, uint32_t c, uint32_t p)
{
    struct cmt__set_key *e = chunk(m, s, c);
    uint32_t n = s->fill[c];
    memmove(&e[p], &e[p + 1], (n - p - 1) * sizeof *e);
    e[n - 1] = SENTINEL;
    s->fill[c] = --n;
    s->count--;
    if (n == 0) {
        chunk_close(m, s, c);
        return;
    }
    s->last[c] = e[n - 1];
    if (c > 0 && s->fill[c - 1] + n <= HALF)
        chunk_merge_next(m, s, --c);
    if (c + 1 < s->chunk_count && s->fill[c] + s->fill[c + 1] <= HALF)
        chunk_merge_next(m, s, c);
}

void cmt__set_erase(struct cmt_model *m, struct cmt__set *s, uint32_t node)
{
    uint32_t c, p;
    if (locate(m, s, node, &c, &p))
        erase_at(m, s, c, p);
}

void cmt__set_replace(struct cmt_model *m, struct cmt__set *s, uint32_t old, uint32_t node)
{
    uint32_t c, p;
    if (!locate(m, s, old, &c, &p)) {
        cmt__set_insert(m, s, node);
        return;
    }
    struct cmt__set_key key = key_of(m, s, node);
    struct cmt__set_key *e = chunk(m, s, c);
    uint32_t n = s->fill[c];
    const struct cmt__set_key *prev = p > 0 ? &e[p - 1] : c > 0 ? &s->last[c - 1] : NULL;
    const struct cmt__set_key *next = p + 1 < n                ? &e[p + 1]
                                      : c + 1 < s->chunk_count ? chunk(m, s, c + 1)
                                                               : NULL;
    if ((!prev || before(prev, &key, false)) && (!next || before(&key, next, false))) {
        /* The new key sorts where the old one was: no search, nothing moves. */
        e[p] = key;
        cmt__b(m, node)->chunk = s->ids[c];
        if (p + 1 == n)
            s->last[c] = key;
        return;
    }
    if ((c == 0 || before(&s->last[c - 1], &key, false)) &&
        (c + 1 == s->chunk_count || before(&key, chunk(m, s, c + 1), false))) {
        /* The new key still belongs in this chunk: move it within, no split, no merge. */
        memmove(&e[p], &e[p + 1], (n - p - 1) * sizeof *e);
        e[n - 1] = SENTINEL;
        uint32_t q = find_in_chunk(e, &key, false);
        memmove(&e[q + 1], &e[q], (n - 1 - q) * sizeof *e);
        e[q] = key;
        cmt__b(m, node)->chunk = s->ids[c];
        s->last[c] = e[n - 1];
        s->hint_chunk = c;
        s->hint_pos = q;
        return;
    }
    /* The key leaves its chunk: search only the side it moved to. Down, its chunk is below
     * c and stays so through the erase (whose merges only join chunks c - 1 to c + 1 into the
     * lowest of them). Up, it was past c, so it is at c - 1 or past after the erase. */
    bool down = c > 0 && !before(&s->last[c - 1], &key, false);
    erase_at(m, s, c, p);
    if (down)
        insert_in(m, s, node, 0, c);
    else
        insert_in(m, s, node, c > 0 ? c - 1 : 0, UINT32_MAX);
}

/* The first entry >= key (> key when past_equal), as a slot. */
INLINE uint32_t seek(const struct cmt_model *m, struct cmt__set *s, const struct cmt__set_key *key,
                     bool past_equal)
{
    uint32_t c = find_chunk(s, key, past_equal);
    if (c == s->chunk_count)
        return CMT__NIL;
    const struct cmt__set_key *e = chunk(m, s, c);
    uint32_t p = find_in_chunk(e, key, past_equal);
    s->hint_chunk = c;
    s->hint_pos = p;
    return e[p].slot;
}

uint32_t cmt__set_lower_bound(const struct cmt_model *m, struct cmt__set *s, uint64_t stream,
                              uint64_t size, uint64_t address)
{
    struct cmt__set_key key = {stream, s->by_size ? size : 0, address, 0};
    return seek(m, s, &key, false);
}

uint32_t cmt__set_before(const struct cmt_model *m, const struct cmt__set *s, uint64_t stream,
                         uint64_t size, uint64_t address)
{
    struct cmt__set_key key = {stream, s->by_size ? size : 0, address, 0};
    uint32_t c = find_chunk(s, &key, false);
    uint32_t p = c == s->chunk_count ? 0 : find_in_chunk(chunk(m, s, c), &key, false);
    if (p == 0) {
        if (c == 0)
            return CMT__NIL;
        c--;
        p = s->fill[c];
    }
    return chunk(m, s, c)[p - 1].slot;
}

uint32_t cmt__set_after(const struct cmt_model *m, struct cmt__set *s, uint32_t node)
{
    struct cmt__set_key key = key_of(m, s, node);
    return seek(m, s, &key, true);
}

int cmt__sets_reserve(struct cmt_model *m, uint64_t slots)
{
    /* Four sets; each of n keys needs at most 2n / (HALF + 1) + 1 <
   * n / (HALF / 2) + 1 chunks (see above), and a split briefly takes one more. */
    uint64_t need = slots / (HALF / 2) + 8;
    if (need <= m->chunk_capacity)
        return 0;
    if (need > UINT32_MAX / 2)
        return CMT_EMODEL_NOMEM;
    uint64_t cap = m->chunk_capacity ? m->chunk_capacity : 16;
    while (cap < need)
        cap *= 2;
    struct cmt__set_key *entries = realloc(m->chunk_entries, cap * CMT__CHUNK * sizeof *entries);
    if (!entries)
        return CMT_EMODEL_NOMEM;
    m->chunk_entries = entries;
    uint32_t *free_ids = realloc(m->chunk_free, cap * sizeof *free_ids);
    if (!free_ids)
        return CMT_EMODEL_NOMEM;
    m->chunk_free = free_ids;
    uint32_t *positions = realloc(m->chunk_position, cap * sizeof *positions);
    if (!positions)
        return CMT_EMODEL_NOMEM;
    m->chunk_position = positions;
    for (uint64_t k = m->chunk_capacity; k < cap; k++)
        positions[k] = UINT32_MAX; /* in no set yet */
    for (int p = 0; p < 2; p++) {
        struct cmt__set *sets[2] = {&m->pools[p].free_set, &m->pools[p].unmapped_set};
        for (int k = 0; k < 2; k++) {
            struct cmt__set *s = sets[k];
            uint32_t *ids = realloc(s->ids, cap * sizeof *ids);
            if (ids)
                s->ids = ids;
            uint32_t *fill = realloc(s->fill, cap * sizeof *fill);
            if (fill)
                s->fill = fill;
            struct cmt__set_key *last = realloc(s->last, cap * sizeof *last);
            if (last) {
                s->last = last;
                for (uint64_t j = m->chunk_capacity; j < cap; j++)
                    last[j] = SENTINEL;
            }
            if (!ids || !fill || !last)
                return CMT_EMODEL_NOMEM;
        }
    }
    /* Hand out low ids first: the stack's top is its end. */
    uint32_t added = (uint32_t)cap - m->chunk_capacity;
    memmove(&m->chunk_free[added], m->chunk_free, m->chunk_free_count * sizeof *m->chunk_free);
    for (uint32_t k = 0; k < added; k++)
        m->chunk_free[k] = (uint32_t)cap - 1 - k;
    m->chunk_free_count += added;
    m->chunk_capacity = (uint32_t)cap;
    return 0;
}

void cmt__sets_destroy(struct cmt_model *m)
{
    free(m->chunk_entries);
    free(m->chunk_position);
    free(m->chunk_free);
    for (int p = 0; p < 2; p++) {
        struct cmt__set *sets[2] = {&m->pools[p].free_set, &m->pools[p].unmapped_set};
        for (int k = 0; k < 2; k++) {
            free(sets[k]->ids);
            free(sets[k]->fill);
            free(sets[k]->last);
        }
    }
}
