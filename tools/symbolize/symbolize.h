/* symbolize.h — offline symbolization: adds SYMBOL records to a finished trace.
 *
 * A trace records return addresses (STACK_NODE.ip) and the modules they fall in (MODULE:
 * path, load base, mapped size, GNU build-id). After the program ends, this module opens each
 * module's file with elfutils (libdw), checks its build-id against the recorded one, looks up
 * `ip - 1` (the call instruction, not the one after it) and appends STRING and SYMBOL records
 * to the trace, so the trace reads the same on a machine that lacks those binaries.
 *
 * Names come from the ELF symbol table (.symtab when present, so static functions of a binary
 * linked without -rdynamic are named), file:line from DWARF line tables when the module has
 * them. When the address lies in inlined code, the function named is the innermost inlined
 * function, so that the name and the file:line describe the same source (see
 * docs/trace-format.md: one SYMBOL per node, so inline chains are not expanded).
 * C++ names are demangled when libstdc++ can be loaded at run time.
 *
 * MODULE.base is read as the address the module's first PT_LOAD segment is mapped at, which
 * for shared libraries and PIE executables is the load bias (dl_iterate_phdr's dlpi_addr);
 * non-PIE executables are looked up at their link-time addresses. */
#ifndef CMT_SYMBOLIZE_H
#define CMT_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "cmt_error.h"

struct cmt_symbolize_stats {
    uint64_t nodes;           /* stack nodes that had no SYMBOL record before this run */
    uint64_t named;           /* ... that now have a function name */
    uint64_t with_line;       /* ... that now have a file and line */
    uint64_t outside_modules; /* ... whose ip lies in no recorded module */
    uint32_t modules_missing; /* modules whose file could not be opened or read as ELF */
    uint32_t modules_changed; /* modules whose file's build-id differs from the recorded one */
    uint64_t strings_added;   /* STRING records appended */
    uint64_t symbols_added;   /* SYMBOL records appended */
};

/* Symbolizes the trace at `trace_path` in place: reads it, resolves every stack node that has
 * no SYMBOL record yet, and appends chunks (opened O_APPEND; nothing written before is
 * changed) holding the new STRING records (ids above the highest one in the file; strings
 * already in the file are reused) and one SYMBOL record per node that got a function name or
 * a file:line. Nodes that resolve to nothing get no record, so a later run (with the missing
 * files installed) can still name them. Running it twice appends nothing the second time.
 * A damaged or truncated trace is refused and left untouched: chunks appended after damage
 * could never be read.
 * `stats` (may be NULL) is filled even on error as far as the work got; on error *err (may be
 * NULL) holds the code and one line naming the file and what went wrong (cmt_err_message).
 * @return 0; CMT_EIO (cannot open, read or append), CMT_EEMPTY, CMT_EBAD_MAGIC,
 * CMT_ENEWER_VERSION, CMT_ETRUNCATED / CMT_ECORRUPT (damaged trace, not modified),
 * CMT_ENOMEM, CMT_ESINK / CMT_ECOMPRESS (appending failed part way), CMT_EINVALID (NULL path). */
CMT_MUST_USE int cmt_symbolize_file(const char *trace_path, struct cmt_symbolize_stats *stats,
                                    struct cmt_err *err);

#endif
