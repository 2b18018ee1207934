/* options.h — internal: the one option parser of the subcommands. Each command describes its
 * options in a table (struct cmt__option, ended by an entry with id 0) and walks its argv with
 * cmt__opts_next, which gives one option or positional argument at a time. What every command
 * accepts alike is decided here:
 *   - an option is "-x" or "--long" exactly, spelled as in the table;
 *   - a value follows its option as the next argument ("-o X", "--output X", even when X starts
 *     with '-') or, for a long option, after '=' ("--output=X"; "-o=X" is not a spelling);
 *   - options may come before or after the positional arguments (unless CMT__OPTS_IN_ORDER);
 *   - "-" alone is a positional argument;
 *   - "--" ends the options where the command says so (CMT__OPTS_DASHDASH), else it is an
 *     unknown option.
 * Usage errors are printed as cmt__usage_error does ("cumemtrace CMD: ... (see 'cumemtrace CMD
 * --help')") and the command exits 2:
 *   - "unknown option 'ARG'";
 *   - "--NAME takes no value" for "--NAME=VALUE" when NAME is a flag;
 *   - "NAME needs WHAT" when the last argument is an option whose value is missing and its
 *     entry says WHAT (`needs`); without `needs` the command sees the option with value NULL.
 * The --help texts are written by hand; tests/recipes checks that every spelling of every
 * table is in its command's --help, its man page entry and its completion branch. */
#ifndef CMT__OPTIONS_H
#define CMT__OPTIONS_H

/* One option: its spellings ("-o", "--output"; either may be NULL), whether it takes a value,
 * the id the parser returns for it (> 0), and for a value option the words that end "NAME
 * needs ..." when the value is missing (NULL: the command decides). */
struct cmt__option {
    const char *short_name, *long_name;
    int takes_value;
    int id;
    const char *needs;
};

/* -h and --help, which every command takes: put it in each table with the command's own id. */
#define CMT__OPTION_HELP(id)          \
    {                                 \
        "-h", "--help", 0, (id), NULL \
    }

/* cmt__opts_next's results that are not an option's id. */
enum {
    CMT__OPT_END = 0,    /* no argument left */
    CMT__OPT_ARG = -1,   /* a positional argument: value */
    CMT__OPT_ERROR = -2, /* a usage error was printed: exit 2 */
};

/* How a command reads its argv (cmt__opts_init's flags). */
enum {
    CMT__OPTS_IN_ORDER = 1,     /* the first positional argument ends the options */
    CMT__OPTS_DASHDASH = 2,     /* "--" ends the options (dashdash is set) */
    CMT__OPTS_KEEP_UNKNOWN = 4, /* an option not in the table (or not `only`) comes back as
                                 * CMT__OPT_ARG, for a command that takes some options out of
                                 * argv before parsing the rest */
};

struct cmt__opts {
    const char *cmd; /* for the messages */
    int argc;
    char **argv;
    const struct cmt__option *table;
    unsigned flags;
    int only;     /* when not 0: the one id recognised (with CMT__OPTS_KEEP_UNKNOWN) */
    int next;     /* the index of the next argument */
    int rest;     /* the options are over: every argument left is positional */
    int dashdash; /* "--" was seen */
    /* the last result: */
    int index;                        /* argv index of arg */
    const char *arg;                  /* the argument as given ("--output=x") */
    const char *name;                 /* the option's spelling as given ("--output") */
    const char *value;                /* the option's value or the positional argument */
    const struct cmt__option *option; /* the option's table entry */
};

/* Starts walking argv[1..argc) (argv[0] is the command's name). */
void cmt__opts_init(struct cmt__opts *p, const char *cmd, int argc, char **argv,
                    const struct cmt__option *table, unsigned flags);

/* The next argument. @return an option's id with p->name and p->value (NULL for a flag, or a
 * missing value without `needs`) set, CMT__OPT_ARG with p->value the argument, CMT__OPT_END,
 * or CMT__OPT_ERROR after printing the usage error. */
int cmt__opts_next(struct cmt__opts *p);

/* The whole walk, for a command that gives each option to one function: on(p, id, ctx) for
 * every option but --help and for every positional argument (id CMT__OPT_ARG); --help (the
 * table's CMT__OPTION_HELP entry) prints usage to standard output.
 * @return 0; -1 after the help (exit 0); 2 after a usage error, or on's first non-zero result
 * (on prints its own error). */
int cmt__opts_parse(const char *cmd, int argc, char **argv, const struct cmt__option *table,
                    unsigned flags, const char *usage,
                    int (*on)(const struct cmt__opts *p, int id, void *ctx), void *ctx);

/* For a value the command finds empty: prints "NAME needs WHAT" (the option's `needs`).
 * @return 2 (usage). */
int cmt__opts_needs(const struct cmt__opts *p);

/* Takes every occurrence of option `id` of table out of argv, for a command that reads it before
 * parsing the rest: take(value, ctx) for each, in order (value NULL when missing); what is left
 * keeps its order, *argc its new count. "--" is left as it is.
 * @return 0, or the first non-zero result of take (2 after a usage error). */
int cmt__opts_take(const char *cmd, int *argc, char **argv, const struct cmt__option *table, int id,
                   int (*take)(const char *value, void *ctx), void *ctx);

/* @return 1 when arg is, exactly, a spelling of a value option of table. */
int cmt__opts_takes_value(const struct cmt__option *table, const char *arg);

/* Every command's table, named after its entry point (cmt_cmd_record_options, ...): defined
 * in its cmd_*.c, read by the documentation test. */
#define X(name, fn, summary) extern const struct cmt__option fn##_options[];
#include "commands.def"
#undef X

#endif
