/* duckdb_prefix.c — see duckdb_prefix.h. */
#include "duckdb_prefix.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *duckdb_prefix(void)
{
    static char prefix[1024], cmd[2300], probe[1100];
    const char *build = getenv("CMT_BUILD_DIR"), *ci = getenv("CI");
    int in_ci = ci && strcmp(ci, "true") == 0;
    snprintf(prefix, sizeof prefix, "%s/npm-duckdb", build ? build : "/tmp");
    snprintf(probe, sizeof probe, "%s/node_modules/@duckdb/node-api/package.json", prefix);
    if (access(probe, R_OK) == 0 && system("node --version >/dev/null 2>&1") == 0)
        return prefix;
    const char *why = NULL;
    if (system("node --version >/dev/null 2>&1 && npm --version >/dev/null 2>&1") != 0) {
        why = "node and npm are not installed";
    } else {
        snprintf(cmd, sizeof cmd,
                 "timeout 600 npm install --prefix '%s' --no-audit --no-fund --loglevel=error "
                 "@duckdb/node-api >'%s.log' 2>&1",
                 prefix, prefix);
        if (system(cmd) != 0 || access(probe, R_OK) != 0)
            why = "npm could not install @duckdb/node-api (no network?)";
    }
    if (why && in_ci)
        cr_assert_fail("%s: CI must run the DuckDB test (see %s.log)", why, prefix);
    if (why)
        cr_skip_test("%s", why);
    return prefix;
}
