/* escape.h — internal: the one place a string from a trace or a pickle (a function, file,
 * thread, host or program name, an environment value, a note) is made safe for where it goes:
 * a JSON string literal (every JSON writer: dump, --json, jsonl, perfetto, the HTML page's
 * embedded data), a CSV cell (export's csv tables), XML (the SVG chart), the terminal (every
 * command's text). What counts as valid UTF-8 is decided here too, for those and for the
 * pickle writer. */
#ifndef CMT__ESCAPE_H
#define CMT__ESCAPE_H

#include <stddef.h>

/* @return the length (1..4) of the valid UTF-8 sequence s starts with (shortest form, no
 * surrogate, at most U+10FFFF; an ASCII byte, NUL included, is 1), or 0 when s starts with a
 * byte no valid sequence starts with there. Never reads past a byte that ends the sequence
 * early, so a NUL-terminated string is never overrun. */
size_t cmt__utf8_length(const unsigned char *s);

/* Where escaped text goes: n bytes at p (a FILE, the exports' buffer, memory). */
typedef void (*cmt__escape_sink)(void *ctx, const char *p, size_t n);

/* cmt__json_escape's flags. HTML: also '<' as \u003c, for JSON inside an HTML <script>
 * element, where "</script>" or "<!--" in a string would otherwise end the element. */
enum { CMT__JSON_ESCAPE_HTML = 1 };

/* Writes s (NULL: "") to sink as a JSON string literal, quotes included: valid UTF-8 as it is;
 * each byte that starts no valid sequence as U+FFFD (written as its UTF-8 bytes); '"' and '\'
 * with a backslash; newline, carriage return and tab as \n, \r, \t; the other bytes below 0x20
 * and 0x7f as \u00XX; with CMT__JSON_ESCAPE_HTML, '<' as \u003c. Plain ASCII comes out as it
 * went in, in one write. */
void cmt__json_escape(const char *s, unsigned flags, cmt__escape_sink sink, void *ctx);

/* Writes s (NULL: "") to sink as XML character data or an attribute value (the SVG chart):
 * '<', '>', '&', '"' as entities; control bytes (XML allows none) dropped; each byte that
 * starts no valid UTF-8 sequence as U+FFFD; valid UTF-8 as it is. */
void cmt__xml_escape(const char *s, cmt__escape_sink sink, void *ctx);

/* @return how many bytes s (NULL: "") starts with that cmt__json_escape copies as they are and
 * that are plain ASCII: when s[that] is the NUL, the literal is s between quotes (a writer's
 * fast path; the rules stay cmt__json_escape's). */
size_t cmt__json_plain_length(const char *s, unsigned flags);

/* s (NULL: "") made safe for a terminal into buf (always NUL-terminated when size > 0):
 * control bytes (below 0x20, 0x7f: ESC included) and bytes that start no valid UTF-8 sequence
 * become a visible "\xNN"; the C1 controls (U+0080..U+009F) and the bidirectional overrides
 * and isolates (U+202A..U+202E, U+2066..U+2069), which reorder or drive what a terminal shows,
 * become "\uXXXX"; valid UTF-8 otherwise stays as it is. Cut to fit size, never inside a
 * sequence or an escape. @return buf. */
const char *cmt__text(const char *s, char *buf, size_t size);

/* @return 1 when a CSV cell holding s would be taken by a spreadsheet for a formula (OWASP's
 * "CSV injection"): s begins with '=', '+', '-', '@', a tab or a carriage return. The csv
 * tables write such a cell of text from a trace with a leading "'" (docs/export.md). */
int cmt__csv_is_formula(const char *s);

#endif
