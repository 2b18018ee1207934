/* reader.h — decodes a trace from a memory buffer (or an mmap'ed file), record by record.
 *
 * The reader follows the rules of docs/trace-format.md: it refuses a bad magic or a newer
 * major version, skips record types it does not know, and on a truncated or damaged file
 * returns every record before the damage (of a chunk cut short, every whole record of the part
 * that decodes), then reports where the damage starts. A hostile file costs what it holds that
 * is distinct (rules 6 and 7): repeated ENV, NOTE and THREAD records are folded, strings kept
 * once, a chunk repeated byte for byte is left out, and chunks are read in the seq order of
 * their events (cmt_reader_folded, cmt_reader_sequence_note); a failed allocation of the
 * reader's own is CMT_ENOMEM, never damage.
 * Interned tables (strings, stack nodes, symbols, modules, APIs, devices, threads) are kept
 * as they are read and can be queried at any time; their strings live until close. */
#ifndef CMT_READER_H
#define CMT_READER_H

#include "cmt_error.h"
#include "cmt_format.h"

typedef struct cmt_reader cmt_reader;

struct cmt_env {
    const char *name, *value;
};

struct cmt_string {
    uint32_t id;
    const char *text;
};

struct cmt_record {
    uint32_t type;   /* enum cmt_record_type (unknown types are skipped, never returned) */
    uint64_t offset; /* file offset of the chunk that holds the record */
    union {
        struct cmt_process process;
        struct cmt_env env;
        struct cmt_api api;
        struct cmt_string string;
        struct cmt_module module;
        struct cmt_stack_node stack_node;
        struct cmt_thread thread;
        struct cmt_device device;
        struct cmt_event event; /* only the v[] slots named by `fields` are set */
        struct cmt_meminfo meminfo;
        struct cmt_note note;
        struct cmt_signal signal;
        struct cmt_end end;
        struct cmt_symbol symbol;
        struct cmt_alloc_info alloc_info;
        struct cmt_alloc_event alloc_event; /* only the v[] slots named by `fields` are set */
        struct cmt_range range;             /* message lives until the reader closes */
    } u;
};

/* Opens a file (mapped read-only). On failure *err (which may be NULL) has the code and, for
 * CMT_EIO, the errno of the failed open/fstat/mmap (0 otherwise): print cmt_err_message(err),
 * which is strerror(errno) for CMT_EIO and cmt_strerror(code) otherwise.
 * @return 0; CMT_EIO (cannot open/read),
 * CMT_ENOT_REGULAR (a directory, a device, a FIFO or a socket; a FIFO is not waited on), CMT_EEMPTY,
 * CMT_EBAD_MAGIC, CMT_ENEWER_VERSION, CMT_ETRUNCATED (shorter than the file header),
 * CMT_ENOMEM. On failure *out is NULL. */
CMT_MUST_USE int cmt_reader_open_file(cmt_reader **out, const char *path, struct cmt_err *err);

/* Reads from a caller-owned buffer that must outlive the reader.
 * @return as cmt_reader_open_file, except CMT_EIO. */
CMT_MUST_USE int cmt_reader_open_memory(cmt_reader **out, const void *data, size_t len);

void cmt_reader_close(cmt_reader *r);

/* Next record in file order. @return 1 with *rec filled; 0 at the end of a sound file;
 * a negative code (CMT_ETRUNCATED, CMT_ECORRUPT, CMT_ENOMEM) at damage: everything before it
 * has been returned, cmt_reader_damage() says where, and later calls return the same code. */
CMT_MUST_USE int cmt_reader_next(cmt_reader *r, struct cmt_record *rec);

/* Ends this pass now: later calls of cmt_reader_next() return 0, as at the end of a sound
 * file, until cmt_reader_rewind() (a caller that needs only the start of a trace stops reading
 * there: nothing more is decompressed). */
void cmt_reader_stop(cmt_reader *r);

/* Restarts at the first chunk; tables read so far are kept. */
void cmt_reader_rewind(cmt_reader *r);

/* Reads the whole file once to fill the tables (symbols come at the end), then rewinds;
 * cmt_reader_damage() and cmt_reader_damage_offset() still describe the damage it met.
 * @return 0, or the damage code (tables before the damage are kept). */
CMT_MUST_USE int cmt_reader_preload(cmt_reader *r);

/* Damage: byte offset of the first damaged chunk (or UINT64_MAX when none seen) and a
 * one-line description ("" when none). */
uint64_t cmt_reader_damage_offset(const cmt_reader *r);
const char *cmt_reader_damage(const cmt_reader *r);

/* Tables. Each returns NULL (or 0) when the id is unknown. */
const struct cmt_process *cmt_reader_process(const cmt_reader *r);
const struct cmt_api *cmt_reader_api(const cmt_reader *r, uint32_t id);
const char *cmt_reader_string(const cmt_reader *r, uint32_t id);
const struct cmt_module *cmt_reader_module(const cmt_reader *r, uint32_t id);
const struct cmt_module *cmt_reader_module_at(const cmt_reader *r, uint64_t ip);
const struct cmt_device *cmt_reader_device(const cmt_reader *r, int32_t dev);
const char *cmt_reader_thread_name(const cmt_reader *r, uint32_t tid);
const struct cmt_symbol *cmt_reader_symbol(const cmt_reader *r, uint32_t node);
size_t cmt_reader_env_count(const cmt_reader *r);
const struct cmt_env *cmt_reader_env(const cmt_reader *r, size_t i);
uint32_t cmt_reader_module_count(const cmt_reader *r);
uint32_t cmt_reader_stack_node_count(const cmt_reader *r); /* highest node id seen */
uint32_t cmt_reader_string_count(const cmt_reader *r);     /* highest STRING id seen */

/* Stack node `id`: parent (the caller's node, 0 at the root) and ip. @return 0 or CMT_ENOT_FOUND. */
int cmt_reader_stack_node(const cmt_reader *r, uint32_t id, struct cmt_stack_node *out);

/* Writes frame `node` as "function file:line", "function", "module+0xoffset" or "0xip".
 * @return the length it wanted (snprintf-style). */
size_t cmt_reader_format_frame(const cmt_reader *r, uint32_t node, char *buf, size_t size);

/* Summary of what has been read so far. */
int cmt_reader_clean_exit(const cmt_reader *r);       /* an END record was seen */
uint64_t cmt_reader_event_count(const cmt_reader *r); /* EVENT records returned */
uint64_t cmt_reader_seq_gaps(const cmt_reader *r);    /* events missing from the seq order */
/* Repeated records folded in this pass: ENV, NOTE and THREAD records whose bytes repeat an
 * earlier record of the file. They are not returned (a repeated THREAD still names its tid,
 * as the last one for a tid does); strings are kept once whatever holds them, so memory
 * follows what is distinct in the file, not what it repeats. */
uint64_t cmt_reader_folded(const cmt_reader *r);
/* What the chunk sequence showed (docs/trace-format.md, rule 7): chunks that repeat an earlier
 * one byte for byte (left out), chunks out of seq order (read in seq order), events missing
 * between chunks (a chunk lost). Writes one line, "" when none, into buf (snprintf-style).
 * @return the length it wanted. */
size_t cmt_reader_sequence_note(const cmt_reader *r, char *buf, size_t size);

#endif
