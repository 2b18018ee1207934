/* unwind_module.c — a module test_unwind dlopens, built without frame pointers. */
#include "unwind_shapes.h"

int cmt_shape_module(int depth, cmt_shape_leaf leaf, void *arg);

__attribute__((visibility("default"), noinline)) int cmt_shape_module(int depth,
                                                                      cmt_shape_leaf leaf,
                                                                      void *arg)
{
    volatile char pad[48 + 16 * (depth % 3)]; /* frames of different sizes */
    pad[0] = (char)depth;
    int r = depth > 0 ? cmt_shape_module(depth - 1, leaf, arg) : leaf(arg);
    __asm__ volatile("" ::: "memory");
    return r + pad[0];
}
