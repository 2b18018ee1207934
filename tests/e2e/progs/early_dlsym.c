/* early_dlsym.c — a preloaded library whose constructor calls dlsym and dlopen. Listed after
 * libcumemtrace.so in LD_PRELOAD, its constructor runs before the shim's (glibc initialises
 * the later of two unrelated objects first), as a sanitizer runtime's or an allocator's
 * does: the shim's dlsym/dlopen overrides must already work then. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((constructor)) static void early(void)
{
    void *(*next_malloc)(size_t) = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    void *self = dlopen(NULL, RTLD_NOW);
    if (!next_malloc || !self) {
        fprintf(stderr, "early_dlsym: dlsym or dlopen failed in a constructor\n");
        exit(3);
    }
    free(next_malloc(16));
    dlclose(self);
}
