/* output.h — internal helpers shared by the analysis commands: byte and time units, a tiny
 * JSON emitter, opening a trace with one clear error line, and stack formatting. */
#ifndef CMT__OUTPUT_H
#define CMT__OUTPUT_H

#include <stdint.h>
#include <stdio.h>

#include "escape.h"
#include "frames.h"
#include "reader.h"

/* "512 B", "1.50 KiB", "3.25 GiB" (2 decimals from KiB on). @return buf. */
const char *cmt__bytes(uint64_t bytes, char buf[32]);
/* "950 ns", "12.35 ms", "3.20 s", "2 min 05.1 s". @return buf. */
const char *cmt__duration(uint64_t ns, char buf[32]);
/* path as the user would like to read it: relative to the working directory when it lies
 * below it, else as given. */
const char *cmt__display_path(const char *path);

/* JSON writer: values are written with their key inside objects and with key NULL in arrays.
 * Strings are escaped by cmt__json_escape (escape.h), with escape_flags (0 from init;
 * CMT__JSON_ESCAPE_HTML for the HTML page's data). */
struct cmt__json {
    FILE *f;
    int depth;
    unsigned char first[64];
    int pretty;
    unsigned escape_flags;
};
void cmt__json_init(struct cmt__json *j, FILE *f);
void cmt__json_object(struct cmt__json *j, const char *key); /* opens { */
void cmt__json_array(struct cmt__json *j, const char *key);  /* opens [ */
void cmt__json_end_object(struct cmt__json *j);
void cmt__json_end_array(struct cmt__json *j);
void cmt__json_u64(struct cmt__json *j, const char *key, uint64_t v);
void cmt__json_i64(struct cmt__json *j, const char *key, int64_t v);
void cmt__json_double(struct cmt__json *j, const char *key, double v);
void cmt__json_bool(struct cmt__json *j, const char *key, int v);
void cmt__json_string(struct cmt__json *j, const char *key, const char *s);
void cmt__json_null(struct cmt__json *j, const char *key);
void cmt__json_finish(struct cmt__json *j); /* newline */
/* s as a string, or null when s is NULL. */
void cmt__json_string_or_null(struct cmt__json *j, const char *key, const char *s);
/* v as a whole number, or null when v is 0 (a figure that 0 means unknown or none). */
void cmt__json_u64_or_null(struct cmt__json *j, const char *key, uint64_t v);
/* v, or null when v is negative (a rank or a count that -1 means unknown). */
void cmt__json_i64_or_null(struct cmt__json *j, const char *key, int64_t v);

/* Whole-number members written in a row: CMT__JSON_U64S(j, {"alloc_calls", t->alloc_calls},
 * {"free_calls", t->free_calls}) writes what a cmt__json_u64 call per member would. */
struct cmt__json_u64_member {
    const char *key;
    uint64_t value;
};
void cmt__json_u64s(struct cmt__json *j, const struct cmt__json_u64_member *members, size_t n);
#define CMT__JSON_U64S(j, ...)                                                  \
    cmt__json_u64s((j), (const struct cmt__json_u64_member[]){__VA_ARGS__},     \
                   sizeof((const struct cmt__json_u64_member[]){__VA_ARGS__}) / \
                       sizeof(struct cmt__json_u64_member))

/* For commands that look before they open: the reader's message (CMT_ENOT_REGULAR's, "not a
 * regular file") when path exists but is a directory, a device, a FIFO or a socket.
 * @return NULL for a regular file or one that cannot be looked at. */
const char *cmt__not_a_file(const char *path);
/* Opens a trace for command `cmd`; a PyTorch memory snapshot (a pickle, recognised by its
 * header) is converted to a trace in memory and opened instead. On failure prints
 * "cumemtrace CMD: PATH: reason" to stderr. @return 0 or the error code. */
int cmt__open_trace(const char *cmd, const char *path, cmt_reader **out);
/* @return 1 when the file at path starts as a PyTorch memory snapshot does (a pickle's header),
 * 0 otherwise or when it cannot be read. */
int cmt__is_snapshot(const char *path);

/* A command's trace arguments expanded: a directory gives its *.cmt files in name order
 * (cmt_fleet_paths), a file is taken as it is. @return 0 with *paths and *count set (free them
 * with cmt__trace_paths_free); 1 after one line saying why there is none (a directory that
 * cannot be listed or holds no trace; out of memory). */
int cmt__trace_paths(const char *cmd, const char *const *inputs, size_t n, char ***paths,
                     size_t *count);
void cmt__trace_paths_free(char **paths, size_t count);
/* @return 1 when path names a directory. */
int cmt__is_dir(const char *path);
/* For a command that reads one trace: a directory given for it stands for its one trace.
 * @return path itself (not a directory), the directory's one *.cmt (in buf), or NULL after
 * one line: that it holds several traces and `why` the command reads one. */
const char *cmt__one_trace(const char *cmd, const char *path, const char *why, char *buf,
                           size_t size);

/* Converts the PyTorch memory snapshot at `path` into a whole trace written to `out_fd`
 * (cmt_snapshot_import); `stats` may be NULL. On failure prints "cumemtrace CMD: PATH: reason:
 * where" to stderr. @return 0 or the error code. */
struct cmt_snapshot_trace_stats;
int cmt__snapshot_convert(const char *cmd, const char *path, int out_fd,
                          struct cmt_snapshot_trace_stats *stats);

/* The exit status a pass that ended with `rc` leaves its command: 1 when the reader failed on
 * its own (out of memory), the damage left no event, or the trace ends after its file header
 * (no event, no PROCESS record, no end marker: nothing salvaged), 0 otherwise (sound, or
 * damaged after some events: those are analysed). */
int cmt__damage_status(const cmt_reader *r, int rc);
/* After a pass: one warning counting the repeated records folded, one naming what the chunk
 * sequence showed (cmt_reader_sequence_note; each none when none), and one
 * line naming the damage's byte offset or the failure (no-op when sound): a warning when the
 * events before it are analysed, else an error. @return cmt__damage_status(r, rc). */
int cmt__warn_damage(const char *cmd, const char *path, const cmt_reader *r, int rc);

/* @return 1 when the frame stack `leaf` is named by (cmt_call_site_node) has no function name:
 * it prints as "module+0xoffset" or "0xip" (the trace was not symbolized). */
int cmt__site_is_raw(const cmt_reader *r, uint32_t leaf);
/* When raw, prints one line on stderr: run `cumemtrace symbolize PATH` (not for a damaged
 * trace: symbolize refuses those, and their names may just lie past the damage). */
void cmt__hint_symbolize(const char *cmd, const char *path, int raw);

/* Writes a stack as a JSON array of frame strings under key. */
void cmt__json_stack(struct cmt__json *j, const char *key, const cmt_reader *r, uint32_t leaf);

/* Parses `cumemtrace CMD [--json] FILE` (with -h/--help printing `usage`) with options.h.
 * @return 0 with *json and *path set; -1 after printing help (exit 0); 2 after a usage error. */
int cmt__parse_json_file(int argc, char **argv, const char *cmd, const char *usage, int *json,
                         const char **path);
/* Prints "cumemtrace CMD: MESSAGE" (printf-style) to stderr. @return 2 (usage) */
int cmt__usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

struct cmt_oom_episode;
/* The episode's one-sentence explanation (oom, html): why the request failed, by its verdict. */
void cmt__oom_sentence(const struct cmt_oom_episode *e, char *buf, size_t size);

#endif
