/* escape.c — JSON string literals, terminal text and CSV formula cells from a trace's
 * strings, and what valid UTF-8 is. */
#include "escape.h"

#include <stdio.h>
#include <string.h>

size_t cmt__utf8_length(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n = c < 0x80             ? 1
               : (c & 0xe0) == 0xc0 ? 2
               : (c & 0xf0) == 0xe0 ? 3
               : (c & 0xf8) == 0xf0 ? 4
                                    : 0;
    if (!n || (n == 2 && c < 0xc2) || (n == 4 && c > 0xf4))
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80) /* a NUL ends the loop here */
            return 0;
    if (n == 3 && ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0)))
        return 0; /* overlong, or a surrogate */
    if (n == 4 && ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90)))
        return 0; /* overlong, or above U+10FFFF */
    return n;
}

static const char hex[] = "0123456789abcdef";

/* @return 1 when the JSON writer copies byte c as it is (flags: cmt__json_escape's). */
static int json_plain(unsigned char c, unsigned flags)
{
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\' &&
           !(c == '<' && (flags & CMT__JSON_ESCAPE_HTML));
}

size_t cmt__json_plain_length(const char *s, unsigned flags)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (json_plain(*p, flags))
        p++;
    return (size_t)(p - (const unsigned char *)(s ? s : ""));
}

void cmt__json_escape(const char *s, unsigned flags, cmt__escape_sink sink, void *ctx)
{
    static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    sink(ctx, "\"", 1);
    while (*p) {
        const unsigned char *run = p;
        for (size_t n;;) {
            if (json_plain(*p, flags))
                p++;
            else if (*p >= 0x80 && (n = cmt__utf8_length(p)) != 0)
                p += n; /* valid UTF-8 as it is */
            else
                break;
        }
        if (p != run)
            sink(ctx, (const char *)run, (size_t)(p - run));
        if (!*p)
            break;
        unsigned char c = *p++;
        const char *named = c == '"'    ? "\\\""
                            : c == '\\' ? "\\\\"
                            : c == '\n' ? "\\n"
                            : c == '\r' ? "\\r"
                            : c == '\t' ? "\\t"
                                        : NULL;
        char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        if (c >= 0x80) /* a byte that starts no valid sequence */
            sink(ctx, replacement, 3);
        else if (named)
            sink(ctx, named, 2);
        else
            sink(ctx, u, sizeof u);
    }
    sink(ctx, "\"", 1);
}

void cmt__xml_escape(const char *s, cmt__escape_sink sink, void *ctx)
{
    static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
        const unsigned char *run = p;
        for (size_t n;
             *p >= 0x20 && *p != 0x7f && !strchr("<>&\"", *p) && (n = cmt__utf8_length(p)) != 0;)
            p += n;
        if (p != run)
            sink(ctx, (const char *)run, (size_t)(p - run));
        if (!*p)
            break;
        const char *entity = *p == '<'   ? "&lt;"
                             : *p == '>' ? "&gt;"
                             : *p == '&' ? "&amp;"
                             : *p == '"' ? "&quot;"
                                         : NULL;
        if (entity)
            sink(ctx, entity, strlen(entity));
        else if (*p >= 0x80)
            sink(ctx, replacement, 3);
        p++; /* a control byte (XML allows none) is dropped */
    }
}

/* The code point of the valid sequence at p of length n. */
static unsigned code_point(const unsigned char *p, size_t n)
{
    static const unsigned lead_mask[] = {0, 0x7f, 0x1f, 0x0f, 0x07};
    unsigned cp = p[0] & lead_mask[n];
    for (size_t i = 1; i < n; i++)
        cp = cp << 6 | (p[i] & 0x3f);
    return cp;
}

/* @return 1 for a code point a terminal takes as a control, or that reorders what it shows. */
static int terminal_control(unsigned cp)
{
    return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

const char *cmt__text(const char *s, char *buf, size_t size)
{
    size_t n = 0;
    if (!size)
        return buf;
    /* the cut keeps 5 bytes spare, as it always has, so ASCII names cut where they did */
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p && n + 5 < size;) {
        size_t len = *p >= 0x80 ? cmt__utf8_length(p) : 1;
        unsigned cp = len ? code_point(p, len) : 0;
        if (len == 0 || *p < 0x20 || *p == 0x7f) {
            buf[n++] = '\\';
            buf[n++] = 'x';
            buf[n++] = hex[*p >> 4];
            buf[n++] = hex[*p & 15];
            p++;
        } else if (terminal_control(cp)) {
            if (n + 7 > size)
                break;
            n += (size_t)snprintf(buf + n, size - n, "\\u%04x", cp);
            p += len;
        } else {
            memcpy(buf + n, p, len);
            n += len;
            p += len;
        }
    }
    buf[n] = 0;
    return buf;
}

int cmt__csv_is_formula(const char *s)
{
    return s && (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@' || s[0] == '\t' ||
                 s[0] == '\r');
}
