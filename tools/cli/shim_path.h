/* shim_path.h — where the CLI finds its companions (the shim, simcuda, the demo program). */
#ifndef CMT_SHIM_PATH_H
#define CMT_SHIM_PATH_H

#include <stddef.h>

/* Finds `name` relative to the running executable: first `<bindir>/../lib/<name>` (build
 * tree), then the installed layout (`<bindir>/<libdir>/<name>`, or libexec for `libexec`).
 * CUMEMTRACE_SHIM overrides the shim's path. @return 0 with the path in out, or -1. */
int cmt_find_companion(const char *name, int libexec, char *out, size_t size);

/* The shim's path (see above). @return 0 or -1 with a message on stderr. */
int cmt_find_shim(char *out, size_t size);

#endif
