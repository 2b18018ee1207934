/* symbolize_internal.h — the module side of symbolization (libdw), used by symbolize.c. */
#ifndef CMT_SYMBOLIZE_INTERNAL_H
#define CMT_SYMBOLIZE_INTERNAL_H

#include <stdint.h>

#include "cmt_format.h"

/* What one address resolved to. Strings live until the module set is freed (or, for
 * `function`, until the next lookup). NULL / 0 when unknown. */
struct cmt__frame_info {
    const char *function;
    const char *file;
    uint32_t line;
};

enum cmt__module_state {
    CMT__MODULE_UNOPENED = 0,
    CMT__MODULE_OK,
    CMT__MODULE_MISSING, /* file cannot be opened or is not ELF */
    CMT__MODULE_CHANGED, /* build-id on disk differs from the recorded one */
};

typedef struct cmt__module_set cmt__module_set;

/* @return an empty set (modules are opened on first lookup), or NULL when out of memory. */
cmt__module_set *cmt__module_set_create(void);
void cmt__module_set_free(cmt__module_set *set);

/* Looks up return address `ip` in recorded module `rec` (opened on first use; `rec` must stay
 * valid while the set lives). @return the module's state, or CMT__MODULE_MISSING when out of
 * memory; when CMT__MODULE_OK, *out holds what was found (maybe nothing). */
enum cmt__module_state cmt__module_lookup(cmt__module_set *set, const struct cmt_module *rec,
                                          uint64_t ip, struct cmt__frame_info *out);

/* Counts the modules looked up so far that were missing or changed. */
void cmt__module_set_counts(const cmt__module_set *set, uint32_t *missing, uint32_t *changed);

#endif
