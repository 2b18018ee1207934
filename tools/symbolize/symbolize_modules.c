/* symbolize_modules.c — opens recorded modules with libdw and resolves addresses in them.
 *
 * Each recorded module gets its own Dwfl, reported at the recorded base: a trace may hold
 * modules that overlapped over time (dlclose, then another dlopen at the same address), which
 * one Dwfl would refuse. libdw caches symbol tables and line tables per module, so thousands
 * of lookups in a module cost one parse. */
#include "symbolize_internal.h"
#include "cmt_grow.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*cxa_demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

struct module_entry {
    const struct cmt_module *rec;
    enum cmt__module_state state;
    Dwfl *dwfl;
    Dwfl_Module *mod;
};

struct cmt__module_set {
    struct module_entry *modules;
    uint32_t count, last;
    size_t cap;      /* last: the entry that answered the previous lookup */
    void *libstdcxx; /* dlopen handle, NULL when libstdc++ is not there */
    cxa_demangle_fn demangle;
    int demangle_tried;
    char *demangled; /* last demangled name (owned) */
};

static char *debuginfo_path; /* NULL: libdw's default (/usr/lib/debug, .debug next to file) */

static const Dwfl_Callbacks offline_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

cmt__module_set *cmt__module_set_create(void)
{
    return calloc(1, sizeof(cmt__module_set));
}

/* @return the entry for `rec`, added when new; NULL when out of memory. */
static struct module_entry *find_entry(cmt__module_set *set, const struct cmt_module *rec)
{
    if (set->last < set->count && set->modules[set->last].rec == rec)
        return &set->modules[set->last];
    for (uint32_t i = 0; i < set->count; i++)
        if (set->modules[i].rec == rec) {
            set->last = i;
            return &set->modules[i];
        }
    if (CMT_GROW(set->modules, set->cap, (size_t)set->count + 1, 16) != 0)
        return NULL;
    set->modules[set->count] = (struct module_entry){.rec = rec};
    set->last = set->count;
    return &set->modules[set->count++];
}

void cmt__module_set_free(cmt__module_set *set)
{
    if (!set)
        return;
    for (uint32_t i = 0; i < set->count; i++)
        if (set->modules[i].dwfl)
            dwfl_end(set->modules[i].dwfl);
    free(set->modules);
    free(set->demangled);
    if (set->libstdcxx)
        dlclose(set->libstdcxx);
    free(set);
}

/* A file changed since the trace was taken when its build-id differs from the recorded one.
 * No recorded build-id: nothing to check against, the file is trusted. */
static int build_id_matches(Dwfl_Module *mod, const struct cmt_module *rec)
{
    if (rec->build_id_len == 0)
        return 1;
    const unsigned char *bits = NULL;
    GElf_Addr vaddr;
    int len = dwfl_module_build_id(mod, &bits, &vaddr);
    return len > 0 && (uint32_t)len == rec->build_id_len &&
           memcmp(bits, rec->build_id, rec->build_id_len) == 0;
}

/* The module file a trace names, opened only when it is a regular file: a trace may come from
 * anywhere, and a FIFO would block open() for ever, a device or /dev/stdin would be read.
 * O_NONBLOCK makes opening a FIFO return at once. @return the descriptor, or -1. */
static int open_regular(const char *path)
{
    if (!path || !path[0] || strncmp(path, "/dev/", 5) == 0 || strncmp(path, "/proc/", 6) == 0)
        return -1;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat sb;
    if (fd >= 0 && (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))) {
        close(fd);
        return -1;
    }
    if (fd >= 0)
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

static enum cmt__module_state open_module(struct module_entry *m)
{
    int fd = open_regular(m->rec->path);
    if (fd < 0)
        return CMT__MODULE_MISSING;
    m->dwfl = dwfl_begin(&offline_callbacks);
    if (!m->dwfl) {
        close(fd);
        return CMT__MODULE_MISSING;
    }
    dwfl_report_begin(m->dwfl);
    /* add_p_vaddr = false: the recorded base is where the first PT_LOAD is mapped. libdwfl
     * owns fd once it reports the module. */
    m->mod = dwfl_report_elf(m->dwfl, m->rec->path, m->rec->path, fd, m->rec->base, false);
    dwfl_report_end(m->dwfl, NULL, NULL);
    if (!m->mod) {
        close(fd);
        return CMT__MODULE_MISSING;
    }
    return build_id_matches(m->mod, m->rec) ? CMT__MODULE_OK : CMT__MODULE_CHANGED;
}

