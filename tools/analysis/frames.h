/* frames.h — which stack frames are allocator internals, and the call site a stack
 * is named and grouped by (docs/analysis.md, "Call sites").
 *
 * Every allocation's innermost frames are the allocator's own (PyTorch's caching allocator,
 * the CUDA runtime's and driver's entry points, the caching model, cumemtrace itself), so
 * naming a stack by its leaf makes every holder read the same. A call site is therefore
 * named by its first frame, from the leaf outwards, that matches none of
 * CMT_ALLOCATOR_FRAMES. A pattern is matched against the frame's function name (FUNCTION),
 * the base name of its source file (SOURCE) or of its module (MODULE, for frames without
 * symbols); '*' matches any run of characters. */
#ifndef CMT_FRAMES_H
#define CMT_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "reader.h"

#define CMT_ALLOCATOR_FRAMES(X)                                                       \
    X(FUNCTION, "c10::cuda::CUDACachingAllocator*") /* PyTorch's caching allocator */ \
    X(FUNCTION, "c10::cuda::*Allocator*")           /* its other CUDA allocators */   \
    X(FUNCTION, "_ZN3c104cuda*Allocator*")          /* the same, not demangled */     \
    X(FUNCTION, "cudaMalloc*")                      /* CUDA runtime entry points */   \
    X(FUNCTION, "cudaFree*")                                                          \
    X(FUNCTION, "cuMem*")        /* driver entry points and wrappers */               \
    X(FUNCTION, "cmt_*")         /* cumemtrace, the model (cmt_model_*) */            \
    X(SOURCE, "caching_model.c") /* the caching-allocator model */                    \
    X(FUNCTION, "device_alloc")  /* demo_diffusion's device hooks */                  \
    X(FUNCTION, "device_free")                                                        \
    X(FUNCTION, "cached_alloc") /* and its allocator entry point */                   \
    X(MODULE, "libcumemtrace*") /* frames without symbols */                          \
    X(MODULE, "libcudart*")                                                           \
    X(MODULE, "libcuda.so*")

enum { CMT_FRAME_FUNCTION, CMT_FRAME_SOURCE, CMT_FRAME_MODULE };

/* What a frame pattern is matched against: the frame's function name, the base names of its
 * source file and of its module (each NULL when unknown). */
struct cmt_frame_texts {
    const char *function, *file, *module;
};
void cmt_frame_texts(const cmt_reader *r, uint32_t node, struct cmt_frame_texts *out);
/* @return the text of t that a pattern of kind `what` (CMT_FRAME_*) is matched against. */
const char *cmt_frame_text(const struct cmt_frame_texts *t, int what);

/* @return 1 when '*'-pattern `pattern` matches all of `text`. */
int cmt_glob(const char *pattern, const char *text);

/* @return 1 when frame `node` belongs to allocator internals. */
int cmt_frame_is_internal(const cmt_reader *r, uint32_t node);

/* The node a stack is named by: its first frame outside allocator internals; when every frame
 * is internal, its first frame that is not cumemtrace's own. @return 0 when none (no stack). */
uint32_t cmt_call_site_node(const cmt_reader *r, uint32_t leaf);

/* Calls fn for each frame of stack `leaf`, innermost first, at most `max` frames. */
void cmt_stack_frames(const cmt_reader *r, uint32_t leaf, int max,
                      void (*fn)(void *ctx, const char *frame), void *ctx);
/* The frames of stack `leaf`, innermost first, at most `max`, joined by " <- " into buf (cut
 * to fit size; "" when none). @return buf. */
const char *cmt_stack_text(const cmt_reader *r, uint32_t leaf, int max, char *buf, size_t size);
/* The frame a call site is named by (cmt_call_site_node: the first frame outside allocator
 * internals), as text; "(no stack)" when none. @return buf. */
const char *cmt_stack_top(const cmt_reader *r, uint32_t leaf, char *buf, size_t size);

#endif
