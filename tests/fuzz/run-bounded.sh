#!/bin/sh
# run-bounded.sh SECONDS [TARGET] — builds fuzz target TARGET (default reader_decode; also
# pickle_decode, the `import` path, and export_partitioned) with clang + libFuzzer + ASan/UBSan and fuzzes for SECONDS (default 60)
# starting from its saved corpus. Exit 0 when nothing was found; otherwise non-zero, with the
# path of the crashing input on the last line.
set -eu
seconds=${1:-60}
target=${2:-reader_decode}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${CMT_FUZZ_BUILD_DIR:-$src/build-fuzz}
cmake -S "$src" -B "$build" -DCMAKE_C_COMPILER=clang -DCMT_FUZZ=ON \
      -DCMT_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target "fuzz_$target" -j"$(nproc)" >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$build/fuzz-artifacts"
cp "$here/corpus/$target/"* "$work/corpus/" 2>/dev/null || true
if [ "$target" = reader_decode ] || [ "$target" = export_partitioned ]; then
    cp "$src/tests/tools/analysis/golden/"*.cmt "$here/corpus/hostile/"*.cmt "$work/corpus/" \
        2>/dev/null || true
fi
status=0
UBSAN_OPTIONS=halt_on_error=1 "$build/tests/fuzz_$target" "$work/corpus" \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$build/fuzz-artifacts/" >"$work/log" 2>&1 || status=$?
tail -n 5 "$work/log"
if [ "$status" -ne 0 ]; then
    crash=$(ls -t "$build/fuzz-artifacts/" 2>/dev/null | head -n 1)
    echo "run-bounded.sh: the fuzzer found a problem (exit $status): $build/fuzz-artifacts/$crash"
    exit 1
fi
echo "run-bounded.sh: no crash in ${seconds}s"
