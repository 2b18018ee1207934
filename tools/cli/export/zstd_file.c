/* zstd_file.c — see zstd_file.h: a glibc cookie stream over ZSTD_compressStream2. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* fopencookie */
#endif
#include "export/zstd_file.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <zstd.h>

struct zstd_file {
    int fd, failed;
    ZSTD_CCtx *cctx;
    ZSTD_outBuffer out;
};

/* Writes the compressed bytes held so far to fd. @return 0, or -1 (the stream has failed). */
static int drain(struct zstd_file *z)
{
    const char *p = z->out.dst;
    size_t left = z->out.pos;
    while (left && !z->failed) {
        ssize_t n = write(z->fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            z->failed = 1;
        else {
            p += n;
            left -= (size_t)n;
        }
    }
    z->out.pos = 0;
    return z->failed ? -1 : 0;
}

/* Feeds `in` (all of it with ZSTD_e_continue; to the frame's end with ZSTD_e_end).
 * @return 0, or -1. */
static int compress(struct zstd_file *z, ZSTD_inBuffer *in, ZSTD_EndDirective mode)
{
    for (;;) {
        size_t left = ZSTD_compressStream2(z->cctx, &z->out, in, mode);
        if (ZSTD_isError(left))
            z->failed = 1;
        if (z->failed || (z->out.pos == z->out.size && drain(z) != 0))
            return -1;
        if (mode == ZSTD_e_continue ? in->pos == in->size : left == 0)
            return 0;
    }
}

static ssize_t zstd_write(void *cookie, const char *buf, size_t size)
{
    struct zstd_file *z = cookie;
    ZSTD_inBuffer in = {buf, size, 0};
    if (z->failed || compress(z, &in, ZSTD_e_continue) != 0) {
        errno = EIO;
        return -1; /* stdio then sets the error indicator */
    }
    return (ssize_t)size;
}

static int zstd_close(void *cookie)
{
    struct zstd_file *z = cookie;
    ZSTD_inBuffer none = {NULL, 0, 0};
    int bad = z->failed || compress(z, &none, ZSTD_e_end) != 0 || drain(z) != 0;
    bad |= close(z->fd) != 0;
    ZSTD_freeCCtx(z->cctx);
    free((void *)z->out.dst);
    free(z);
    return bad ? -1 : 0;
}

FILE *cmt__zstd_fdopen(int fd, int level)
{
    struct zstd_file *z = calloc(1, sizeof *z);
    void *dst = malloc(ZSTD_CStreamOutSize());
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    if (!z || !dst || !cctx) {
        free(z);
        free(dst);
        ZSTD_freeCCtx(cctx);
        errno = ENOMEM;
        return NULL;
    }
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
    *z = (struct zstd_file){.fd = fd, .cctx = cctx, .out = {dst, ZSTD_CStreamOutSize(), 0}};
    cookie_io_functions_t io = {.write = zstd_write, .close = zstd_close};
    FILE *f = fopencookie(z, "w", io);
    if (!f) {
        ZSTD_freeCCtx(cctx);
        free(dst);
        free(z);
    }
    return f;
}
