/* The command and setting recipes enforced: every command of tools/cli/commands.def has its
 * entry in the man page (docs/cumemtrace.1) and its branch in the bash completion
 * (share/bash-completion/cumemtrace), and each option its --help lists is in both; every
 * allocator setting of CMT_MODEL_SETTINGS has its whatif flag in both and its key in every
 * `whatif --json` result; every spelling of every option table (tools/cli/options.h) is in its
 * command's --help, man page entry and completion branch. */
#include <ctype.h>
#include <string.h>

#include "commands.h"
#include "options.h"
#include "json_query.h"
#include "model_settings.h"
#include "whatif_fixture.h"

struct command {
    const char *name;
    int (*fn)(int, char **);
    const struct cmt__option *options; /* the table the command parses with */
};

static const struct command commands[] = {
#define X(name, fn, summary) {#name, fn, fn##_options},
#include "commands.def"
#undef X
};
#define N_COMMANDS (sizeof commands / sizeof *commands)

struct setting {
    const char *flag, *json;
};

static const struct setting settings[] = {
#define S(field, type, conf_key, def, flag, json, ...) {flag, json},
    CMT_MODEL_SETTINGS(S)
#undef S
};

/* A file of the source tree (malloc'ed). */
static char *source_file(const char *relative)
{
    const char *src = getenv("CMT_SOURCE_DIR");
    cr_assert_not_null(src, "CMT_SOURCE_DIR is not set (ctest sets it)");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", src, relative);
    char *text = capture_file(path, NULL);
    cr_assert_not_null(text, "cannot read %s", path);
    return text;
}

static bool word_char(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '_';
}

/* @return whether `word` occurs in text[0, len) as a whole word (options: "-o", "--json"). */
static bool has_word(const char *text, size_t len, const char *word)
{
    size_t n = strlen(word);
    for (size_t i = 0; i + n <= len; i++)
        if (!strncmp(text + i, word, n) && (i == 0 || !word_char(text[i - 1])) &&
            (i + n == len || !word_char(text[i + n])))
            return true;
    return false;
}

/* The man page with "\-" written "-" (malloc'ed). */
static char *man_page(void)
{
    char *man = source_file("docs/cumemtrace.1"), *o = man;
    for (const char *p = man; *p; p++)
        if (!(p[0] == '\\' && p[1] == '-'))
            *o++ = *p;
    *o = '\0';
    return man;
}

/* The man page's entries for `name` in COMMANDS (each ".TP" then ".BR name ..."), joined into
 * out. @return how many there are. */
static int man_entries(const char *man, const char *name, char *out, size_t n)
{
    const char *p = strstr(man, "\n.SH COMMANDS\n"), *end = p ? strstr(p + 1, "\n.SH ") : NULL;
    cr_assert(p && end, "docs/cumemtrace.1 has no COMMANDS section");
    char head[64];
    snprintf(head, sizeof head, "\n.TP\n.BR %s ", name);
    int count = 0;
    out[0] = '\0';
    for (const char *e = p; (e = strstr(e + 1, head)) && e < end; count++) {
        const char *stop = strstr(e + 1, "\n.TP\n");
        if (!stop || stop > end)
            stop = end;
        size_t room = n - strlen(out) - 1, take = (size_t)(stop - e);
        strncat(out, e, take < room ? take : room);
    }
    return count;
}

/* The completion's branch for `name` (from "    a | name)" to the next branch or esac), into
 * out. @return whether there is one. */
static bool completion_branch(const char *comp, const char *name, char *out, size_t n)
{
    out[0] = '\0';
    const char *line = comp;
    bool in = false;
    while (line && *line) {
        const char *next = strchr(line, '\n');
        size_t len = next ? (size_t)(next - line) : strlen(line);
        bool branch = len > 5 && !strncmp(line, "    ", 4) &&
                      (islower((unsigned char)line[4]) || line[4] == '*');
        const char *paren = memchr(line, ')', len);
        if (branch && paren) {
            for (const char *c = line + 4; c < paren; c++)
                branch &= islower((unsigned char)*c) || *c == ' ' || *c == '|' || *c == '*';
        }
        if (branch && paren) {
            in = has_word(line + 4, (size_t)(paren - line - 4), name);
        } else if (len >= 8 && !strncmp(line, "    esac", 8)) {
            in = false;
        }
        if (in && strlen(out) + len + 2 < n) {
            strncat(out, line, len);
            strcat(out, "\n");
        }
        line = next ? next + 1 : NULL;
    }
    return out[0] != '\0';
}

