#!/usr/bin/env bash
# run.sh [BUILD_DIR] — the scale benchmark of the several-trace analyses (issue 15 item 5,
# issue 26 item 4): one merged `report` over 64 rank traces of 1,000,000 events each, its wall
# time, CPU and peak memory (RSS), read one trace at a time (--jobs 1) and in parallel
# (--jobs = the cores), next to the anchor: `report` of one trace, run 64 times in a row (what
# one did before); and `export -f csv --partitioned DIR --events` of the same traces: bytes
# per event of the events table as plain csv (--compress none, the anchor), as the default
# zstd parts and as `-f parquet` parts, and its wall and CPU at --jobs 1 and --jobs = the cores
# (parquet: --jobs 1, its CPU against the zstd csv's of the same round). Issue 26 item 4's
# targets are printed beside: report DIR's CPU at most the anchor's, the events table at most
# 20 B/event (zstd csv and parquet parts each), --jobs N's wall under --jobs 1's.
#
# The traces: cmt_bench_gen_trace's synthetic stress trace (bench/analysis), rank R of a
# 64-rank job on 8 hosts, each with its own random stream (about 8 bytes per event).
# The merged report does other work per trace than the single one (out-of-memory episodes, a
# timeline, the combined ledger at the GPU's moment taken in the same replay where it was
# guessed right, else a second replay to it: the member that fails first on each GPU; no call
# sites, no peak ledger), so --jobs 1 against the anchor is that difference, and --jobs N
# against --jobs 1 the parallel speed-up. Rounds are interleaved (BENCH_ROUNDS, default 3);
# the figures are medians. Prints figures only; never fails on a slow result.
# The anchor is timed as one shell loop (one process tree, its CPU read once): a sum of one
# GNU time figure per report, each rounded to 10 ms, carried up to 10 ms of error a trace.
# Knobs: BENCH_ROUNDS, BENCH_RANKS (64), BENCH_EVENTS (1000000), BENCH_KEEP=1, BENCH_EXPORT=0
# (the report figures only, without the exports). A small run
# (BENCH_RANKS=8 BENCH_EVENTS=200000 BENCH_ROUNDS=1) takes about a minute on 2 cores.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
rounds=${BENCH_ROUNDS:-3} ranks=${BENCH_RANKS:-64} events=${BENCH_EVENTS:-1000000}
export=${BENCH_EXPORT:-1}
cli=$build/bin/cumemtrace gen=$build/bench/cmt_bench_gen_trace
for f in "$cli" "$gen" /usr/bin/time; do
    [[ -x $f ]] || { echo "run.sh: $f is missing; build first (GNU time: apt-get install time)" >&2; exit 2; }
done
cores=$(nproc)
work=$(mktemp -d "${TMPDIR:-/tmp}/cmt-bench-fleet.XXXXXX")
[[ ${BENCH_KEEP:-0} == 1 ]] || trap 'rm -rf "$work"' EXIT
mkdir "$work/run"

t0=$(date +%s.%N)
for ((r = 0; r < ranks; r++)); do
    "$gen" "$work/run/rank$r.cmt" "$events" "$r" >/dev/null &
    (( (r + 1) % cores == 0 )) && wait
