/* The change recipes of docs/architecture.md for intercepted calls and ops, enforced: every
 * entry of interpose/calls.def is checked end to end (tests/e2e/api_fields.h), every op of
 * CMT_OPS is made by a call and can be written by the analysis tests' trace builder, and the
 * builder's second table of APIs agrees with calls.def. A step of the recipe left out fails
 * one of these tests, by name. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../e2e/api_fields.h"
#include "capture.h"
#include "cmt_format.h"
#include "trace_builder.h"

struct call {
    const char *name;
    enum cmt_op op;
};

static const struct call calls[] = {
#define X(name, op, params, args) {#name, CMT_OP_##op},
#define XP X
#include "../../interpose/calls.def"
#undef X
#undef XP
};
#define N_CALLS (sizeof calls / sizeof *calls)

struct op {
    enum cmt_op op;
    const char *name, *text;
};

static const struct op ops[] = {
#define OP(name, value, text, ...) {CMT_OP_##name, #name, text},
    CMT_OPS(OP)
#undef OP
};

/* Ops the builder does not write: OTHER, and those the replay applies nothing for (their
 * `apply` is NONE: only recorded; the e2e scenarios check them, test_apis.c). An op with a
 * handler gets a TB_APIS row (trace_builder.h) and a test in test_replay.c instead. */
static const char *const not_in_the_builder[] = {
    "OTHER", /* what an older reader calls an op it does not know */
    "VMM_SET_ACCESS",  "VMM_EXPORT",      "CTX_CREATE",       "PRIMARY_RETAIN",
    "PRIMARY_RELEASE", "GET_PROC",        "GRAPH_MEM_ATTR",   "POOL_EXPORT",
    "POOL_IMPORT",     "POOL_EXPORT_PTR", "MEM_RANGE_HANDLE", "MULTICAST_ADD_DEVICE",
    "CAPTURE_BEGIN",   "CAPTURE_END",
};

static const struct call *call_named(const char *name)
{
    for (size_t i = 0; i < N_CALLS; i++)
        if (!strcmp(calls[i].name, name))
            return &calls[i];
    return NULL;
}

static const struct e2e_api *e2e_api_named(const char *name)
{
    for (size_t i = 0; i < sizeof e2e_apis / sizeof *e2e_apis; i++)
        if (!strcmp(e2e_apis[i].api, name))
            return &e2e_apis[i];
    return NULL;
}

static const struct e2e_twin *e2e_twin_named(const char *name)
{
    for (size_t i = 0; i < sizeof e2e_twins / sizeof *e2e_twins; i++)
        if (!strcmp(e2e_twins[i].api, name))
            return &e2e_twins[i];
    return NULL;
}

/* Recipe "a new intercepted call", step 3: its line in calls.def needs its e2e check. */
Test(recipes, every_call_is_checked_end_to_end)
{
    for (size_t i = 0; i < N_CALLS; i++) {
        const char *name = calls[i].name;
        const struct e2e_api *api = e2e_api_named(name);
        const struct e2e_twin *twin = e2e_twin_named(name);
        cr_expect(api || twin,
                  "%s is in interpose/calls.def but not in tests/e2e/api_fields.h: call it in "
                  "scenarios.c (all-apis) and list it in e2e_apis with its fields",
                  name);
        cr_expect(!(api && twin), "%s is in both e2e_apis and e2e_twins", name);
        if (twin && twin->twin) {
            const struct call *other = call_named(twin->twin);
            cr_expect(e2e_api_named(twin->twin), "%s's twin %s is not in e2e_apis", name,
                      twin->twin);
            cr_expect(other && other->op == calls[i].op, "%s and its twin %s differ in op", name,
                      twin->twin);
        }
    }
}

/* The e2e lists name only calls that calls.def has (no stale or misspelt entry). */
Test(recipes, e2e_lists_name_calls_def_entries)
{
    for (size_t i = 0; i < sizeof e2e_apis / sizeof *e2e_apis; i++)
        cr_expect(call_named(e2e_apis[i].api), "e2e_apis: %s is not in calls.def", e2e_apis[i].api);
    for (size_t i = 0; i < sizeof e2e_twins / sizeof *e2e_twins; i++)
        cr_expect(call_named(e2e_twins[i].api), "e2e_twins: %s is not in calls.def",
                  e2e_twins[i].api);
}

/* Recipe "a new op", step 2: an op that no call makes is never recorded. */
Test(recipes, every_op_is_made_by_a_call)
{
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        if (ops[k].op == CMT_OP_OTHER)
            continue;
        size_t n = 0;
        for (size_t i = 0; i < N_CALLS; i++)
            n += calls[i].op == ops[k].op;
        cr_expect_gt(n, 0, "op %s (CMT_OPS) has no entry in interpose/calls.def", ops[k].name);
    }
}

/* Recipe "a new op", step 4: the analysis tests write it through the trace builder (TB_APIS in
 * tests/tools/analysis/trace_builder.h), unless it is listed above. */