/* Demangles Itanium C++ names through libstdc++ loaded at run time (no link dependency).
 * @return the demangled name, or `name` itself. */
static const char *demangle(cmt__module_set *set, const char *name)
{
    const char *at = name ? strchr(name, '@') : NULL;
    if (at && at != name) { /* "__libc_start_main@@GLIBC_2.34": the version is noise here */
        char *plain = strndup(name, (size_t)(at - name));
        if (plain) {
            free(set->demangled);
            set->demangled = plain;
            name = plain;
        }
    }
    if (!name || name[0] != '_' || name[1] != 'Z')
        return name;
    if (!set->demangle_tried) {
        set->demangle_tried = 1;
        set->libstdcxx = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        if (set->libstdcxx)
            *(void **)&set->demangle = dlsym(set->libstdcxx, "__cxa_demangle");
    }
    if (!set->demangle)
        return name;
    int status = -1;
    char *out = set->demangle(name, NULL, NULL, &status);
    if (status != 0 || !out) {
        free(out);
        return name;
    }
    if (name != set->demangled)
        free(set->demangled);
    else
        free((char *)name);
    set->demangled = out;
    return out;
}

/* The innermost inlined function around `addr`, so that the name agrees with the line
 * table's file:line (which describes the inlined code). @return NULL when not inlined. */
static const char *inlined_function(Dwfl_Module *mod, Dwarf_Addr addr)
{
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, &bias);
    if (!cu)
        return NULL;
    Dwarf_Die *scopes = NULL;
    int n = dwarf_getscopes(cu, addr - bias, &scopes);
    const char *name = NULL;
    for (int i = 0; i < n && !name; i++) {
        int tag = dwarf_tag(&scopes[i]);
        if (tag == DW_TAG_subprogram)
            break; /* reached the real function: the address is not inlined */
        if (tag != DW_TAG_inlined_subroutine)
            continue;
        Dwarf_Attribute attr;
        /* Prefer the linkage name (qualified once demangled) over the bare DW_AT_name. */
        if (dwarf_attr_integrate(&scopes[i], DW_AT_linkage_name, &attr) ||
            dwarf_attr_integrate(&scopes[i], DW_AT_MIPS_linkage_name, &attr))
            name = dwarf_formstring(&attr);
        if (!name)
            name = dwarf_diename(&scopes[i]);
    }
    free(scopes);
    return name;
}

enum cmt__module_state cmt__module_lookup(cmt__module_set *set, const struct cmt_module *rec,
                                          uint64_t ip, struct cmt__frame_info *out)
{
    memset(out, 0, sizeof *out);
    struct module_entry *m = find_entry(set, rec);
    if (!m)
        return CMT__MODULE_MISSING;
    if (m->state == CMT__MODULE_UNOPENED)
        m->state = open_module(m);
    if (m->state != CMT__MODULE_OK || ip == 0)
        return m->state;
    /* ip is a return address: ip - 1 lies inside the call instruction. */
    Dwarf_Addr addr = ip - 1;
    GElf_Off offset;
    GElf_Sym sym;
    const char *name = inlined_function(m->mod, addr);
    if (!name)
        name = dwfl_module_addrinfo(m->mod, addr, &offset, &sym, NULL, NULL, NULL);
    out->function = demangle(set, name);
    Dwfl_Line *line = dwfl_module_getsrc(m->mod, addr);
    int lineno = 0;
    const char *file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
    if (file && lineno > 0) {
        out->file = file;
        out->line = (uint32_t)lineno;
    }
    return m->state;
}

void cmt__module_set_counts(const cmt__module_set *set, uint32_t *missing, uint32_t *changed)
{
    *missing = *changed = 0;
    for (uint32_t i = 0; i < set->count; i++) {
        *missing += set->modules[i].state == CMT__MODULE_MISSING;
        *changed += set->modules[i].state == CMT__MODULE_CHANGED;
    }
}
