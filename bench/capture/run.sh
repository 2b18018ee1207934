#!/usr/bin/env bash
# run.sh [BUILD_DIR] — the capture benchmark: what libcumemtrace.so adds per intercepted
# driver call, next to what heaptrack adds per malloc/free on the same loop shape.
#
# Runs, interleaved so that load from other processes hits every mode alike, each mode
# BENCH_REPS times (default 5) and prints the medians:
#   bench_capture_loop bare, under the shim with CUMEMTRACE_STACK_DEPTH=0, with default
#   stacks (64), on 1, 4 and 8 threads bare and shimmed (the 1-thread run makes the 8-thread
#   run's calls per thread, so the two compare like with like, rep by rep); bench_malloc_loop
#   bare and under heaptrack; and bytes per event of each trace (file size / events from
#   `cumemtrace dump`).
# Prints figures only (the target lines are information, never a failure); a full run takes
# about a minute and a half on 2 cores (three with BENCH_BASE_SHIM). Knobs: BENCH_REPS, BENCH_PAIRS (pairs per run, default 200000),
# BENCH_THREAD_PAIRS (pairs per thread in the threaded runs, default 50000),
# BENCH_THREAD_WARMUP (untimed pairs per thread before them, default 65536: one ring lap),
# BENCH_THREAD_ROUNDS (1- and 8-thread rounds per rep, default 10: the 8-thread CPU moves with
# the load, so the ratio is the median of reps x rounds paired ratios, printed with its
# quartiles and its 95% interval, and the verdict is the interval's; a round runs its group
# forwards, the next one backwards, so a drift in the load hits both thread counts alike), BENCH_KEEP=1 (keep the work folder with the traces),
# BENCH_BASE_SHIM=PATH (also run stacks on, on 1 thread and in the 1- and 8-thread rounds,
# stacks off, and annotate.h at depth 0 under that libcumemtrace.so, e.g. one built from main:
# a before/after pair of each figure in the same run).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
reps=${BENCH_REPS:-5}
pairs=${BENCH_PAIRS:-200000}
tpairs=${BENCH_THREAD_PAIRS:-50000}
trounds=${BENCH_THREAD_ROUNDS:-10}
# untimed pairs a thread runs first in the 1- against 8-thread rounds: 65536 pairs, one lap of
# a ring in record's state file (CMT__SHARED_RING_SIZE, 2^17 entries, 13 MiB touched as used),
# so that the timed calls are the steady state's; a ring's first lap faults its pages in
# (the writer prefaults them ahead of the thread, which it keeps up with on 1 thread but not
# on 8 sharing 2 cores), printed apart as the first lap's figure
twarm=${BENCH_THREAD_WARMUP:-65536}
depth=20
capture=$build/bench/bench_capture_loop
mallocb=$build/bench/bench_malloc_loop
annotate=$build/bench/bench_annotate_loop
cli=$build/bin/cumemtrace
for f in "$capture" "$mallocb" "$annotate" "$cli" "$build/lib/libcumemtrace.so"; do
    [[ -x $f || -f $f ]] || { echo "run.sh: $f is missing; build first" >&2; exit 2; }
done
have_heaptrack=1
command -v heaptrack >/dev/null || have_heaptrack=0

work=$(mktemp -d "${TMPDIR:-/tmp}/cmt-bench.XXXXXX")
[[ ${BENCH_KEEP:-0} == 1 ]] || trap 'rm -rf "$work"' EXIT

# Modes: name | command prefix (the benchmark's arguments are appended).
modes=(bare shim0 shim64 t1bare t1shim t8bare t8shim t4bare t4shim mbare mheap abare ashim0 ashim64
    a1bare a1shim a8bare a8shim m1bare m8bare a1cold a8cold)
