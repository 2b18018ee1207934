/* varint.h — internal: LEB128 varints and zigzag, shared by writer and reader. */
#ifndef CMT__VARINT_H
#define CMT__VARINT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CMT__VARINT_MAX 10

static inline uint8_t *cmt__put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint64_t cmt__zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t cmt__unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Reads one varint from [*pp, end). @return 0, or -1 when it runs past end or 10 bytes. */
static inline int cmt__get_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    if (p < end && *p < 0x80) { /* the common one-byte case */
        *out = *p;
        *pp = p + 1;
        return 0;
    }
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 70 && p < end; shift += 7) {
        uint8_t b = *p++;
        if (shift == 63 && b > 1)
            return -1;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80) {
            *out = v;
            *pp = p;
            return 0;
        }
    }
    return -1;
}

/* A varint of cmt__varint_long: its value, the byte after it, whether its tenth byte was bad. */
struct cmt__varint_read {
    uint64_t value;
    const uint8_t *next;
    int bad;
};

/* cmt__varint_fast past its eighth byte (rare: only a 64-bit value needs 9 or 10 bytes). Takes
 * and returns values, so that the caller's cursor can stay in a register. */
static __attribute__((noinline, unused)) struct cmt__varint_read cmt__varint_long(const uint8_t *p)
{
    uint64_t v = 0, b;
    unsigned shift = 0;
    int bad = 0;
    do {
        b = *p++;
        v |= (b & 0x7f) << shift;
        shift += 7;
    } while (b >= 0x80 && shift < 63);
    if (b >= 0x80) { /* the tenth byte may only hold the top bit */
        b = *p++;
        bad = b > 1;
        v |= b << 63;
    }
    return (struct cmt__varint_read){v, p, bad};
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CMT__HAVE_PEXT 1
/* The 7-bit groups of the low `bits` bits of w, packed (BMI2: only for a caller compiled with
 * target("bmi,bmi2"), run where the CPU has both; cmt__varint_pack). */
static inline __attribute__((target("bmi2"))) uint64_t cmt__varint_pack_pext(uint64_t w,
                                                                             unsigned bits)
{
    return __builtin_ia32_pext_di(__builtin_ia32_bzhi_di(w, bits), UINT64_C(0x7f7f7f7f7f7f7f7f));
}
#else
#define CMT__HAVE_PEXT 0
static inline uint64_t cmt__varint_pack_pext(uint64_t w, unsigned bits)
{
    return 0; /* never called: no caller is compiled for it */
}
#endif

/* The 7-bit groups of the low `bits` bits of w (a varint of bits / 8 bytes, 1 to 8), packed:
 * by three shift steps, or with `pext` non-zero by the BMI2 instruction of that name (the
 * caller is then compiled with target("bmi,bmi2")). */
static inline __attribute__((always_inline)) uint64_t cmt__varint_pack(uint64_t w, unsigned bits,
                                                                       int pext)
{
    if (CMT__HAVE_PEXT && pext)
        return cmt__varint_pack_pext(w, bits);
    uint64_t x = w & (~UINT64_C(0) >> (64 - bits)) & UINT64_C(0x7f7f7f7f7f7f7f7f);
    x = (x & UINT64_C(0x007f007f007f007f)) | (x & UINT64_C(0x7f007f007f007f00)) >> 1;
    x = (x & UINT64_C(0x00003fff00003fff)) | (x & UINT64_C(0x3fff00003fff0000)) >> 2;
    return (x & UINT64_C(0x000000000fffffff)) | (x & UINT64_C(0x0fffffff00000000)) >> 4;
}

/* Unchecked varint for the reader's event fast paths: may read up to 10 bytes past the record
 * (into the chunk's padding at worst); the caller compares the position with the record's end,
 * and a tenth byte above 1 sets *bad.
 * A varint of 2 to 8 bytes is assembled from one 8-byte load without a branch per byte (its
 * length is random in a trace of random sizes and addresses, so a byte loop mispredicts);
 * `pext` as cmt__varint_pack. */
static inline __attribute__((always_inline)) uint64_t cmt__varint_fast_with(const uint8_t **pp,
                                                                            int *bad, int pext)
{
    const uint8_t *p = *pp;
    uint64_t b = *p;
    if (__builtin_expect(b < 0x80, 1)) {
        *pp = p + 1;
        return b;
    }
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t w;
    memcpy(&w, p, sizeof w);
    uint64_t stops = ~w & UINT64_C(0x8080808080808080); /* top bit clear: the last byte */
    if (__builtin_expect(stops != 0, 1)) {
        unsigned bits = (unsigned)__builtin_ctzll(stops) + 1; /* 8 * length */
        *pp = p + bits / 8;
        return cmt__varint_pack(w, bits, pext);
    }
#endif
    struct cmt__varint_read x = cmt__varint_long(p);
    *pp = x.next;
    *bad |= x.bad;
    return x.value;
}

/* cmt__varint_fast_with, packing by shift steps (any CPU). */
static inline __attribute__((always_inline)) uint64_t cmt__varint_fast(const uint8_t **pp, int *bad)
{
    return cmt__varint_fast_with(pp, bad, 0);
}

static inline void cmt__put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static inline uint32_t cmt__get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#endif
