/* capture.c — see capture.h. */
#include "capture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *slurp(FILE *f)
{
    fflush(f);
    long n = ftell(f);
    char *s = malloc((size_t)(n > 0 ? n : 0) + 1);
    rewind(f);
    size_t got = n > 0 ? fread(s, 1, (size_t)n, f) : 0;
    s[got] = 0;
    fclose(f);
    return s;
}

char *capture_file(const char *path, unsigned long *len)
{
    FILE *f = fopen(path, "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0) {
        if (f)
            fclose(f);
        return NULL;
    }
    long n = ftell(f);
    if (len)
        *len = n > 0 ? (unsigned long)n : 0;
    return slurp(f);
}

struct captured capture_run(int (*fn)(int, char **), const char *const *argv)
{
    int argc = 0;
    char *args[64];
    while (argv[argc] && argc < 63) {
        args[argc] = (char *)argv[argc];
        argc++;
    }
    args[argc] = NULL;
    FILE *out = tmpfile(), *err = tmpfile();
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    dup2(fileno(out), 1);
    dup2(fileno(err), 2);
    struct captured c;
    c.status = fn(argc, args);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    fseek(out, 0, SEEK_END);
    fseek(err, 0, SEEK_END);
    c.out = slurp(out);
    c.err = slurp(err);
    return c;
}

void captured_free(struct captured *c)
{
    free(c->out);
    free(c->err);
}

const char *temp_trace(const void *data, unsigned long len, int index)
{
    static char paths[8][64];
    snprintf(paths[index % 8], sizeof paths[0], "/tmp/cmt_test_%d_%d.cmt", (int)getpid(), index);
    FILE *f = fopen(paths[index % 8], "wb");
    if (f) {
        fwrite(data, 1, len, f);
        fclose(f);
    }
    return paths[index % 8];
}

struct captured capture_svg(int (*timeline)(int, char **), const char *trace, char *svg,
                            unsigned long svg_len)
{
    snprintf(svg, svg_len, "%s.svg", trace);
    const char *argv[] = {"timeline", "--svg", svg, trace, NULL};
    return capture_run(timeline, argv);
}
