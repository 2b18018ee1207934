#!/bin/sh
# check_sim_alloc.sh PROG — bench_sim_alloc runs and keeps its books: one line per count, the
# count it names, the anchor's device back at its 1000 live after every measure (what it
# allocates there it frees), a ratio printed; and counts out of order are refused (exit 2).
set -eu
prog=$1
export SIMCUDA_DEVICES=2 SIMCUDA_MEMORY=64GiB SIMCUDA_REUSE_ADDRESSES=0
out=$("$prog" -w 400 -s 4 1000 3000 9000)
echo "$out"
[ "$(echo "$out" | wc -l)" -eq 3 ] || { echo "want 3 lines" >&2; exit 1; }
for n in 1000 3000 9000; do
    echo "$out" | grep -q "^bench_sim_alloc live=$n cpu_ns_per_call=[0-9.]* anchor_live=1000 anchor_cpu_ns_per_call=[0-9.]* ratio=[0-9.]* process_cpu_s=[0-9.]*$" ||
        { echo "no line for live=$n with the anchor at 1000" >&2; exit 1; }
done
# 9000 + 400 timed on device 0 and 1000 kept on device 1 in 64 GiB of 2 MiB pages: past
# 32768 pages the device is full, so a count beyond names the allocation that failed
if "$prog" -w 400 -s 4 40000 2>/dev/null; then echo "40000 pages fit in 64 GiB?" >&2; exit 1; fi
set +e
"$prog" 3000 1000 >/dev/null 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "counts out of order: exit $rc, want 2" >&2; exit 1; }
echo ok
