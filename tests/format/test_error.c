/* test_error.c — the one error list: disjoint values (cmt_strerror's switch would not compile
 * otherwise), distinct messages, the model's wording kept where it differs, and the carrier
 * (struct cmt_err): code kept, message formatted and cut, errno said. */
#include <criterion/criterion.h>
#include <errno.h>
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

/* The carrier: the code comes back and stays, the message is formatted and cut to the buffer,
 * an errno says strerror, and a message set later replaces an errno recorded earlier. */
Test(error, carrier_returns_and_keeps_the_code)
{
    struct cmt_err err = {0};
    cr_assert_eq(cmt_err_set(&err, CMT_EMODEL_PARSE, "key '%s' at %d", "expandable", 7),
                 CMT_EMODEL_PARSE);
    cr_assert_eq(err.code, CMT_EMODEL_PARSE);
    cr_assert_eq(err.sys_errno, 0);
    cr_assert_str_eq(cmt_err_message(&err), "key 'expandable' at 7");
    cr_assert_eq(cmt_err_set(NULL, CMT_EIO, "nowhere to write %d", 1), CMT_EIO);
    cr_assert_eq(cmt_err_sys(NULL, CMT_ENOMEM, ENOMEM), CMT_ENOMEM);
}

Test(error, carrier_cuts_a_long_message_to_its_buffer)
{
    char longer[3 * CMT_ERR_TEXT];
    memset(longer, 'x', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    struct cmt_err err;
    memset(&err, 0x5a, sizeof err);
    cr_assert_eq(cmt_err_set(&err, CMT_EINVALID, "%s!", longer), CMT_EINVALID);
    cr_assert_eq(strlen(err.text), CMT_ERR_TEXT - 1);
    cr_assert_eq(err.text[CMT_ERR_TEXT - 2], 'x');
    cr_assert_eq(err.sys_errno, 0);
    cr_assert_eq(err.code, CMT_EINVALID);
}

Test(error, carrier_without_text_says_the_errno_or_the_code)
{
    struct cmt_err err = {0};
    cr_assert_eq(cmt_err_sys(&err, CMT_EIO, ENOENT), CMT_EIO);
    cr_assert_eq(err.sys_errno, ENOENT);
    cr_assert_str_eq(cmt_err_message(&err), strerror(ENOENT));
    cr_assert_eq(cmt_err_sys(&err, CMT_ETRUNCATED, 0), CMT_ETRUNCATED);
    cr_assert_str_eq(cmt_err_message(&err), "trace is truncated");
    cmt_err_sys(&err, CMT_EIO, EACCES);
    cmt_err_set(&err, CMT_ECORRUPT, "chunk %u", 3u);
    cr_assert_eq(err.sys_errno, 0, "a message set later replaces the errno");
    cr_assert_str_eq(cmt_err_message(&err), "chunk 3");
}
