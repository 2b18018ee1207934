/* commands.h — entry points of the subcommands listed in commands.def. */
#ifndef CMT_COMMANDS_H
#define CMT_COMMANDS_H

#define X(name, fn, summary) int fn(int argc, char **argv);
#include "commands.def"
#undef X

/* `cumemtrace ARGS...`: --help, --version (-V), or the command argv[1] names. @return the
 * process exit status. */
int cmt_cli_main(int argc, char **argv);

#endif
