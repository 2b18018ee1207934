/* Tests of options.c: the spellings every command accepts alike, the usage errors printed in
 * one place, and the modes (in order, "--", options taken out of argv first). */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "options.h"

enum { HELP = 1, QUIET, OUTPUT, POINTS, DIR_ };

static const struct cmt__option table[] = {
    CMT__OPTION_HELP(HELP),
    {"-q", "--quiet", 0, QUIET, NULL},
    {"-o", "--output", 1, OUTPUT, "a file name"},
    {NULL, "--points", 1, POINTS, NULL},
    {NULL, "--dir", 1, DIR_, "a folder"},
    {0},
};

/* What one walk over argv gave: "id=VALUE" for options, "arg=VALUE", "error", joined by
 * spaces, and what went to stderr. */
struct walk {
    char seen[512];
    char err[512];
};

static void walk(struct walk *w, unsigned flags, int only, const char *const *args)
{
    char *argv[16] = {"test"};
    int argc = 1;
    for (; args[argc - 1]; argc++)
        argv[argc] = (char *)args[argc - 1];
    memset(w, 0, sizeof *w);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    FILE *tmp = tmpfile();
    cr_assert(tmp && saved >= 0);
    dup2(fileno(tmp), STDERR_FILENO);
    struct cmt__opts p;
    cmt__opts_init(&p, "test", argc, argv, table, flags);
    p.only = only;
    int opt;
    while ((opt = cmt__opts_next(&p)) != CMT__OPT_END) {
        size_t n = strlen(w->seen);
        if (opt == CMT__OPT_ERROR) {
            snprintf(w->seen + n, sizeof w->seen - n, "%serror", n ? " " : "");
            break;
        }
        if (opt == CMT__OPT_ARG)
            snprintf(w->seen + n, sizeof w->seen - n, "%sarg=%s", n ? " " : "", p.value);
        else
            snprintf(w->seen + n, sizeof w->seen - n, "%s%d=%s", n ? " " : "", opt,
                     p.value ? p.value : "(null)");
    }
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(tmp);
    size_t got = fread(w->err, 1, sizeof w->err - 1, tmp);
    w->err[got] = '\0';
    fclose(tmp);
}

/* The walk printed one usage error: "cumemtrace test: MESSAGE (see ...)". */
static void expect_usage(const struct walk *w, const char *message)
{
    char want[512];
    snprintf(want, sizeof want, "cumemtrace test: %s (see 'cumemtrace test --help')\n", message);
    cr_expect_str_eq(w->err, want);
}

#define WALK(w, flags, ...) walk((w), (flags), 0, (const char *const[]){__VA_ARGS__, NULL})

Test(options, takes_both_spellings_and_each_form_of_a_value)
{
    struct walk w;
    WALK(&w, 0, "-q", "--quiet", "-o", "a", "--output", "b", "--output=c", "--points=", "f");
    cr_expect_str_eq(w.seen, "2=(null) 2=(null) 3=a 3=b 3=c 4= arg=f");
    cr_expect_str_eq(w.err, "");
}

Test(options, a_value_is_the_next_argument_even_when_it_looks_like_an_option)
{
    struct walk w;
    WALK(&w, 0, "-o", "--quiet", "-", "x");
    cr_expect_str_eq(w.seen, "3=--quiet arg=- arg=x"); /* "-" alone is an argument */
}

Test(options, options_may_follow_the_arguments_unless_in_order)
{
    struct walk w;
    WALK(&w, 0, "f", "-q", "g");
    cr_expect_str_eq(w.seen, "arg=f 2=(null) arg=g");
    WALK(&w, CMT__OPTS_IN_ORDER, "-q", "f", "-q", "--bogus");
    cr_expect_str_eq(w.seen, "2=(null) arg=f arg=-q arg=--bogus");
}

Test(options, dashdash_ends_the_options_only_where_the_command_says)
{
    struct walk w;
    WALK(&w, CMT__OPTS_DASHDASH, "-q", "--", "-q", "f");
    cr_expect_str_eq(w.seen, "2=(null) arg=-q arg=f");
    WALK(&w, 0, "--", "f");
    cr_expect_str_eq(w.seen, "error");
    expect_usage(&w, "unknown option '--'");
}

