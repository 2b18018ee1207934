/* The redactor (tools/analysis/redact.c): what each record loses and keeps. */
#include <criterion/criterion.h>
#include <string.h>

#include "redact.h"

static cmt_redact *x;

static void setup(void)
{
    cr_assert_eq(cmt_redact_create(&x), 0);
}

static void teardown(void)
{
    cmt_redact_destroy(x);
}

TestSuite(redact, .init = setup, .fini = teardown);

static const char *shortened(const char *text)
{
    struct cmt_record rec = {.type = CMT_REC_STRING, .u.string = {1, text}};
    cr_assert_eq(cmt_redact_record(x, &rec), 1);
    return rec.u.string.text;
}

Test(redact, home_directories_become_a_tilde_at_the_start_of_a_path)
{
    cr_assert_str_eq(shortened("/home/alice/run/train.py"), "~/run/train.py");
    cr_assert_str_eq(shortened("/Users/bob"), "~");
    cr_assert_str_eq(shortened("/root/.cache/x.so"), "~/.cache/x.so");
    cr_assert_str_eq(shortened("File \"/home/alice/a.py\", line 3"), "File \"~/a.py\", line 3");
    cr_assert_str_eq(shortened("/home/a/x:/home/b/y"), "~/x:~/y");
    cr_assert_eq(cmt_redact_counts(x)->home_paths, 6);
    /* not a home directory, or not at a path's start: left as they are */
    cr_assert_str_eq(shortened("/homework/x"), "/homework/x");
    cr_assert_str_eq(shortened("/rootfs/lib.so"), "/rootfs/lib.so");
    cr_assert_str_eq(shortened("/usr/lib/x/home/alice"), "/usr/lib/x/home/alice");
    cr_assert_str_eq(shortened("/home/"), "/home/");
    cr_assert_str_eq(shortened("train_step"), "train_step");
    cr_assert_eq(cmt_redact_counts(x)->home_paths, 6);
}

Test(redact, a_process_keeps_argv0_and_gets_one_name_per_host)
{
    const char *argv[] = {"/home/alice/venv/bin/python", "train.py", "--token=secret"};
    struct cmt_record a = {.type = CMT_REC_PROCESS,
                           .u.process = {.pid = 7,
                                         .hostname = "gpu-node-17.example.org",
                                         .exe = "/home/alice/venv/bin/python3.11",
                                         .argc = 3,
                                         .argv = argv,
                                         .rank = 3}};
    cr_assert_eq(cmt_redact_record(x, &a), 1);
    cr_assert_str_eq(a.u.process.hostname, "host1");
    cr_assert_str_eq(a.u.process.exe, "~/venv/bin/python3.11");
    cr_assert_eq(a.u.process.argc, 1);
    cr_assert_str_eq(a.u.process.argv[0], "~/venv/bin/python");
    cr_assert_eq(a.u.process.pid, 7);
    cr_assert_eq(a.u.process.rank, 3);
    struct cmt_record b = {.type = CMT_REC_PROCESS, .u.process = {.hostname = "other"}};
    cr_assert_eq(cmt_redact_record(x, &b), 1);
    cr_assert_str_eq(b.u.process.hostname, "host2");
    struct cmt_record c = {.type = CMT_REC_PROCESS,
                           .u.process = {.hostname = "gpu-node-17.example.org"}};
    cr_assert_eq(cmt_redact_record(x, &c), 1);
    cr_assert_str_eq(c.u.process.hostname, "host1", "the same host, the same name");
    const struct cmt_redact_counts *n = cmt_redact_counts(x);
    cr_assert_eq(n->args_dropped, 2);
    cr_assert_eq(n->hosts_replaced, 3);
}

Test(redact, the_environment_goes_but_what_analyses_read)
{
    static const char *const names[] = {"PYTORCH_CUDA_ALLOC_CONF", "CUDA_VISIBLE_DEVICES",
                                        "CUMEMTRACE_OUTPUT", "CUDA_HOME", "PYTORCH_VERSION"};
    static const int kept[] = {1, 1, 0, 0, 1};
    for (size_t i = 0; i < 5; i++) {
        struct cmt_record e = {.type = CMT_REC_ENV, .u.env = {names[i], "/home/alice/x"}};
        cr_assert_eq(cmt_redact_record(x, &e), kept[i], "%s", names[i]);
    }
    cr_assert_eq(cmt_redact_counts(x)->env_dropped, 2);
    cr_assert_eq(cmt_redact_counts(x)->env_kept, 3);
    for (unsigned i = 0; cmt_redact_kept_env(i); i++)
        cr_assert(cmt_redact_env_kept(cmt_redact_kept_env(i)));
}

Test(redact, modules_notes_and_ranges_are_shortened_events_untouched)
{
    struct cmt_record m = {
        .type = CMT_REC_MODULE,
        .u.module = {.id = 2, .path = "/home/alice/lib/libmine.so", .base = 4096}};
    cr_assert_eq(cmt_redact_record(x, &m), 1);
    cr_assert_str_eq(m.u.module.path, "~/lib/libmine.so");
    cr_assert_eq(m.u.module.base, 4096);
    struct cmt_record n = {.type = CMT_REC_NOTE, .u.note = {1, "wrote /root/t.cmt"}};
    cr_assert_eq(cmt_redact_record(x, &n), 1);
    cr_assert_str_eq(n.u.note.text, "wrote ~/t.cmt");
    struct cmt_record g = {.type = CMT_REC_RANGE, .u.range = {.message = "load /home/a/w.pt"}};
    cr_assert_eq(cmt_redact_record(x, &g), 1);
    cr_assert_str_eq(g.u.range.message, "load ~/w.pt");
    struct cmt_record e = {.type = CMT_REC_EVENT, .u.event = {.seq = 5, .t_ns = 9}};
    struct cmt_record copy = e;
    cr_assert_eq(cmt_redact_record(x, &e), 1);
    cr_assert_eq(memcmp(&e, &copy, sizeof e), 0);
}
