#!/usr/bin/env bash
# run.sh [BUILD_DIR] — the analysis benchmark: report, oom and timeline on three 4-million-event
# traces, next to heaptrack_print reading a 4-million-event heaptrack trace.
#
# The traces:
#   recorded   what the shim writes for a program that allocates and frees the same size in
#              a loop: bench_capture_loop on simcuda, 4 threads of cuMemAlloc_v2/cuMemFree_v2
#              pairs 20 frames deep, under `cumemtrace record` (about 1.9 bytes per event)
#   churn      what the shim writes for a stream-ordered workload: bench_churn on simcuda,
#              cuMemAllocAsync/cuMemFreeAsync of 512 B to 8 MiB from 16 call sites, 2048 live
#              buffers replaced at random (about 5.7 bytes per event: random sizes and
#              addresses compress poorly)
#   synthetic  cmt_bench_gen_trace's stress trace: 300 call sites, 4096 live stream-ordered
#              buffers replaced at random, addresses never reused, sizes and intervals drawn at
#              random, a VMM segment, an OOM episode (about 8 bytes per event on disk: close
#              to incompressible, written with the shim's settings)
#   anchor     heaptrack over bench_malloc_loop (malloc/free pairs), read by heaptrack_print
#   twin       heaptrack over bench_malloc_churn, churn's workload on malloc/free: the anchor
#              of the same shape for the churn trace ("x same-workload anchor")
#
# The runs are interleaved (BENCH_ROUNDS rounds, default 7) and measured in CPU time; the
# figure to quote is "x anchor", the median over rounds of the speed ratio to the
# heaptrack_print run just before each, because this machine's speed changes by 2x from
# minute to minute. Then issue 26 item 2's verdicts per trace and analysis, from the table.
# Then live.sh (report over 1M and 10M live allocations; BENCH_SKIP_LIVE=1 skips it).
# Prints figures only; never fails on a slow result. Knobs: BENCH_ROUNDS, BENCH_KEEP=1.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
rounds=${BENCH_ROUNDS:-7}
cli=$build/bin/cumemtrace
for f in "$build/bench/cmt_bench_analysis" "$build/bench/cmt_bench_gen_trace" \
    "$build/bench/bench_capture_loop" "$build/bench/bench_churn" "$build/bench/bench_malloc_loop" \
    "$build/bench/bench_malloc_churn" "$cli"; do
    [[ -x $f ]] || { echo "run.sh: $f is missing; build first" >&2; exit 2; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/cmt-bench-analysis.XXXXXX")
[[ ${BENCH_KEEP:-0} == 1 ]] || trap 'rm -rf "$work"' EXIT

# 4 threads x 500000 pairs x 2 calls = 4,000,000 events (no warm-up pairs)
"$cli" record -q --no-symbolize -o "$work/recorded.cmt" -- \
    "$build/bench/bench_capture_loop" -t 4 -n 500000 -w 0 -d 20 >/dev/null
"$cli" record -q --no-symbolize -o "$work/churn.cmt" -- "$build/bench/bench_churn" 4000000
"$build/bench/cmt_bench_gen_trace" "$work/synthetic.cmt" 4000000 >/dev/null

anchor=() churn_arg=$work/churn.cmt
if command -v heaptrack >/dev/null && command -v heaptrack_print >/dev/null; then
    # 2,000,000 malloc/free pairs = 4,000,000 events (and 1000 warm-up pairs)
    heaptrack -o "$work/anchor" "$build/bench/bench_malloc_loop" -n 2000000 -w 0 >/dev/null 2>&1
    for ht in "$work"/anchor*.zst "$work"/anchor*.gz; do
        [[ -f $ht ]] && anchor=(-H "$ht" -E 4000000) && break
    done
    calls=$(heaptrack -o "$work/twin" "$build/bench/bench_malloc_churn" 4000000 2>/dev/null |
        grep -E '^[0-9]+$' | tail -1)
    for ht in "$work"/twin*.zst "$work"/twin*.gz; do
        [[ -f $ht && -n $calls ]] && churn_arg="$work/churn.cmt=$ht@$calls" && break
    done
fi
[[ ${#anchor[@]} -gt 0 ]] || echo "(heaptrack not installed: no anchor)"

echo "cumemtrace analysis benchmark: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- |
    sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$build/bench/cmt_bench_analysis" -r "$rounds" "${anchor[@]}" "$work/recorded.cmt" \
    "$churn_arg" "$work/synthetic.cmt" | tee "$work/table.txt"
echo
echo "target (issue 4): >= 20 M events/s where heaptrack_print reads about 16 M/s, i.e. at"
echo "least x1.25 anchor for report, oom and timeline; issue 26: x1.5 anchor on every trace and"
echo "at least 75% of the reader's own speed"
# issue 26 item 2's verdicts, from the table's rows (x anchor: the first "xN anchor" of a row)
awk 'function v(ok) { return ok ? "met" : "NOT met" }
    /^\// { n = split($1, p, "/"); trace = p[n]; sub(/\.cmt:?$/, "", trace) }
    /^  (report|oom|timeline) / && $2 == "best" && / of the reader/ {
        x = ""; pct = ""
        for (i = 1; i <= NF; i++) {
            if ($i == "anchor" && x == "") x = substr($(i - 1), 2)
            if ($i == "of" && $(i + 1) == "the" && $(i + 2) == "reader") pct = $(i - 1)
        }
        sub(/%/, "", pct)
        line[trace] = line[trace] sprintf("  %s x%s %s, %s%% %s;", $1, x, v(x + 0 >= 1.5), pct,
                                          v(pct + 0 >= 75))
        if (!(trace in seen)) { seen[trace] = 1; order[++k] = trace }
    }
    END { if (k) print "issue 26 item 2 (>= x1.5 anchor, >= 75% of the reader):"
          for (i = 1; i <= k; i++) printf "  %-10s%s\n", order[i], line[order[i]] }' "$work/table.txt"
# issue 26's live objects (1M and 10M allocations never freed): live.sh prints them
[[ ${BENCH_SKIP_LIVE:-0} == 1 ]] || { echo; "$here/live.sh" "$build"; }
[[ ${BENCH_KEEP:-0} == 1 ]] && echo "work folder kept: $work"
exit 0
