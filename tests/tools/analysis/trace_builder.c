/* trace_builder.c — see trace_builder.h. */
#include "trace_builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct cmt_api apis[] = {
#define TB__ROW(id, op, name) {TB_##id, CMT_OP_##op, name},
    TB_APIS(TB__ROW)
#undef TB__ROW
};

const struct cmt_api *tb_apis(size_t *n)
{
    *n = sizeof apis / sizeof *apis;
    return apis;
}

const char *tb_api_id_name(enum tb_api api)
{
    static const char *const names[] = {
#define TB__NAME(id, op, name) [TB_##id] = "TB_" #id,
        TB_APIS(TB__NAME)
#undef TB__NAME
    };
    return api > 0 && api < TB_API_COUNT ? names[api] : NULL;
}

#define MAX_NODES 4096
static char node_names[MAX_NODES][64];
static char node_files[MAX_NODES][64];
static uint32_t node_lines[MAX_NODES];

static void must(int rc)
{
    if (rc) {
        fprintf(stderr, "trace_builder: writer error %d\n", rc);
        abort();
    }
}

void tb_begin(struct tb *b, uint64_t total, uint64_t free_bytes)
{
    static const char *argv[] = {"./fill_device", "--big"};
    struct cmt_process p = {100,
                            1,
                            1700000000000000000ull,
                            5000,
                            12040,
                            "testhost",
                            "/tmp/fill_device",
                            2,
                            argv,
                            -1,
                            -1,
                            -1,
                            NULL};
    tb_begin_process(b, &p, total, free_bytes);
}

void tb_begin_process(struct tb *b, const struct cmt_process *p, uint64_t total,
                      uint64_t free_bytes)
{
    memset(b, 0, sizeof *b);
    memset(node_files, 0, sizeof node_files);
    memset(node_lines, 0, sizeof node_lines);
    b->next_node = 1;
    b->tid = 77;
    must(cmt_writer_create(&b->w, cmt_membuf_sink, &b->buf, NULL));
    must(cmt_writer_process(b->w, p));
    for (size_t i = 0; i < sizeof apis / sizeof *apis; i++)
        must(cmt_writer_api(b->w, &apis[i]));
    struct cmt_thread th = {77, "main"};
    must(cmt_writer_thread(b->w, &th));
    struct cmt_device d = {0, "Simulated GPU", total, free_bytes, 0};
    must(cmt_writer_device(b->w, &d));
    tb_meminfo(b, CMT_MEMINFO_BASELINE, free_bytes, total, 0);
}

uint32_t tb_stack(struct tb *b, const char *name, int depth)
{
    uint32_t parent = 0;
    for (int i = depth - 1; i >= 0; i--) {
        uint32_t id = b->next_node++;
        struct cmt_stack_node n = {id, parent, 0x401000 + (uint64_t)id * 16};
        must(cmt_writer_stack_node(b->w, &n));
        if (id < MAX_NODES)
            snprintf(node_names[id], sizeof node_names[id], "%s_%d", name, i);
        parent = id;
    }
    return parent;
}

uint32_t tb_frame(struct tb *b, uint32_t parent, const char *function)
{
    uint32_t id = b->next_node++;
    struct cmt_stack_node n = {id, parent, 0x401000 + (uint64_t)id * 16};
    must(cmt_writer_stack_node(b->w, &n));
    if (id < MAX_NODES)
        snprintf(node_names[id], sizeof node_names[id], "%s", function);
    return id;
}

uint32_t tb_source_frame(struct tb *b, uint32_t parent, const char *function, const char *file,
                         uint32_t line)
{
    uint32_t id = tb_frame(b, parent, function);
    if (id < MAX_NODES) {
        snprintf(node_files[id], sizeof node_files[id], "%s", file);
        node_lines[id] = line;
    }
    return id;
}

void tb_allocator(struct tb *b, uint32_t id, const char *conf)
{
    struct cmt_alloc_info a = {id, b->t_ns, -1, "pytorch-cuda-caching", "2.6.0", conf};
    must(cmt_writer_alloc_info(b->w, &a));
}

void tb_alloc_event(struct tb *b, uint32_t action, int32_t dev, uint32_t stack, uint32_t fields,
                    const uint64_t *values)
{
    b->t_ns += 1000;
    struct cmt_alloc_event e = {.allocator = 1,
                                .action = action,
                                .t_ns = b->t_ns,
                                .tid = b->tid,
                                .dev = dev,
                                .stack = stack,
                                .fields = fields | CMT_AF(SEQ)};
    int k = 0;
    for (uint32_t m = fields; m; m &= m - 1)
        e.v[__builtin_ctz(m)] = values[k++];
    e.v[CMT_AFIELD_SEQ] = b->seq;
    must(cmt_writer_alloc_event(b->w, &e));
}

