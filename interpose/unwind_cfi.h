/* unwind_cfi.h — the x86-64 call frame information (.eh_frame_hdr / .eh_frame) of one loaded
 * object, reduced to the one rule per PC that unwind.c needs.
 *
 * A frame is walked with: CFA = (rsp or rbp) + cfa_offset, the return address at CFA - 8, the
 * caller's rsp = CFA, the caller's rbp at CFA + rbp_offset (or unchanged). Anything the CFI says
 * that does not fit that shape (a DWARF expression for the CFA, the return address or rbp; a
 * CFA on another register; a signal frame; an encoding we do not read) is reported as
 * unsupported, and the walk falls back to libunwind. Reads only the object's mapped unwind
 * tables; allocates nothing, takes no lock, makes no system call. */
#ifndef CMT_UNWIND_CFI_H
#define CMT_UNWIND_CFI_H

#include <stdint.h>

struct cmt__cfi_rule {
    int32_t cfa_offset; /* CFA = (cfa_is_rbp ? rbp : rsp) + cfa_offset */
    int32_t rbp_offset; /* the caller's rbp is saved at CFA + rbp_offset; 0: rbp is unchanged */
    uint8_t cfa_is_rbp;
    uint8_t outermost; /* the return address is undefined: this frame is the last one */
};

#define CMT__CFI_NOT_FOUND (-1)   /* no FDE covers the PC */
#define CMT__CFI_UNSUPPORTED (-2) /* the FDE's rule does not fit struct cmt__cfi_rule */

/* The rule in effect at `pc`, from the object whose PT_GNU_EH_FRAME segment is at
 * `eh_frame_hdr` (its binary search table must be datarel sdata4, as GNU ld and lld write it).
 * For a caller's frame pass the return address minus 1 (the call instruction).
 * @return 0 with *rule set, CMT__CFI_NOT_FOUND, or CMT__CFI_UNSUPPORTED. */
int cmt__cfi_find(const void *eh_frame_hdr, uintptr_t pc, struct cmt__cfi_rule *rule);

#endif
