/* wrappers.c — the exported wrappers, generated from calls.def, and the tables of API ids.
 *
 * A wrapper: begin (recursion guard; release ops take their seq here) → call the real
 * function with the exact arguments → record inputs, and outputs only on success (its
 * recording function, record.h) → finish. */
#include <errno.h>

#include "record.h"
#include "shim.h"

/* ---- the wrappers ---- */

#define X(name, op, params, args)                     \
    CMT_EXPORT CUresult name params                   \
    {                                                 \
        if (!cmt__resolve() || !cmt__real.name)       \
            return CUDA_ERROR_NOT_INITIALIZED;        \
        struct cmt__call c;                           \
        if (!cmt__begin(&c, CMT__API_##name))         \
            return cmt__real.name args;               \
        CUresult rc = cmt__real.name args;            \
        c.errno_saved = errno;                        \
        cmt__rec_##name CMT__PREPEND_EVENT(rc, args); \
        cmt__finish(&c, rc);                          \
        return rc;                                    \
    }
#define XP(name, op, params, args) /* hand-written in getproc.c */
#define CMT__PREPEND_EVENT(rc, args) (&c.ev, (rc) == CUDA_SUCCESS CMT__COMMA_ARGS args)
#define CMT__COMMA_ARGS(...) __VA_OPT__(, ) __VA_ARGS__
#include "calls.def"
#undef X
#undef XP

/* ---- the tables ---- */

const char *const cmt__api_name[CMT__API_COUNT] = {
#define X(name, op, params, args) [CMT__API_##name] = #name,
#define XP X
#include "calls.def"
#undef X
#undef XP
};

const uint8_t cmt__api_op[CMT__API_COUNT] = {
#define X(name, op, params, args) [CMT__API_##name] = CMT_OP_##op,
#define XP X
#include "calls.def"
#undef X
#undef XP
};

void *const cmt__api_wrapper[CMT__API_COUNT] = {
#define X(name, op, params, args) [CMT__API_##name] = (void *)name,
#define XP X
#include "calls.def"
#undef X
#undef XP
};
