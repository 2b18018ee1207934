/* options.c — the subcommands' option parser (options.h). */
#include "options.h"

#include <stdio.h>
#include <string.h>

#include "output.h"

void cmt__opts_init(struct cmt__opts *p, const char *cmd, int argc, char **argv,
                    const struct cmt__option *table, unsigned flags)
{
    memset(p, 0, sizeof *p);
    p->cmd = cmd;
    p->argc = argc;
    p->argv = argv;
    p->table = table;
    p->flags = flags;
    p->next = 1;
}

static int spelled(const char *spelling, const char *arg, size_t n)
{
    return spelling && strlen(spelling) == n && strncmp(spelling, arg, n) == 0;
}

/* The entry spelled arg[0, n), with *name its spelling. @return NULL when none is. */
static const struct cmt__option *find(const struct cmt__option *table, int only, const char *arg,
                                      size_t n, const char **name)
{
    for (const struct cmt__option *o = table; o->id; o++) {
        if (only && o->id != only)
            continue;
        if (spelled(o->short_name, arg, n))
            return *name = o->short_name, o;
        if (spelled(o->long_name, arg, n))
            return *name = o->long_name, o;
    }
    return NULL;
}

int cmt__opts_takes_value(const struct cmt__option *table, const char *arg)
{
    const char *name;
    const struct cmt__option *o = find(table, 0, arg, strlen(arg), &name);
    return o && o->takes_value;
}

static int positional(struct cmt__opts *p)
{
    if (p->flags & CMT__OPTS_IN_ORDER)
        p->rest = 1;
    p->value = p->arg;
    return CMT__OPT_ARG;
}

int cmt__opts_next(struct cmt__opts *p)
{
    p->name = p->value = NULL;
    p->option = NULL;
    if (p->next >= p->argc)
        return CMT__OPT_END;
    p->index = p->next++;
    const char *a = p->arg = p->argv[p->index];
    if (p->rest || a[0] != '-' || !a[1])
        return positional(p);
    if ((p->flags & CMT__OPTS_DASHDASH) && strcmp(a, "--") == 0) {
        p->rest = p->dashdash = 1;
        return cmt__opts_next(p);
    }
    const char *eq = a[1] == '-' ? strchr(a, '=') : NULL; /* --NAME=VALUE */
    const struct cmt__option *o = find(p->table, p->only, a, eq ? (size_t)(eq - a) : strlen(a),
                                       &p->name);
    if (!o && (p->flags & CMT__OPTS_KEEP_UNKNOWN))
        return positional(p);
    if (!o)
        return cmt__usage_error(p->cmd, "unknown option '%s'", a), CMT__OPT_ERROR;
    p->option = o;
    if (!o->takes_value) {
        if (eq)
            return cmt__usage_error(p->cmd, "%s takes no value", p->name), CMT__OPT_ERROR;
        return o->id;
    }
    if (eq)
        p->value = eq + 1;
    else if (p->next < p->argc)
        p->value = p->argv[p->next++];
    else if (o->needs)
        return cmt__opts_needs(p), CMT__OPT_ERROR;
    return o->id;
}

int cmt__opts_take(const char *cmd, int *argc, char **argv, const struct cmt__option *table, int id,
                   int (*take)(const char *value, void *ctx), void *ctx)
{
    struct cmt__opts p;
    int kept = 1, opt, rc = 0;
    cmt__opts_init(&p, cmd, *argc, argv, table, CMT__OPTS_KEEP_UNKNOWN);
    p.only = id;
    while (!rc && (opt = cmt__opts_next(&p)) != CMT__OPT_END) {
        if (opt == CMT__OPT_ARG)
            argv[kept++] = argv[p.index]; /* p reads argv past p.index only */
        else
            rc = take(p.value, ctx);
    }
    if (!rc)
        *argc = kept;
    return rc;
}

int cmt__opts_needs(const struct cmt__opts *p)
{
    return cmt__usage_error(p->cmd, "%s needs %s", p->name,
                            p->option && p->option->needs ? p->option->needs : "a value");
}

int cmt__opts_parse(const char *cmd, int argc, char **argv, const struct cmt__option *table,
                    unsigned flags, const char *usage,
                    int (*on)(const struct cmt__opts *p, int id, void *ctx), void *ctx)
{
    struct cmt__opts p;
    int id, rc;
    cmt__opts_init(&p, cmd, argc, argv, table, flags);
    while ((id = cmt__opts_next(&p)) != CMT__OPT_END) {
        if (id == CMT__OPT_ERROR)
            return 2;
        if (p.option && p.option->long_name && strcmp(p.option->long_name, "--help") == 0) {
            fputs(usage, stdout);
            return -1;
        }
        if ((rc = on(&p, id, ctx)) != 0)
            return rc;
    }
    return 0;
}
