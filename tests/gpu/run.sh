#!/usr/bin/env bash
# tests/gpu/run.sh — cumemtrace on a real GPU (see README.md beside this file).
#
# Builds gpu_alloc.cu with nvcc, records it with `cumemtrace record`, and checks the trace:
# cudaMalloc → cuMemAlloc_v2, cudaMallocAsync → cuMemAllocAsync, the VMM sequence in order,
# a failed allocation (result 2) followed by its MEMINFO record, a DEVICE record, symbolized
# stacks. When `import torch` works and sees a GPU, also records torch_alloc.py under the
# default allocator, expandable_segments:True and backend:cudaMallocAsync, each provoking an
# OOM, and with `record --torch` a small training loop and a provoked fragmentation OOM
# (torch_train.py, checked by check_torch.py: PyTorch's peaks, its own snapshot, the model's
# self-check). One PASS/FAIL line per check, a summary, exit 1 on any failure. Traces and logs go to
# ${OUT:-/tmp/cumemtrace-gpu}. Uses build/ (CMT_BUILD_DIR overrides), building it if missing.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${CMT_BUILD_DIR:-$root/build}
out=${OUT:-/tmp/cumemtrace-gpu}
budget=${GPU_CHECK_BUDGET_S:-280} # stop starting new steps after this many seconds
mkdir -p "$out" || { echo "FAIL setup: cannot create $out"; exit 1; }
exec > >(tee "$out/run.log") 2>&1

passed=0 failed=0 skipped=0
async='cuMemAllocAsync|cuMemAllocAsync_ptsz|cuMemAllocFromPoolAsync|cuMemAllocFromPoolAsync_ptsz'
pass() { echo "PASS $*"; passed=$((passed + 1)); }
fail() { echo "FAIL $*"; failed=$((failed + 1)); }
skip() { echo "SKIP $*"; skipped=$((skipped + 1)); }
summary() {
    echo
    echo "SUMMARY: $passed passed, $failed failed, $skipped skipped in ${SECONDS}s (logs and traces in $out)"
    [[ $failed -eq 0 ]]
    exit
}
in_budget() { # name → 0 while time is left for another step
    ((SECONDS < budget)) && return 0
    skip "$1 (time budget of ${budget}s used up)"
    return 1
}
# Runs check_trace.py on a dump and counts its PASS/FAIL lines. label dump checks...
checks() {
    local label=$1 dump=$2 line
    shift 2
    while IFS= read -r line; do
        case $line in
        PASS\ *) pass "${line#PASS }" ;;
        FAIL\ *) fail "${line#FAIL }" ;;
        *) echo "$line" ;;
        esac
    done < <(python3 "$here/check_trace.py" "$label" "$dump" "$@" 2>&1)
}
# Runs check_torch.py (PASS/FAIL/SKIP lines) on a `record --torch` run. mode trace
torch_checks() {
    local mode=$1 trace=$2 name=torch_$1 line
    while IFS= read -r line; do
        case $line in
        PASS\ *) pass "${line#PASS }" ;;
        FAIL\ *) fail "${line#FAIL }" ;;
        SKIP\ *) skip "${line#SKIP }" ;;
        *) echo "$line" ;;
        esac
    done < <(python3 "$here/check_torch.py" "$mode" "$out" "$trace" "$out/$name.report.json" \
        "$out/$name.whatif.txt" 2>&1)
}
# Records COMMAND with the CLI; sets $trace to the largest trace it wrote. name log opts -- cmd
record() {
    local name=$1 log=$2
    shift 2
    rm -f "$out/$name".*.cmt
    timeout 150 "$cli" record -o "$out/$name.%p.cmt" "$@" >"$log" 2>&1
    local rc=$?
    trace=$(ls -S "$out/$name".*.cmt 2>/dev/null | head -1)
    return $rc
}

echo "cumemtrace GPU check: $(date -u '+%Y-%m-%d %H:%M:%SZ') on $(hostname)"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version \
    --format=csv,noheader 2>&1 | sed 's/^/  gpu: /'

# ---- prerequisites ----
cli=$build/bin/cumemtrace
if [[ ! -x $cli || ! -f $build/lib/libcumemtrace.so ]]; then
    echo "building $build (no cumemtrace found there)"
    if cmake -S "$root" -B "$build" -DBUILD_TESTING=OFF >"$out/build.log" 2>&1 &&
        cmake --build "$build" -j"$(nproc)" >>"$out/build.log" 2>&1; then
        pass "build: cmake built $build"
    else
        fail "build: cmake failed (see $out/build.log)"
        summary
    fi
