/* unwind_shared_lib.c — a shared library for test_unwind, built with frame pointers. */
#include "unwind_shapes.h"

__attribute__((visibility("default"), noinline)) int cmt_shape_shared(int depth,
                                                                      cmt_shape_leaf leaf,
                                                                      void *arg)
{
    int r = depth > 0 ? cmt_shape_shared(depth - 1, leaf, arg) : leaf(arg);
    __asm__ volatile("" ::: "memory"); /* no tail call: every frame stays */
    return r + 1;
}
