/* torch_capture.h — `cumemtrace record --torch`: PyTorch's own allocator history beside the
 * driver trace.
 *
 * Before the program runs, record writes the Python start-up hook (torch_sitecustomize.py,
 * embedded at build time) into a directory of its private record directory and puts that
 * first on PYTHONPATH; in each process that imports torch and initialises CUDA the hook turns
 * on memory history with Python stacks and dumps the snapshot on out-of-memory and at exit
 * (torch-PID-N-WHY.pickle). After the program, each process's last snapshot is merged into that
 * process's trace (its allocator records interleaved with the driver records by wall time,
 * written beside the trace and renamed over it when complete); when that fails the trace stays
 * as recorded, the snapshot is kept beside it as <trace stem>.torch.pickle and one line says
 * why. Earlier dumps are kept as <stem>.torch-N.pickle. Docs: docs/capture.md. */
#ifndef CMT_TORCH_CAPTURE_H
#define CMT_TORCH_CAPTURE_H

#include <stddef.h>

/* Writes the hook into dir/torch and sets PYTHONPATH (dir/torch first, then what it was),
 * CUMEMTRACE_TORCH_DIR (where the snapshots go). @return 0; -1 after one stderr line. */
int cmt__torch_setup(const char *dir);

/* Merges (or keeps beside the trace) every process's snapshots: `manifest` lists the traces,
 * `pattern` is the output pattern (%p = pid) that names a snapshot whose process left no
 * trace. One stderr line per snapshot unless `quiet`. @return the snapshots that could be
 * neither merged nor kept. */
int cmt__torch_collect(const char *dir, const char *manifest, const char *pattern, int quiet);

/* Removes what cmt__torch_setup and Python left in dir/torch. */
void cmt__torch_cleanup(const char *dir);

#endif
