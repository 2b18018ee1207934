/* unwind_cfi.c — finds a PC's FDE through .eh_frame_hdr's binary search table and runs its
 * CFA program (the CIE's initial instructions, then the FDE's up to the PC) for the three
 * things a frame walk needs: the CFA, the return address and rbp (DWARF registers 7, 6, 16).
 * Other registers are ignored whatever their rule. */
#include "unwind_cfi.h"

#include <string.h>

#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16
#define STATE_DEPTH 8 /* DW_CFA_remember_state nesting */

/* How a register is recovered. */
enum how { SAME, AT_OFFSET, UNDEFINED, OTHER };

struct state {
    int64_t cfa_offset;
    uint32_t cfa_reg; /* REG_RSP, REG_RBP, or another (unsupported) */
    int cfa_expression;
    enum how rbp, ra;
    int64_t rbp_offset, ra_offset;
};

struct cie {
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;
    uint8_t fde_encoding;
    int signal_frame, has_augmentation_data;
    const uint8_t *instructions, *end;
};

struct cursor {
    const uint8_t *p, *end;
    int bad;
};

static uint64_t uleb(struct cursor *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0; c->p < c->end && shift < 64; shift += 7) {
        uint8_t b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    c->bad = 1;
    return 0;
}

static int64_t sleb(struct cursor *c)
{
    uint64_t v = 0;
    unsigned shift = 0;
    for (; c->p < c->end && shift < 64; shift += 7) {
        uint8_t b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            if (shift + 7 < 64 && (b & 0x40))
                v |= ~(uint64_t)0 << (shift + 7);
            return (int64_t)v;
        }
    }
    c->bad = 1;
    return 0;
}

