/* real.c — finding the real driver and our own place in memory.
 *
 * The real functions are resolved once, from the real libcuda's handle (RTLD_NOLOAD first:
 * the program normally loaded it already), never through the global scope, where our own
 * wrappers would be found. libcuda is never linked at build time. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

struct cmt__real cmt__real;
void *(*cmt__real_dlsym)(void *, const char *);
void *(*cmt__real_dlopen)(const char *, int);

static atomic_int resolved; /* 0 not yet, 1 found, -1 no driver */
static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;
static uintptr_t own_lo, own_hi;

/* Exact names sorted for bsearch; filled once by the constructor, read-only afterwards. */
static struct name_entry {
    const char *name;
    uint32_t id;
} sorted_names[CMT__API_COUNT];
static uint32_t sorted_count;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct name_entry *)a)->name, ((const struct name_entry *)b)->name);
}

static int find_own_extent(struct dl_phdr_info *info, size_t size, void *base)
{
    if ((void *)info->dlpi_addr != base)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (!own_lo || lo < own_lo)
            own_lo = lo;
        if (hi > own_hi)
            own_hi = hi;
    }
    return 1;
}

static void *glibc_versioned(const char *name)
{
    static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_2.0"};
    for (size_t i = 0; i < sizeof versions / sizeof *versions; i++) {
        void *p = dlvsym(RTLD_NEXT, name, versions[i]);
        if (p)
            return p;
    }
    return NULL;
}

void cmt__resolve_dl(void)
{
    if (!cmt__real_dlsym)
        cmt__real_dlsym = (void *(*)(void *, const char *))glibc_versioned("dlsym");
    if (!cmt__real_dlopen)
        cmt__real_dlopen = (void *(*)(const char *, int))glibc_versioned("dlopen");
}

__attribute__((constructor)) static void cmt__constructor(void)
{
    cmt__resolve_dl();
    Dl_info info;
    if (dladdr((void *)cmt__constructor, &info) && info.dli_fbase)
        dl_iterate_phdr(find_own_extent, info.dli_fbase);
    for (uint32_t id = 1; id < CMT__API_COUNT; id++)
        sorted_names[sorted_count++] = (struct name_entry){cmt__api_name[id], id};
    qsort(sorted_names, sorted_count, sizeof *sorted_names, by_name);
    cmt__config_load();
}

int cmt__is_own_address(uintptr_t ip)
{
    return ip >= own_lo && ip < own_hi;
}

uint32_t cmt__api_by_name(const char *name)
{
    if (!name || name[0] != 'c' || name[1] != 'u')
        return 0;
    struct name_entry key = {name, 0};
    const struct name_entry *e = bsearch(&key, sorted_names, sorted_count, sizeof key, by_name);
    return e ? e->id : 0;
}

static void *real_ptr[CMT__API_COUNT];

uint32_t cmt__api_by_real(const void *fn)
{
    if (!fn)
        return 0;
    for (uint32_t id = 1; id < CMT__API_COUNT; id++)
        if (real_ptr[id] == fn)
            return id;
    return 0;
}

static void *lookup(void *handle, const char *name, uint32_t id)
{
    void *p = cmt__real_dlsym ? cmt__real_dlsym(handle, name) : NULL;
    if (p && cmt__is_own_address((uintptr_t)p))
        p = NULL; /* never call ourselves as "the real one" */
    if (id)
        real_ptr[id] = p;
    return p;
}

static void resolve_all(void)
{
    if (!cmt__real_dlopen || !cmt__real_dlsym) {
        atomic_store(&resolved, -1);
        return;
    }
    void *h = cmt__real_dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        h = cmt__real_dlopen("libcuda.so.1", RTLD_NOW);
    if (!h)
        h = cmt__real_dlopen("libcuda.so", RTLD_NOW);
    if (!h) {
        atomic_store(&resolved, -1);
        return;
    }
#define X(name, op, params, args) *(void **)&cmt__real.name = lookup(h, #name, CMT__API_##name);
#define XP X
#include "calls.def"
#undef X
#undef XP
    *(void **)&cmt__real.cuCtxGetCurrent = lookup(h, "cuCtxGetCurrent", 0);
    *(void **)&cmt__real.cuCtxGetDevice = lookup(h, "cuCtxGetDevice", 0);
    *(void **)&cmt__real.cuDeviceGetName = lookup(h, "cuDeviceGetName", 0);
    *(void **)&cmt__real.cuDeviceTotalMem_v2 = lookup(h, "cuDeviceTotalMem_v2", 0);
    *(void **)&cmt__real.cuDriverGetVersion = lookup(h, "cuDriverGetVersion", 0);
    *(void **)&cmt__real.cuStreamGetCaptureInfo_v2 = lookup(h, "cuStreamGetCaptureInfo_v2", 0);
    *(void **)&cmt__real.cuStreamGetCaptureInfo_v3 = lookup(h, "cuStreamGetCaptureInfo_v3", 0);
    atomic_store_explicit(&resolved, 1, memory_order_release);
}

int cmt__resolve(void)
{
    int s = atomic_load_explicit(&resolved, memory_order_acquire);
    if (__builtin_expect(s != 0, 1))
        return s > 0;
    pthread_once(&resolve_once, resolve_all);
    return atomic_load_explicit(&resolved, memory_order_acquire) > 0;
}
