/* malloc_failure.h — allocation failure on demand, for a test binary: included once (it
 * defines malloc, calloc and realloc for the whole binary), requests above fail_above fail
 * while it is non-zero; glibc's allocator under its own names does the work otherwise.
 * Where a sanitizer owns malloc, CMT_TEST_NO_MALLOC_HOOK is defined instead and nothing is. */
#ifndef CMT_TEST_MALLOC_FAILURE_H
#define CMT_TEST_MALLOC_FAILURE_H

#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CMT_TEST_NO_MALLOC_HOOK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CMT_TEST_NO_MALLOC_HOOK 1
#endif
#endif

#ifndef CMT_TEST_NO_MALLOC_HOOK
void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);

static size_t fail_above; /* 0: off; else requests above it fail */

void *malloc(size_t size)
{
    return fail_above && size > fail_above ? NULL : __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
    return fail_above && n && size > fail_above / n ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
    return fail_above && size > fail_above ? NULL : __libc_realloc(p, size);
}
#endif

#endif
