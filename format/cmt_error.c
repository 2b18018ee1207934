#include "cmt_error.h"

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
