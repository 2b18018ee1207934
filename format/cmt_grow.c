/* cmt_grow.c — array growth (see cmt_grow.h). */
#include "cmt_grow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"

int cmt_grow(void *items_at, size_t *cap, size_t need, size_t size, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : first ? first : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return CMT_ENOMEM;
        n *= 2;
    }
    if (size && n > SIZE_MAX / size)
        return CMT_ENOMEM;
    void *items; /* the caller's pointer, whatever its type: copied, never type-punned */
    memcpy(&items, items_at, sizeof items);
    void *grown = realloc(items, n * size);
    if (!grown)
        return CMT_ENOMEM;
    memcpy(items_at, &grown, sizeof grown);
    *cap = n;
    return 0;
}
