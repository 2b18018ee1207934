#include "cmt_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *cmt_strerror(int code)
{
    switch (code) {
#define CMT__ERR_CASE(name, value, text) \
    case value: return text;
        CMT_ERRORS(CMT__ERR_CASE)
#undef CMT__ERR_CASE
    }
    return "unknown error";
}

int cmt_err_set(struct cmt_err *err, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    err->code = code;
    err->sys_errno = 0;
    err->text[0] = '\0';
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->text, sizeof err->text, fmt, ap);
        va_end(ap);
    }
    return code;
}

int cmt_err_sys(struct cmt_err *err, int code, int sys_errno)
{
    if (err) {
        err->code = code;
        err->sys_errno = sys_errno;
        err->text[0] = '\0';
    }
    return code;
}

const char *cmt_err_message(const struct cmt_err *err)
{
    if (!err)
        return cmt_strerror(CMT_EINVALID);
    if (err->text[0])
        return err->text;
    if (err->sys_errno)
        return strerror(err->sys_errno);
    return cmt_strerror(err->code);
}
