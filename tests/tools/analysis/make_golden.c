/* make_golden.c — writes the golden traces of tests/tools/analysis/golden/ (run once by hand:
 * `cmt_make_golden tests/tools/analysis/golden`; the files are committed).
 *   valid_*.cmt   must decode cleanly; every command succeeds without a warning
 *                 (valid_v1_*.cmt and valid_v2_*.cmt were written by formats 1 and 2 and
 *                 are kept as they are: the reader still reads both)
 *   damaged_*.cmt must give a warning naming the byte offset, and results before it
 *   bad_*.cmt     must be refused with one clear line (foreign, empty, newer version) */
#include <stdio.h>
#include <string.h>

#include "cmt_format.h"
#include "trace_builder.h"

static char dir[512];

static void save(const char *name, const void *data, size_t len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "make_golden: cannot write %s\n", path);
        return;
    }
    printf("%s (%zu bytes)\n", path, len);
}

/* the OOM story of the seeds: segments fill the device, fail, free cached, fail again */
static void pytorch_oom(struct tb *b)
{
    tb_begin(b, 24 * TB_GIB, 24 * TB_GIB - 300 * TB_MIB);
    uint32_t seg = tb_stack(b, "cudaCachingAllocator_malloc", 5);
    uint32_t small = tb_stack(b, "small_block", 5);
    for (int i = 0; i < 17; i++)
        tb_alloc(b, 0x7f0000000000 + (uint64_t)i * 2 * TB_GIB, TB_GIB + 40 * TB_MIB, seg);
    for (int i = 0; i < 8; i++) {
        tb_alloc(b, 0x7f8000000000 + (uint64_t)i * 4 * TB_MIB, 2 * TB_MIB, small);
        if (i % 2)
            tb_free(b, 0x7f8000000000 + (uint64_t)i * 4 * TB_MIB);
    }
    uint64_t seq = tb_alloc_fail(b, 6636000000ull, seg);
    tb_meminfo(b, CMT_MEMINFO_OOM, 3683000000ull, 24 * TB_GIB, seq);
    tb_free(b, 0x7f0000000000);
    tb_free(b, 0x7f0000000000 + 2 * TB_GIB);
    seq = tb_alloc_fail(b, 6636000000ull, seg);
    tb_meminfo(b, CMT_MEMINFO_OOM, 3683000000ull + 2 * (TB_GIB + 40 * TB_MIB), 24 * TB_GIB, seq);
}

static void kinds(struct tb *b)
{
    tb_begin(b, 8 * TB_GIB, 8 * TB_GIB);
    uint32_t s = tb_stack(b, "kinds", 3);
    uint64_t pitch[] = {0x10000, 3 * TB_MIB, 4096, 4000, 768};
    tb_event(b, TB_PITCH, 0, 0, s,
             CMT_F(PTR) | CMT_F(SIZE) | CMT_F(PITCH) | CMT_F(WIDTH) | CMT_F(HEIGHT), pitch);
    uint64_t managed[] = {0x800000000, 5 * TB_MIB, 1};
    tb_event(b, TB_MANAGED, 0, 0, s, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(FLAGS), managed);
    uint64_t async[] = {0x20000000, 7 * TB_MIB, 1};
    tb_event(b, TB_ALLOC_ASYNC, 0, 0, s, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(STREAM), async);
    uint64_t host[] = {0x90000, TB_MIB, 0};
    tb_event(b, TB_HOST, 0, 0, s, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(FLAGS), host);
    uint64_t create[] = {20 * TB_MIB, 0x1}; /* values in field-bit order */
    tb_event(b, TB_CREATE, 0, 0, s, CMT_F(HANDLE) | CMT_F(SIZE), create);
    uint64_t reserve[] = {0x7e0000000000, TB_GIB, 0};
    tb_event(b, TB_RESERVE, 0, 0, s, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(ALIGN), reserve);
    uint64_t map[] = {0x7e0000000000, 20 * TB_MIB, 0x1, 0};
    tb_event(b, TB_MAP, 0, 0, s, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(OFFSET) | CMT_F(HANDLE), map);
    uint64_t info[] = {7 * TB_GIB, 8 * TB_GIB};
    tb_event(b, TB_INFO, 0, 0, 0, CMT_F(FREE) | CMT_F(TOTAL), info);
    uint64_t freeasync[] = {0x20000000, 1};
    tb_event(b, TB_FREE_ASYNC, 0, 0, s, CMT_F(PTR) | CMT_F(STREAM), freeasync);
    uint64_t trim[] = {TB_MIB, 0};
    tb_event(b, TB_POOL_TRIM, 0, 0, 0, CMT_F(POOL) | CMT_F(SIZE), trim);
    uint64_t unmap[] = {0x7e0000000000, 20 * TB_MIB};
    tb_event(b, TB_UNMAP, 0, 0, s, CMT_F(PTR) | CMT_F(SIZE), unmap);
    uint64_t release[] = {0x1};
    tb_event(b, TB_RELEASE, 0, 0, s, CMT_F(HANDLE), release);
    tb_free(b, 0xbad0000); /* unknown pointer */
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: cmt_make_golden DIR\n");
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", argv[1]);
    struct tb b;

    pytorch_oom(&b);
    tb_finish(&b, 0);
    save("valid_pytorch_oom.cmt", b.buf.data, b.buf.len);
    tb_free_builder(&b);

    kinds(&b);
    tb_finish(&b, 1);
    save("valid_all_kinds.cmt", b.buf.data, b.buf.len);
    tb_free_builder(&b);

    tb_begin(&b, TB_GIB, TB_GIB);
    tb_finish(&b, 1);
    save("valid_no_events.cmt", b.buf.data, b.buf.len);
    tb_free_builder(&b);

    /* two chunks; the second cut short, then one with a flipped byte */
    pytorch_oom(&b);
    cmt_writer_flush(b.w);
    size_t first = b.buf.len;
    tb_alloc(&b, 0x1000, 4096, 0);
    tb_finish(&b, 1);
    save("damaged_truncated.cmt", b.buf.data, first + (b.buf.len - first) / 2);
    b.buf.data[first + 24] ^= 0x5a;
    save("damaged_bitflip.cmt", b.buf.data, b.buf.len);
    tb_free_builder(&b);

    save("bad_empty.cmt", "", 0);
    static const char foreign[] = "PK\x03\x04 this is a zip file, not a trace";
    save("bad_foreign.cmt", foreign, sizeof foreign - 1);
    static const unsigned char newer[16] = {
        0x89, 'C', 'M', 'T', '\r', '\n', 0x1a, '\n', CMT_VERSION_MAJOR + 1, 0};
    save("bad_newer_version.cmt", newer, sizeof newer);
    save("bad_short_header.cmt",
         "\x89"
         "CMT",
         4);
    return 0;
}