declare -A label args
label[bare]="driver loop, no shim";            args[bare]="-n $pairs"
label[shim0]="shim, stacks off (DEPTH=0)";     args[shim0]="-n $pairs"
label[shim64]="shim, stacks on (DEPTH=64)";    args[shim64]="-n $pairs"
label[t1bare]="1 thread as the 8, no shim";     args[t1bare]="-n $tpairs -w $twarm -t 1"
label[t1shim]="1 thread as the 8, shim (64)";  args[t1shim]="-n $tpairs -w $twarm -t 1"
label[t4bare]="4 threads, no shim";            args[t4bare]="-n $tpairs -t 4"
label[t4shim]="4 threads, shim (DEPTH=64)";    args[t4shim]="-n $tpairs -t 4"
label[t8bare]="8 threads, no shim";            args[t8bare]="-n $tpairs -w $twarm -t 8"
label[t8shim]="8 threads, shim (DEPTH=64)";    args[t8shim]="-n $tpairs -w $twarm -t 8"
label[mbare]="malloc loop, no tracer";         args[mbare]="-n $pairs"
label[mheap]="malloc loop under heaptrack";    args[mheap]="-n $pairs"
label[abare]="annotate.h, no shim (no-ops)";   args[abare]="-n $pairs"
label[ashim0]="annotate.h, shim, DEPTH=0";     args[ashim0]="-n $pairs"
label[ashim64]="annotate.h, shim, DEPTH=64";   args[ashim64]="-n $pairs"
label[a1bare]="annotate.h 1 thread, no shim";  args[a1bare]="-n $tpairs -w $twarm -t 1"
label[a1shim]="annotate.h 1 thread, shim (64)"; args[a1shim]="-n $tpairs -w $twarm -t 1"
label[a8bare]="annotate.h 8 threads, no shim"; args[a8bare]="-n $tpairs -w $twarm -t 8"
label[a8shim]="annotate.h 8 threads, shim (64)"; args[a8shim]="-n $tpairs -w $twarm -t 8"
label[a1cold]="annotate.h 1 thr, 1st ring lap"; args[a1cold]="-n $tpairs -w 0 -t 1"
label[a8cold]="annotate.h 8 thr, 1st ring lap"; args[a8cold]="-n $tpairs -w 0 -t 8"
label[m1bare]="malloc loop 1 thread, no tracer"; args[m1bare]="-n $tpairs -w $twarm -t 1"
label[m8bare]="malloc loop 8 threads, no tracer"; args[m8bare]="-n $tpairs -w $twarm -t 8"

if [[ -n ${BENCH_BASE_SHIM:-} ]]; then # before/after in one run: stacks on under another shim
    [[ -f $BENCH_BASE_SHIM ]] || { echo "run.sh: BENCH_BASE_SHIM=$BENCH_BASE_SHIM is missing" >&2; exit 2; }
    with_base=() # each base mode right after its own, so that the pair runs back to back
    for m in "${modes[@]}"; do
        with_base+=("$m")
        case $m in shim0) with_base+=(shim0base) ;; shim64) with_base+=(shimbase) ;; ashim0) with_base+=(ashim0base) ;; esac
    done
    modes=("${with_base[@]}" t1base t8base) # t1base and t8base run in t1bare's group
    label[shimbase]="BENCH_BASE_SHIM, stacks on (64)"; args[shimbase]="-n $pairs"
    label[shim0base]="BENCH_BASE_SHIM, stacks off";  args[shim0base]="-n $pairs"
    label[ashim0base]="annotate.h, BASE_SHIM, DEPTH=0"; args[ashim0base]="-n $pairs"
    label[t1base]="1 thread as the 8, BASE_SHIM";   args[t1base]="-n $tpairs -t 1"
    label[t8base]="8 threads, BENCH_BASE_SHIM";     args[t8base]="-n $tpairs -t 8"
fi
# the 1- against 8-thread rounds (issue 26): the driver loop; annotate.h's, whose bare calls are
# no-ops, so that what the 8 threads add is the shim's alone, with no driver lock under it
# (simcuda's calls take one process-wide mutex: 8 threads on 2 cores queue on it, and the
# bare loop's CPU per call moves with that queue, by more than the shim adds); and the bare
# malloc loop's, this machine's own 8-thread factor on a loop that shares nothing
group=(t1bare t1shim t8bare t8shim a1bare a1shim a8bare a8shim m1bare m8bare a1cold a8cold)
[[ -n ${BENCH_BASE_SHIM:-} ]] && group+=(t1base t8base)

