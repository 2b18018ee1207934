/* cmt_error.h — the one list of error codes of format/ and tools/.
 * Functions return 0 on success and a negative CMT_E* code on failure. */
#ifndef CMT_ERROR_H
#define CMT_ERROR_H

#define CMT_ERRORS(X)                                                          \
    X(OK, 0, "success")                                                        \
    X(NOMEM, -1, "out of memory")                                              \
    X(IO, -2, "input/output error")                                            \
    X(BAD_MAGIC, -3, "not a cumemtrace trace (bad magic)")                     \
    X(NEWER_VERSION, -4, "trace was written by a newer major format version")  \
    X(TRUNCATED, -5, "trace is truncated")                                     \
    X(CORRUPT, -6, "trace is damaged")                                         \
    X(EMPTY, -7, "file is empty")                                              \
    X(INVALID, -8, "invalid argument")                                         \
    X(SINK, -9, "could not write the trace")                                   \
    X(COMPRESS, -10, "compression failed")                                     \
    X(NOT_FOUND, -11, "not found")                                             \
    X(UNSUPPORTED, -12, "not supported")

enum cmt_error {
#define CMT__ERR_ENUM(name, value, text) CMT_E##name = value,
    CMT_ERRORS(CMT__ERR_ENUM)
#undef CMT__ERR_ENUM
};

/* @return a static message for a code from CMT_ERRORS ("unknown error" otherwise). */
const char *cmt_strerror(int code);

#endif
