/* json_query.c — see json_query.h. A recursive-descent skipper: a value is found by skipping
 * the ones before it, so nothing is allocated. */
#include "json_query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

/* @return the end of the string starting at p (after its closing quote), NULL if unterminated. */
static const char *skip_string(const char *p)
{
    for (p++; *p && *p != '"'; p++)
        if (*p == '\\' && !*++p)
            return NULL;
    return *p == '"' ? p + 1 : NULL;
}

static const char *skip_value(const char *p, int depth);

/* Skips the object or array at p ('{' or '['). */
static const char *skip_container(const char *p, int depth)
{
    char close = *p == '{' ? '}' : ']';
    bool object = *p == '{';
    p = ws(p + 1);
    if (*p == close)
        return p + 1;
    for (;;) {
        if (object) {
            if (*p != '"' || !(p = skip_string(p)))
                return NULL;
            p = ws(p);
            if (*p++ != ':')
                return NULL;
        }
        if (!(p = skip_value(ws(p), depth + 1)))
            return NULL;
        p = ws(p);
        if (*p == close)
            return p + 1;
        if (*p++ != ',')
            return NULL;
        p = ws(p);
    }
}

static const char *skip_value(const char *p, int depth)
{
    if (depth > 64)
        return NULL;
    if (*p == '{' || *p == '[')
        return skip_container(p, depth);
    if (*p == '"')
        return skip_string(p);
    static const char *const words[] = {"true", "false", "null"};
    for (size_t i = 0; i < 3; i++)
        if (!strncmp(p, words[i], strlen(words[i])))
            return p + strlen(words[i]);
    const char *start = p;
    if (*p == '-')
        p++;
    while ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E' || *p == '+' ||
           *p == '-')
        p++;
    return p > start ? p : NULL;
}

/* @return the value of member `key` (klen bytes) of the object at p, or element `index` of
 * the array at p; NULL when absent. */
static const char *member(const char *p, const char *key, size_t klen)
{
    bool object = *p == '{';
    if (*p != '{' && *p != '[')
        return NULL;
    char *end;
    long index = object ? 0 : strtol(key, &end, 10);
    if (!object && (end != key + klen || index < 0))
        return NULL;
    char close = object ? '}' : ']';
    p = ws(p + 1);
    for (long i = 0; *p != close; i++) {
        bool hit = !object && i == index;
        if (object) {
            const char *k = p;
            if (*p != '"' || !(p = skip_string(p)))
                return NULL;
            hit = (size_t)(p - k - 2) == klen && !strncmp(k + 1, key, klen);
            p = ws(p);
            if (*p++ != ':')
                return NULL;
            p = ws(p);
        }
        if (hit)
            return p;
        if (!(p = skip_value(p, 0)))
            return NULL;
        p = ws(p);
        if (*p == ',')
            p = ws(p + 1);
        else if (*p != close)
            return NULL;
    }
    return NULL;
}

const char *jq_find(const char *json, const char *path, size_t *len)
{
    const char *p = ws(json);
    while (p && *path) {
        const char *dot = strchr(path, '.');
        size_t klen = dot ? (size_t)(dot - path) : strlen(path);
        p = member(p, path, klen);
        path += klen + (dot != NULL);
    }
    const char *end = p ? skip_value(p, 0) : NULL;
    if (!end)
        return NULL;
    if (len)
        *len = (size_t)(end - p);
    return p;
}

bool jq_has(const char *json, const char *path)
{
    return jq_find(json, path, NULL) != NULL;
}

bool jq_text(const char *json, const char *path, char *out, size_t n)
{
    size_t len;
    const char *v = jq_find(json, path, &len);
    if (!v || *v == '{' || *v == '[')
        return false;
    if (*v == '"') {
        v++;
        len -= 2;
    }
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (v[i] == '\\' && i + 1 < len && (v[i + 1] == '"' || v[i + 1] == '\\'))
            i++;
        if (o + 1 >= n)
            return false;
        out[o++] = v[i];
    }
    out[o] = '\0';
    return true;
}

bool jq_u64(const char *json, const char *path, uint64_t *out)
{
    char text[32], *end;
    if (!jq_text(json, path, text, sizeof text) || text[0] < '0' || text[0] > '9')
        return false;
    *out = strtoull(text, &end, 10);
    return *end == '\0';
}

long jq_count(const char *json, const char *path)
{
    const char *v = jq_find(json, path, NULL);
    if (!v || (*v != '{' && *v != '['))
        return -1;
    long n = 0;
    char key[24];
    for (;; n++) {
        if (*v == '[') {
            snprintf(key, sizeof key, "%ld", n);
            if (!member(v, key, strlen(key)))
                return n;
        } else { /* an object (valid: jq_find skipped it whole) */
            const char *p = ws(v + 1);
            long i = 0;
            while (*p == '"') {
                p = ws(skip_string(p));
                p = ws(skip_value(ws(p + 1), 0));
                i++;
                if (*p == ',')
                    p = ws(p + 1);
            }
            return i;
        }
    }
}

bool jq_valid(const char *json)
{
    const char *end = skip_value(ws(json), 0);
    return end && *ws(end) == '\0';
}