fi
if ! command -v python3 >/dev/null; then
    fail "setup: python3 is needed to check the traces"
    summary
fi
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
[[ -x $nvcc ]] || nvcc=$(command -v nvcc || true)
if [[ -z $nvcc ]]; then
    fail "setup: nvcc not found (set NVCC)"
    summary
fi

# ---- the CUDA program ----
if timeout 180 "$nvcc" -O1 -g -o "$out/gpu_alloc" "$here/gpu_alloc.cu" -lcuda >"$out/nvcc.log" 2>&1; then
    pass "gpu_alloc: nvcc build ($("$nvcc" --version | grep -o 'release [0-9.]*'))"
    if in_budget "gpu_alloc: record"; then
        if record gpu_alloc "$out/gpu_alloc.log" -- "$out/gpu_alloc"; then
            pass "gpu_alloc: ran under cumemtrace record, every step as expected (exit 0)"
        else
            fail "gpu_alloc: exit status not 0 under cumemtrace record (see $out/gpu_alloc.log)"
        fi
        sed 's/^/  | /' "$out/gpu_alloc.log"
        if [[ -n $trace ]] && "$cli" dump --stacks --all "$trace" >"$out/gpu_alloc.jsonl" 2>"$out/gpu_alloc.dump.err"; then
            pass "gpu_alloc: trace $trace reads back ($(grep -c '"api"' "$out/gpu_alloc.jsonl") events)"
            checks gpu_alloc "$out/gpu_alloc.jsonl" \
                ok:cuMemAlloc_v2 ok:cuMemFree_v2 "ok:$async" 'ok:cuMemFreeAsync|cuMemFreeAsync_ptsz' \
                order:cuMemCreate,cuMemAddressReserve,cuMemMap,cuMemSetAccess,cuMemUnmap,cuMemRelease,cuMemAddressFree \
                oom:cuMemAlloc_v2 device frames:runtime_allocations frames:vmm_sequence frames:deliberate_oom
        else
            fail "gpu_alloc: no readable trace (see $out/gpu_alloc.log, $out/gpu_alloc.dump.err)"
        fi
    fi
else
    fail "gpu_alloc: nvcc build failed (see $out/nvcc.log)"
    sed 's/^/  | /' "$out/nvcc.log" | tail -20
fi

# ---- several processes on one GPU (issue 15): ranks, and a shared-GPU OOM ----
# tests/e2e/progs/ranks.c and launcher.c, built against the real driver: four ranks under the
# launcher give four rank-named traces and one report naming the first failing rank; then
# process A holds all but 30 GiB of the GPU while B asks for 40 GiB, and `oom` over both names A.
cc=${CC:-cc}
progs=$root/tests/e2e/progs
if in_budget "ranks: build" &&
    "$cc" -O1 -g -o "$out/ranks" "$progs/ranks.c" -I"$(dirname "$nvcc")/../include" -lcuda >"$out/ranks_cc.log" 2>&1 &&
    "$cc" -O1 -o "$out/launcher" "$progs/launcher.c" >>"$out/ranks_cc.log" 2>&1; then
    rm -rf "$out/ranks_run" && mkdir -p "$out/ranks_run"
    total_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits 2>/dev/null | head -1)
    (cd "$out/ranks_run" && timeout 120 "$cli" record -o 'rank%r.cmt' -- "$out/launcher" 4 "$out/ranks" step 2 \
        >"$out/ranks_record.log" 2>&1)
    n=$(ls "$out"/ranks_run/rank[0-3].cmt 2>/dev/null | wc -l)
    [[ $n -eq 4 ]] && pass "ranks: four rank-named traces" || fail "ranks: $n of 4 rank traces (see $out/ranks_record.log)"
    if "$cli" report --json "$out/ranks_run" >"$out/ranks_report.json" 2>&1 &&
        grep -q '"first_failing_rank":2' "$out/ranks_report.json"; then
        pass "ranks: the merged report names rank 2 as the first failing rank"
    else
        fail "ranks: report --json does not name rank 2 (see $out/ranks_report.json)"
    fi
    rm -rf "$out/shared_run" && mkdir -p "$out/shared_run"
    if [[ -n $total_mib ]] && in_budget "shared: record"; then
        (cd "$out/shared_run" && timeout 120 "$cli" record -- sh -c \
            "'$out/ranks' hold $((total_mib - 30720)) & '$out/ranks' take 40960; s=\$?; wait; exit \$s" \
            >"$out/shared_record.log" 2>&1)
        "$cli" oom "$out/shared_run" >"$out/shared_oom.txt" 2>&1
        if grep -q "held_by_others: pid [0-9]*, .*ranks hold" "$out/shared_oom.txt"; then
            pass "shared: oom over both traces names the process that held the GPU"
        else
            fail "shared: oom does not name the holder (see $out/shared_oom.txt)"
        fi
        sed 's/^/  | /' "$out/shared_oom.txt" | grep -v '^  |       #' | head -20
    fi
