/* main.c — the cumemtrace executable: everything is in cmt_cli (cli.c), where tests reach it. */
#include "commands.h"

int main(int argc, char **argv)
{
    return cmt_cli_main(argc, argv);
}
