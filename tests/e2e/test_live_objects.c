/* A million live allocations under record (issue 26): progs/live_million on simcuda, 250,000
 * cuMemAlloc_v2 on each of four devices, never freed. simcuda's first fit is O(log n) of the
 * live ranges, so this runs in seconds; the trace is checked against simcuda's own log, and
 * report's live count and bytes at the end against what the program allocated. */
#include <inttypes.h>

#include "e2e_util.h"

TestSuite(live_objects, .init = e2e_setup, .fini = e2e_teardown);

#define LIVE 1000000
#define DEVICES 4

Test(live_objects, a_million_live_allocations_are_recorded_and_reported)
{
    static char log[PATH_MAX + 16];
    snprintf(log, sizeof log, "%s/simcuda.log", e2e_dir);
    setenv("SIMCUDA_LOG", log, 1);
    setenv("SIMCUDA_DEVICES", "4", 1);
    setenv("SIMCUDA_MEMORY", "512GiB", 1); /* 250,000 pages of 2 MiB each, and room */
    static struct run r;
    char path[NAME_MAX + 1];
    const char *const args[] = {"1000000", "4", NULL};
    e2e_record_one(&r, path, NULL, "tests/progs/live_million", args, 0);
    static struct run check;
    e2e_check_simcuda_log(log, &check);
    cr_assert(strstr(check.out, "allocations served 1000000 / recorded 1000000"), "%s", check.out);

    uint64_t bytes = 0; /* live_million's sizes: 4 KiB + (i % 64) x 512 B on each device */
    for (int d = 0; d < DEVICES; d++)
        for (uint64_t i = 0; i < LIVE / DEVICES; i++)
            bytes += 4096 + (i % 64) * 512;
    char cli[PATH_MAX], want[128];
    char *const report[] = {(char *)e2e_path(cli, "bin/cumemtrace"), "report", "--json", path,
                            NULL};
    static struct run rep;
    e2e_run(&rep, report);
    cr_assert_eq(rep.status, 0, "%s", rep.err);
    snprintf(want, sizeof want, "\"live_bytes_at_end\":%" PRIu64 ",", bytes);
    cr_assert(strstr(rep.out, want), "report lacks %s", want);
    snprintf(want, sizeof want, "\"leaks\":[{\"bytes\":%" PRIu64 ",\"count\":%d,", bytes, LIVE);
    cr_assert(strstr(rep.out, want), "report lacks %s", want);
    unsetenv("SIMCUDA_DEVICES");
    unsetenv("SIMCUDA_MEMORY");
    unsetenv("SIMCUDA_LOG");
}
