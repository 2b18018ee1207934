/* cmt_free.h — a destructor's list of frees in one call.
 *
 *     CMT_FREE_ALL(o->v, o->site_bytes, o->site_count, o);
 *
 * Each argument is a pointer from malloc, calloc or realloc, or NULL. They are freed in the
 * order given, so a struct comes after the members it holds. */
#ifndef CMT_FREE_H
#define CMT_FREE_H

#include <stddef.h>
#include <stdlib.h>

static inline void cmt__free_each(void *const *pointers, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(pointers[i]);
}

#define CMT_FREE_ALL(...)                        \
    cmt__free_each((void *const[]){__VA_ARGS__}, \
                   sizeof((void *const[]){__VA_ARGS__}) / sizeof(void *))

#endif
