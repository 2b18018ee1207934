#!/usr/bin/env bash
# live.sh [BUILD_DIR] — issue 26's live objects: `cumemtrace report` over traces of 1M and 10M
# device allocations never freed (cmt_bench_gen_live), next to heaptrack_print over heaptrack
# traces of as many mallocs never freed (bench_malloc_live), run in turn (BENCH_ROUNDS rounds,
# default 5). Prints, per count, the median CPU time (user + sys) and max RSS of each, RSS per
# live object, and "x anchor": the median over rounds of report's CPU over the heaptrack_print
# run just before it. Targets: at most 64 B of RSS per live object, at most x1.5 anchor.
# Prints figures only; never fails on a slow result. Knobs: BENCH_ROUNDS, BENCH_LIVE (counts),
# BENCH_KEEP=1.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
rounds=${BENCH_ROUNDS:-5}
counts=${BENCH_LIVE:-"1000000 10000000"}
cli=$build/bin/cumemtrace
for f in "$build/bench/cmt_bench_gen_live" "$build/bench/bench_malloc_live" "$cli"; do
    [[ -x $f ]] || { echo "live.sh: $f is missing; build first" >&2; exit 2; }
done
if ! command -v heaptrack >/dev/null || ! command -v heaptrack_print >/dev/null; then
    echo "live.sh: heaptrack not installed: no anchor" >&2
    exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/cmt-bench-live.XXXXXX")
[[ ${BENCH_KEEP:-0} == 1 ]] || trap 'rm -rf "$work"' EXIT

# one run: prints "cpu_seconds max_rss_kb"
measure() {
    /usr/bin/time -f '%U %S %M' -o "$work/time" "$@" >/dev/null 2>&1
    awk '{ printf "%.3f %d\n", $1 + $2, $3 }' "$work/time"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "live objects: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), \
$(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $rounds rounds"
printf '%-10s %-16s %9s %10s %12s %9s\n' live tool "cpu s" "max RSS" "B/live obj" "x anchor"
for n in $counts; do
    "$build/bench/cmt_bench_gen_live" "$work/live-$n.cmt" "$n" >/dev/null
    heaptrack -o "$work/ht-$n" "$build/bench/bench_malloc_live" "$n" >/dev/null 2>&1
    ht=
    for f in "$work"/ht-"$n"*.zst "$work"/ht-"$n"*.gz; do [[ -f $f ]] && ht=$f && break; done
    [[ -n $ht ]] || { echo "live.sh: heaptrack wrote no trace for $n" >&2; exit 1; }
    : >"$work/ours" && : >"$work/anchor" && : >"$work/ratio"
    for ((r = 0; r < rounds; r++)); do
        read -r acpu arss < <(measure heaptrack_print "$ht")
        read -r ocpu orss < <(measure "$cli" report "$work/live-$n.cmt")
        echo "$acpu $arss" >>"$work/anchor"
        echo "$ocpu $orss" >>"$work/ours"
        awk -v o="$ocpu" -v a="$acpu" 'BEGIN { printf "%.3f\n", (a > 0 ? o / a : 0) }' >>"$work/ratio"
    done
    for who in anchor ours; do
        cpu=$(cut -d' ' -f1 "$work/$who" | median)
        rss=$(cut -d' ' -f2 "$work/$who" | median)
        name=$([[ $who == ours ]] && echo "cumemtrace report" || echo "heaptrack_print")
        ratio=$([[ $who == ours ]] && median <"$work/ratio" || echo "-")
        printf '%-10s %-16s %9s %7d MB %12.1f %9s\n' "$n" "$name" "$cpu" $((rss / 1024)) \
            "$(awk -v k="$rss" -v n="$n" 'BEGIN { print k * 1024 / n }')" "$ratio"
    done
done
echo
echo "target (issue 26): report <= 64 B of RSS per live object and <= x1.5 anchor"
[[ ${BENCH_KEEP:-0} == 1 ]] && echo "work folder kept: $work"
exit 0