else
    skip "ranks: cannot build tests/e2e/progs/ranks.c against the driver (see $out/ranks_cc.log)"
fi

# ---- PyTorch, when present ----
if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)' >"$out/torch_probe.log" 2>&1; then
    skip "torch: 'import torch' with a visible GPU failed ($(tail -1 "$out/torch_probe.log"))"
    summary
fi
declare -A conf=([default]="" [expandable]="expandable_segments:True" [async]="backend:cudaMallocAsync")
vmm_free='cuMemRelease|cuMemUnmap'
for mode in default expandable async; do
    in_budget "torch $mode" || continue
    name=torch_$mode
    # --no-symbolize: symbolizing libtorch's frames is slow and not what is checked here.
    PYTORCH_CUDA_ALLOC_CONF=${conf[$mode]} record "$name" "$out/$name.log" --no-symbolize -- \
        python3 "$here/torch_alloc.py" "$mode"
    rc=$?
    sed 's/^/  | /' "$out/$name.log"
    if [[ $rc -eq 0 ]]; then
        pass "$name: PyTorch raised OutOfMemoryError under cumemtrace (PYTORCH_CUDA_ALLOC_CONF='${conf[$mode]}')"
    else
        fail "$name: exit status $rc, expected 0 after an OutOfMemoryError (see $out/$name.log)"
    fi
    if [[ -z $trace ]] || ! "$cli" dump --all "$trace" >"$out/$name.jsonl" 2>"$out/$name.dump.err"; then
        fail "$name: no readable trace"
        continue
    fi
    case $mode in
    default)
        checks "$name" "$out/$name.jsonl" ok:cuMemAlloc_v2 ok:cuMemFree_v2 oom:cuMemAlloc_v2 \
            episode:cuMemAlloc_v2:cuMemFree_v2 device ;;
    expandable)
        checks "$name" "$out/$name.jsonl" ok:cuMemAddressReserve ok:cuMemCreate ok:cuMemMap \
            ok:cuMemSetAccess oom:cuMemCreate "episode:cuMemCreate:$vmm_free" ;;
    async)
        checks "$name" "$out/$name.jsonl" "ok:$async" "oom:$async" ;;
    esac
done

# ---- PyTorch under record --torch: its own history beside the driver trace ----
for mode in train frag; do
    in_budget "torch --torch $mode" || continue
    name=torch_$mode
    rm -f "$out/$name".*.torch*.pickle "$out/$name".own.pickle "$out/$name".stats.json
    record "$name" "$out/$name.log" --torch --no-symbolize -- \
        python3 "$here/torch_train.py" "$mode" "$out"
    rc=$?
    sed 's/^/  | /' "$out/$name.log"
    if [[ $rc -eq 0 ]]; then
        pass "$name: ran as planned under cumemtrace record --torch"
    else
        fail "$name: exit status $rc (see $out/$name.log)"
    fi
    if grep -q 'cumemtrace: torch hook:' "$out/$name.log"; then
        fail "$name: the PyTorch hook complained: $(grep 'cumemtrace: torch hook:' "$out/$name.log" | head -1)"
    else
        pass "$name: the PyTorch hook ran without a complaint"
    fi
    if [[ -z $trace ]] || ! "$cli" dump --all "$trace" >"$out/$name.jsonl" 2>"$out/$name.dump.err"; then
        fail "$name: no readable trace"
        continue
    fi
    if [[ ! -f $out/$name.stats.json || ! -f $out/$name.own.pickle ]]; then
        fail "$name: torch_train.py wrote no stats or snapshot of its own"
        continue
    fi
    "$cli" report --json "$trace" >"$out/$name.report.json" 2>"$out/$name.report.err"
    "$cli" whatif "$trace" >"$out/$name.whatif.txt" 2>&1
    "$cli" oom "$trace" >"$out/$name.oom.txt" 2>&1
    torch_checks "$mode" "$trace"
done
summary