Test(options, unknown_options_and_spellings_are_usage_errors)
{
    struct walk w;
    WALK(&w, 0, "f", "--bogus=1");
    cr_expect_str_eq(w.seen, "arg=f error");
    expect_usage(&w, "unknown option '--bogus=1'");
    WALK(&w, 0, "-o=x"); /* '=' is for long options */
    expect_usage(&w, "unknown option '-o=x'");
    WALK(&w, 0, "--out", "x"); /* no abbreviations */
    cr_expect_str_eq(w.seen, "error");
}

Test(options, a_flag_given_a_value_says_it_takes_none)
{
    struct walk w;
    WALK(&w, 0, "--quiet=1");
    cr_expect_str_eq(w.seen, "error");
    expect_usage(&w, "--quiet takes no value");
}

Test(options, a_missing_value_is_the_entrys_error_or_the_commands)
{
    struct walk w;
    WALK(&w, 0, "f", "-o");
    cr_expect_str_eq(w.seen, "arg=f error");
    expect_usage(&w, "-o needs a file name");
    WALK(&w, 0, "--points"); /* no `needs`: the command sees NULL and decides */
    cr_expect_str_eq(w.seen, "4=(null)");
    cr_expect_str_eq(w.err, "");
}

Test(options, only_takes_one_option_out_and_keeps_the_rest)
{
    struct walk w;
    walk(&w, CMT__OPTS_KEEP_UNKNOWN, DIR_,
         (const char *const[]){"--quiet=1", "--dir", "d", "f", "--bogus", "--dir=e", NULL});
    cr_expect_str_eq(w.seen, "arg=--quiet=1 5=d arg=f arg=--bogus 5=e");
    cr_expect_str_eq(w.err, "");
}

Test(options, needs_names_the_option_as_spelled_without_its_value)
{
    char *argv[] = {"test", "--dir=", NULL};
    struct cmt__opts p;
    cmt__opts_init(&p, "test", 2, argv, table, 0);
    cr_assert_eq(cmt__opts_next(&p), DIR_);
    cr_expect_str_eq(p.name, "--dir");
    cr_expect_str_eq(p.value, "");
    cr_expect_eq(p.index, 1);
}

Test(options, takes_value_knows_the_value_options_by_their_exact_spelling)
{
    cr_expect(cmt__opts_takes_value(table, "-o"));
    cr_expect(cmt__opts_takes_value(table, "--points"));
    cr_expect(!cmt__opts_takes_value(table, "--quiet"));
    cr_expect(!cmt__opts_takes_value(table, "--points=3"));
    cr_expect(!cmt__opts_takes_value(table, "--bogus"));
}

/* cmt__opts_parse's callback: counts what it is given; --dir stop makes it refuse. */
static int count_arg(const struct cmt__opts *p, int id, void *ctx)
{
    int *n = ctx;
    if (id == DIR_ && strcmp(p->value, "stop") == 0)
        return 2;
    (*n)++;
    return 0;
}

static int parse(const char *const *args, int *n)
{
    char *argv[8] = {"test"};
    int argc = 1;
    for (; args[argc - 1]; argc++)
        argv[argc] = (char *)args[argc - 1];
    *n = 0;
    fflush(stdout);
    int saved = dup(STDOUT_FILENO), null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO); /* the help text */
    int rc = cmt__opts_parse("test", argc, argv, table, 0, "usage: test\n", count_arg, n);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    close(null);
    return rc;
}

Test(options, parse_gives_each_option_and_argument_to_one_function)
{
    int n;
    cr_expect_eq(parse((const char *[]){"-q", "f", "--points=3", NULL}, &n), 0);
    cr_expect_eq(n, 3);
    /* --help: the usage, -1 (exit 0), nothing after it is seen */
    cr_expect_eq(parse((const char *[]){"f", "--help", "g", NULL}, &n), -1);
    cr_expect_eq(n, 1);
    /* the function's refusal ends the walk with its status */
    cr_expect_eq(parse((const char *[]){"--dir", "stop", "f", NULL}, &n), 2);
    cr_expect_eq(n, 0);
    /* a usage error of the parser's own: 2 */
    cr_expect_eq(parse((const char *[]){"f", "--bogus", NULL}, &n), 2);
    cr_expect_eq(n, 1);
}
