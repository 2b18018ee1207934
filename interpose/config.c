/* config.c — the shim's settings, read once from the environment in the constructor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "launch.h"
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
        cmt__warn("ignoring %s=%s (expected %d..%d)", name, s, lo, hi);
        return fallback;
    }
    return (int)v;
}

/* 1/0 for 1, true, yes, on / 0, false, no, off (any case); anything else is refused. */
static int env_bool(const char *name, int fallback)
{
    static const char *const yes[] = {"1", "true", "yes", "on"}, *const no[] = {"0", "false", "no",
                                                                                "off"};
    const char *s = getenv(name);
    if (!s || !*s)
        return fallback;
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
        if (!strcasecmp(s, yes[i]))
            return 1;
        if (!strcasecmp(s, no[i]))
            return 0;
    }
    cmt__warn("ignoring %s=%s (expected 1/true/yes/on or 0/false/no/off)", name, s);
    return fallback;
}

/* A path setting. One that does not fit is not cut (a cut path names another file): tracing
 * is turned off with one line. @return 0, or -1 when it did not fit. */
static int env_path(const char *name, const char *fallback, char *out, size_t size)
{
    const char *s = getenv(name);
    int n = snprintf(out, size, "%s", s && *s ? s : fallback);
    if (n >= 0 && (size_t)n < size)
        return 0;
    cmt__warn("%s is %d bytes, longer than the %zu it may be; tracing off, the program continues",
              name, n, size - 1);
    out[0] = 0;
    return -1;
}

void cmt__config_load(void)
{
    int too_long = env_path("CUMEMTRACE_OUTPUT", "cumemtrace.%p.cmt", cmt__cfg.output,
                            sizeof cmt__cfg.output) ||
                   env_path("CUMEMTRACE_MANIFEST", "", cmt__cfg.manifest, sizeof cmt__cfg.manifest);
    cmt__cfg.stack_depth = env_int("CUMEMTRACE_STACK_DEPTH", 64, 0, CMT_MAX_STACK_DEPTH);
    cmt__cfg.free_stacks = env_int("CUMEMTRACE_FREE_STACKS", 0, 0, 1);
    cmt__cfg.flush_ms = env_int("CUMEMTRACE_FLUSH_MS", 500, 1, 60000);
    const char *clock = getenv("CUMEMTRACE_CLOCK");
    cmt__cfg.monotonic_clock = clock && !strcmp(clock, "monotonic");
    if (clock && *clock && strcmp(clock, "monotonic") && strcmp(clock, "auto"))
        cmt__warn("ignoring CUMEMTRACE_CLOCK=%s (expected auto or monotonic); using auto", clock);
    cmt__cfg.disabled = env_bool("CUMEMTRACE_DISABLE", 0) || too_long;
    cmt__launch_load();
}
