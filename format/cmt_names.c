/* Names from the format's tables, for dumps and reports. */
#include "cmt_format.h"

/* fn(v): the text of TABLE's row X(name, v, text) (ops, actions), or NULL. */
#define CMT__TEXT_CASE(name, value, text) \
    case value:                           \
        return text;
#define CMT__NAME_BY_VALUE(fn, TABLE) \
    const char *fn(uint32_t value)    \
    {                                 \
        switch (value) {              \
            TABLE(CMT__TEXT_CASE)     \
        }                             \
        return 0;                     \
    }

/* fn(bit): the member of TABLE's row X(name, bit, member) (fields), or NULL. */
#define CMT__MEMBER_NAME(name, bit, member) [bit] = #member,
#define CMT__NAME_BY_BIT(fn, TABLE, COUNT)                                 \
    const char *fn(uint32_t bit)                                           \
    {                                                                      \
        static const char *const names[COUNT] = {TABLE(CMT__MEMBER_NAME)}; \
        return bit < COUNT ? names[bit] : 0;                               \
    }

CMT__NAME_BY_VALUE(cmt_op_name, CMT_OPS)
CMT__NAME_BY_VALUE(cmt_alloc_action_name, CMT_ALLOC_ACTIONS)
CMT__NAME_BY_VALUE(cmt_range_action_name, CMT_RANGE_ACTIONS)
CMT__NAME_BY_BIT(cmt_field_name, CMT_FIELDS, CMT_NFIELDS)
CMT__NAME_BY_BIT(cmt_alloc_field_name, CMT_ALLOC_FIELDS, CMT_NAFIELDS)

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
