/* nvtx.c — the shim as an NVTX injection library: NVTX's documented mechanism
 * (NVTX_INJECTION64_PATH names a library whose InitializeInjectionNvtx2 fills NVTX's function
 * tables; `cumemtrace record` sets it to the shim; InitializeInjectionNvtx2Preinject serves an
 * NVTX built to look for an already loaded injection, which NVTX 3 does not by default). Push/pop, start/end, marks, domains, categories and
 * registered strings become RANGE entries of the calling thread's ring (recorder.c), copied
 * there without allocation: the same path, order and loss guarantees as memory events. The
 * NVTX headers come with the CUDA toolkit (nvtx3/, header-only); NVTX_NO_IMPL takes only
 * their types. Docs: docs/capture.md ("Phases"). */
#include <stdatomic.h>
#include <string.h>
#include <wchar.h>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include "recorder.h"

CMT_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table);
CMT_EXPORT int InitializeInjectionNvtx2Preinject(NvtxGetExportTableFunc_t get_export_table);

/* Domains 1..CMT__NVTX_DOMAINS (0 is NVTX's default domain, a NULL handle); registered
 * strings in a fixed table. Handles are pointers into these tables, opaque to NVTX. */
#define CMT__NVTX_DOMAINS 256
#define CMT__NVTX_STRINGS 4096
static char domain_names[CMT__NVTX_DOMAINS][CMT__RANGE_TEXT];
static _Atomic uint32_t domain_count;
struct registered {
    uint32_t len;
    char text[CMT__RANGE_TEXT];
};
static struct registered strings[CMT__NVTX_STRINGS];
static _Atomic uint32_t string_count;
static _Atomic uint32_t next_range_id = 1;
static __thread int push_depth;

static uint32_t domain_id(nvtxDomainHandle_t domain)
{
    if (!domain)
        return 0;
    uintptr_t at = (uintptr_t)domain, base = (uintptr_t)domain_names;
    if (at < base || at >= base + sizeof domain_names)
        return 0;
    return (uint32_t)((at - base) / CMT__RANGE_TEXT) + 1;
}

/* Copies a message of any NVTX type into buf (wide characters outside ASCII become '?').
 * @return its length (cut at CMT__RANGE_TEXT). */
static size_t copy_wide(const wchar_t *w, char *buf)
{
    size_t n = 0;
    for (; w && w[n] && n < CMT__RANGE_TEXT; n++)
        buf[n] = w[n] > 0 && w[n] < 128 ? (char)w[n] : '?';
    return n;
}

static size_t message_of(const nvtxEventAttributes_t *a, char *buf, const char **text)
{
    *text = buf;
    if (!a || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof a->message)
        return 0;
    switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
        *text = a->message.ascii;
        return a->message.ascii ? strnlen(a->message.ascii, CMT__RANGE_TEXT) : 0;
    case NVTX_MESSAGE_TYPE_UNICODE: return copy_wide(a->message.unicode, buf);
    case NVTX_MESSAGE_TYPE_REGISTERED: {
        const struct registered *s = (const struct registered *)a->message.registered;
        if (!s)
            return 0;
        *text = s->text;
        return s->len;
    }
    default: return 0;
    }
}

static uint32_t category_of(const nvtxEventAttributes_t *a)
{
    return a && a->size >= offsetof(nvtxEventAttributes_t, category) + sizeof a->category
               ? a->category
               : 0;
}

static void range_ex(uint32_t action, nvtxDomainHandle_t domain, const nvtxEventAttributes_t *a,
                     uint32_t id)
{
    char buf[CMT__RANGE_TEXT];
    const char *text;
    size_t len = message_of(a, buf, &text);
    cmt__range_event(action, domain_id(domain), category_of(a), id, text, len);
}

static void range_ascii(uint32_t action, const char *message, uint32_t id)
{
    cmt__range_event(action, 0, 0, id, message, message ? strnlen(message, CMT__RANGE_TEXT) : 0);
}

static void range_wide(uint32_t action, const wchar_t *message, uint32_t id)
{
    char buf[CMT__RANGE_TEXT];
    cmt__range_event(action, 0, 0, id, buf, copy_wide(message, buf));
}

static uint32_t new_range_id(void)
{
    return atomic_fetch_add_explicit(&next_range_id, 1, memory_order_relaxed);
}

