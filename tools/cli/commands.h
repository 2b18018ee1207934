/* commands.h — entry points of the subcommands listed in commands.def. */
#ifndef CMT_COMMANDS_H
#define CMT_COMMANDS_H

#define X(name, fn, summary) int fn(int argc, char **argv);
#include "commands.def"
#undef X

#endif