run_mode() { # mode rep → prints the benchmark's result line
    local m=$1 rep=$2 out=$work/$1.$2
    local a="-d $depth ${args[$m]}"
    case $m in
    bare | t1bare | t4bare | t8bare) "$capture" $a ;;
    shim0) "$cli" record -q --no-symbolize --stack-depth 0 -o "$out.cmt" -- "$capture" $a ;;
    shim64 | t1shim | t4shim | t8shim)
        "$cli" record -q --no-symbolize --stack-depth 64 -o "$out.cmt" -- "$capture" $a ;;
    mbare | m1bare | m8bare) "$mallocb" $a ;;
    abare | a1bare | a8bare) "$annotate" $a ;;
    ashim0) "$cli" record -q --no-symbolize --stack-depth 0 -o "$out.cmt" -- "$annotate" $a ;;
    ashim64 | a1shim | a8shim | a1cold | a8cold)
        "$cli" record -q --no-symbolize --stack-depth 64 -o "$out.cmt" -- "$annotate" $a ;;
    mheap) heaptrack -o "$out.heaptrack" "$mallocb" $a 2>&1 ;;
    shimbase | t1base | t8base) CUMEMTRACE_SHIM=$BENCH_BASE_SHIM "$cli" record -q --no-symbolize --stack-depth 64 \
        -o "$out.cmt" -- "$capture" $a ;;
    shim0base) CUMEMTRACE_SHIM=$BENCH_BASE_SHIM "$cli" record -q --no-symbolize --stack-depth 0 \
        -o "$out.cmt" -- "$capture" $a ;;
    ashim0base) CUMEMTRACE_SHIM=$BENCH_BASE_SHIM "$cli" record -q --no-symbolize --stack-depth 0 \
        -o "$out.cmt" -- "$annotate" $a ;;
    esac | grep -E '^bench_(capture|malloc|annotate)_loop ' || { echo "run.sh: mode $m failed" >&2; exit 1; }
}

field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p"; }
median() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR+1)/2]; else printf "%.1f\n", (v[NR/2]+v[NR/2+1])/2}'; }

echo "cumemtrace capture benchmark: $reps runs per mode, medians"
echo "  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  driver loop: cuMemAlloc_v2(1 MiB)/cuMemFree_v2 pairs, $depth frames deep, on simcuda;"
echo "  malloc loop: malloc(1 MiB)/free pairs, same shape; $pairs pairs (threads: $tpairs each)"
echo "  annotate.h: alloc/free_requested report pairs, same shape (a sub-allocator's cost)"
record_mode() { # mode run-id → appends the run's figures to the mode's files
    local line
    line=$(run_mode "$1" "$2")
    echo "$line" | field ns_per_call >>"$work/$1.wall"
    echo "$line" | field cpu_ns_per_call >>"$work/$1.cpu"
    echo "$line" | field throughput_ns_per_call >>"$work/$1.tput"
}
for ((rep = 1; rep <= reps; rep++)); do
    for m in "${modes[@]}"; do
        [[ $m == mheap && $have_heaptrack == 0 ]] && continue
        case $m in
        t1shim | t8bare | t8shim | t1base | t8base | a?bare | a?shim | a?cold | m?bare)
            continue ;; # run with t1bare, as a group
        t1bare) # 1 against 8 threads: the group back to back, BENCH_THREAD_ROUNDS times a rep,
            # forwards then backwards (each round's figures go to the same line of each file)
            for ((round = 1; round <= trounds; round++)); do
                order=("${group[@]}")
                (((rep * trounds + round) % 2)) && order=($(printf '%s\n' "${group[@]}" | tac))
                for g in "${order[@]}"; do record_mode "$g" "$rep.$round"; done
            done ;;
        *) record_mode "$m" "$rep" ;;
        esac
    done
done

# 8 threads against 1 (issue 26), paired: the CPU each adds per call in the same round (t1 and
# t8 run back to back, the same calls per thread), one ratio per round, then their median.
t8_vs_t1() { # shim1 shim8 [bare1 bare8] → one ratio per round, into $work/ratio.shim8
    local b1=${3:-t1bare} b8=${4:-t8bare}
    paste "$work"/{$2,$b8,$1,$b1}.cpu | awk '$3 > $4 {printf "%.3f\n", ($1-$2)/($3-$4)}' \
        >"$work/ratio.$2"
    paste "$work"/{$1,$b1}.cpu | awk '{printf "%.1f\n", $1-$2}' >"$work/added.$1"
    paste "$work"/{$2,$b8}.cpu | awk '{printf "%.1f\n", $1-$2}' >"$work/added.$2"
}
t8_vs_t1 t1shim t8shim
t8_vs_t1 a1shim a8shim a1bare a8bare
t8_vs_t1 a1cold a8cold a1bare a8bare
paste "$work"/{m8bare,m1bare}.cpu | awk '$2 > 0 {printf "%.3f\n", $1/$2}' >"$work/ratio.m8bare"
[[ -f $work/t1base.cpu ]] && t8_vs_t1 t1base t8base

