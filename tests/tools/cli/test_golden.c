/* Runs every analysis command over every golden trace (golden/, see make_golden.c). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "capture.h"
#include "commands.h"

static int prefixed(const char *name, const char *prefix)
{
    return strncmp(name, prefix, strlen(prefix)) == 0;
}

static void each_command(const char *name, const char *path)
{
    struct {
        int (*fn)(int, char **);
        const char *argv[6];
    } runs[] = {
        {cmt_cmd_report, {"report", path, NULL}},
        {cmt_cmd_report, {"report", "--json", path, NULL}},
        {cmt_cmd_oom, {"oom", path, NULL}},
        {cmt_cmd_oom, {"oom", "--json", path, NULL}},
        {cmt_cmd_timeline, {"timeline", path, NULL}},
        {cmt_cmd_timeline, {"timeline", "--csv", path, NULL}},
        {cmt_cmd_timeline, {"timeline", "--json", "--points", "7", path, NULL}},
        {cmt_cmd_diff, {"diff", "--json", path, path, NULL}},
    };
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        struct captured c = capture_run(runs[i].fn, runs[i].argv);
        const char *cmd = runs[i].argv[0];
        if (prefixed(name, "valid_")) {
            cr_expect_eq(c.status, 0, "%s %s", cmd, name);
            cr_expect_str_eq(c.err, "", "%s %s: %s", cmd, name, c.err);
        } else if (prefixed(name, "damaged_")) {
            cr_expect_eq(c.status, 0, "%s %s", cmd, name);
            cr_expect(strstr(c.err, "at byte "), "%s %s: %s", cmd, name, c.err);
            if (strcmp(cmd, "diff") != 0)
                cr_expect_eq(strchr(c.err, '\n') - c.err + 1, (long)strlen(c.err),
                             "%s %s warns once: %s", cmd, name, c.err);
        } else {
            cr_expect_eq(c.status, 1, "%s %s", cmd, name);
            cr_expect(strstr(c.err, path), "%s %s names the file: %s", cmd, name, c.err);
            cr_expect_eq(strchr(c.err, '\n') - c.err + 1, (long)strlen(c.err),
                         "%s %s: one line: %s", cmd, name, c.err);
        }
        captured_free(&c);
    }
}

Test(golden, every_command_over_every_trace)
{
    DIR *d = opendir(CMT_GOLDEN_DIR);
    cr_assert_not_null(d);
    int valid = 0, damaged = 0, bad = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strstr(e->d_name, ".cmt"))
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", CMT_GOLDEN_DIR, e->d_name);
        valid += prefixed(e->d_name, "valid_");
        damaged += prefixed(e->d_name, "damaged_");
        bad += prefixed(e->d_name, "bad_");
        each_command(e->d_name, path);
    }
    closedir(d);
    cr_expect_geq(valid, 3);
    cr_expect_geq(damaged, 2);
    cr_expect_geq(bad, 3);
}

Test(golden, pytorch_oom_story)
{
    const char *argv[] = {"oom", "--json", CMT_GOLDEN_DIR "/valid_pytorch_oom.cmt", NULL};
    struct captured c = capture_run(cmt_cmd_oom, argv);
    cr_expect_eq(c.status, 0);
    cr_expect(strstr(c.out, "\"request_bytes\":6636000000"), "%s", c.out);
    cr_expect(strstr(c.out, "\"attempts\":2"));
    cr_expect(strstr(c.out, "\"frees_between\":2"));
    cr_expect(strstr(c.out, "\"verdict\":\"exhausted_by_process\""));
    cr_expect(strstr(c.out, "\"holders\":[{\"bytes\":18966642688,\"count\":17,\"stack\":["
                            "\"cudaCachingAllocator_malloc_0\""),
              "%s", c.out);
    captured_free(&c);
}

/* A trace written by format v1 or v2 reads as the same trace written by v3: every analysis
 * prints the same (but for the file name). */
Test(golden, v1_and_v2_traces_read_as_their_v3_twin)
{
    int (*fns[])(int, char **) = {cmt_cmd_report, cmt_cmd_oom, cmt_cmd_timeline};
    const char *cmds[] = {"report", "oom", "timeline"};
    const char *old[] = {"valid_v1_pytorch_oom.cmt", "valid_v2_pytorch_oom.cmt"};
    const char *now = "valid_pytorch_oom.cmt";
    for (size_t v = 0; v < 2; v++)
        for (size_t i = 0; i < 3; i++) {
            char p1[1024], p2[1024];
            snprintf(p1, sizeof p1, "%s/%s", CMT_GOLDEN_DIR, old[v]);
            snprintf(p2, sizeof p2, "%s/%s", CMT_GOLDEN_DIR, now);
            const char *a1[] = {cmds[i], "--json", p1, NULL};
            const char *a2[] = {cmds[i], "--json", p2, NULL};
            struct captured c1 = capture_run(fns[i], a1), c2 = capture_run(fns[i], a2);
            cr_expect_eq(c1.status, 0);
            cr_expect_eq(c2.status, 0);
            const char *o1 = strstr(c1.out, old[v]), *o2 = strstr(c2.out, now);
            /* from the file name on, and before it */
            cr_expect(o1 && o2, "%s %s: %s", cmds[i], old[v], c1.out);
            if (o1 && o2) {
                cr_expect_str_eq(o1 + strlen(old[v]), o2 + strlen(now), "%s %s", cmds[i], old[v]);
                cr_expect_eq(o1 - c1.out, o2 - c2.out, "%s %s", cmds[i], old[v]);
                cr_expect_eq(strncmp(c1.out, c2.out, (size_t)(o2 - c2.out)), 0, "%s %s", cmds[i],
                             old[v]);
            }
            captured_free(&c1);
            captured_free(&c2);
        }
}
