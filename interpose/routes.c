/* routes.c — the dlopen/dlsym route to the driver.
 *
 * Programs that dlopen libcuda and dlsym exact names (TensorFlow, numba, older PyTorch) never
 * call our exported symbols, so dlsym is overridden: exact wrapped names looked up in libcuda,
 * RTLD_DEFAULT or RTLD_NEXT get our wrapper; everything else is the real answer. This path
 * takes no lock of ours, logs nothing and initialises nothing lazily (hangs seen elsewhere).
 * Both overrides end in a tail call to the real function where the answer is not ours, so
 * glibc still sees the program's return address (RTLD_NEXT, $ORIGIN and RUNPATH of the
 * caller keep working). */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "shim.h"

static int is_libcuda_path(const char *path)
{
    if (!path)
        return 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strncmp(base, "libcuda.so", 10) == 0;
}

/* A dlopen handle is the object's link_map in glibc. */
static int is_libcuda_handle(void *handle)
{
    return handle != RTLD_DEFAULT && handle != RTLD_NEXT &&
           is_libcuda_path(((struct link_map *)handle)->l_name);
}

static struct link_map *object_of(const void *addr)
{
    Dl_info info;
    struct link_map *lm = NULL;
    if (!addr || !dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP))
        return NULL;
    return lm;
}

static int in_libcuda(const void *addr)
{
    struct link_map *lm = object_of(addr);
    return lm && is_libcuda_path(lm->l_name);
}

/* RTLD_NEXT as seen from `caller`: the first definition in an object after the caller's.
 * Real RTLD_NEXT from here searches after us; that answer holds when it lies after the
 * caller's object, otherwise continue object by object after the caller. */
static void *next_after(const void *caller, const char *name)
{
    struct link_map *me = object_of(caller);
    void *p = cmt__real_dlsym(RTLD_NEXT, name);
    if (!me)
        return p;
    struct link_map *owner = object_of(p);
    for (struct link_map *lm = me->l_next; lm && owner; lm = lm->l_next)
        if (lm == owner)
            return p;
    for (struct link_map *lm = me->l_next; lm; lm = lm->l_next) {
        void *q = cmt__real_dlsym(lm, name);
        if (q && object_of(q) == lm)
            return q;
    }
    return NULL;
}

CMT_EXPORT void *dlsym(void *handle, const char *name)
{
    if (__builtin_expect(!cmt__real_dlsym, 0))
        cmt__resolve_dl(); /* called before our constructor ran */
    uint32_t id = cmt__api_by_name(name);
    if (!id)
        return cmt__real_dlsym(handle, name); /* tail call: glibc sees the real caller */
    const void *caller = __builtin_return_address(0);
    void *p = handle == RTLD_NEXT ? next_after(caller, name) : cmt__real_dlsym(handle, name);
    if (!p || cmt__is_own_address((uintptr_t)p))
        return p;
    if (handle != RTLD_DEFAULT && handle != RTLD_NEXT && !is_libcuda_handle(handle))
        return p;
    if (!in_libcuda(p) || in_libcuda(caller))
        return p; /* not the driver's symbol, or the driver asking for itself */
    return cmt__api_wrapper[id];
}

CMT_EXPORT void *dlopen(const char *file, int mode)
{
    if (__builtin_expect(!cmt__real_dlopen, 0))
        cmt__resolve_dl(); /* called before our constructor ran */
    if (mode & RTLD_DEEPBIND)
        cmt__note_once("deepbind", 1,
                       "%s was opened with RTLD_DEEPBIND: its CUDA calls may bypass cumemtrace",
                       file ? file : "(main program)");
    else if (file && file[0] == '/' && is_libcuda_path(file))
        cmt__note_once("abspath", 0,
                       "the driver was opened by absolute path (%s); lookups through it are "
                       "still intercepted by dlsym",
                       file);
    return cmt__real_dlopen(file, mode); /* tail call: $ORIGIN/RUNPATH of the real caller */
}
