/* salvage.h — completes the trace of a process that died without writing all it recorded.
 *
 * Under `cumemtrace record` the shim keeps each trace's rings, stack nodes and device table
 * in a state file in CUMEMTRACE_SALVAGE_DIR (interpose/shared.h), and an entry leaves its
 * ring only once it is on disk. After the program ends, `record` calls this: for each state
 * file whose trace was not finished, the trace is cut back to its last whole chunk and one
 * chunk is appended with every entry, stack node and thread name it lacks. Linked into the
 * CLI (cmt_salvage); the records are written by the same code as the shim's (emit.c). */
#ifndef CMT_SALVAGE_H
#define CMT_SALVAGE_H

#include <stddef.h>
#include <stdint.h>

#include "cmt_error.h"

struct cmt_salvage_result {
    char trace[4096]; /* the trace it completed ("" when there was nothing to do) */
    uint64_t events;  /* entries appended (events, device records and meminfos) */
    uint32_t nodes;   /* stack nodes appended */
};

/* Salvages one state file and removes it.
 * @return 0 (out->trace empty when the trace was whole); CMT_EIO, CMT_ECORRUPT (not a state
 * file, or one that does not match its trace), CMT_ENOMEM or CMT_ESINK, with a message naming
 * the file in *err (may be NULL; print cmt_err_message). */
CMT_MUST_USE int cmt_salvage_file(const char *state, struct cmt_salvage_result *out,
                                  struct cmt_err *err);

/* Salvages every state file in dir ("trace-*"); `report` is called for each salvaged trace
 * (result) or failure (result NULL, err set). @return the number of failures. */
int cmt_salvage_dir(const char *dir,
                    void (*report)(void *ctx, const struct cmt_salvage_result *r, const char *err),
                    void *ctx);

#endif
