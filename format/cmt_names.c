/* Names from the format's tables, for dumps and reports. */
#include "cmt_format.h"

const char *cmt_op_name(uint32_t op)
{
    switch (op) {
#define CMT__OP_CASE(name, value, text) \
    case value: return text;
        CMT_OPS(CMT__OP_CASE)
#undef CMT__OP_CASE
    }
    return 0;
}

const char *cmt_field_name(uint32_t field)
{
    static const char *const names[CMT_NFIELDS] = {
#define CMT__FIELD_NAME(name, bit, member) [bit] = #member,
        CMT_FIELDS(CMT__FIELD_NAME)
#undef CMT__FIELD_NAME
    };
    return field < CMT_NFIELDS ? names[field] : 0;
}

const char *cmt_record_name(uint32_t type)
{
    switch (type) {
#define CMT__REC_CASE(name, value) \
    case value: return #name;
        CMT_RECORD_TYPES(CMT__REC_CASE)
#undef CMT__REC_CASE
    }
    return 0;
}

const char *cmt_alloc_action_name(uint32_t action)
{
    switch (action) {
#define CMT__AA_CASE(name, value, text) \
    case value: return text;
        CMT_ALLOC_ACTIONS(CMT__AA_CASE)
#undef CMT__AA_CASE
    }
    return 0;
}

const char *cmt_alloc_field_name(uint32_t field)
{
    static const char *const names[CMT_NAFIELDS] = {
#define CMT__AFIELD_NAME(name, bit, member) [bit] = #member,
        CMT_ALLOC_FIELDS(CMT__AFIELD_NAME)
#undef CMT__AFIELD_NAME
    };
    return field < CMT_NAFIELDS ? names[field] : 0;
}

const char *cmt_range_action_name(uint32_t action)
{
    switch (action) {
#define CMT__RA_CASE(name, value, text) \
    case value: return text;
        CMT_RANGE_ACTIONS(CMT__RA_CASE)
#undef CMT__RA_CASE
    }
    return 0;
}