Test(recipes, every_op_can_be_written_by_the_trace_builder)
{
    size_t n;
    const struct cmt_api *apis = tb_apis(&n);
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        size_t rows = 0;
        for (size_t i = 0; i < n; i++)
            rows += apis[i].op == (uint32_t)ops[k].op;
        int listed = 0;
        for (size_t i = 0; i < sizeof not_in_the_builder / sizeof *not_in_the_builder; i++)
            listed |= !strcmp(not_in_the_builder[i], ops[k].name);
        cr_expect(rows > 0 || listed,
                  "op %s: no TB_APIS row in trace_builder.h, so no replay test can write it",
                  ops[k].name);
        cr_expect(!(rows > 0 && listed), "op %s has a TB_APIS row: take it off not_in_the_builder",
                  ops[k].name);
    }
}

/* The builder's table is a copy of calls.def's names and ops: each row must agree. */
Test(recipes, trace_builder_apis_are_calls_def_entries)
{
    size_t n;
    const struct cmt_api *apis = tb_apis(&n);
    cr_assert_eq(n, TB_API_COUNT - 1);
    for (size_t i = 0; i < n; i++) {
        cr_expect_eq(apis[i].id, i + 1, "TB_APIS ids are 1, 2, ...");
        const struct call *c = call_named(apis[i].name);
        cr_expect(c, "%s (%s) is not in interpose/calls.def", apis[i].name,
                  tb_api_id_name((enum tb_api)apis[i].id));
        if (c)
            cr_expect_eq((uint32_t)c->op, apis[i].op, "%s: op %u in the builder, %u in calls.def",
                         apis[i].name, apis[i].op, (unsigned)c->op);
    }
}

/* Recipe "a new op", step 1: docs/trace-format.md lists it as "VALUE text". */
Test(recipes, every_op_is_in_the_format_spec)
{
    const char *src = getenv("CMT_SOURCE_DIR");
    cr_assert_not_null(src, "CMT_SOURCE_DIR is not set (ctest sets it)");
    char path[4096];
    snprintf(path, sizeof path, "%s/docs/trace-format.md", src);
    char *spec = capture_file(path, NULL);
    cr_assert_not_null(spec, "cannot read %s", path);
    char *o = spec; /* every run of white space as one space: a list wraps anywhere */
    for (const char *p = spec; *p; p++)
        if (!isspace((unsigned char)*p) || (o > spec && o[-1] != ' '))
            *o++ = isspace((unsigned char)*p) ? ' ' : *p;
    *o = '\0';
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        char want[96];
        int n = snprintf(want, sizeof want, " %u %s", (unsigned)ops[k].op, ops[k].text);
        bool found = false;
        for (const char *p = spec; !found && (p = strstr(p, want)); p++)
            found = !isalnum((unsigned char)p[n]) && p[n] != '_';
        cr_expect(found, "docs/trace-format.md does not list op %u %s", (unsigned)ops[k].op,
                  ops[k].text);
    }
    free(spec);
}

/* The text of every .c file under DIR (but trace_builder.c) appended to *all (malloc'ed). */
static void read_sources(const char *dir, char **all, size_t *len)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot open %s", dir);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t n = strlen(e->d_name);
        if (e->d_type == DT_DIR) {
            read_sources(path, all, len);
        } else if (n > 2 && !strcmp(e->d_name + n - 2, ".c") &&
                   strcmp(e->d_name, "trace_builder.c")) {
            unsigned long got;
            char *text = capture_file(path, &got);
            cr_assert_not_null(text, "cannot read %s", path);
            *all = realloc(*all, *len + got + 2);
            cr_assert_not_null(*all);
            memcpy(*all + *len, text, got);
            *len += got;
            (*all)[(*len)++] = '\n';
            (*all)[*len] = '\0';
            free(text);
        }
    }
    closedir(d);
}

/* Recipe "a new op", step 4: a TB_APIS row is used by some test under tests/tools/ (a replay
 * test, or a golden trace's generator), so its op is replayed somewhere. */
Test(recipes, every_trace_builder_api_is_used_by_a_test)
{
    const char *src = getenv("CMT_SOURCE_DIR");
    cr_assert_not_null(src, "CMT_SOURCE_DIR is not set (ctest sets it)");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/tools", src);
    char *all = NULL;
    size_t len = 0;
    read_sources(dir, &all, &len);
    cr_assert_not_null(all);
    for (int id = 1; id < TB_API_COUNT; id++) {
        const char *name = tb_api_id_name((enum tb_api)id);
        size_t n = strlen(name);
        bool used = false;
        for (const char *p = all; !used && (p = strstr(p, name)); p++)
            used = (p == all || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) &&
                   !(isalnum((unsigned char)p[n]) || p[n] == '_');
        cr_expect(used, "%s (TB_APIS) is used by no test under tests/tools/", name);
    }
    free(all);
}
