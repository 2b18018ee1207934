/* origin_loader.c — a library whose RUNPATH ($ORIGIN/origin) is the only way to find the
 * library it dlopens: under the shim, glibc must still see this library as dlopen's caller. */
#include <dlfcn.h>
#include <stdio.h>

#include "origin_loader.h"

int origin_load(void)
{
    void *h = dlopen("liborigin_target.so", RTLD_NOW);
    if (!h)
        fprintf(stderr, "origin_load: %s\n", dlerror());
    return h != NULL;
}
