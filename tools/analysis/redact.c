/* redact.c — a trace made for sharing (redact.h). */
#include "redact.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"

/* The variables an analysis reads: the allocator's settings (whatif, the allocator view), the
 * PyTorch version (whatif's message wording) and the visible devices (the fleet's GPUs). */
static const char *const kept_env[] = {
    "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF",    "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "PYTORCH_VERSION",         "PYTORCH_BUILD_VERSION", "CUDA_VISIBLE_DEVICES",
};
#define KEPT_ENV (sizeof kept_env / sizeof *kept_env)

struct cmt_redact {
    struct cmt_redact_counts counts;
    char **hosts; /* the host names seen, in order: hosts[i] is "host<i+1>" */
    size_t host_count;
    char *scratch[3]; /* the current record's rewritten strings */
    char host_name[32];
    const char *argv0[1];
};

int cmt_redact_env_kept(const char *name)
{
    for (size_t i = 0; name && i < KEPT_ENV; i++)
        if (strcmp(name, kept_env[i]) == 0)
            return 1;
    return 0;
}

const char *cmt_redact_kept_env(unsigned i)
{
    return i < KEPT_ENV ? kept_env[i] : NULL;
}

int cmt_redact_create(cmt_redact **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : CMT_ENOMEM;
}

static void clear_scratch(cmt_redact *x)
{
    for (size_t i = 0; i < sizeof x->scratch / sizeof *x->scratch; i++) {
        free(x->scratch[i]);
        x->scratch[i] = NULL;
    }
}

void cmt_redact_destroy(cmt_redact *x)
{
    if (!x)
        return;
    clear_scratch(x);
    for (size_t i = 0; i < x->host_count; i++)
        free(x->hosts[i]);
    free(x->hosts);
    free(x);
}

const struct cmt_redact_counts *cmt_redact_counts(const cmt_redact *x)
{
    return &x->counts;
}

/* A path starts at the string's start or after a character that cannot be inside a path name
 * here (space, quote, '=', ':', '(', ',', '@'), so "x/home/a" is left alone. */
static int path_start(const char *s, const char *p)
{
    return p == s || strchr(" \t\"'=:(,@[<", p[-1]) != NULL;
}

/* The length of a home-directory prefix at p ("/home/NAME", "/Users/NAME", "/root"), followed
 * by '/' or the path's end; 0 when there is none. */
static size_t home_prefix(const char *p)
{
    static const char *const parents[] = {"/home/", "/Users/"};
    for (size_t i = 0; i < sizeof parents / sizeof *parents; i++) {
        size_t n = strlen(parents[i]);
        if (strncmp(p, parents[i], n) == 0) {
            size_t name = strcspn(p + n, "/ \t\"':,)]>");
            return name ? n + name : 0;
        }
    }
    if (strncmp(p, "/root", 5) == 0 && (p[5] == '/' || p[5] == 0 || strchr(" \t\"':,)]>", p[5])))
        return 5;
    return 0;
}

/* s with each home-directory prefix shortened to "~": s itself when it has none, else a string
 * held in scratch slot `slot`; NULL when out of memory. */
static const char *shorten(cmt_redact *x, const char *s, int slot)
{
    if (!s || !strchr(s, '/'))
        return s;
    size_t found = 0;
    for (const char *p = strchr(s, '/'); p; p = strchr(p + 1, '/'))
        if (path_start(s, p) && home_prefix(p))
            found++;
    if (!found)
        return s;
    char *out = malloc(strlen(s) + 1), *o = out;
    if (!out)
        return NULL;
    for (const char *p = s; *p;) {
        size_t n = *p == '/' && path_start(s, p) ? home_prefix(p) : 0;
        if (n) {
            *o++ = '~';
            p += n;
        } else {
            *o++ = *p++;
        }
    }
    *o = 0;
    free(x->scratch[slot]);
    x->scratch[slot] = out;
    x->counts.home_paths += found;
    return out;
}

/* "host<N>" for a host name, the same N for the same name. */
static const char *host_alias(cmt_redact *x, const char *host)
{
    size_t i = 0;
    while (i < x->host_count && strcmp(x->hosts[i], host) != 0)
        i++;
    if (i == x->host_count) {
        char **grown = realloc(x->hosts, (x->host_count + 1) * sizeof *grown);
        char *copy = grown ? strdup(host) : NULL;
        if (grown)
            x->hosts = grown;
        if (!copy)
            return NULL;
        x->hosts[x->host_count++] = copy;
    }
    snprintf(x->host_name, sizeof x->host_name, "host%zu", i + 1);
    return x->host_name;
}

static int redact_process(cmt_redact *x, struct cmt_process *p)
{
    if (p->hostname && *p->hostname) {
        if (!(p->hostname = host_alias(x, p->hostname)))
            return CMT_ENOMEM;
        x->counts.hosts_replaced++;
    }
    if (p->exe && !(p->exe = shorten(x, p->exe, 0)))
        return CMT_ENOMEM;
    if (p->argc) {
        x->counts.args_dropped += p->argc - 1;
        if (!(x->argv0[0] = shorten(x, p->argv[0], 1)) && p->argv[0])
            return CMT_ENOMEM;
        p->argv = x->argv0;
        p->argc = 1;
    }
    return 1;
}

#define SHORTEN(field, slot)                         \
    do {                                             \
        const char *s_ = (field);                    \
        if (s_ && !((field) = shorten(x, s_, slot))) \
            return CMT_ENOMEM;                       \
    } while (0)

int cmt_redact_record(cmt_redact *x, struct cmt_record *rec)
{
    clear_scratch(x);
    switch (rec->type) {
    case CMT_REC_PROCESS: return redact_process(x, &rec->u.process);
    case CMT_REC_ENV:
        if (!cmt_redact_env_kept(rec->u.env.name)) {
            x->counts.env_dropped++;
            return 0;
        }
        x->counts.env_kept++;
        return 1;
    case CMT_REC_STRING: SHORTEN(rec->u.string.text, 0); return 1;
    case CMT_REC_MODULE: SHORTEN(rec->u.module.path, 0); return 1;
    case CMT_REC_NOTE: SHORTEN(rec->u.note.text, 0); return 1;
    case CMT_REC_RANGE: SHORTEN(rec->u.range.message, 0); return 1;
    default: return 1;
    }
}
