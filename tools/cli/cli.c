/* cli.c — `cumemtrace COMMAND ...`: dispatch to the subcommands listed in commands.def. */
#include <stdio.h>
#include <string.h>

#include "cmt_format.h"
#include "commands.h"

struct command {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
};

static const struct command commands[] = {
#define X(name, fn, summary) {#name, fn, summary},
#include "commands.def"
#undef X
};

static void usage(FILE *f)
{
    fprintf(f, "usage: cumemtrace COMMAND [OPTIONS] [ARGS]\n\n"
               "Traces the CUDA device-memory calls of a program and explains out-of-memory "
               "failures.\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n`cumemtrace COMMAND --help` describes a command; `cumemtrace --version` (-V)\n"
               "prints the version. Start with:\n"
               "  cumemtrace record -- ./my_cuda_program args...\n"
               "  cumemtrace oom cumemtrace.<pid>.cmt\n");
}

int cmt_cli_main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
        printf("cumemtrace %s (trace format %d.%d)\n", CMT_VERSION, CMT_VERSION_MAJOR,
               CMT_VERSION_MINOR);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "cumemtrace: unknown command '%s' (see 'cumemtrace --help')\n", argv[1]);
    return 2;
}
