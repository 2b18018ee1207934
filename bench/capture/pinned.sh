#!/usr/bin/env bash
# pinned.sh [BUILD_DIR] — a diagnostic beside run.sh's 8-threads-against-1 figure: the same
# calls (bench_capture_loop, `record`, stacks on, BENCH_THREAD_PAIRS pairs per thread) with
# every calling thread on CPU 0 and the shim's writer thread (named cmt-writer) moved to CPU 1
# once it starts, so that the writer never shares the callers' core. run.sh's figure on a
# 2-core machine has 8 callers and the writer on 2 cores; this one says how much of its ratio
# is the shim's own per-call cost growing with threads, and how much the writer taking the
# callers' core. Threads on one core never run at once, so a line shared between threads
# costs nothing here: this is no stand-in for run.sh's figure, only its complement.
# Prints, over BENCH_ROUNDS rounds (default 10; each round 1 and 8 threads, bare and shimmed,
# forwards then backwards), the median CPU per call of each and the median of the paired
# ratios (8 threads' added CPU over 1 thread's). BENCH_BASE_SHIM=PATH: the same under that
# libcumemtrace.so, in the same rounds. Needs taskset and 2 CPUs; figures only, never a failure.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
rounds=${BENCH_ROUNDS:-10}
tpairs=${BENCH_THREAD_PAIRS:-50000}
warm=300000 # untimed pairs per thread: time to move the writer before the timed ones
capture=$build/bench/bench_capture_loop
cli=$build/bin/cumemtrace
for f in "$capture" "$cli" "$build/lib/libcumemtrace.so"; do
    [[ -e $f ]] || { echo "pinned.sh: $f is missing; build first" >&2; exit 2; }
done
command -v taskset >/dev/null || { echo "pinned.sh: needs taskset (util-linux)" >&2; exit 2; }
(($(nproc) >= 2)) || { echo "pinned.sh: needs 2 CPUs" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/cmt-pinned.XXXXXX")
trap 'rm -rf "$work"' EXIT

shims=("$build/lib/libcumemtrace.so")
[[ -n ${BENCH_BASE_SHIM:-} ]] && shims+=("$BENCH_BASE_SHIM")

# one T SHIM: the calling threads' CPU ns per call (SHIM empty: bare).
one() {
    local t=$1 so=$2 out=$work/out
    if [[ -z $so ]]; then
        taskset -c 0 "$capture" -n "$tpairs" -w "$warm" -t "$t" >"$out"
    else
        rm -f "$work/p.cmt"
        CUMEMTRACE_SHIM=$so taskset -c 0 "$cli" record -q --no-symbolize -o "$work/p.cmt" \
            "$capture" -n "$tpairs" -w "$warm" -t "$t" >"$out" 2>&1 &
        local rec=$! moved=0 child tid name
        for _ in $(seq 5000); do # the writer starts at the first call, in the warm-up
            for child in $(pgrep -P "$rec"); do
                for tid in $(ls /proc/"$child"/task 2>/dev/null | sort -n); do
                    read -r name <"/proc/$child/task/$tid/comm" 2>/dev/null || continue
                    # the writer by its name, or (a shim that does not name it) the first
                    # thread the process made: the writer starts before the loop's threads
                    if [[ $name == cmt-writer || ($so != "${shims[0]}" && $tid != "$child") ]]; then
                        taskset -p -c 1 "$tid" >/dev/null && moved=1
                        break
                    fi
                done
            done
            ((moved)) && break
            sleep 0.001
        done
        wait "$rec"
        ((moved)) || { echo "pinned.sh: no cmt-writer thread seen:" >&2; head -3 "$out" >&2; exit 1; }
    fi
    grep -o 'cpu_ns_per_call=[0-9.]*' "$out" | cut -d= -f2
}

declare -A runs
for ((r = 0; r < rounds; r++)); do
    order=("1 -" "8 -")
    for k in "${!shims[@]}"; do order+=("1 $k" "8 $k"); done
    ((r % 2)) && mapfile -t order < <(printf '%s\n' "${order[@]}" | tac)
    for o in "${order[@]}"; do
        read -r t k <<<"$o"
        so=""
        [[ $k != - ]] && so=${shims[$k]}
        runs[$t,$k,$r]=$(one "$t" "$so")
    done
done

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
col() { for ((r = 0; r < rounds; r++)); do echo "${runs[$1,$2,$r]}"; done | median; }
added() { awk -v s="$(col "$1" "$2")" -v b="$(col "$1" -)" 'BEGIN {print s - b}'; } # T K
echo "calling threads on CPU 0, the writer on CPU 1; $rounds rounds, $tpairs pairs per thread"
printf '  bare CPU per call: 1 thread %.1f ns, 8 threads %.1f ns\n' "$(col 1 -)" "$(col 8 -)"
for k in "${!shims[@]}"; do
    name="this shim"
    ((k)) && name="BENCH_BASE_SHIM"
    ratio=$(for ((r = 0; r < rounds; r++)); do
        awk -v a="${runs[1,-,$r]}" -v b="${runs[1,$k,$r]}" -v c="${runs[8,-,$r]}" -v d="${runs[8,$k,$r]}" \
            'BEGIN {printf "%.4f\n", (d - c) / (b - a)}'
    done | median)
    printf '  %s: CPU added per call 1 thread %.1f ns, 8 threads %.1f ns; 8 against 1 %.3fx (median of %d paired ratios)\n' \
        "$name" "$(added 1 "$k")" "$(added 8 "$k")" "$ratio" "$rounds"
done
