#!/usr/bin/env bash
# run.sh [BUILD_DIR] — `cumemtrace export` throughput: every format on cmt_bench_gen_trace's
# synthetic stress trace (300 call sites with 12-frame stacks, 4096 live stream-ordered buffers
# replaced at random, a VMM segment, an OOM episode; BENCH_EVENTS events, default 2,000,000),
# next to its anchor, `report --json` on the same trace (the same replay, without per-event
# output), run just before each format in each round.
#
# Measured in CPU time (user + system) because this machine's speed changes from minute to
# minute; per format: events per second, trace MB read per second, MB written per second, the
# output's size, and "x anchor", the median over rounds of report's time over the format's
# (1.00: as fast as the replay alone). Then the peak resident memory (GNU time's "Maximum
# resident set size") of report and of the perfetto, memory-viz and collapsed exports on traces
# of BENCH_RSS_EVENTS events (default 1M, 4M and 16M): an export that streams uses as much at
# 16M as at 1M. Prints figures only; never fails on a slow or large result.
# Knobs: BENCH_EVENTS, BENCH_ROUNDS (default 3; 0 skips the CPU table), BENCH_RSS_EVENTS ("" skips it), BENCH_RSS_ALL=1
# (every format's RSS), BENCH_RSS_VS=CLI (another build's figures beside), BENCH_KEEP=1.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
events=${BENCH_EVENTS:-2000000}
rounds=${BENCH_ROUNDS:-3}
cli=$build/bin/cumemtrace gen=$build/bench/cmt_bench_gen_trace
for f in "$cli" "$gen"; do
    [[ -x $f ]] || { echo "run.sh: $f is missing; build first" >&2; exit 2; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/cmt-bench-export.XXXXXX")
[[ ${BENCH_KEEP:-0} == 1 ]] || trap 'rm -rf "$work"' EXIT

trace=$work/synthetic.cmt
"$gen" "$trace" "$events" >/dev/null
trace_bytes=$(stat -c %s "$trace")
n=$("$cli" report --json "$trace" | sed -n 's/.*"events":\([0-9]*\).*/\1/p' | head -1)

# name|arguments (OUT: the output file or folder)
formats=(
    "perfetto|-f perfetto -o OUT"
    "collapsed|-f collapsed --weight peak -o OUT"
    "memory-viz|-f memory-viz -o OUT"
    "csv events|-f csv --table events -o OUT"
    "jsonl events|-f jsonl --table events -o OUT"
    "csv sites|-f csv --table sites -o OUT"
    "partitioned csv --events|-f csv --partitioned OUT --events"
)

# Runs a command; prints its CPU seconds (user + system).
cpu() {
    local TIMEFORMAT='%U %S' t
    t=$( { time "$@" >/dev/null 2>&1; } 2>&1 )
    awk -v t="$t" 'BEGIN { split(t, a, " "); printf "%.3f\n", a[1] + a[2] }'
}

echo "cumemtrace export benchmark: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- |
    sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "trace: $n events, $(awk -v b="$trace_bytes" 'BEGIN { printf "%.1f MB", b / 1e6 }') on disk," \
    "$rounds rounds, CPU time"
if ((rounds > 0)); then # BENCH_ROUNDS=0: the peak RSS table alone
    printf '%-26s %9s %10s %9s %9s %10s %9s\n' format "best s" "M events/s" "in MB/s" "out MB/s" \
        "out MB" "x anchor"
    anchor_best=
    for entry in "${formats[@]}"; do
        name=${entry%%|*} args=${entry#*|}
        best='' ratios=()
        for ((r = 0; r < rounds; r++)); do
            a=$(cpu "$cli" report --json "$trace")
            out=$work/out.$r
            rm -rf "$out"
            # shellcheck disable=SC2086
            t=$(cpu "$cli" export ${args//OUT/$out} "$trace")
            ratios+=("$(awk -v a="$a" -v t="$t" 'BEGIN { printf "%.3f", (t > 0 ? a / t : 0) }')")
            if [[ -z $best ]] || awk -v t="$t" -v b="$best" 'BEGIN { exit !(t < b) }'; then
                best=$t
            fi
            if [[ -z $anchor_best ]] || awk -v t="$a" -v b="$anchor_best" 'BEGIN { exit !(t < b) }'; then
                anchor_best=$a
            fi
            out_bytes=$(du -sb "$out" | cut -f1)
        done
        median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
        awk -v name="$name" -v t="$best" -v n="$n" -v ib="$trace_bytes" -v ob="$out_bytes" -v m="$median" \
            'BEGIN { if (t <= 0) t = 0.001;
                     printf "%-26s %9.2f %10.2f %9.1f %9.1f %10.1f %9s\n", name, t, n / t / 1e6,
                            ib / t / 1e6, ob / t / 1e6, ob / 1e6, "x" m }'
    done
    awk -v t="$anchor_best" -v n="$n" 'BEGIN { printf "anchor: report --json, best %.2f s, %.2f M events/s\n", t, n / t / 1e6 }'
fi

# Peak RSS per trace size (MiB) of report --json (the replay alone) and of the exports that
# stream (BENCH_RSS_ALL=1: every format), and the largest size's over the smallest's (x1.00:
# flat). With BENCH_RSS_VS=CLI (another build's cumemtrace, e.g. main's), each cell is "that
# -> this", the two run in turn.
rss_sizes=${BENCH_RSS_EVENTS-1000000 4000000 16000000}
vs=${BENCH_RSS_VS:-}
if [[ -n $rss_sizes && -x /usr/bin/time ]]; then
    rss_formats=("report --json|report --json" "${formats[0]}" "${formats[2]}" "${formats[1]}")
    [[ ${BENCH_RSS_ALL:-0} == 1 ]] && rss_formats=("report --json|report --json" "${formats[@]}")
    for size in $rss_sizes; do
        "$gen" "$work/rss.$size.cmt" "$size" >/dev/null
    done
    printf '%-26s' "peak RSS MiB at events"
    for size in $rss_sizes; do printf ' %14s' "$size"; done
    printf ' %9s\n' "max/min"
    rss() { # MiB of the command's peak resident set
        /usr/bin/time -f '%M' -o "$work/rss.txt" "$@" >/dev/null 2>&1 || true
        awk 'END { printf "%.1f", $1 / 1024 }' "$work/rss.txt"
    }
    for entry in "${rss_formats[@]}"; do
        name=${entry%%|*} args=${entry#*|} first='' last=''
        printf '%-26s' "$name"
        for size in $rss_sizes; do
            cell=
            for bin in $vs "$cli"; do
                rm -rf "$work/rss.out"
                # shellcheck disable=SC2086
                if [[ $args == report* ]]; then
                    m=$(rss "$bin" $args "$work/rss.$size.cmt")
                else
                    m=$(rss "$bin" export ${args//OUT/$work/rss.out} "$work/rss.$size.cmt")
                fi
                cell=${cell:+$cell->}$m
            done
            [[ -z $first ]] && first=$m
            last=$m
            printf ' %14s' "$cell"
        done
        awk -v a="$first" -v b="$last" 'BEGIN { printf " %9s\n", "x" sprintf("%.2f", a > 0 ? b / a : 0) }'
    done
    rm -rf "$work/rss.out" "$work"/rss.*.cmt
fi
[[ ${BENCH_KEEP:-0} == 1 ]] && echo "work folder kept: $work"
exit 0
