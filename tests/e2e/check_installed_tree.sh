#!/bin/sh
# The installed tree works on its own, in two configurations:
#   1. this build tree, installed: the CLI finds the installed shim, records and reports, and
#      `cumemtrace demo` runs;
#   2. a build of the same sources with -DBUILD_TESTING=OFF (the tests, which once brought
#      simcuda along, are not built), installed: `cumemtrace demo` finds the installed simcuda.
# The second build lives in SCRATCH_DIR and is kept between runs, so only the first is slow.
# Usage: check_installed_tree.sh CMAKE BUILD_DIR PROGS_DIR SCRATCH_DIR [CONFIGURE_ARGS...]
set -eu
cmake=$1 build=$2 progs=$3 scratch=$4
shift 4
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT

"$cmake" --install "$build" --prefix "$d/usr" >/dev/null
cd "$d"
LD_LIBRARY_PATH=$d/usr/lib/simcuda "$d/usr/bin/cumemtrace" record -- "$progs/alloc_deep" 2>&1 | grep -q 'wrote cumemtrace'
"$d/usr/bin/cumemtrace" report --json cumemtrace.*.cmt | grep -q '"peak_live_bytes":12345678,'
"$d/usr/bin/cumemtrace" demo --dir "$d/demo" | grep -q 'export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:6144'
test -f "$d/usr/share/doc/cumemtrace/trace-format.md"
test -f "$d/usr/share/man/man1/cumemtrace.1"
test -f "$d/usr/share/bash-completion/completions/cumemtrace"
test -f "$d/usr/include/cumemtrace/annotate.h"
# the man page names every command of commands.def; the completion offers each
[ "${1:-}" = -S ] && src=$2 || { echo "installed_tree: pass -S SOURCE_DIR first"; exit 1; }
for c in $(sed -n 's/^X(\([a-z_]*\),.*/\1/p' "$src/tools/cli/commands.def"); do
    grep -q "^\.BR $c " "$d/usr/share/man/man1/cumemtrace.1" || { echo "man page lacks $c"; exit 1; }
    grep -q "$c" "$d/usr/share/bash-completion/completions/cumemtrace" || { echo "completion lacks $c"; exit 1; }
done

p=$d/notests
if ! { "$cmake" "$@" -DBUILD_TESTING=OFF -B "$scratch" &&
       "$cmake" --build "$scratch" -j"${CMAKE_BUILD_PARALLEL_LEVEL:-2}" &&
       "$cmake" --install "$scratch" --prefix "$p"; } >"$d/build.log" 2>&1; then
    tail -40 "$d/build.log"
    echo "installed_tree: the -DBUILD_TESTING=OFF build in $scratch failed (log above)"
    exit 1
fi
status=0
env -u LD_LIBRARY_PATH "$p/bin/cumemtrace" demo --dir "$d/demo-notests" >"$d/demo.out" 2>&1 || status=$?
fail() {
    cat "$d/demo.out"
    echo "installed_tree: with -DBUILD_TESTING=OFF, the installed cumemtrace demo $1"
    exit 1
}
[ "$status" = 0 ] || fail "exited with status $status"
for want in "driver:       $p/bin/../" "/simcuda/libcuda.so.1" \
            'export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:6144'; do
    grep -qF -- "$want" "$d/demo.out" || fail "printed no '$want'"
done
