/* cmt_error.h — the one list of error codes of format/ and tools/ (analysis, model, whatif),
 * and the one carrier of an error's details (struct cmt_err).
 * Functions return 0 on success and a negative CMT_E* code on failure; one that has more to say
 * than its code (which file, which key, the errno of a failed system call) also takes a
 * `struct cmt_err *err`, which may be NULL. */
#ifndef CMT_ERROR_H
#define CMT_ERROR_H

/* Values are disjoint across the modules, so a code says where it came from: format and
 * general codes from -1, the caching-allocator model (tools/model) from -20, whatif from -30.
 * A model code keeps its own message where the model's wording differs from the format's.
 * The pickle decoder (tools/snapshot/pickle.h) from -40, the snapshot parser from -50. */
#define CMT_ERRORS(X)                                                         \
    X(OK, 0, "success")                                                       \
    X(NOMEM, -1, "out of memory")                                             \
    X(IO, -2, "input/output error")                                           \
    X(BAD_MAGIC, -3, "not a cumemtrace trace (bad magic)")                    \
    X(NEWER_VERSION, -4, "trace was written by a newer major format version") \
    X(TRUNCATED, -5, "trace is truncated")                                    \
    X(CORRUPT, -6, "trace is damaged")                                        \
    X(EMPTY, -7, "file is empty")                                             \
    X(INVALID, -8, "invalid argument")                                        \
    X(SINK, -9, "could not write the trace")                                  \
    X(COMPRESS, -10, "compression failed")                                    \
    X(NOT_FOUND, -11, "not found")                                            \
    X(UNSUPPORTED, -12, "not supported")                                      \
    X(NOT_REGULAR, -13, "not a regular file")                                 \
    X(MODEL_OOM, -20, "CUDA out of memory in the model")                      \
    X(MODEL_BAD_HANDLE, -21, "unknown or already freed allocation handle")    \
    X(MODEL_NOMEM, -22, "out of host memory")                                 \
    X(MODEL_PARSE, -23, "malformed allocator configuration string")           \
    X(MODEL_CORRUPT, -24, "model consistency check failed")                   \
    X(WHATIF_READ, -30, "the trace could not be read")                        \
    X(WHATIF_EMPTY, -31, "no successful allocation in the trace")             \
    X(PICKLE_TRUNCATED, -40, "pickle is truncated")                           \
    X(PICKLE_OPCODE, -41, "pickle has an opcode plain data never needs")      \
    X(PICKLE_CLASS, -42, "pickle would build a Python object")                \
    X(PICKLE_MALFORMED, -43, "pickle is malformed")                           \
    X(PICKLE_LIMIT, -44, "pickle exceeds the decoder's limits")               \
    X(PICKLE_PROTOCOL, -45, "pickle protocol is newer than 5")                \
    X(SNAPSHOT_FORM, -50, "not a PyTorch memory snapshot")                    \
    X(SNAPSHOT_FIELD, -51, "PyTorch snapshot has a malformed field")

enum cmt_error {
#define CMT__ERR_ENUM(name, value, text) CMT_E##name = value,
    CMT_ERRORS(CMT__ERR_ENUM)
#undef CMT__ERR_ENUM
};

/* On a function whose result must be read (an error code that says whether its outputs are
 * valid): a caller that ignores it is a compile warning, an error with CMT_WERROR. */
#define CMT_MUST_USE __attribute__((warn_unused_result))

/* @return a static message for a code from CMT_ERRORS ("unknown error" otherwise). */
const char *cmt_strerror(int code);

/* What went wrong, for the one line the CLI prints: the code the function returned, the errno
 * of the system call that failed (0 when none did) and a context message ("" when the code or
 * the errno says it all). Callers declare one (`struct cmt_err err = {0};`), pass &err, and on a
 * negative return print cmt_err_message(&err). Read it only then: on success it may hold the
 * code of a step that did not stop the call (a fallback taken). */
/* Room for a PATH_MAX path and a sentence: the largest buffer a converted API's callers passed
 * (salvage's), so no message is cut shorter than it was. */
#define CMT_ERR_TEXT (4096 + 256)
struct cmt_err {
    int code;
    int sys_errno;
    char text[CMT_ERR_TEXT];
};

/* Records code and a printf-formatted context message (cut to CMT_ERR_TEXT - 1 bytes) in *err
 * and clears sys_errno; `err` may be NULL. To record a code alone: cmt_err_sys(err, code, 0).
 * @return code, so that `return cmt_err_set(err, CMT_EINVALID, "...", ...);` fails with it. */
int cmt_err_set(struct cmt_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records code and the errno of a failed system call (0: none), with no message, so that
 * cmt_err_message says strerror(sys_errno), or the code's message when sys_errno is 0;
 * `err` may be NULL. @return code. */
int cmt_err_sys(struct cmt_err *err, int code, int sys_errno);

/* @return the line to print for *err: its text when set, else strerror(sys_errno) when an errno
 * is recorded, else cmt_strerror(code). Never NULL; valid while *err is (or static). */
const char *cmt_err_message(const struct cmt_err *err);

#endif