/* The words the completion offers for the first argument. */
static void completion_commands(const char *comp, char *out, size_t n)
{
    const char *p = strstr(comp, "COMP_CWORD == 1");
    cr_assert_not_null(p);
    p = strstr(p, "compgen -W \"");
    cr_assert_not_null(p);
    p += strlen("compgen -W \"");
    const char *q = strchr(p, '"');
    cr_assert(q && (size_t)(q - p) < n);
    memcpy(out, p, (size_t)(q - p));
    out[q - p] = '\0';
}

/* Command i's three descriptions: its man page entries into entry, its completion branch into
 * branch (each 64 KiB). @return its `--help` run (free it with captured_free). */
static struct captured command_docs(size_t i, const char *man, const char *comp, char *entry,
                                    char *branch)
{
    const char *argv[] = {commands[i].name, "--help", NULL};
    man_entries(man, commands[i].name, entry, 1 << 16);
    completion_branch(comp, commands[i].name, branch, 1 << 16);
    return capture_run(commands[i].fn, argv);
}

/* Recipe "a new analysis command": its commands.def line needs the man page and completion. */
Test(recipes, every_command_is_in_the_man_page_and_the_completion)
{
    char *man = man_page(), *comp = source_file("share/bash-completion/cumemtrace");
    static char block[1 << 16], words[1024];
    completion_commands(comp, words, sizeof words);
    for (size_t i = 0; i < N_COMMANDS; i++) {
        const char *name = commands[i].name;
        cr_expect_gt(man_entries(man, name, block, sizeof block), 0,
                     "docs/cumemtrace.1 has no COMMANDS entry \".BR %s ...\"", name);
        cr_expect(has_word(words, strlen(words), name),
                  "share/bash-completion/cumemtrace does not offer the command %s", name);
        cr_expect(completion_branch(comp, name, block, sizeof block),
                  "share/bash-completion/cumemtrace has no branch for %s", name);
    }
    /* and nothing else: every command word the completion offers is a command */
    for (char *w = strtok(words, " "); w; w = strtok(NULL, " ")) {
        bool known = w[0] == '-';
        for (size_t i = 0; i < N_COMMANDS; i++)
            known |= !strcmp(commands[i].name, w);
        cr_expect(known, "the completion offers %s, which commands.def does not have", w);
    }
    free(man);
    free(comp);
}

/* Each long option a command's --help lists (with its short form, when it has one) is in its
 * man page entry and its completion branch. */
Test(recipes, every_option_of_each_command_is_in_the_man_page_and_the_completion)
{
    char *man = man_page(), *comp = source_file("share/bash-completion/cumemtrace");
    static char entry[1 << 16], branch[1 << 16];
    for (size_t i = 0; i < N_COMMANDS; i++) {
        struct captured h = command_docs(i, man, comp, entry, branch);
        cr_expect_eq(h.status, 0, "%s --help: status %d", commands[i].name, h.status);
        const char *text = h.out[0] ? h.out : h.err;
        for (const char *p = text; (p = strstr(p, "--")); p += 2) {
            if ((p > text && word_char(p[-1])) || !islower((unsigned char)p[2]))
                continue;
            char opt[64], alias[8] = "";
            size_t n = 2;
            while (n < sizeof opt - 1 && word_char(p[n]))
                n++;
            memcpy(opt, p, n);
            opt[n] = '\0';
            if (p[n] == '=' || !strcmp(opt, "--help")) /* "--option=value": the syntax */
                continue;
            if (has_word(text, (size_t)(p - text), opt)) /* said once already */
                continue;
            if (p - text >= 4 && p[-4] == '-' && p[-2] == ',' && p[-1] == ' ')
                snprintf(alias, sizeof alias, "-%c", p[-3]);
            cr_expect(has_word(branch, strlen(branch), opt),
                      "%s %s: not in share/bash-completion/cumemtrace", commands[i].name, opt);
            cr_expect(has_word(entry, strlen(entry), opt) ||
                          (alias[0] && has_word(entry, strlen(entry), alias)),
                      "%s %s: not in docs/cumemtrace.1's entry", commands[i].name, opt);
        }
        captured_free(&h);
    }
    free(man);
    free(comp);
}

