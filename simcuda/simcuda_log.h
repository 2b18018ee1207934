/* SIMCUDA_LOG: simcuda's own record of every memory call it served, independent of any tracer,
 * so that end-to-end tests can compare a trace against what the driver really did.
 *
 * One line per call, appended with a single write(2) to a file opened with O_APPEND, so lines
 * from several processes (fork/exec children share the file) never interleave:
 *
 *   simcuda pid=<pid> entry=<exported name> result=<CUresult> address=0x<hex> size=<bytes>
 *   handle=0x<hex>
 *
 * (one line, fields separated by single spaces). address, size and handle are 0 where the call
 * has none; README.md lists what each entry point writes. A program that closes the log's
 * descriptor or dup2's another file over it loses no line and has none written into its file:
 * each write checks the descriptor and opens the log again (simcuda_log.c). */
#ifndef SIMCUDA_LOG_H
#define SIMCUDA_LOG_H

#include <stdint.h>

#include <cuda.h>

/* Opens the log named by SIMCUDA_LOG; called once, at the first cuInit (a forked child keeps
 * the descriptor, an exec'ed one opens the file again). A file that cannot be opened prints
 * one line on stderr and disables the log. */
void simcuda__log_open(void);

/* Appends one line for a served call (nothing when SIMCUDA_LOG is unset). Safe without the
 * simulator's lock; never changes errno.
 * @return result, so an entry point can end with `return simcuda__log(...)`. */
CUresult simcuda__log(const char *entry, CUresult result, uint64_t address, uint64_t size,
                      uint64_t handle);

/* simcuda__log with the calling function's name: every logged entry point is exported under
 * the name of the C function that implements it. */
#define SIMCUDA__LOG(result, address, size, handle) \
    simcuda__log(__func__, (result), (uint64_t)(address), (uint64_t)(size), (uint64_t)(handle))

#endif