declare -A wall cpu tput bpe
for m in "${modes[@]}"; do
    [[ -f $work/$m.wall ]] || continue
    wall[$m]=$(median <"$work/$m.wall")
    cpu[$m]=$(median <"$work/$m.cpu")
    tput[$m]=$(median <"$work/$m.tput")
done
for m in shim0 shim64 t1shim t4shim t8shim ashim0 ashim64 shimbase shim0base ashim0base; do # bytes per event of the last run's trace
    f=$(ls "$work/$m.$reps".*cmt 2>/dev/null | head -1 || true) # none: a mode not run (pipefail)
    [[ -n $f ]] || continue
    events=$("$cli" dump "$f" | wc -l)
    size=$(stat -c %s "$f")
    bpe[$m]=$(awk -v s="$size" -v e="$events" 'BEGIN {printf "%.2f (%d B / %d events)", s/e, s, e}')
done

added() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "" || b == "") print "-"; else printf "%.1f", a-b}'; }
base_of() { case $1 in shim*) echo bare ;; t1shim | t1base) echo t1bare ;; t4shim) echo t4bare ;; t8shim | t8base) echo t8bare ;; mheap) echo mbare ;; ashim*) echo abare ;; a1shim | a1cold) echo a1bare ;; a8shim | a8cold) echo a8bare ;; esac; }
echo
printf '%-30s %9s %9s %9s %9s %9s  %s\n' mode "ns/call" added "cpu ns" added "all thr" "bytes/event on disk"
for m in "${modes[@]}"; do
    [[ -n ${wall[$m]:-} ]] || { printf '%-30s (heaptrack not installed)\n' "${label[$m]}"; continue; }
    b=$(base_of "$m")
    aw=-; ac=-
    [[ -n $b ]] && aw=$(added "${wall[$m]}" "${wall[$b]}") && ac=$(added "${cpu[$m]}" "${cpu[$b]}")
    printf '%-30s %9s %9s %9s %9s %9s  %s\n' "${label[$m]}" "${wall[$m]}" "$aw" "${cpu[$m]}" "$ac" \
        "${tput[$m]}" "${bpe[$m]:--}"
done
echo
echo "ns/call: wall time per call on the calling thread (threads: mean over threads; with more"
echo "threads than cores it includes time spent descheduled). cpu ns: that thread's CPU time"
echo "per call (the writer thread and heaptrack's interpreter run beside it and are not counted)."
echo "all thr: wall time of the whole run / calls of all threads (inverse throughput)."
echo
verdict() { awk -v v="$1" -v lim="$2" 'BEGIN {if (v == "-" || lim == "-") print "no figure"; else print (v <= lim ? "met" : "NOT met")}'; }
target() { # what limit_wall limit_cpu value_wall value_cpu
    printf '  %-40s wall %7s ns vs %7s -> %-8s cpu %7s ns vs %7s -> %s\n' "$1" "$4" "$2" \
        "$(verdict "$4" "$2")" "$5" "$3" "$(verdict "$5" "$3")"
}
echo "targets (issues 3 and 26), on the calling thread's wall time and on its CPU time:"
target "stacks on adds no more than heaptrack" "$(added "${wall[mheap]:-}" "${wall[mbare]:-}")" \
    "$(added "${cpu[mheap]:-}" "${cpu[mbare]:-}")" "$(added "${wall[shim64]}" "${wall[bare]}")" \
    "$(added "${cpu[shim64]}" "${cpu[bare]}")"
target "stacks off adds <= 150 ns" 150 150 "$(added "${wall[shim0]}" "${wall[bare]}")" \
    "$(added "${cpu[shim0]}" "${cpu[bare]}")"
[[ -n ${cpu[shim0base]:-} ]] && target "  the same for BENCH_BASE_SHIM" 150 150 \
    "$(added "${wall[shim0base]}" "${wall[bare]}")" "$(added "${cpu[shim0base]}" "${cpu[bare]}")"
# q1 median q3 of a file of figures (linear between ranks), "- - -" when it is empty
quartiles() { sort -g "$1" | awk 'function q(p,  h, i) {h = (NR - 1) * p + 1; i = int(h)
    return v[i] + (i < NR ? (h - i) * (v[i + 1] - v[i]) : 0)}
    {v[NR] = $1} END {if (NR == 0) print "- - -"; else printf "%.3f %.3f %.3f\n", q(.25), q(.5), q(.75)}'; }