void tb_segment(struct tb *b, uint64_t addr, uint64_t size, uint32_t flags)
{
    uint64_t v[] = {addr, size, flags};
    tb_alloc_event(b, CMT_AA_SEGMENT_ALLOC, 0, 0, CMT_AF(ADDR) | CMT_AF(SIZE) | CMT_AF(FLAGS), v);
}

void tb_block(struct tb *b, uint64_t addr, uint64_t size, uint64_t requested, uint32_t stack,
              uint32_t flags)
{
    uint64_t v[] = {addr, size, requested, flags};
    tb_alloc_event(b, CMT_AA_ALLOC, 0, stack,
                   CMT_AF(ADDR) | CMT_AF(SIZE) | CMT_AF(REQUESTED) | CMT_AF(FLAGS), v);
}

void tb_block_free(struct tb *b, uint64_t addr, uint64_t size)
{
    uint64_t v[] = {addr, size};
    tb_alloc_event(b, CMT_AA_FREE_REQUESTED, 0, 0, CMT_AF(ADDR) | CMT_AF(SIZE), v);
    tb_alloc_event(b, CMT_AA_FREE_COMPLETED, 0, 0, CMT_AF(ADDR) | CMT_AF(SIZE), v);
}

uint64_t tb_event(struct tb *b, enum tb_api api, int result, int32_t dev, uint32_t stack,
                  uint32_t fields, const uint64_t *values)
{
    b->t_ns += 1000;
    struct cmt_event e = {.seq = ++b->seq,
                          .t_ns = b->t_ns,
                          .tid = b->tid,
                          .api = api,
                          .result = result,
                          .dev = dev,
                          .stack = stack,
                          .fields = fields};
    int k = 0;
    for (uint32_t m = fields; m; m &= m - 1)
        e.v[__builtin_ctz(m)] = values[k++];
    must(cmt_writer_event(b->w, &e));
    return b->seq;
}

uint64_t tb_alloc(struct tb *b, uint64_t ptr, uint64_t size, uint32_t stack)
{
    uint64_t v[] = {ptr, size};
    return tb_event(b, TB_ALLOC, 0, 0, stack, CMT_F(PTR) | CMT_F(SIZE), v);
}

uint64_t tb_alloc_fail(struct tb *b, uint64_t size, uint32_t stack)
{
    uint64_t v[] = {size};
    return tb_event(b, TB_ALLOC, 2, 0, stack, CMT_F(SIZE), v);
}

uint64_t tb_free(struct tb *b, uint64_t ptr)
{
    uint64_t v[] = {ptr};
    return tb_event(b, TB_FREE, 0, 0, 0, CMT_F(PTR), v);
}

void tb_hold(struct tb *b, uint64_t peak, uint64_t fail_t)
{
    b->t_ns = UINT64_C(1000000);
    tb_alloc(b, 0x7f0000000000, peak, 0);
    if (fail_t) {
        b->t_ns = fail_t;
        tb_alloc_fail(b, 30 * TB_GIB, 0);
    }
    b->t_ns = UINT64_C(10000000);
    tb_free(b, 0x7f0000000000);
}

void tb_meminfo(struct tb *b, uint32_t reason, uint64_t free_bytes, uint64_t total, uint64_t seq)
{
    struct cmt_meminfo m = {b->t_ns, 0, reason, free_bytes, total, seq};
    must(cmt_writer_meminfo(b->w, &m));
}

void tb_finish(struct tb *b, int clean)
{
    if (clean) {
        struct cmt_end e = {b->t_ns + 1000, b->seq, 0};
        must(cmt_writer_end(b->w, &e));
    }
    uint32_t string_id = 1;
    for (uint32_t id = 1; id < b->next_node && id < MAX_NODES; id++) {
        must(cmt_writer_string(b->w, string_id, node_names[id]));
        struct cmt_symbol s = {id, string_id++, 0, node_lines[id], 0};
        if (node_files[id][0]) {
            must(cmt_writer_string(b->w, string_id, node_files[id]));
            s.file = string_id++;
        }
        must(cmt_writer_symbol(b->w, &s));
    }
    must(cmt_writer_flush(b->w));
    cmt_writer_destroy(b->w);
    b->w = NULL;
}

int tb_save(const struct tb *b, const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t n = fwrite(b->buf.data, 1, b->buf.len, f);
    return fclose(f) == 0 && n == b->buf.len ? 0 : -1;
}

void tb_free_builder(struct tb *b)
{
    if (b->w)
        cmt_writer_destroy(b->w);
    cmt_membuf_free(&b->buf);
}