/* NVTX core (version 1 entry points, the default domain). */
static void mark_ex(const nvtxEventAttributes_t *a)
{
    range_ex(CMT_RA_MARK, NULL, a, 0);
}
static void mark_a(const char *m)
{
    range_ascii(CMT_RA_MARK, m, 0);
}
static void mark_w(const wchar_t *m)
{
    range_wide(CMT_RA_MARK, m, 0);
}
static nvtxRangeId_t start_ex(const nvtxEventAttributes_t *a)
{
    uint32_t id = new_range_id();
    range_ex(CMT_RA_START, NULL, a, id);
    return id;
}
static nvtxRangeId_t start_a(const char *m)
{
    uint32_t id = new_range_id();
    range_ascii(CMT_RA_START, m, id);
    return id;
}
static nvtxRangeId_t start_w(const wchar_t *m)
{
    uint32_t id = new_range_id();
    range_wide(CMT_RA_START, m, id);
    return id;
}
static void range_end(nvtxRangeId_t id)
{
    cmt__range_event(CMT_RA_END, 0, 0, (uint32_t)id, NULL, 0);
}
static int push_ex(const nvtxEventAttributes_t *a)
{
    range_ex(CMT_RA_PUSH, NULL, a, 0);
    return push_depth++;
}
static int push_a(const char *m)
{
    range_ascii(CMT_RA_PUSH, m, 0);
    return push_depth++;
}
static int push_w(const wchar_t *m)
{
    range_wide(CMT_RA_PUSH, m, 0);
    return push_depth++;
}
static int pop(void)
{
    if (push_depth <= 0)
        return -1;
    cmt__range_event(CMT_RA_POP, 0, 0, 0, NULL, 0);
    return --push_depth;
}
static void name_category_a(uint32_t category, const char *name)
{
    cmt__range_event(CMT_RA_CATEGORY, 0, category, 0, name,
                     name ? strnlen(name, CMT__RANGE_TEXT) : 0);
}
static void name_category_w(uint32_t category, const wchar_t *name)
{
    char buf[CMT__RANGE_TEXT];
    cmt__range_event(CMT_RA_CATEGORY, 0, category, 0, buf, copy_wide(name, buf));
}

/* NVTX core 2 (domains). */
static void domain_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    range_ex(CMT_RA_MARK, d, a, 0);
}
static nvtxRangeId_t domain_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    uint32_t id = new_range_id();
    range_ex(CMT_RA_START, d, a, id);
    return id;
}
static void domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
    cmt__range_event(CMT_RA_END, domain_id(d), 0, (uint32_t)id, NULL, 0);
}
static int domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    range_ex(CMT_RA_PUSH, d, a, 0);
    return push_depth++;
}
static int domain_pop(nvtxDomainHandle_t d)
{
    if (push_depth <= 0)
        return -1;
    cmt__range_event(CMT_RA_POP, domain_id(d), 0, 0, NULL, 0);
    return --push_depth;
}
static void domain_name_category_a(nvtxDomainHandle_t d, uint32_t category, const char *name)
{
    cmt__range_event(CMT_RA_CATEGORY, domain_id(d), category, 0, name,
                     name ? strnlen(name, CMT__RANGE_TEXT) : 0);
}
static void domain_name_category_w(nvtxDomainHandle_t d, uint32_t category, const wchar_t *name)
{
    char buf[CMT__RANGE_TEXT];
    cmt__range_event(CMT_RA_CATEGORY, domain_id(d), category, 0, buf, copy_wide(name, buf));
}

static nvtxStringHandle_t register_string(const char *text, size_t len)
{
    uint32_t slot = atomic_fetch_add(&string_count, 1);
    if (slot >= CMT__NVTX_STRINGS) { /* full: later uses of the handle name nothing */
        atomic_store(&string_count, CMT__NVTX_STRINGS);
        return NULL;
    }
    struct registered *s = &strings[slot];
    s->len = (uint32_t)(len < CMT__RANGE_TEXT ? len : CMT__RANGE_TEXT);
    memcpy(s->text, text, s->len);
    return (nvtxStringHandle_t)s;
}
static nvtxStringHandle_t domain_register_string_a(nvtxDomainHandle_t d, const char *string)
{
    (void)d;
    return register_string(string ? string : "", string ? strnlen(string, CMT__RANGE_TEXT) : 0);
}
static nvtxStringHandle_t domain_register_string_w(nvtxDomainHandle_t d, const wchar_t *string)
{
    (void)d;
    char buf[CMT__RANGE_TEXT];
    return register_string(buf, copy_wide(string, buf));
}

