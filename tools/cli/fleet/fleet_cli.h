/* fleet_cli.h — internal: the analysis commands over several traces or a directory (one
 * trace per process or rank: tools/analysis/fleet.h computes, these present). One trace file
 * given alone keeps each command's single-trace output, byte for byte. */
#ifndef CMT__FLEET_CLI_H
#define CMT__FLEET_CLI_H

#include <stdint.h>

#include "fleet.h"

/* The options the several-trace forms take (CMT__FA_*: which ones a command accepts). */
enum { CMT__FA_JSON = 1, CMT__FA_CSV = 2, CMT__FA_POINTS = 4, CMT__FA_FAIL_PCT = 8 };
/* Not an option: cmt__fleet_parse_open keeps each trace's reader (the ledger's replay to its
 * moment, cmt__fleet_ledger). */
enum { CMT__FA_KEEP_READERS = 16 };
/* Not an option: cmt__fleet_parse_open replays no per-process timeline (the command shows no
 * series and no combined peak: CMT_FLEET_NO_SERIES). */
enum { CMT__FA_NO_SERIES = 32 };
struct cmt__fleet_args {
    int json, csv;
    unsigned jobs;   /* --jobs N, 0: the processors */
    uint32_t points; /* --points N, 0: the command's default */
    int have_fail;   /* --fail-if-peak-grows PCT */
    double fail_pct;
    const char **inputs; /* files and directories, in order (argv's) */
    int ninputs;
};

/* Whether argv asks for the several-trace form: more positional arguments than `alone`
 * (1, or 2 for diff), a directory among them, or --jobs. `options` (the command's table,
 * options.h) says which options take a value. */
struct cmt__option;
int cmt__fleet_wanted(int argc, char **argv, int alone, const struct cmt__option *options);

/* Parses the several-trace form. @return -1 to go on with *a set (free a->inputs); otherwise
 * the exit status (0 after --help, 2 after a usage error). */
int cmt__fleet_parse(int argc, char **argv, const char *cmd, const char *usage, unsigned allowed,
                     struct cmt__fleet_args *a);

/* Lists and loads the traces of inputs[0..n). Each unreadable trace gets one line on stderr
 * and is left out of the figures. @return 0 with *fleet loaded; 1 after printing why there is
 * nothing to show (no trace, none readable, out of memory). */
int cmt__fleet_open(const char *cmd, const char *const *inputs, int n, unsigned jobs,
                    struct cmt_fleet *fleet);

/* cmt__fleet_parse, then cmt__fleet_open of the inputs (a->inputs is freed and NULL after).
 * @return -1 to go on with *a set and *fleet loaded; otherwise the exit status. */
int cmt__fleet_parse_open(int argc, char **argv, const char *cmd, const char *usage,
                          unsigned allowed, struct cmt__fleet_args *a, struct cmt_fleet *fleet);

/* "rank 2 (pid 4242 on host)" or "pid 4242 on host". @return buf. */
const char *cmt__fleet_who(const struct cmt_fleet_process *p, char *buf, size_t size);
/* "2026-12-01 11:46:07.123 UTC". @return buf. */
const char *cmt__wall_time(uint64_t wall_ns, char buf[40]);
/* The JSON keys every several-trace form gives a process: file, pid, rank (null unknown),
 * local_rank, world_size, host, job_id, command. */
struct cmt__json;
void cmt__fleet_json_who(struct cmt__json *j, const struct cmt_fleet_process *p);

/* The several-trace forms of report, timeline and diff (fleet_report.c, fleet_timeline.c);
 * oom's is in cmd_oom.c. @return the exit status. */
int cmt__fleet_report(int argc, char **argv, const char *usage);
int cmt__fleet_timeline(int argc, char **argv, const char *usage);
int cmt__fleet_diff(int argc, char **argv, const char *usage);
/* The ledger of each GPU of the fleet (fleet_ledger.c): each process's at one moment and the
 * GPU combined, as text, or as the array `gpu_ledgers` into j. @return 0, or -1 when memory
 * ran out (a GPU is missing). */
int cmt__fleet_ledger(const struct cmt_fleet *f, struct cmt__json *j);
/* Each rank's phases (fleet_phases.c), for the traces with ranges: its "by phase" table, or
 * the array `rank_phases` into j (each: who, and one trace's "phases" and "ranges").
 * @return how many ranks were shown. */
int cmt__fleet_phases(const struct cmt_fleet *f, struct cmt__json *j);

#endif
