/* Tests of export_partitioned.c against links planted under DIR (issue 24 item 2): at a part
 * file, a table directory, a run directory, dangling or not, each is refused with one line
 * naming it, a non-zero exit, and nothing outside DIR touched; a hard link keeps its target. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "commands.h"
#include "trace_builder.h"

/* The test's scratch: ROOT/t.cmt (a trace with an OOM episode), ROOT/out (DIR), ROOT/outside
 * (a directory that must stay empty) and ROOT/victim (a file that must keep its bytes). */
static char root[128], trace[192], dir[192], outside[192], victim[192];

static void scratch(void)
{
    snprintf(root, sizeof root, "/tmp/cmt_partitioned_%d_XXXXXX", (int)getpid());
    cr_assert_not_null(mkdtemp(root));
    snprintf(trace, sizeof trace, "%s/t.cmt", root);
    snprintf(dir, sizeof dir, "%s/out", root);
    snprintf(outside, sizeof outside, "%s/outside", root);
    snprintf(victim, sizeof victim, "%s/victim", root);
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t s = tb_stack(&b, "layer", 2);
    tb_alloc(&b, 0x700000000000, TB_GIB, s);
    uint64_t seq = tb_alloc_fail(&b, 30 * TB_GIB, s);
    tb_meminfo(&b, CMT_MEMINFO_OOM, 23 * TB_GIB, 24 * TB_GIB, seq);
    tb_finish(&b, 1);
    cr_assert_eq(tb_save(&b, trace), 0);
    tb_free_builder(&b);
    cr_assert_eq(mkdir(dir, 0777), 0);
    cr_assert_eq(mkdir(outside, 0777), 0);
    FILE *f = fopen(victim, "w");
    cr_assert_not_null(f);
    fputs("the program's data\n", f);
    fclose(f);
}

static void cleanup(void)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    cr_expect_eq(system(cmd), 0);
}

/* Creates the directories of DIR/rel's parent. */
static void parents(const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')); p++) {
        *p = 0;
        mkdir(path, 0777);
        *p = '/';
    }
}

/* A symbolic link DIR/rel -> target. */
static void plant(const char *rel, const char *target)
{
    char path[512];
    parents(rel);
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    cr_assert_eq(symlink(target, path), 0, "%s", path);
}

static struct captured export_csv(void)
{
    const char *argv[] = {"export", "-f", "csv",      "--partitioned", dir,
                          "--run",  "r1", "--events", trace,           NULL};
    return capture_run(cmt_cmd_export, argv);
}

/* The export refused, in one line naming DIR/rel, and nothing reached `outside` or `victim`. */
static void expect_refused(const char *rel)
{
    struct captured c = export_csv();
    char named[512];
    snprintf(named, sizeof named,
             "cumemtrace export: %s/%s: a symbolic link: refusing to write through it\n", dir, rel);
    cr_expect_neq(c.status, 0, "%s", c.out);
    cr_expect_str_eq(c.err, named, "one line naming it");
    captured_free(&c);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s')\"", outside);
    cr_expect_eq(system(cmd), 0, "nothing was written outside DIR");
    FILE *f = fopen(victim, "r");
    char line[64] = "";
    cr_assert_not_null(f);
    cr_expect_not_null(fgets(line, sizeof line, f));
    fclose(f);
    cr_expect_str_eq(line, "the program's data\n", "the victim kept its bytes");
}

/* @return whether DIR/rel exists (not following a link). */
static int exists(const char *rel)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    return lstat(path, &st) == 0;
}

Test(export_partitioned, a_link_at_a_part_file_is_refused, .init = scratch, .fini = cleanup)
{
    plant("processes/run=r1/part-t.csv", victim);
    expect_refused("processes/run=r1/part-t.csv");
    cr_expect(!exists("events"), "refused before anything was written");
}

Test(export_partitioned, a_link_at_a_table_directory_is_refused, .init = scratch, .fini = cleanup)
{
    plant("sites", outside);
    expect_refused("sites");
    cr_expect(!exists("processes") && !exists("events"), "refused before anything was written");
}

Test(export_partitioned, a_link_at_a_run_directory_is_refused, .init = scratch, .fini = cleanup)
{
    plant("episodes/run=r1", outside);
    expect_refused("episodes/run=r1");
}

Test(export_partitioned, a_link_of_the_runs_table_is_refused, .init = scratch, .fini = cleanup)
{
    plant("runs/run=r1/part-0.csv", victim);
    expect_refused("runs/run=r1/part-0.csv");
}

Test(export_partitioned, dangling_links_are_refused_and_create_nothing, .init = scratch,
     .fini = cleanup)
{
    char target[256];
    snprintf(target, sizeof target, "%s/created", outside);
    plant("events/run=r1/part-t.csv", target);
    expect_refused("events/run=r1/part-t.csv");
    cr_expect_neq(access(target, F_OK), 0, "no file was created through the link");
    unlink(target);
    char link[512];
    snprintf(link, sizeof link, "%s/events/run=r1/part-t.csv", dir);
    cr_assert_eq(unlink(link), 0);
    snprintf(target, sizeof target, "%s/newdir", outside);
    plant("runs", target);
    expect_refused("runs");
    cr_expect_neq(access(target, F_OK), 0, "no directory was created through the link");
}

Test(export_partitioned, a_hard_link_at_a_part_file_keeps_its_targets_bytes, .init = scratch,
     .fini = cleanup)
{
    char path[512];
    parents("processes/run=r1/part-t.csv");
    snprintf(path, sizeof path, "%s/processes/run=r1/part-t.csv", dir);
    cr_assert_eq(link(victim, path), 0);
    struct captured c = export_csv();
    cr_expect_eq(c.status, 0, "%s", c.err);
    captured_free(&c);
    FILE *f = fopen(victim, "r");
    char line[64] = "";
    cr_assert_not_null(f);
    cr_expect_not_null(fgets(line, sizeof line, f));
    fclose(f);
    cr_expect_str_eq(line, "the program's data\n");
    f = fopen(path, "r");
    cr_assert_not_null(f);
    cr_expect_not_null(fgets(line, sizeof line, f));
    fclose(f);
    cr_expect(strncmp(line, "pid,host,rank,", 14) == 0, "the table was written: %s", line);
}

Test(export_partitioned, a_link_at_dir_itself_is_the_users_choice, .init = scratch, .fini = cleanup)
{
    char link[256];
    snprintf(link, sizeof link, "%s/via", root);
    cr_assert_eq(symlink(dir, link), 0);
    const char *argv[] = {"export", "-f", "csv", "--partitioned", link, "--run", "r1", trace, NULL};
    struct captured c = capture_run(cmt_cmd_export, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    captured_free(&c);
    cr_expect(exists("processes/run=r1/part-t.csv"));
}