static nvtxDomainHandle_t domain_create(const char *name, size_t len)
{
    uint32_t slot = atomic_fetch_add(&domain_count, 1);
    if (slot >= CMT__NVTX_DOMAINS) { /* full: its ranges go to the default domain */
        atomic_store(&domain_count, CMT__NVTX_DOMAINS);
        return NULL;
    }
    len = len < CMT__RANGE_TEXT - 1 ? len : CMT__RANGE_TEXT - 1;
    memcpy(domain_names[slot], name, len);
    cmt__range_event(CMT_RA_DOMAIN, slot + 1, 0, 0, name, len);
    return (nvtxDomainHandle_t)domain_names[slot];
}
static nvtxDomainHandle_t domain_create_a(const char *name)
{
    return domain_create(name ? name : "", name ? strnlen(name, CMT__RANGE_TEXT) : 0);
}
static nvtxDomainHandle_t domain_create_w(const wchar_t *name)
{
    char buf[CMT__RANGE_TEXT];
    return domain_create(buf, copy_wide(name, buf));
}
static void domain_destroy(nvtxDomainHandle_t d)
{
    (void)d; /* its id stays its own: records already name it */
}

/* Sets slot `id` of a module's table when the table has it. */
static void set(NvtxFunctionTable table, unsigned size, unsigned id, NvtxFunctionPointer fn)
{
    if (id < size && table[id])
        *table[id] = fn;
}
#define CMT__FN(f) ((NvtxFunctionPointer)(void (*)(void))(f))

static int fill_core(const NvtxExportTableCallbacks *cb)
{
    NvtxFunctionTable t = NULL;
    unsigned n = 0;
    if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n) || !t)
        return 0;
    set(t, n, NVTX_CBID_CORE_MarkEx, CMT__FN(mark_ex));
    set(t, n, NVTX_CBID_CORE_MarkA, CMT__FN(mark_a));
    set(t, n, NVTX_CBID_CORE_MarkW, CMT__FN(mark_w));
    set(t, n, NVTX_CBID_CORE_RangeStartEx, CMT__FN(start_ex));
    set(t, n, NVTX_CBID_CORE_RangeStartA, CMT__FN(start_a));
    set(t, n, NVTX_CBID_CORE_RangeStartW, CMT__FN(start_w));
    set(t, n, NVTX_CBID_CORE_RangeEnd, CMT__FN(range_end));
    set(t, n, NVTX_CBID_CORE_RangePushEx, CMT__FN(push_ex));
    set(t, n, NVTX_CBID_CORE_RangePushA, CMT__FN(push_a));
    set(t, n, NVTX_CBID_CORE_RangePushW, CMT__FN(push_w));
    set(t, n, NVTX_CBID_CORE_RangePop, CMT__FN(pop));
    set(t, n, NVTX_CBID_CORE_NameCategoryA, CMT__FN(name_category_a));
    set(t, n, NVTX_CBID_CORE_NameCategoryW, CMT__FN(name_category_w));
    return 1;
}

static void fill_core2(const NvtxExportTableCallbacks *cb)
{
    NvtxFunctionTable t = NULL;
    unsigned n = 0;
    if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n) || !t)
        return;
    set(t, n, NVTX_CBID_CORE2_DomainMarkEx, CMT__FN(domain_mark_ex));
    set(t, n, NVTX_CBID_CORE2_DomainRangeStartEx, CMT__FN(domain_start_ex));
    set(t, n, NVTX_CBID_CORE2_DomainRangeEnd, CMT__FN(domain_end));
    set(t, n, NVTX_CBID_CORE2_DomainRangePushEx, CMT__FN(domain_push_ex));
    set(t, n, NVTX_CBID_CORE2_DomainRangePop, CMT__FN(domain_pop));
    set(t, n, NVTX_CBID_CORE2_DomainNameCategoryA, CMT__FN(domain_name_category_a));
    set(t, n, NVTX_CBID_CORE2_DomainNameCategoryW, CMT__FN(domain_name_category_w));
    set(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, CMT__FN(domain_register_string_a));
    set(t, n, NVTX_CBID_CORE2_DomainRegisterStringW, CMT__FN(domain_register_string_w));
    set(t, n, NVTX_CBID_CORE2_DomainCreateA, CMT__FN(domain_create_a));
    set(t, n, NVTX_CBID_CORE2_DomainCreateW, CMT__FN(domain_create_w));
    set(t, n, NVTX_CBID_CORE2_DomainDestroy, CMT__FN(domain_destroy));
}

CMT_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table)
{
    if (!get_export_table || cmt__cfg.disabled)
        return 0; /* NVTX turns every call into a no-op */
    const NvtxExportTableCallbacks *cb = get_export_table(NVTX_ETID_CALLBACKS);
    if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable || !fill_core(cb))
        return 0;
    fill_core2(cb);
    return 1;
}

/* Found with dlsym by an NVTX built with NVTX_SUPPORT_ALREADY_INJECTED_LIBRARY (off by default
 * in NVTX 3) when NVTX_INJECTION64_PATH is unset. */
CMT_EXPORT int InitializeInjectionNvtx2Preinject(NvtxGetExportTableFunc_t get_export_table)
{
    return InitializeInjectionNvtx2(get_export_table);
}