static uint64_t fixed(struct cursor *c, unsigned bytes)
{
    if ((size_t)(c->end - c->p) < bytes) {
        c->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    memcpy(&v, c->p, bytes); /* little-endian */
    c->p += bytes;
    return v;
}

/* A DW_EH_PE_* encoded pointer: absolute, or pc-relative to the field (the only two that
 * .eh_frame's FDEs use); `relative` 0 reads the value only (an FDE's address range). */
static uintptr_t encoded(struct cursor *c, uint8_t encoding, int relative)
{
    uintptr_t field = (uintptr_t)c->p;
    uint64_t v;
    switch (encoding & 0x0f) {
    case 0x00: v = fixed(c, 8); break;
    case 0x01: v = uleb(c); break;
    case 0x02: v = fixed(c, 2); break;
    case 0x03: v = fixed(c, 4); break;
    case 0x04: v = fixed(c, 8); break;
    case 0x09: v = (uint64_t)sleb(c); break;
    case 0x0a: v = (uint64_t)(int64_t)(int16_t)fixed(c, 2); break;
    case 0x0b: v = (uint64_t)(int64_t)(int32_t)fixed(c, 4); break;
    case 0x0c: v = fixed(c, 8); break;
    default: c->bad = 1; return 0;
    }
    if (!relative)
        return (uintptr_t)v;
    switch (encoding & 0x70) {
    case 0x00: return (uintptr_t)v;
    case 0x10: return field + (uintptr_t)v;
    default: c->bad = 1; return 0;
    }
}

/* The augmentation string ("zR", "zPLR", "zRS", ...) and its data. */
static void read_augmentation(struct cursor *c, const char *aug, struct cie *cie)
{
    const uint8_t *data_end = c->end;
    if (*aug == 'z') {
        uint64_t len = uleb(c);
        if (len > (uint64_t)(c->end - c->p)) {
            c->bad = 1;
            return;
        }
        data_end = c->p + len;
        cie->has_augmentation_data = 1;
        aug++;
    }
    for (; *aug && !c->bad; aug++) {
        if (*aug == 'R')
            cie->fde_encoding = (uint8_t)fixed(c, 1);
        else if (*aug == 'L')
            fixed(c, 1);
        else if (*aug == 'P')
            encoded(c, (uint8_t)fixed(c, 1) & 0x7f, 0);
        else if (*aug == 'S')
            cie->signal_frame = 1;
        else if (*aug != 'B')
            c->bad = 1; /* unknown: its data cannot be skipped without 'z' */
    }
    if (cie->has_augmentation_data)
        c->p = data_end;
}

static int parse_cie(const uint8_t *at, struct cie *cie)
{
    uint32_t len;
    memcpy(&len, at, 4);
    if (len == 0 || len == 0xffffffffu)
        return -1; /* a terminator, or 64-bit DWARF */
    struct cursor c = {at + 8, at + 4 + len, 0};
    uint32_t id;
    memcpy(&id, at + 4, 4);
    uint8_t version = (uint8_t)fixed(&c, 1);
    if (id != 0 || (version != 1 && version != 3))
        return -1;
    const char *aug = (const char *)c.p;
    size_t aug_len = strnlen(aug, (size_t)(c.end - c.p));
    c.p += aug_len + 1;
    if (c.p > c.end || strstr(aug, "eh"))
        return -1;
    *cie = (struct cie){.fde_encoding = 0};
    cie->code_align = uleb(&c);
    cie->data_align = sleb(&c);
    cie->ra_reg = version == 1 ? fixed(&c, 1) : uleb(&c);
    read_augmentation(&c, aug, cie);
    cie->instructions = c.p;
    cie->end = c.end;
    return c.bad || cie->ra_reg != REG_RA ? -1 : 0;
}

static void set_reg(struct state *s, uint64_t reg, enum how how, int64_t offset)
{
    if (reg == REG_RBP) {
        s->rbp = how;
        s->rbp_offset = offset;
    } else if (reg == REG_RA) {
        s->ra = how;
        s->ra_offset = offset;
    }
}

static void restore_reg(struct state *s, const struct state *initial, uint64_t reg)
{
    if (reg == REG_RBP)
        set_reg(s, reg, initial->rbp, initial->rbp_offset);
    else if (reg == REG_RA)
        set_reg(s, reg, initial->ra, initial->ra_offset);
}

/* A walk over a CFA program; `stack` holds DW_CFA_remember_state's copies. */
struct program {
    struct cursor c;
    const struct cie *cie;
    const struct state *initial;
    struct state *s;
    struct state stack[STATE_DEPTH];
    int depth;
    uintptr_t loc, target;
};

/* The CFA definitions (DW_CFA_def_cfa*, 0x0c-0x0f, 0x12, 0x13). @return 0, -1 not one. */
static int cfa_op(struct program *pr, uint8_t op)
{
    struct cursor *c = &pr->c;
    struct state *s = pr->s;
    int64_t da = pr->cie->data_align;
    switch (op) {
    case 0x0c:
    case 0x12:
        s->cfa_reg = (uint32_t)uleb(c);
        s->cfa_offset = op == 0x0c ? (int64_t)uleb(c) : sleb(c) * da;
        s->cfa_expression = 0;
        return 0;
    case 0x0d:
        s->cfa_reg = (uint32_t)uleb(c);
        s->cfa_expression = 0;
        return 0;
    case 0x0e: s->cfa_offset = (int64_t)uleb(c); return 0;
    case 0x13: s->cfa_offset = sleb(c) * da; return 0;
    case 0x0f:
        s->cfa_expression = 1;
        c->p += uleb(c);
        return 0;
    default: return -1;
    }
}

/* The register rules (0x05-0x09, 0x10, 0x11, 0x14-0x16, 0x2e, 0x2f) and the CFA's.
 * @return 0, -1 on an opcode we do not know. */
static int extended_op(struct program *pr, uint8_t op)
{
    struct cursor *c = &pr->c;
    struct state *s = pr->s;
    int64_t da = pr->cie->data_align;
    uint64_t reg = 0;
    int takes_register = (op >= 0x05 && op <= 0x11 && (op < 0x0c || op > 0x0f)) ||
                         (op >= 0x14 && op <= 0x16) || op == 0x2f;
    if (takes_register)
        reg = uleb(c);
    switch (op) {
    case 0x05: set_reg(s, reg, AT_OFFSET, (int64_t)uleb(c) * da); return 0;
    case 0x06: restore_reg(s, pr->initial, reg); return 0;
    case 0x07: set_reg(s, reg, UNDEFINED, 0); return 0;
    case 0x08: set_reg(s, reg, SAME, 0); return 0;
    case 0x09:
    case 0x14:
        uleb(c);
        set_reg(s, reg, OTHER, 0);
        return 0;
    case 0x15:
        sleb(c);
        set_reg(s, reg, OTHER, 0);
        return 0;
    case 0x10:
    case 0x16:
        c->p += uleb(c);
        set_reg(s, reg, OTHER, 0);
        return 0;
    case 0x11: set_reg(s, reg, AT_OFFSET, sleb(c) * da); return 0;
    case 0x2e: uleb(c); return 0;
    case 0x2f: set_reg(s, reg, AT_OFFSET, -(int64_t)uleb(c) * da); return 0;
    default: return cfa_op(pr, op);
    }
}

/* One instruction. @return 1 to go on, 0 when the location passed the target, -1 on an
 * instruction we cannot follow. */
static int step(struct program *pr)
{
    struct cursor *c = &pr->c;
    uint8_t op = (uint8_t)fixed(c, 1);
    uint64_t advance = 0;
    switch (op & 0xc0) {
    case 0x40: advance = op & 0x3f; break;
    case 0x80:
        set_reg(pr->s, op & 0x3f, AT_OFFSET, (int64_t)uleb(c) * pr->cie->data_align);
        return 1;
    case 0xc0: restore_reg(pr->s, pr->initial, op & 0x3f); return 1;
    default:
        switch (op) {
        case 0x00: return 1;
        case 0x01: pr->loc = encoded(c, pr->cie->fde_encoding, 1); return pr->loc <= pr->target;
        case 0x02: advance = fixed(c, 1); break;
        case 0x03: advance = fixed(c, 2); break;
        case 0x04: advance = fixed(c, 4); break;
        case 0x0a:
            if (pr->depth == STATE_DEPTH)
                return -1;
            pr->stack[pr->depth++] = *pr->s;
            return 1;
        case 0x0b:
            if (pr->depth == 0)
                return -1;
            *pr->s = pr->stack[--pr->depth];
            return 1;
        default: return extended_op(pr, op) == 0 ? 1 : -1;
        }
    }
    pr->loc += advance * pr->cie->code_align;
    return pr->loc <= pr->target;
}

/* Runs [begin, end) until the location passes `target` (the CIE's program: never). */
static int run_program(const uint8_t *begin, const uint8_t *end, const struct cie *cie,
                       const struct state *initial, struct state *s, uintptr_t loc,
                       uintptr_t target)
{
    struct program pr = {.c = {begin, end, 0}, .cie = cie, .initial = initial, .s = s};
    pr.loc = loc;
    pr.target = target;
    while (pr.c.p < pr.c.end) {
        int r = step(&pr);
        if (pr.c.bad || pr.c.p > pr.c.end || r < 0)
            return -1;
        if (r == 0)
            break;
    }
    return 0;
}

static int to_rule(const struct state *s, struct cmt__cfi_rule *rule)
{
    *rule = (struct cmt__cfi_rule){0};
    if (s->ra == UNDEFINED) {
        rule->outermost = 1;
        return 0;
    }
    if (s->cfa_expression || (s->cfa_reg != REG_RSP && s->cfa_reg != REG_RBP))
        return CMT__CFI_UNSUPPORTED;
    if (s->ra != AT_OFFSET || s->ra_offset != -8 || (s->rbp != SAME && s->rbp != AT_OFFSET))
        return CMT__CFI_UNSUPPORTED;
    if (s->cfa_offset < 8 || s->cfa_offset > INT32_MAX)
        return CMT__CFI_UNSUPPORTED;
    if (s->rbp == AT_OFFSET && (s->rbp_offset >= 0 || s->rbp_offset < INT32_MIN))
        return CMT__CFI_UNSUPPORTED; /* rbp saved outside the frame */
    rule->cfa_offset = (int32_t)s->cfa_offset;
    rule->cfa_is_rbp = s->cfa_reg == REG_RBP;
    rule->rbp_offset = s->rbp == AT_OFFSET ? (int32_t)s->rbp_offset : 0;
    return 0;
}

/* The FDE pointer of the last table entry whose start is at or below pc. */
static const uint8_t *search_table(const uint8_t *hdr, uintptr_t pc)
{
    if (hdr[0] != 1 || hdr[3] != 0x3b) /* version 1, table datarel sdata4 */
        return NULL;
    struct cursor c = {hdr + 4, hdr + 4 + 16, 0};
    encoded(&c, hdr[1], 1); /* eh_frame_ptr */
    uint64_t count = hdr[2] == 0xff ? 0 : (uint64_t)encoded(&c, hdr[2], 0);
    if (c.bad || count == 0)
        return NULL;
    const int32_t *table = (const int32_t *)c.p;
    uint64_t lo = 0, hi = count; /* the answer is below hi */
    if ((uintptr_t)hdr + (intptr_t)table[0] > pc)
        return NULL;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)hdr + (intptr_t)table[2 * mid] <= pc)
            lo = mid;
        else
            hi = mid;
    }
    return hdr + (intptr_t)table[2 * lo + 1];
}

