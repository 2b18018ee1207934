/* Tests of the progress line: when it shows, and what it says (a fake terminal, a fake clock). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "progress.h"

#define S UINT64_C(1000000000)

static char *slurp(FILE *f)
{
    long n = ftell(f);
    char *s = calloc(1, (size_t)n + 1);
    rewind(f);
    cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    return s;
}

Test(progress, shows_only_on_a_terminal_after_a_second_and_at_most_five_times_a_second)
{
    FILE *f = tmpfile();
    struct cmt__progress p;
    cmt__progress_init(&p, f, "report", "/data/big.cmt", 1, 1000, 10 * S);
    cr_expect_eq(cmt__progress_update(&p, 100, 10 * S), 0, "not at the start");
    cr_expect_eq(cmt__progress_update(&p, 500, 10 * S + S / 2), 0, "not before a second");
    cr_expect_eq(cmt__progress_update(&p, 600, 11 * S), 1, "after a second");
    cr_expect_eq(cmt__progress_update(&p, 700, 11 * S + S / 10), 0, "not within 200 ms");
    cr_expect_eq(cmt__progress_update(&p, 800, 11 * S + S / 5), 1);
    cmt__progress_done(&p);
    char *out = slurp(f);
    cr_expect(strstr(out, "\rcumemtrace report: big.cmt  60% [############        ] 600 B of "
                          "1000 B, 1.0 s\033[K"),
              "%s", out);
    cr_expect(strstr(out, " 80% "), "%s", out);
    size_t n = strlen(out);
    cr_expect(n > 4 && !strcmp(out + n - 4, "\r\033[K"), "the line is erased at the end");
    free(out);
    fclose(f);

    f = tmpfile();
    cmt__progress_init(&p, f, "report", "big.cmt", 0, 1000, 0);
    cr_expect_eq(cmt__progress_update(&p, 600, 100 * S), 0, "never when not a terminal");
    cmt__progress_done(&p);
    cr_expect_eq(ftell(f), 0, "nothing written, nothing erased");
    fclose(f);
}

Test(progress, text_fits_100_columns_and_handles_unknown_size)
{
    char buf[256], path[300];
    memset(path, 'x', sizeof path - 1);
    path[sizeof path - 1] = 0;
    cmt__progress_text(buf, sizeof buf, "whatif", path, 0, 0, (uint64_t)3 << 30, (uint64_t)7 << 30,
                       75 * S);
    cr_expect_leq(strlen(buf), 100, "%s", buf);
    cr_expect(strstr(buf, "3.00 GiB of 7.00 GiB, 75.0 s"), "%s", buf);
    cmt__progress_text(buf, sizeof buf, "oom", "a.cmt", 0, 0, 2048, 0, S);
    cr_expect_str_eq(buf, "cumemtrace oom: a.cmt 2.00 KiB read, 1.0 s");
    cmt__progress_text(buf, sizeof buf, "oom", "a.cmt", 0, 0, 5000, 1000, S);
    cr_expect(strstr(buf, "100% [####################]"), "done is capped at the total: %s", buf);
}

Test(progress, a_second_reading_of_the_trace_says_which_pass)
{
    char buf[256];
    cmt__progress_text(buf, sizeof buf, "report", "/data/big.cmt", 2, 2, 420, 1000, S);
    cr_expect(strstr(buf, "cumemtrace report: big.cmt pass 2 of 2  42% ["), "%s", buf);
    cmt__progress_text(buf, sizeof buf, "report", "/data/big.cmt", 1, 2, 970, 1000, S);
    cr_expect(strstr(buf, "big.cmt pass 1 of 2  97% ["), "%s", buf);
    cr_expect_leq(strlen(buf), 100, "%s", buf);
    /* the pass the command is in reaches the line through the pass */
    struct cmt__progress p;
    FILE *f = tmpfile();
    cmt__progress_init(&p, f, "html", "big.cmt", 1, 1000, 0);
    p.stage = 2;
    p.stages = 2;
    cr_expect_eq(cmt__progress_update(&p, 500, 2 * S), 1);
    char *out = slurp(f);
    cr_expect(strstr(out, "big.cmt pass 2 of 2  50%"), "%s", out);
    free(out);
    fclose(f);
}
