/* launcher.c — a stand-in for torchrun / mpirun / srun in the tests: starts N copies of a
 * command at once, each with the rank variables a launcher sets, and waits for all.
 *   launcher [--mpi] N COMMAND [ARGS...]
 * torchrun's: RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, TORCHELASTIC_RUN_ID;
 * with --mpi, Open MPI's: OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_LOCAL_RANK, OMPI_COMM_WORLD_SIZE.
 * Exits with the first non-zero status of a child (in rank order), else 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void set_number(const char *name, int v)
{
    char text[16];
    snprintf(text, sizeof text, "%d", v);
    setenv(name, text, 1);
}

int main(int argc, char **argv)
{
    int mpi = argc > 1 && !strcmp(argv[1], "--mpi");
    if (argc < 3 + mpi) {
        fprintf(stderr, "usage: launcher [--mpi] N COMMAND [ARGS...]\n");
        return 2;
    }
    int n = atoi(argv[1 + mpi]);
    pid_t pids[64];
    if (n < 1 || n > 64)
        return 2;
    for (int r = 0; r < n; r++) {
        pids[r] = fork();
        if (pids[r] < 0)
            return 3;
        if (pids[r] > 0)
            continue;
        set_number(mpi ? "OMPI_COMM_WORLD_RANK" : "RANK", r);
        set_number(mpi ? "OMPI_COMM_WORLD_LOCAL_RANK" : "LOCAL_RANK", r);
        set_number(mpi ? "OMPI_COMM_WORLD_SIZE" : "WORLD_SIZE", n);
        if (!mpi) {
            set_number("LOCAL_WORLD_SIZE", n);
            setenv("TORCHELASTIC_RUN_ID", "test-run", 1);
        }
        execvp(argv[2 + mpi], argv + 2 + mpi);
        _exit(127);
    }
    int status = 0;
    for (int r = 0; r < n; r++) {
        int st;
        if (waitpid(pids[r], &st, 0) == pids[r] && !status)
            status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    return status;
}