int cmt__cfi_find(const void *eh_frame_hdr, uintptr_t pc, struct cmt__cfi_rule *rule)
{
    const uint8_t *fde = search_table(eh_frame_hdr, pc);
    if (!fde)
        return CMT__CFI_NOT_FOUND;
    uint32_t len, cie_offset;
    memcpy(&len, fde, 4);
    memcpy(&cie_offset, fde + 4, 4);
    if (len == 0 || len == 0xffffffffu || cie_offset == 0)
        return CMT__CFI_UNSUPPORTED;
    struct cie cie;
    if (parse_cie(fde + 4 - cie_offset, &cie) != 0 || cie.signal_frame)
        return CMT__CFI_UNSUPPORTED;
    struct cursor c = {fde + 8, fde + 4 + len, 0};
    uintptr_t begin = encoded(&c, cie.fde_encoding, 1);
    uintptr_t range = encoded(&c, cie.fde_encoding, 0);
    if (cie.has_augmentation_data)
        c.p += uleb(&c);
    if (c.bad || c.p > c.end)
        return CMT__CFI_UNSUPPORTED;
    if (pc < begin || pc - begin >= range)
        return CMT__CFI_NOT_FOUND;
    struct state initial = {.cfa_reg = REG_RSP, .rbp = SAME, .ra = SAME}, s;
    if (run_program(cie.instructions, cie.end, &cie, &initial, &initial, 0, UINTPTR_MAX) != 0)
        return CMT__CFI_UNSUPPORTED;
    s = initial;
    if (run_program(c.p, c.end, &cie, &initial, &s, begin, pc) != 0)
        return CMT__CFI_UNSUPPORTED;
    return to_rule(&s, rule);
}
