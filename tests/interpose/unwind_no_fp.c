/* unwind_no_fp.c — test_unwind's frames without frame pointers (-O2 -fomit-frame-pointer). */
#include <string.h>

#include "unwind_shapes.h"

static __attribute__((noinline)) int with_array(int depth, cmt_shape_leaf leaf, void *arg)
{
    volatile char a[200];
    a[0] = (char)depth;
    int r = cmt_shape_no_fp(depth - 1, leaf, arg);
    __asm__ volatile("" ::: "memory");
    return r + a[0];
}

static __attribute__((noinline)) int with_vla(int depth, cmt_shape_leaf leaf, void *arg)
{
    volatile char v[depth + 1]; /* rbp becomes the CFA's register */
    v[0] = (char)depth;
    int r = cmt_shape_no_fp(depth - 1, leaf, arg);
    __asm__ volatile("" ::: "memory");
    return r + v[0];
}

__attribute__((noinline)) int cmt_shape_no_fp(int depth, cmt_shape_leaf leaf, void *arg)
{
    int r;
    if (depth <= 0)
        r = leaf(arg);
    else if (depth % 2)
        r = with_array(depth, leaf, arg);
    else
        r = with_vla(depth, leaf, arg);
    __asm__ volatile("" ::: "memory");
    return r + 1;
}

__attribute__((noinline)) int cmt_shape_huge_frame(cmt_shape_leaf leaf, void *arg)
{
    volatile char big[160 * 1024];
    memset((char *)big, 1, 64);
    int r = leaf(arg);
    __asm__ volatile("" ::: "memory");
    return r + big[1];
}
