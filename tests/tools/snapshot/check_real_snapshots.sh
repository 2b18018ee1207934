#!/bin/sh
# check_real_snapshots.sh [BUILD_DIR] [DIR] — for every snapshot in DIR (default
# $CMT_REAL_SNAPSHOTS, else ../shared/data/snapshots beside the clone): the segments, the sum of active block
# sizes, the sum of segment total_size and the trace entries, computed by python3's pickle and
# by this project's parser (snapshot_sums), and the end state of the converted trace, one line
# each; a last line says whether they all agree. Exit 77 (skip) when DIR or python3 is absent
# (1 with CI=true, where both are there), 1 on a disagreement or when DIR holds no snapshot.
set -eu
build=${1:-build}
dir=${2:-${CMT_REAL_SNAPSHOTS:-$(dirname "$0")/../../../../shared/data/snapshots}}
if ! [ -d "$dir" ] || ! command -v python3 >/dev/null; then
    [ "${CI:-}" = true ] && { echo "no $dir or no python3: with CI=true this is a failure"; exit 1; }
    echo "SKIP: no $dir or no python3"
    exit 77
fi
bad=0 checked=0
for f in "$dir"/*.pkl "$dir"/*.pickle; do
    [ -f "$f" ] || continue
    checked=$((checked + 1))
    py=$(python3 - "$f" <<'PY'
import pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
segs = d if isinstance(d, list) else d.get("segments", [])
traces = [] if isinstance(d, list) else (d.get("device_traces") or [])
known = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
         "segment_map", "segment_unmap", "snapshot", "oom", "free"}
active = sum(b["size"] for s in segs for b in s["blocks"] if b["state"].startswith("active"))
reserved = sum(s["total_size"] for s in segs)
entries = sum(1 for t in traces for e in t if e["action"] in known)
print("segments=%d active=%d reserved=%d entries=%d" % (len(segs), active, reserved, entries))
PY
)
    out=$("$build/tests/snapshot_sums" "$f")
    ours=$(echo "$out" | sed -n 1p | sed 's/^[^ ]* //')
    trace=$(echo "$out" | sed -n 2p | sed 's/^[^ ]* trace: //')
    want=$(echo "$py" | sed 's/segments=[0-9]* //; s/ entries=.*//')
    name=$(basename "$f" | cut -c1-48)
    if [ "$py" = "$ours" ]; then mark=same; else mark=DIFFERENT; bad=1; fi
    if [ "$want" = "$trace" ]; then tmark=same; else tmark=DIFFERENT; bad=1; fi
    printf '%-48s python: %s\n' "$name" "$py"
    printf '%-48s parser: %s  %s\n' "" "$ours" "$mark"
    printf '%-48s trace:  %s  %s\n' "" "$trace" "$tmark"
done
[ "$checked" -gt 0 ] || { echo "$dir holds no snapshot (*.pkl, *.pickle): nothing checked"; exit 1; }
[ "$bad" = 0 ] && echo "all $checked files agree" || { echo "some files disagree"; exit 1; }