# The median's 95% interval, free of any distribution: the values of ranks n/2 -+ 0.98 sqrt(n)
# (the binomial's), "- -" when there are fewer than 6 figures
median_ci() { sort -g "$1" | awk '{v[NR] = $1} END {if (NR < 6) {print "- -"; exit}
    d = 0.98 * sqrt(NR); lo = int(NR / 2 - d); hi = int(NR / 2 + 1 + d + 0.999)
    if (lo < 1) lo = 1; if (hi > NR) hi = NR; printf "%.3f %.3f\n", v[lo], v[hi]}'; }
t8_line() { # what shim1 shim8: the median paired ratio, its spread, the added CPU beside it
    local r ci a1 a8
    read -r -a r < <(quartiles "$work/ratio.$3")
    read -r -a ci < <(median_ci "$work/ratio.$3")
    read -r -a a1 < <(quartiles "$work/added.$2")
    read -r -a a8 < <(quartiles "$work/added.$3")
    local v
    v=$(awk -v lo="${ci[0]}" -v hi="${ci[1]}" 'BEGIN {if (lo == "-") print "no figure (too few rounds)";
        else if (hi <= 1.3) print "met"; else if (lo > 1.3) print "NOT met";
        else print "not shown (the interval spans 1.3)"}')
    printf '  %-40s %sx (q1-q3 %s-%s; median 95%% in %s-%s; %d rounds) -> %s\n' "$1" "${r[1]}" \
        "${r[0]}" "${r[2]}" "${ci[0]}" "${ci[1]}" "$(wc -l <"$work/ratio.$3")" "$v"
    printf '  %-40s %.1f ns at 1 thread (q1-q3 %.1f-%.1f), %.1f at 8 (%.1f-%.1f)\n' "  CPU added per call, by round" \
        "${a1[1]}" "${a1[0]}" "${a1[2]}" "${a8[1]}" "${a8[0]}" "${a8[2]}"
}
t8_line "8 threads add <= 1.3x one thread's CPU" t1shim t8shim
t8_line "  on annotate.h's loop (the shim alone)" a1shim a8shim
t8_line "  its rings' first lap (information)" a1cold a8cold
read -r -a mq < <(quartiles "$work/ratio.m8bare")
printf '  %-40s %sx (q1-q3 %s-%s): 8 threads on %d cores, nothing shared\n' \
    "  the machine's own: bare malloc loop" "${mq[1]}" "${mq[0]}" "${mq[2]}" "$(nproc)"
[[ -f $work/ratio.t8base ]] && t8_line "  the same for BENCH_BASE_SHIM" t1base t8base
target "annotate.h report <= 100 ns (DEPTH=0)" 100 100 "$(added "${wall[ashim0]}" "${wall[abare]}")" \
    "$(added "${cpu[ashim0]}" "${cpu[abare]}")"
[[ -n ${cpu[ashim0base]:-} ]] && target "  the same for BENCH_BASE_SHIM" 100 100 \
    "$(added "${wall[ashim0base]}" "${wall[abare]}")" "$(added "${cpu[ashim0base]}" "${cpu[abare]}")"
# issue 26: an annotate.h report's bytes on disk, with a driver call's beside (the anchor)
printf '  %-40s %s (a driver call: %s) -> %s\n' "annotate.h report <= 1.5 B/event, DEPTH=0" \
    "${bpe[ashim0]%% *}" "${bpe[shim0]%% *}" "$(verdict "${bpe[ashim0]%% *}" 1.5)"
printf '  %-40s %s -> %s\n' "<= 4 bytes per event on disk (stacks on)" "${bpe[shim64]%% *}" \
    "$(verdict "${bpe[shim64]%% *}" 4)"
# Issue 26: the CPU stacks on add per call against heaptrack's, paired: one ratio per rep
# (each mode against its bare run of the same rep), then their median.
vs_heaptrack() {
    [[ -f $work/mheap.cpu ]] || { echo "-"; return; }
    paste "$work/$1.cpu" "$work/bare.cpu" "$work/mheap.cpu" "$work/mbare.cpu" |
        awk '$3 > $4 {printf "%.3f\n", ($1-$2)/($3-$4)}' | median
}
r=$(vs_heaptrack shim64)
printf '  %-40s %s -> %s\n' "stacks on: CPU added <= 0.7x heaptrack's" "${r}x" "$(verdict "$r" 0.7)"
[[ -n ${cpu[shimbase]:-} ]] && printf '  %-40s %s\n' "  the same for BENCH_BASE_SHIM" "$(vs_heaptrack shimbase)x"
[[ ${BENCH_KEEP:-0} == 1 ]] && echo "work folder kept: $work"
exit 0
