/* unwind_shapes.h — the call shapes test_unwind walks through, each built its own way
 * (tests/interpose/CMakeLists.txt): a shared library with frame pointers, a dlopen'ed module
 * and code in the test itself without them. Each descends `depth` frames, then calls
 * leaf(arg) and returns its result. */
#ifndef CMT_UNWIND_SHAPES_H
#define CMT_UNWIND_SHAPES_H

typedef int (*cmt_shape_leaf)(void *arg);

/* unwind_shared_lib.c (libcmt_unwind_shared.so, -fno-omit-frame-pointer): rbp-based CFAs. */
int cmt_shape_shared(int depth, cmt_shape_leaf leaf, void *arg);

/* unwind_module.c (dlopen'ed by path, -fomit-frame-pointer), looked up as "cmt_shape_module". */
typedef int (*cmt_shape_module_fn)(int depth, cmt_shape_leaf leaf, void *arg);

/* unwind_no_fp.c (in the test, -O2 -fomit-frame-pointer): frames of mixed sizes, one with a
 * variable-length array (its CFA moves to rbp even without frame pointers). */
int cmt_shape_no_fp(int depth, cmt_shape_leaf leaf, void *arg);

/* unwind_no_fp.c: one frame of over 128 KiB (a rule the cache does not hold), then leaf. */
int cmt_shape_huge_frame(cmt_shape_leaf leaf, void *arg);

#endif
