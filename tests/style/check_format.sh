#!/bin/sh
# check_format.sh CLANG_FORMAT SOURCE_DIR — every C/C++ source and header git tracks is in the
# tree's one style (.clang-format); the X-macro tables (*.def) are laid out by hand; no product
# source (not tests/, bench/) is over 800 lines, and tools/cli keeps at most 30 files at its top.
# Prints the files that differ and how to fix them; exits 1 when there are any, 77 (skipped)
# outside a git checkout (1 with CI=true).
set -eu
clang_format=$1 top=$2
cd "$top"
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    echo "check_format: $top is not a git checkout; nothing to check"
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
bad=$(git ls-files '*.c' '*.h' '*.cpp' | while read -r f; do
    [ -f "$f" ] || continue
    "$clang_format" --style=file "$f" | cmp -s - "$f" || echo "$f"
done)
if [ -n "$bad" ]; then
    echo "not in the tree's style (run: clang-format -i FILE):"
    echo "$bad" | sed 's/^/  /'
    exit 1
fi
long=$(git ls-files format interpose include simcuda simcudart simcudnn tools | grep -E '[.](c|h|js|html|py)$' |
    while read -r f; do
        [ -f "$f" ] && [ "$(wc -l <"$f")" -gt 800 ] && echo "$f: $(wc -l <"$f") lines"
    done || true)
if [ -n "$long" ]; then
    echo "over 800 lines (split it by idea, docs/architecture.md):"
    echo "$long" | sed 's/^/  /'
    exit 1
fi
top_files=$(git ls-files tools/cli | grep -c '^tools/cli/[^/]*$')
if [ "$top_files" -gt 30 ]; then
    echo "tools/cli has $top_files files at its top (at most 30: put the new one in its room)"
    exit 1
fi
echo "style: every source file matches .clang-format, none is over 800 lines, tools/cli has $top_files at its top"
