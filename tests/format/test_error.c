/* test_error.c — the one error list: disjoint values (cmt_strerror's switch would not compile
 * otherwise), distinct messages, and the model's wording kept where it differs. */
#include <criterion/criterion.h>
#include <string.h>

#include "cmt_error.h"

static const struct {
    int code;
    const char *text;
} all[] = {
#define ROW(name, value, text) {CMT_E##name, text},
    CMT_ERRORS(ROW)
#undef ROW
};

Test(error, messages_are_distinct)
{
    size_t n = sizeof all / sizeof all[0];
    for (size_t i = 0; i < n; i++) {
        cr_assert_str_eq(cmt_strerror(all[i].code), all[i].text);
        for (size_t j = i + 1; j < n; j++)
            cr_assert_str_neq(all[i].text, all[j].text, "codes %d and %d", all[i].code,
                              all[j].code);
    }
    cr_assert_str_eq(cmt_strerror(42), "unknown error");
}

Test(error, model_codes_keep_their_wording)
{
    cr_assert_str_eq(cmt_strerror(CMT_ENOMEM), "out of memory");
    cr_assert_str_eq(cmt_strerror(CMT_EMODEL_NOMEM), "out of host memory");
    cr_assert_str_eq(cmt_strerror(CMT_EMODEL_OOM), "CUDA out of memory in the model");
    cr_assert_str_eq(cmt_strerror(CMT_EINVALID), "invalid argument");
}
