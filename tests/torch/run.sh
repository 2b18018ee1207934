#!/bin/sh
# tests/torch/run.sh SOURCE_DIR BUILD_DIR CHECK.py: runs one check of tests/torch with the torch
# root's python3 inside the root (scripts/torch-run.sh). Without the root (or without root
# rights) the check is skipped (exit 77), except with CI=true, where that is a failure.
src=$1 build=$2 check=$3
root=${CUMEMTRACE_TORCH_ROOT:-/var/cache/cumemtrace/torch-root}
why=""
if [ "$(id -u)" != 0 ]; then
    why="needs root (a chroot into $root)"
elif ! "$src/scripts/setup-torch.sh" --check; then
    why="no complete torch root at $root (scripts/setup-torch.sh builds it once, as root)"
else
    for so in libcuda.so.1 libcudart.so.12 libcudnn.so.9; do
        [ -n "$(find "$build/lib" -name "$so" 2>/dev/null | head -n 1)" ] ||
            why="the build tree has no $so (torch needs it)"
    done
fi
if [ -n "$why" ]; then
    if [ "${CI:-}" = true ]; then
        echo "torch: $why; with CI=true this is a failure"
        exit 1
    fi
    echo "torch: SKIP: $why"
    exit 77
fi
exec "$src/scripts/torch-run.sh" --no-record --build "$build" --bind "$src/tests/torch" -- \
    python3 -B "$src/tests/torch/$check"
