/* redact.h — a trace made for sharing (`cumemtrace redact`, docs/analysis.md "Redaction").
 *
 * Each record read from a trace passes through cmt_redact_record on its way to the writer. What
 * names the user, the machine or the command line goes; what the analyses read stays:
 *   PROCESS   the host name becomes "host1", "host2", ... in the order hosts are first seen
 *             (one redactor over several traces keeps one name per host, so a directory of
 *             ranks still shows which shared a machine); the arguments after argv[0] are
 *             dropped; home-directory paths in exe and argv[0] are shortened (below)
 *   ENV       dropped, except the variables an analysis reads (cmt_redact_env_kept)
 *   STRING, MODULE, NOTE, RANGE
 *             home-directory paths shortened: "/home/NAME", "/Users/NAME" and "/root" at the
 *             start of a path become "~" (so /home/alice/run/train.py reads ~/run/train.py)
 * Everything else (events, stacks, devices and their UUIDs, allocator records, ranges' names,
 * symbols' function names, times, pids, ranks, the job id) is copied as it is. */
#ifndef CMT_REDACT_H
#define CMT_REDACT_H

#include <stdint.h>

#include "reader.h"

/* What was removed, summed over every record passed so far. */
struct cmt_redact_counts {
    uint64_t env_dropped, env_kept; /* ENV records */
    uint64_t args_dropped;          /* arguments after argv[0] */
    uint64_t hosts_replaced;        /* PROCESS records whose host name was replaced */
    uint64_t home_paths;            /* home-directory prefixes shortened to "~" */
};

typedef struct cmt_redact cmt_redact;

/* @return 0 or CMT_ENOMEM (*out NULL). */
int cmt_redact_create(cmt_redact **out);
void cmt_redact_destroy(cmt_redact *x);

/* Rewrites *rec in place; the strings it then points to live until the next call or the
 * destroy. @return 1 to write the record, 0 to leave it out, CMT_ENOMEM. */
int cmt_redact_record(cmt_redact *x, struct cmt_record *rec);

const struct cmt_redact_counts *cmt_redact_counts(const cmt_redact *x);

/* @return 1 when an ENV variable of this name is read by an analysis and so kept. */
int cmt_redact_env_kept(const char *name);

/* The i-th name of that list (NULL past its end): for the command's summary and --help. */
const char *cmt_redact_kept_env(unsigned i);

#endif
