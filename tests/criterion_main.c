/* criterion_main.c — the main of every Criterion test (cmt_add_test links it): Criterion's
 * own main, except that a run in which a test was skipped (cr_skip_test) and none failed exits
 * 77, which ctest shows as Skipped (SKIP_RETURN_CODE 77), not Passed; with CI=true a skip is a
 * failure (exit 1): CI has every input, so a test that cannot run there is a broken test.
 * Tests left out by --filter are not skips. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t skipped;

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    for (struct criterion_suite_stats *s = stats->suites; s; s = s->next)
        for (struct criterion_test_stats *t = s->tests; t; t = t->next) {
            if (t->test_status != CR_STATUS_SKIPPED || t->test->data->disabled)
                continue;
            skipped++;
            fprintf(stderr, "SKIP %s/%s: %s\n", t->test->category, t->test->name,
                    t->message ? t->message : "(no reason given)");
        }
}

int main(int argc, char *argv[])
{
    struct criterion_test_set *tests = criterion_initialize();
    int status = 0;
    if (criterion_handle_args(argc, argv, true))
        status = !criterion_run_all_tests(tests);
    criterion_finalize(tests);
    if (status == 0 && skipped > 0) {
        const char *ci = getenv("CI");
        if (ci && !strcmp(ci, "true")) {
            fprintf(stderr, "%zu test(s) skipped: with CI=true a skip is a failure\n", skipped);
            return 1;
        }
        return 77;
    }
    return status;
}
