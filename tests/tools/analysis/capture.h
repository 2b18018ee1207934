/* capture.h — runs a cmt_cmd_* entry point with stdout and stderr captured into strings. */
#ifndef CMT_TEST_CAPTURE_H
#define CMT_TEST_CAPTURE_H

struct captured {
    int status;
    char *out, *err; /* malloc'ed, NUL-terminated */
};

/* argv is NULL-terminated; argv[0] is the command name. */
struct captured capture_run(int (*fn)(int, char **), const char *const *argv);
void captured_free(struct captured *c);

/* Runs `timeline --svg TRACE.svg TRACE` through the timeline entry point given; the chart's
 * path is written to svg. */
struct captured capture_svg(int (*timeline)(int, char **), const char *trace, char *svg,
                            unsigned long svg_len);

/* A file's bytes, NUL-terminated (malloc'ed), with *len their count when len is not NULL.
 * @return NULL when it cannot be read. */
char *capture_file(const char *path, unsigned long *len);

/* Writes a buffer to a fresh temporary file. @return its path (static per call index). */
const char *temp_trace(const void *data, unsigned long len, int index);

#endif
