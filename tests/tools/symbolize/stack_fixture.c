/* stack_fixture.c — see stack_fixture.h. Built with -O0 so each call keeps its own frame. */
/* A call and the __LINE__ it returns to share a line, as the test expects: */
/* clang-format off */
#include "stack_fixture.h"

#include <elf.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static NOINLINE void leaf_frame(struct chain *c)
{
    c->ip[0] = (uint64_t)(uintptr_t)__builtin_return_address(0);
}

static NOINLINE void middle_frame(struct chain *c)
{
    leaf_frame(c); c->line[0] = __LINE__;
    c->ip[1] = (uint64_t)(uintptr_t)__builtin_return_address(0);
}

static NOINLINE void outer_frame(struct chain *c)
{
    middle_frame(c); c->line[1] = __LINE__;
    c->ip[2] = (uint64_t)(uintptr_t)__builtin_return_address(0);
}

static NOINLINE void capture_frame(struct chain *c)
{
    outer_frame(c); c->line[2] = __LINE__;
}

void fixture_capture_chain(struct chain *c)
{
    memset(c, 0, sizeof *c);
    capture_frame(c);
    c->function[0] = "middle_frame";
    c->function[1] = "outer_frame";
    c->function[2] = "capture_frame";
}

static NOINLINE void record_return(uint64_t *ip)
{
    *ip = (uint64_t)(uintptr_t)__builtin_return_address(0);
}

static inline __attribute__((always_inline)) void inlined_helper(uint64_t *ip, unsigned *line)
{
    record_return(ip); *line = __LINE__;
}

static NOINLINE void inline_host(uint64_t *ip, unsigned *line)
{
    inlined_helper(ip, line);
}

uint64_t fixture_inlined_frame(const char **name, unsigned *line)
{
    uint64_t ip = 0;
    inline_host(&ip, line);
    *name = "inlined_helper";
    return ip;
}

struct self_query {
    struct cmt_module *m;
    uint8_t *build_id;
};

static void read_build_id(const struct dl_phdr_info *info, const ElfW(Phdr) *ph,
                          struct self_query *q)
{
    const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
    const uint8_t *end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
        const ElfW(Nhdr) *n = (const void *)p;
        const uint8_t *name = p + sizeof *n;
        const uint8_t *desc = name + ((n->n_namesz + 3) & ~3u);
        if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
            n->n_descsz <= 64) {
            memcpy(q->build_id, desc, n->n_descsz);
            q->m->build_id_len = n->n_descsz;
            return;
        }
        p = desc + ((n->n_descsz + 3) & ~3u);
    }
}

static int self_phdr(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct self_query *q = arg;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_NOTE && !q->m->build_id_len)
            read_build_id(info, ph, q);
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t start = info->dlpi_addr + (ph->p_vaddr & -ph->p_align);
        uint64_t end = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        lo = start < lo ? start : lo;
        hi = end > hi ? end : hi;
    }
    q->m->base = lo;
    q->m->size = hi - lo;
    return 1; /* the first object is the executable */
}

void fixture_self_module(struct cmt_module *m, char *path, size_t path_size, uint8_t *build_id)
{
    memset(m, 0, sizeof *m);
    ssize_t n = readlink("/proc/self/exe", path, path_size - 1);
    path[n > 0 ? n : 0] = 0;
    m->id = 1;
    m->path = path;
    m->build_id = build_id;
    struct self_query q = {m, build_id};
    dl_iterate_phdr(self_phdr, &q);
}
/* clang-format on */