/* Recipe "a new option": its line in the command's option table (options.h) needs its words in
 * the --help text (written by hand), the man page entry and the completion branch. Each
 * spelling ("-o" and "--output") is in the help (-h and --help excepted: asking for the help
 * is how one reads it) and the completion; the man page names the option by one of them. */
Test(recipes, every_option_of_each_table_is_in_the_help_the_man_page_and_the_completion)
{
    char *man = man_page(), *comp = source_file("share/bash-completion/cumemtrace");
    static char entry[1 << 16], branch[1 << 16];
    for (size_t i = 0; i < N_COMMANDS; i++) {
        struct captured h = command_docs(i, man, comp, entry, branch);
        int options = 0;
        for (const struct cmt__option *o = commands[i].options; o->id; o++, options++) {
            const char *spellings[] = {o->short_name, o->long_name};
            bool in_man = false, help = o->long_name && !strcmp(o->long_name, "--help");
            for (size_t k = 0; k < 2; k++) {
                const char *w = spellings[k];
                if (!w)
                    continue;
                cr_expect(has_word(h.out, strlen(h.out), w) || help, /* `CMD --help` itself */
                          "%s %s: not in `%s --help`", commands[i].name, w, commands[i].name);
                cr_expect(has_word(branch, strlen(branch), w),
                          "%s %s: not in share/bash-completion/cumemtrace", commands[i].name, w);
                in_man |= has_word(entry, strlen(entry), w);
            }
            cr_expect(in_man || help, /* the man page says --help once, for every command */
                      "%s %s: not in docs/cumemtrace.1's entry", commands[i].name,
                      o->long_name ? o->long_name : o->short_name);
        }
        cr_expect_gt(options, 1, "%s: its table has no option but --help", commands[i].name);
        captured_free(&h);
    }
    free(man);
    free(comp);
}

/* Recipe "a new allocator setting": its CMT_MODEL_SETTINGS entry reaches the man page, the
 * completion and every `whatif --json` result. */
Test(recipes, every_setting_is_in_the_man_page_the_completion_and_the_json)
{
    char *man = man_page(), *comp = source_file("share/bash-completion/cumemtrace");
    static char entry[1 << 16], branch[1 << 16];
    man_entries(man, "whatif", entry, sizeof entry);
    completion_branch(comp, "whatif", branch, sizeof branch);
    struct tb b;
    tb_writeup(&b);
    char *path = tb_file(&b);
    cmt_membuf_free(&b.buf);
    const char *argv[] = {"whatif", "--json", "--max-split-size-mb", "inf,6144", path, NULL};
    struct captured c;
    capture(&c, cmt_cmd_whatif, argv);
    cr_assert_eq(c.status, 0, "%s", c.err);
    cr_assert(jq_valid(c.out), "whatif --json is not one JSON value:\n%s", c.out);
    long results = jq_count(c.out, "results");
    cr_assert_eq(results, 2, "%s", c.out);
    for (size_t k = 0; k < sizeof settings / sizeof *settings; k++) {
        cr_expect(has_word(entry, strlen(entry), settings[k].flag),
                  "whatif %s: not in docs/cumemtrace.1's entry", settings[k].flag);
        cr_expect(has_word(branch, strlen(branch), settings[k].flag),
                  "whatif %s: not in share/bash-completion/cumemtrace", settings[k].flag);
        for (long r = 0; r < results; r++) {
            char key[128];
            snprintf(key, sizeof key, "results.%ld.%s", r, settings[k].json);
            cr_expect(jq_has(c.out, key), "whatif --json: no %s", key);
        }
    }
    unlink(path);
    free(path);
    captured_free(&c);
    free(man);
    free(comp);
}
