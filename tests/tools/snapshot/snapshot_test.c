/* snapshot_test.c — helpers of the snapshot tests (snapshot_test.h). */
#include "snapshot_test.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *fixture_path(const char *name)
{
    static char path[4096];
    const char *src = getenv("CMT_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/tools/snapshot/fixtures/%s", src ? src : ".", name);
    return path;
}

const char *torch_fixture_path(const char *name)
{
    static char path[4096];
    const char *src = getenv("CMT_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/torch/fixtures/%s", src ? src : ".", name);
    return path;
}

unsigned char *fixture_bytes(const char *name, size_t *len)
{
    FILE *f = fopen(fixture_path(name), "rb");
    cr_assert(f, "cannot open %s", fixture_path(name));
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n);
    cr_assert(b && fread(b, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

void fixture_parse(const char *name, struct cmt_snapshot *s)
{
    size_t len;
    unsigned char *b = fixture_bytes(name, &len);
    struct cmt_err err = {0};
    int rc = cmt_snapshot_parse(s, b, len, &err);
    free(b); /* the snapshot keeps nothing of the input */
    cr_assert_eq(rc, 0, "%s: %s", name, err.text);
}

void pk_raw(struct pk *p, const void *bytes, size_t n)
{
    if (p->n + n > p->cap) {
        p->cap = (p->n + n) * 2 + 64;
        p->b = realloc(p->b, p->cap);
        cr_assert(p->b);
    }
    memcpy(p->b + p->n, bytes, n);
    p->n += n;
}

static void op(struct pk *p, unsigned char c)
{
    pk_raw(p, &c, 1);
}

void pk_begin(struct pk *p)
{
    p->n = 0;
    pk_raw(p, "\x80\x04", 2);
}

void pk_end(struct pk *p)
{
    op(p, '.');
}

void pk_int(struct pk *p, int64_t v)
{
    if (v >= 0 && v < 256) {
        op(p, 'K');
        op(p, (unsigned char)v);
        return;
    }
    op(p, 0x8a); /* LONG1, 8 bytes of two's complement */
    op(p, 8);
    for (int k = 0; k < 8; k++)
        op(p, (unsigned char)((uint64_t)v >> (8 * k)));
}

void pk_str(struct pk *p, const char *s)
{
    size_t n = strlen(s);
    cr_assert(n < 256);
    op(p, 0x8c);
    op(p, (unsigned char)n);
    pk_raw(p, s, n);
}

void pk_dict(struct pk *p)
{
    pk_raw(p, "}(", 2);
}

void pk_list(struct pk *p)
{
    pk_raw(p, "](", 2);
}

void pk_setitems(struct pk *p)
{
    op(p, 'u');
}

void pk_appends(struct pk *p)
{
    op(p, 'e');
}

void pk_put(struct pk *p, uint8_t memo)
{
    op(p, 'q');
    op(p, memo);
}

void pk_get(struct pk *p, uint8_t memo)
{
    op(p, 'h');
    op(p, memo);
}
