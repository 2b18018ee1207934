/* alloc_fixture.c — see alloc_fixture.h. */
#include "alloc_fixture.h"

#define MIB(x) ((uint64_t)(x) << 20)

/* A tensor's stack: the allocator's frames, a C++ frame, then Python frames. */
static uint32_t tensor_stack(struct tb *b, uint32_t root, const char *fn, const char *file,
                             uint32_t line)
{
    uint32_t py = tb_source_frame(b, root, fn, file, line);
    uint32_t cpp = tb_frame(b, py, "at::native::empty_cuda");
    return tb_frame(b, cpp, "c10::cuda::CUDACachingAllocator::Native::malloc");
}

void wu_fragmentation(struct tb *b, int with_driver, const char *conf)
{
    uint64_t others = MIB(WU_TOTAL_MIB - WU_FREE_MIB - WU_RESERVED_MIB) -
                      (with_driver ? MIB(WU_OUTSIDE_MIB) : 0);
    tb_begin(b, MIB(WU_TOTAL_MIB), MIB(WU_TOTAL_MIB) - others);
    tb_allocator(b, 1, conf);
    uint32_t root = tb_source_frame(b, 0, "txt2img", "webui/txt2img.py", 30);
    uint32_t unet = tensor_stack(b, root, "forward", "unet.py", 412);
    uint32_t attn = tensor_stack(b, root, "attention", "attention.py", 88);
    uint32_t vae = tensor_stack(b, root, "decode", "vae.py", 120);
    uint32_t big = tensor_stack(b, root, "inpaint", "inpaint.py", 57);
    uint32_t segs = tb_frame(b, tb_frame(b, root, "at::native::empty_cuda"),
                             "c10::cuda::CUDACachingAllocator::Native::malloc");
    uint32_t nccl = tb_frame(b, root, "ncclCommInitRank");
    uint32_t flags = with_driver ? 0 : CMT_AFLAG_BEFORE;
    if (with_driver) {
        tb_alloc(b, 0x7e0000000000, MIB(WU_OUTSIDE_MIB), nccl);
        tb_alloc(b, WU_SEG1, MIB(WU_SEG1_MIB), segs);
    }
    tb_segment(b, WU_SEG1, MIB(WU_SEG1_MIB), flags);
    tb_block(b, WU_SEG1, MIB(WU_LIVE1_MIB), MIB(WU_LIVE1_MIB) - 1000, unet, flags);
    if (with_driver) { /* a block that is gone by the failure: the first gap */
        tb_block(b, WU_SEG1 + MIB(WU_LIVE1_MIB), MIB(WU_GAP1_MIB), MIB(WU_GAP1_MIB), attn, 0);
        tb_block_free(b, WU_SEG1 + MIB(WU_LIVE1_MIB), MIB(WU_GAP1_MIB));
        tb_alloc(b, WU_SEG2, MIB(WU_SEG2_MIB), segs);
    }
    tb_segment(b, WU_SEG2, MIB(WU_SEG2_MIB), flags);
    tb_block(b, WU_SEG2, MIB(4000), MIB(4000), unet, flags);
    tb_block(b, WU_SEG2 + MIB(4000), MIB(4694), MIB(4694) - 512, vae, flags);
    if (!with_driver) { /* a ring-limited snapshot: a free whose alloc fell out of the window */
        uint64_t v[] = {0x7f2000000000, MIB(20)};
        tb_alloc_event(b, CMT_AA_FREE_REQUESTED, 0, 0, CMT_AF(ADDR) | CMT_AF(SIZE), v);
    }
    uint64_t seq = 0;
    if (with_driver) { /* the new segment does not fit; release_cached_blocks has nothing */
        seq = tb_alloc_fail(b, MIB(WU_REQUEST_MIB), segs);
        tb_meminfo(b, CMT_MEMINFO_OOM, MIB(WU_FREE_MIB), MIB(WU_TOTAL_MIB), seq);
        tb_alloc_fail(b, MIB(WU_REQUEST_MIB), segs);
    }
    uint64_t v[] = {MIB(WU_REQUEST_MIB), MIB(WU_FREE_MIB), MIB(WU_TOTAL_MIB), MIB(WU_ALLOCATED_MIB),
                    MIB(WU_RESERVED_MIB)};
    tb_alloc_event(b, CMT_AA_OOM, 0, big,
                   CMT_AF(SIZE) | CMT_AF(DEVICE_FREE) | CMT_AF(DEVICE_TOTAL) | CMT_AF(ALLOCATED) |
                       CMT_AF(RESERVED),
                   v);
    tb_finish(b, 0);
}
