/* config.c — the shim's settings, read once from the environment in the constructor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

struct cmt__config cmt__cfg;

static int env_int(const char *name, int fallback, int lo, int hi)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return fallback;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < lo || v > hi) {
        fprintf(stderr, "cumemtrace: ignoring %s=%s (expected %d..%d)\n", name, s, lo, hi);
        return fallback;
    }
    return (int)v;
}

static void env_str(const char *name, const char *fallback, char *out, size_t size)
{
    const char *s = getenv(name);
    snprintf(out, size, "%s", s && *s ? s : fallback);
}

void cmt__config_load(void)
{
    env_str("CUMEMTRACE_OUTPUT", "cumemtrace.%p.cmt", cmt__cfg.output, sizeof cmt__cfg.output);
    env_str("CUMEMTRACE_MANIFEST", "", cmt__cfg.manifest, sizeof cmt__cfg.manifest);
    cmt__cfg.stack_depth = env_int("CUMEMTRACE_STACK_DEPTH", 64, 0, 256);
    cmt__cfg.free_stacks = env_int("CUMEMTRACE_FREE_STACKS", 0, 0, 1);
    cmt__cfg.flush_ms = env_int("CUMEMTRACE_FLUSH_MS", 500, 1, 60000);
    const char *clock = getenv("CUMEMTRACE_CLOCK");
    cmt__cfg.monotonic_clock = clock && !strcmp(clock, "monotonic");
    cmt__cfg.disabled = env_int("CUMEMTRACE_DISABLE", 0, 0, 1);
}
