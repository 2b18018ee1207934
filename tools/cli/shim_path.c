#include "shim_path.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int exe_dir(char *out, size_t size)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return -1;
    *slash = 0;
    return snprintf(out, size, "%s", exe) < (int)size ? 0 : -1;
}

int cmt_find_companion(const char *name, int libexec, char *out, size_t size)
{
    char dir[PATH_MAX];
    if (exe_dir(dir, sizeof dir))
        return -1;
    const char *candidates[] = {libexec ? "../libexec/cumemtrace" : "../lib",
                                libexec ? CMT_BIN_TO_LIBEXEC "/cumemtrace" : CMT_BIN_TO_LIB};
    for (size_t i = 0; i < 2; i++) {
        snprintf(out, size, "%s/%s/%s", dir, candidates[i], name);
        if (access(out, R_OK) == 0)
            return 0;
    }
    return -1;
}

int cmt_find_shim(char *out, size_t size)
{
    const char *env = getenv("CUMEMTRACE_SHIM");
    if (env && *env) {
        snprintf(out, size, "%s", env);
        if (access(out, R_OK) == 0)
            return 0;
        fprintf(stderr, "cumemtrace: CUMEMTRACE_SHIM=%s is not readable\n", env);
        return -1;
    }
    if (cmt_find_companion("libcumemtrace.so", 0, out, size) == 0)
        return 0;
    fprintf(stderr, "cumemtrace: cannot find libcumemtrace.so next to the cumemtrace executable "
                    "(set CUMEMTRACE_SHIM)\n");
    return -1;
}
