/* frames.c — allocator-internal frames and call-site naming (see frames.h). */
#include "frames.h"

#include <stdio.h>

#include <string.h>

#define MAX_DEPTH 128 /* frames walked from the leaf */

static const struct {
    int what;
    const char *pattern;
} internal[] = {
#define CMT__FRAME_PATTERN(what, pattern) {CMT_FRAME_##what, pattern},
    CMT_ALLOCATOR_FRAMES(CMT__FRAME_PATTERN)
#undef CMT__FRAME_PATTERN
};

int cmt_glob(const char *p, const char *t)
{
    const char *star = NULL, *resume = NULL;
    while (*t) {
        if (*p == '*') {
            star = p++;
            resume = t;
        } else if (*p == *t) {
            p++;
            t++;
        } else if (star) {
            p = star + 1;
            t = ++resume;
        } else {
            return 0;
        }
    }
    while (*p == '*')
        p++;
    return *p == 0;
}

static const char *base_name(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    return slash ? slash + 1 : path;
}

void cmt_frame_texts(const cmt_reader *r, uint32_t node, struct cmt_frame_texts *out)
{
    const struct cmt_symbol *s = cmt_reader_symbol(r, node);
    out->function = s ? cmt_reader_string(r, s->function) : NULL;
    out->file = s ? base_name(cmt_reader_string(r, s->file)) : NULL;
    out->module = NULL;
    struct cmt_stack_node n;
    if (cmt_reader_stack_node(r, node, &n) == 0) {
        const struct cmt_module *m = cmt_reader_module_at(r, n.ip);
        out->module = m ? base_name(m->path) : NULL;
    }
}

const char *cmt_frame_text(const struct cmt_frame_texts *t, int what)
{
    return what == CMT_FRAME_FUNCTION ? t->function
           : what == CMT_FRAME_MODULE ? t->module
                                      : t->file;
}

int cmt_frame_is_internal(const cmt_reader *r, uint32_t node)
{
    struct cmt_frame_texts t;
    cmt_frame_texts(r, node, &t);
    for (size_t i = 0; i < sizeof internal / sizeof *internal; i++) {
        const char *text = cmt_frame_text(&t, internal[i].what);
        if (text && cmt_glob(internal[i].pattern, text))
            return 1;
    }
    return 0;
}

/* cumemtrace's own frames: never a call site, not even when nothing else is left */
static int is_tracer(const cmt_reader *r, uint32_t node)
{
    char buf[512];
    cmt_reader_format_frame(r, node, buf, sizeof buf);
    return strncmp(buf, "cmt_", 4) == 0 || strstr(buf, "libcumemtrace") != NULL;
}

uint32_t cmt_call_site_node(const cmt_reader *r, uint32_t leaf)
{
    struct cmt_stack_node n;
    uint32_t fallback = 0;
    uint32_t id = leaf;
    for (int depth = 0; id && depth < MAX_DEPTH; depth++) {
        if (cmt_reader_stack_node(r, id, &n) != 0)
            break;
        if (!cmt_frame_is_internal(r, id))
            return id;
        if (!fallback && !is_tracer(r, id))
            fallback = id;
        if (n.parent == id)
            break;
        id = n.parent;
    }
    return fallback;
}

void cmt_stack_frames(const cmt_reader *r, uint32_t leaf, int max,
                      void (*fn)(void *ctx, const char *frame), void *ctx)
{
    char buf[512];
    struct cmt_stack_node n;
    uint32_t id = leaf;
    for (int i = 0; id && i < max; i++) {
        if (cmt_reader_stack_node(r, id, &n) != 0)
            break;
        cmt_reader_format_frame(r, id, buf, sizeof buf);
        fn(ctx, buf);
        if (n.parent == id)
            break;
        id = n.parent;
    }
}

struct stack_text {
    char *buf;
    size_t size, len;
};

static void add_frame(void *ctx, const char *frame)
{
    struct stack_text *t = ctx;
    int n = snprintf(t->buf + t->len, t->size - t->len, "%s%s", t->len ? " <- " : "", frame);
    if (n > 0)
        t->len = t->len + (size_t)n < t->size ? t->len + (size_t)n : t->size - 1;
}

const char *cmt_stack_text(const cmt_reader *r, uint32_t leaf, int max, char *buf, size_t size)
{
    struct stack_text t = {buf, size, 0};
    buf[0] = 0;
    cmt_stack_frames(r, leaf, max, add_frame, &t);
    return buf;
}

const char *cmt_stack_top(const cmt_reader *r, uint32_t leaf, char *buf, size_t size)
{
    uint32_t node = cmt_call_site_node(r, leaf);
    if (node)
        cmt_reader_format_frame(r, node, buf, size);
    else
        snprintf(buf, size, "(no stack)");
    return buf;
}
