/* cmt_debug.h — debug logging and assertions that compile to nothing unless CMT_DEBUG is
 * defined (cmake -DCMT_DEBUG=ON).
 *
 * CMT_DEBUG_LOG(fmt, ...) writes "cumemtrace debug: file:line: message" to stderr;
 * CMT_ASSERT(cond) aborts with the condition's text when cond is false. When off, neither
 * evaluates its arguments, but both still type-check them (so a debug build cannot be broken
 * by a change tested only without it). Never log on the shim's hot path, even in debug
 * builds: it runs on the application's threads. */
#ifndef CMT_DEBUG_H
#define CMT_DEBUG_H

#ifdef CMT_DEBUG
#include <stdio.h>
#include <stdlib.h>

#define CMT_DEBUG_LOG(...)                                                \
    do {                                                                  \
        fprintf(stderr, "cumemtrace debug: %s:%d: ", __FILE__, __LINE__); \
        fprintf(stderr, __VA_ARGS__);                                     \
        fputc('\n', stderr);                                              \
    } while (0)
#define CMT_ASSERT(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "cumemtrace debug: %s:%d: assertion failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                                        \
            abort();                                                                               \
        }                                                                                          \
    } while (0)
#else
#define CMT_DEBUG_LOG(...)                  \
    do {                                    \
        if (0)                              \
            cmt__debug_unused(__VA_ARGS__); \
    } while (0)
#define CMT_ASSERT(cond) ((void)sizeof(!(cond)))

/* Never called: lets the compiler check the format and arguments of a disabled log. */
static inline __attribute__((format(printf, 1, 2))) void cmt__debug_unused(const char *fmt, ...)
{
    (void)fmt;
}
#endif

#endif