done
wait
t1=$(date +%s.%N)
bytes=$(du -cb "$work"/run/*.cmt | tail -1 | cut -f1)

# "WALL_S CPU_S MAXRSS_KB" of a command (its output discarded)
measure() {
    /usr/bin/time -f '%e %U %S %M' -o "$work/t" "$@" >/dev/null 2>"$work/err" || true
    awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}' "$work/t"
}

anchor() { # the single-trace reports in a row, as one measured shell loop (one process tree:
    # its CPU is read once, not summed from one rounded figure per report); RSS: the largest one's
    measure bash -c 'cli=$1; shift; for f; do "$cli" report "$f" >/dev/null; done' _ "$cli" \
        "$work"/run/*.cmt
}

export_to() { # DIR, options...: the partitioned export with the events table (-f csv unless
    # the options say otherwise)
    local dir=$1; shift
    rm -rf "$dir"
    measure "$cli" export -f csv --partitioned "$dir" --events "$@" "$work"/run/*.cmt
}

declare -a R_C A_W A_C A_M J1_W J1_C J1_M JN_W JN_C JN_M XP_W XP_C XP_M X1_W X1_C X1_M XN_W XN_C XN_M
declare -a Q1_W Q1_C Q1_M R_Q
for ((i = 0; i < rounds; i++)); do
    read -r w c m < <(anchor); A_W+=("$w"); A_C+=("$c"); A_M+=("$m")
    read -r w c m < <(measure "$cli" report --jobs 1 "$work/run"); J1_W+=("$w"); J1_C+=("$c"); J1_M+=("$m")
    # this round's pair: merged CPU over the anchor's (0 when the anchor read 0.00 s)
    R_C+=("$(awk -v m="$c" -v a="${A_C[-1]}" 'BEGIN { print (a > 0 ? m / a : 0) }')")
    read -r w c m < <(measure "$cli" report --jobs "$cores" "$work/run"); JN_W+=("$w"); JN_C+=("$c"); JN_M+=("$m")
    [[ $export == 1 ]] || continue
    read -r w c m < <(export_to "$work/plain" --compress none --jobs 1); XP_W+=("$w"); XP_C+=("$c"); XP_M+=("$m")
    read -r w c m < <(export_to "$work/zst1" --jobs 1); X1_W+=("$w"); X1_C+=("$c"); X1_M+=("$m")
    read -r w c m < <(export_to "$work/pq1" -f parquet --jobs 1); Q1_W+=("$w"); Q1_C+=("$c"); Q1_M+=("$m")
    # this round's pair: parquet's CPU over the zstd csv's
    R_Q+=("$(awk -v q="$c" -v a="${X1_C[-1]}" 'BEGIN { print (a > 0 ? q / a : 0) }')")
    read -r w c m < <(export_to "$work/zstN" --jobs "$cores"); XN_W+=("$w"); XN_C+=("$c"); XN_M+=("$m")
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
f2() { printf '%.2f' "$(echo "$1" | bc -l)"; }

"$cli" report "$work/run" > "$work/report.txt"
echo "cumemtrace several-trace benchmark: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- |
    sed 's/^ //'), $cores cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "traces: $ranks x $events events, $((bytes / 1048576)) MiB, generated in $(f2 "$t1 - $t0") s"
total=$((ranks * events))
row() { # label, wall, cpu, rss_kb
    printf '%-42s wall %7s s  cpu %7s s  %6s M events/s (wall)  peak RSS %5d MiB\n' "$1" \
        "$(f2 "$2")" "$(f2 "$3")" "$(f2 "$total / $2 / 1000000")" $(($4 / 1024))
}
aw=$(median "${A_W[@]}") ac=$(median "${A_C[@]}") am=$(median "${A_M[@]}")
j1w=$(median "${J1_W[@]}") j1c=$(median "${J1_C[@]}") j1m=$(median "${J1_M[@]}")
jnw=$(median "${JN_W[@]}") jnc=$(median "${JN_C[@]}") jnm=$(median "${JN_M[@]}")
row "anchor: report FILE, $ranks times in a row" "$aw" "$ac" "$am"
row "merged: report --jobs 1 DIR" "$j1w" "$j1c" "$j1m"
row "merged: report --jobs $cores DIR" "$jnw" "$jnc" "$jnm"
echo "wall time against the anchor: --jobs 1 x$(f2 "$aw / $j1w"), --jobs $cores x$(f2 "$aw / $jnw")" \
    "(x$(f2 "$j1w / $jnw") over --jobs 1); medians of $rounds interleaved rounds"
r_c=$(f2 "$(median "${R_C[@]}")")
echo "CPU of report --jobs 1 DIR against the anchor's: x$r_c (median of the $rounds rounds' ratios;" \
    "of the medians x$(f2 "$j1c / $ac"); target: at most x1.00) ->" \
    "$(awk -v v="$r_c" 'BEGIN { print (v == 0 ? "no figure" : v <= 1 ? "met" : "NOT met") }')"
if [[ $export == 1 ]]; then
# the events table's bytes (the last round's), and whether the job counts wrote the same files
plain_b=$(du -cb "$work"/plain/events/*/* | tail -1 | cut -f1)
zst_b=$(du -cb "$work"/zst1/events/*/* | tail -1 | cut -f1)
pq_b=$(du -cb "$work"/pq1/events/*/* | tail -1 | cut -f1)
same=$(diff -r "$work/zst1" "$work/zstN" >/dev/null && echo "the same files" || echo "DIFFERENT FILES")
xpw=$(median "${XP_W[@]}") xpc=$(median "${XP_C[@]}")
x1w=$(median "${X1_W[@]}") x1c=$(median "${X1_C[@]}")
xnw=$(median "${XN_W[@]}") xnc=$(median "${XN_C[@]}")
echo
row "export --events --compress none --jobs 1" "$xpw" "$xpc" "$(median "${XP_M[@]}")"
row "export --events --jobs 1 (zstd)" "$x1w" "$x1c" "$(median "${X1_M[@]}")"
row "export --events --jobs $cores (zstd)" "$xnw" "$xnc" "$(median "${XN_M[@]}")"
row "export -f parquet --events --jobs 1" "$(median "${Q1_W[@]}")" "$(median "${Q1_C[@]}")" \
    "$(median "${Q1_M[@]}")"
at_most() { awk -v v="$1" -v t="$2" 'BEGIN { print (v <= t ? "met" : "NOT met") }'; }
echo "events table: plain csv $(f2 "$plain_b / $total") B/event (anchor), zstd parts" \
    "$(f2 "$zst_b / $total") B/event, x$(f2 "$plain_b / $zst_b") smaller; parquet parts" \
    "$(f2 "$pq_b / $total") B/event, x$(f2 "$plain_b / $pq_b") smaller;" \
    "the traces: $(f2 "$bytes / $total") B/event"
echo "target (issue 26 item 4): at most 20 B/event with --events: zstd csv parts" \
    "$(at_most "$(f2 "$zst_b / $total")" 20), parquet parts $(at_most "$(f2 "$pq_b / $total")" 20)"
echo "parquet's export CPU against the zstd csv's: x$(f2 "$(median "${R_Q[@]}")") (median of the" \
    "$rounds rounds' ratios; target: at most x1.5)"
echo "export wall: --jobs $cores x$(f2 "$x1w / $xnw") over --jobs 1 ($same);" \
    "zstd costs x$(f2 "$x1c / $xpc") the CPU of plain csv"
echo "target (issue 26 item 4): spread over the cores: --jobs $cores above x1.00 the wall of" \
    "--jobs 1 (at most x$cores) -> $(awk -v a="$x1w" -v b="$xnw" 'BEGIN { print (b > 0 && a / b > 1 ? "met" : "NOT met") }')," \
    "CPU x$(f2 "$xnc / $x1c") of --jobs 1's; cores busy (CPU / wall): --jobs 1 $(f2 "$x1c / $x1w")," \
    "--jobs $cores $(f2 "$xnc / $xnw") (load: $(cut -d' ' -f1-3 /proc/loadavg))"
fi
head -3 "$work/report.txt"
[[ ${BENCH_KEEP:-0} == 1 ]] && echo "work folder kept: $work"
exit 0
