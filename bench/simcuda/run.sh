#!/usr/bin/env bash
# run.sh [BUILD_DIR] — simcuda's cuMemAlloc_v2 at a growing live count (issue 26 item 1:
# simcuda's allocation in O(log n) of the live allocations). bench_sim_alloc makes 1,000,
# 20,000, 100,000 and 500,000 live allocations on one device (BENCH_LIVE; one device holds at
# most about 524,000) and times each count's next 4,000 against as many on a second device
# that holds 1,000 live (the anchor), in ABBA rounds; bare and under `cumemtrace record`
# (stacks off: the shim's cost per call is bench/capture's), BENCH_ROUNDS processes of each
# (default 5), interleaved. Prints per count the median CPU per call, the anchor's, "x anchor"
# (the median of the processes' paired ratios) and the target: at most log2(N) / log2(1000)
# (what O(log n) allows; a scan of the live allocations gives N / 1000), and the process's CPU
# to make the N live. A million live allocations on four devices under record is the e2e test
# test_e2e_live_objects. Prints figures only; never fails on a slow result.
# Knobs: BENCH_ROUNDS, BENCH_LIVE (ascending counts, the first the anchor's 1000 or more),
# BENCH_BASE_SIMCUDA=DIR (also run bare on another build's libcuda.so.1 in DIR, e.g. one from
# before the treap of free ranges, 1debbbb^, over BENCH_BASE_LIVE, default 1000 20000 40000:
# a linear scan takes minutes to reach 500,000).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
rounds=${BENCH_ROUNDS:-5}
counts=${BENCH_LIVE:-"1000 20000 100000 500000"}
prog=$build/bench/bench_sim_alloc cli=$build/bin/cumemtrace
for f in "$prog" "$cli" "$build/lib/libcumemtrace.so"; do
    [[ -f $f ]] || { echo "run.sh: $f is missing; build first" >&2; exit 2; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/cmt-bench-simcuda.XXXXXX")
trap 'rm -rf "$work"' EXIT
export SIMCUDA_DEVICES=2 SIMCUDA_MEMORY=1TiB SIMCUDA_REUSE_ADDRESSES=0

# shellcheck disable=SC2086
for ((r = 0; r < rounds; r++)); do
    "$prog" $counts >>"$work/bare"
    "$cli" record -q --no-symbolize --stack-depth 0 -o "$work/t.cmt" -- "$prog" $counts >>"$work/shim"
    rm -f "$work/t.cmt"
    if [[ -n ${BENCH_BASE_SIMCUDA:-} ]]; then
        LD_LIBRARY_PATH=$BENCH_BASE_SIMCUDA${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
            "$prog" ${BENCH_BASE_LIVE:-1000 20000 40000} >>"$work/base"
    fi
done

field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "simcuda allocation benchmark: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- |
    sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $rounds rounds"
printf '%-7s %9s %11s %11s %9s %10s %8s  %s\n' run live "cpu ns/call" "anchor ns" "x anchor" \
    "target" "linear" "process CPU to reach"
runs=(bare shim)
[[ -n ${BENCH_BASE_SIMCUDA:-} ]] && runs+=(base)
for run in "${runs[@]}"; do
    [[ $run == base ]] && counts=${BENCH_BASE_LIVE:-1000 20000 40000}
    for n in $counts; do
        grep " live=$n " "$work/$run" >"$work/rows"
        cost=$(field cpu_ns_per_call <"$work/rows" | median)
        base=$(field anchor_cpu_ns_per_call <"$work/rows" | median)
        ratio=$(field ratio <"$work/rows" | median)
        reach=$(field process_cpu_s <"$work/rows" | median)
        awk -v run="$run" -v n="$n" -v c="$cost" -v b="$base" -v r="$ratio" -v s="$reach" 'BEGIN {
            t = log(n) / log(1000)
            v = n == 1000 ? "(the anchor: the pairing'"'"'s own bias)" : (r <= t ? "met" : "NOT met")
            printf "%-7s %9d %11.1f %11.1f %9s %10s %8s  %.3f s -> %s\n", run, n, c, b, "x" r,
                   n == 1000 ? "-" : sprintf("<= x%.2f", t), sprintf("x%d", n / 1000), s, v
        }'
    done
done
echo
echo "target (issue 26 item 1): cuMemAlloc_v2 in O(log n) of the live allocations: x anchor"
echo "(the cost at N live over the cost at 1000, paired) at most log2(N) / log2(1000)"
[[ -n ${BENCH_BASE_SIMCUDA:-} ]] && echo "base: bare, on $BENCH_BASE_SIMCUDA/libcuda.so.1"
exit 0
