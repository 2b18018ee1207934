#!/usr/bin/env bash
# html_browser.sh CUMEMTRACE [GEN_TRACE] — `cumemtrace html` in a real browser: the demo's OOM trace and its
# fixed run, each page opened by headless Chromium with #selftest, which makes the page run its
# own checks and write them into the DOM (<pre id="selftest">); --dump-dom reads them back.
# Checked here: no errors on the page, the plotted maximum equals `report --json`'s peak, the OOM
# marker sits at `oom --json`'s time (within a pixel), hovering the largest band shows its stack,
# the wheel zooms, the diff view draws both runs, and the allocator view and lines (the demo's
# OOM trace and a PyTorch snapshot written here) match `oom --json` and `report --json`, and the
# what-if table has `whatif --json`'s rows and capacity; with GEN_TRACE (cmt_bench_gen_trace), the
# chart's levels of detail on a trace of far more events than the whole run's view draws. Exit 77 (skip) without Chromium, except in
# CI (CI=true), where that is a failure. CMT_HTML_SHOTS=DIR also writes screenshots there.
set -euo pipefail
# Arguments: CLI [GEN_TRACE] [TORCH_DIR: the record --torch traces of ctest torch_torch_oom]
cli=$1
browser=${CMT_CHROMIUM:-}
for b in chromium chromium-browser google-chrome; do
    [[ -n $browser ]] && break
    command -v "$b" >/dev/null && browser=$(command -v "$b")
done
if [[ -z $browser ]]; then
    if [[ ${CI:-} == true ]]; then
        echo "html_browser: chromium is missing in CI (scripts/setup-deps.sh --ci installs it)" >&2
        exit 1
    fi
    echo "html_browser: SKIP: chromium is not installed (apt-get install chromium)"
    exit 77
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/cmt-html-browser.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$cli" demo --dir "$work/demo" >"$work/demo.log" 2>&1 || { cat "$work/demo.log"; exit 1; }
oom=$work/demo/sd-oom.cmt fixed=$work/demo/sd-fixed.cmt
"$cli" html -o "$work/oom.html" "$oom" >/dev/null
"$cli" html -o "$work/diff.html" "$oom" "$fixed" >/dev/null

chrome() {
    timeout 120 "$browser" --headless --disable-gpu --no-sandbox --hide-scrollbars \
        --user-data-dir="$work/profile" --virtual-time-budget=5000 "$@" 2>>"$work/browser.log"
}

# The page's self-test results: one JSON object on one line.
selftest() {
    chrome --dump-dom "file://$1#selftest" | grep -o '<pre id="selftest">.*</pre>' |
        sed -e 's/^<pre id="selftest">//' -e 's/<\/pre>$//' || true
}
field() { grep -o "\"$2\":[^,}]*" <<<"$1" | head -1 | cut -d: -f2; }
failures=0
expect() { # what, got, want
    if [[ $2 == "$3" ]]; then
        echo "ok: $1 ($2)"
    else
        echo "FAIL: $1: got '$2', want '$3'"
        failures=$((failures + 1))
    fi
}

r=$(selftest "$work/oom.html")
[[ -n $r ]] || { echo "FAIL: no self-test results in the page"; tail -20 "$work/browser.log"; exit 1; }
echo "oom.html: $r"
expect "no errors on the page" "$(grep -o '"errors":\[[^]]*\]' <<<"$r")" '"errors":[]'
peak=$(field "$("$cli" report --json "$oom")" peak_live_bytes)
expect "plotted maximum is report's peak" "$(field "$r" plotted_max)" "$peak"
oom_t=$(field "$("$cli" oom --json "$oom")" t_ns)
expect "the OOM marker is at the episode's time" "$(field "$r" oom_t_ns)" "$oom_t"
expect "the marker drawn there maps back to it" "$(field "$r" oom_marker_ok)" true
expect "hovering the largest band shows its stack" "$(field "$r" hover_ok)" true
expect "the wheel zooms in" "$(field "$r" zoom_ok)" true
expect "zoomed into the peak, the drawn maximum is report's peak" "$(field "$r" zoom_plotted_max)" "$peak"
expect "every check of the page" "$(field "$r" ok)" true

# The levels of detail (chart_levels.js): on cmt_bench_gen_trace's stress trace (10,000,000 events, as issue 23 asks;
# far more than the whole run's view draws), zooming by halves into the peak keeps the drawn
# maximum at `report --json`'s peak at every step, the first finer level draws more points than
# the coarse one holds in the same span, and the smallest span draws buckets of 1 ns.
gen=${2:-}
if [[ -n $gen ]]; then
    "$gen" "$work/big.cmt" ${CMT_BROWSER_EVENTS:-10000000} >/dev/null
    "$cli" html --no-whatif -o "$work/big.html" "$work/big.cmt" >/dev/null 2>&1
    rb=$(selftest "$work/big.html")
    echo "big.html: $(grep -oE '"(levels|full_points|zoom_[a-z_]*|finest_bucket_ns|hover_ms_p95)":[^,]*' <<<"$rb" | tr '\n' ' ')"
    expect "levels: no errors" "$(grep -o '"errors":\[[^]]*\]' <<<"$rb")" '"errors":[]'
    expect "levels: finer detail is expected" "$(field "$rb" detail_expected)" true
    expect "levels: zoomed into the peak, the drawn maximum is report's peak" \
        "$(field "$rb" zoom_plotted_max)" "$(field "$("$cli" report --json "$work/big.cmt")" peak_live_bytes)"
    expect "levels: ... at every zoom step" "$(field "$rb" zoom_max_every_step)" true
    more=$(($(field "$rb" zoom_points) > $(field "$rb" zoom_points_coarse)))
    expect "levels: the first finer level draws more points than the coarse one there" "$more" 1
    expect "levels: the smallest span draws single nanoseconds" "$(field "$rb" finest_bucket_ns)" 1
    expect "levels: the page says where detail ends" "$(field "$rb" zoom_detail | grep -o 'single events')" "single events"
    expect "levels: every check" "$(field "$rb" ok)" true
fi

# The allocator view and lines: the view drawn at the OOM has `oom --json`'s segment count (at
# the end: `report --json`'s segments_at_end), the reserved line's maximum is `report --json`'s
# allocator peak_reserved_bytes (the largest over devices).
max_field() { grep -o "\"$2\":[0-9]*" <<<"$1" | cut -d: -f2 | sort -n | tail -1; }
check_allocator() { # name, trace, self-test results
    local rep om want
    rep=$("$cli" report --json "$2") om=$("$cli" oom --json "$2")
    if [[ $(field "$3" alloc_view_at) == '"oom"' ]]; then
        want=$(grep -o '"allocator":{[^}]*"segments":[0-9]*' <<<"$om" | head -1 | grep -o '"segments":[0-9]*' | cut -d: -f2)
    else
        want=$(field "$rep" segments_at_end)
    fi
    expect "$1: allocator view segments drawn" "$(field "$3" alloc_segments_drawn)" "$want"
    expect "$1: hovering a block shows its size and stack" "$(field "$3" alloc_hover_ok)" true
    expect "$1: reserved line maximum is report's peak_reserved_bytes" \
        "$(field "$3" reserved_line_max)" "$(max_field "$rep" peak_reserved_bytes)"
}
check_allocator "demo" "$oom" "$r"

# The allocator views over the run (alloc_views.js): as many bands as the trace's allocator
# blocks (at most 2000, the rest summed), a hovered band's tip gives its block's bytes, the
# segment view at the reserved peak holds `report --json`'s peak_reserved_bytes (at the OOM:
# `oom --json`'s reserved bytes) and the icicle's root is report's peak_allocated_bytes.
check_history() { # name, trace, self-test results, "oom" when the trace has an allocator OOM
    local rep blocks want
    rep=$("$cli" report --json "$2")
    blocks=$("$cli" dump "$2" | grep -c '"action":"alloc",' || true)
    want=$((blocks < 2000 ? blocks : 2000))
    expect "$1: bands drawn, one per block" "$(field "$3" hist_bands)" "$want"
    expect "$1: a hovered band's size is its block's" "$(field "$3" hist_hover_bytes)" \
        "$(field "$3" hist_band_bytes)"
    expect "$1: hovering a band shows its size and stack" "$(field "$3" hist_hover_ok)" true
    expect "$1: the segment view at the reserved peak holds report's peak_reserved_bytes" \
        "$(field "$3" hist_reserved_at_peak)" "$(max_field "$rep" peak_reserved_bytes)"
    expect "$1: the icicle's root is report's peak_allocated_bytes" "$(field "$3" icicle_root)" \
        "$(max_field "$rep" peak_allocated_bytes)"
    expect "$1: a click on a frame of the icicle widens it" "$(field "$3" icicle_zoom_ok)" true
    if [[ ${4:-} == oom ]]; then
        expect "$1: the segment view at the OOM holds oom's reserved bytes" \
            "$(field "$3" hist_reserved_at_oom)" \
            "$("$cli" oom --json "$2" | grep -o '"allocator":{[^}]*' | head -1 | grep -o '"reserved_bytes":[0-9]*' | cut -d: -f2)"
    fi
}

# The what-if table drawn is `whatif`'s default sweep: as many rows, the same capacity and
# where it came from ("trace", or "unknown" for the snapshot below, which does not say).
check_whatif() { # name, trace, self-test results, capacity source wanted
    local w
    w=$("$cli" whatif --json "$2")
    expect "$1: what-if rows drawn are whatif's results" "$(field "$3" whatif_rows_drawn)" \
        "$(grep -o '"events_replayed":' <<<"$w" | wc -l)"
    expect "$1: the what-if's capacity source is whatif's" "$(field "$3" whatif_capacity_source)" \
        "$(field "$w" capacity_source)"
    expect "$1: the what-if's capacity source" "$(field "$3" whatif_capacity_source)" "\"$4\""
    expect "$1: the what-if's capacity is whatif's" "$(field "$3" whatif_capacity_bytes)" \
        "$(field "$w" capacity_bytes)"
}
check_whatif "demo" "$oom" "$r" trace
check_history "demo" "$oom" "$r" oom # allocator events among the driver's, as --torch records
expect "demo: the allocator view is at the OOM" "$(field "$r" alloc_view_at)" '"oom"'
# address-space gaps are named apart from the device's memory (they may exceed the card)
expect "demo: the card names address gaps apart from device memory" \
    "$(grep -o '"oom_gaps_row":"[^"]*"' <<<"$r" | grep -o 'address space, not device memory')" \
    "address space, not device memory"

# A real PyTorch snapshot, when the shared data is there (CMT_SNAPSHOT names another).
real=${CMT_SNAPSHOT:-$(dirname "$0")/../../../../shared/data/snapshots/github-Wedsonlin_assignment2-systems__medium_512_training_memory_snapshot.pickle}
if [[ -f $real ]]; then
    "$cli" import "$real" -o "$work/real.cmt" >/dev/null
    "$cli" html --no-whatif -o "$work/real.html" "$work/real.cmt" >/dev/null
    r=$(selftest "$work/real.html")
    echo "real.html: $(cut -c1-300 <<<"$r")..."
    expect "real snapshot: no errors" "$(grep -o '"errors":\[[^]]*\]' <<<"$r")" '"errors":[]'
    check_history "real snapshot" "$work/real.cmt" "$r"
    expect "real snapshot: every check" "$(field "$r" ok)" true
elif [[ ${CI:-} == true ]]; then
    echo "FAIL: no real snapshot at $real (CI has ../shared/data/snapshots)"
    failures=$((failures + 1))
else
    echo "html_browser: no real snapshot at $real: that part is skipped"
fi

# A `record --torch` trace of real PyTorch running out of memory (ctest torch_torch_oom writes
# them, tests/torch): the same views and figures, the OOM's among them.
torch_trace=${3:-}/over_capacity.cmt
if [[ -n ${3:-} && -f $torch_trace ]]; then
    "$cli" html --no-whatif -o "$work/torch.html" "$torch_trace" >/dev/null
    r=$(selftest "$work/torch.html")
    echo "torch.html: $(cut -c1-300 <<<"$r")..."
    expect "record --torch: no errors" "$(grep -o '"errors":\[[^]]*\]' <<<"$r")" '"errors":[]'
    check_history "record --torch" "$torch_trace" "$r" oom
    expect "record --torch: every check" "$(field "$r" ok)" true
elif [[ ${CI:-} == true ]]; then
    echo "FAIL: no record --torch trace at $torch_trace (ctest torch_torch_oom writes it)"
    failures=$((failures + 1))
else
    echo "html_browser: no record --torch trace at $torch_trace: that part is skipped"
fi

# A PyTorch snapshot (pickle written here): two segments, split blocks, an OOM entry.
if command -v python3 >/dev/null; then
    python3 - "$work/snap.pickle" "$work/snap-nofree.pickle" <<'PY'
import pickle, sys
MIB = 1 << 20
A, B, T = 0x7F0000000000, 0x7F0010000000, 1700000000000000
fr = [{"name": "forward", "filename": "model.py", "line": 42},
      {"name": "<module>", "filename": "train.py", "line": 7}]
def blk(addr, size, state):
    return {"address": addr, "size": size, "requested_size": size if state != "inactive" else 0,
            "state": state, "frames": fr if state != "inactive" else []}
def seg(addr, total, blocks):
    return {"device": 0, "address": addr, "total_size": total, "stream": 0,
            "segment_type": "large", "allocated_size": 0, "active_size": 0, "frames": [],
            "blocks": blocks}
def ev(action, addr, size, t):
    return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": T + t,
            "frames": fr}
segs = [seg(A, 40 * MIB, [blk(A, 10 * MIB, "active_allocated"), blk(A + 10 * MIB, 30 * MIB, "inactive")]),
        seg(B, 40 * MIB, [blk(B, 30 * MIB, "inactive"), blk(B + 30 * MIB, 10 * MIB, "active_allocated")])]
trace = [ev("segment_alloc", A, 40 * MIB, 1), ev("alloc", A, 10 * MIB, 2),
         ev("alloc", A + 10 * MIB, 30 * MIB, 3), ev("segment_alloc", B, 40 * MIB, 4),
         ev("alloc", B, 30 * MIB, 5), ev("alloc", B + 30 * MIB, 10 * MIB, 6),
         ev("free_requested", A + 10 * MIB, 30 * MIB, 7), ev("free_completed", A + 10 * MIB, 30 * MIB, 7),
         ev("free_requested", B, 30 * MIB, 8), ev("free_completed", B, 30 * MIB, 8),
         {"action": "oom", "size": 50 * MIB, "stream": 0, "time_us": T + 9, "device_free": 0, "frames": fr}]
with open(sys.argv[1], "wb") as f:
    pickle.dump({"segments": segs, "device_traces": [trace]}, f)
with open(sys.argv[2], "wb") as f:  # without the oom entry: nothing says what was free
    pickle.dump({"segments": segs, "device_traces": [trace[:-1]]}, f)
PY
    "$cli" html -o "$work/snap.html" "$work/snap.pickle" >/dev/null
    r=$(selftest "$work/snap.html")
    echo "snap.html: $r"
    expect "snapshot: no errors" "$(grep -o '"errors":\[[^]]*\]' <<<"$r")" '"errors":[]'
    expect "snapshot: the allocator view is at the OOM" "$(field "$r" alloc_view_at)" '"oom"'
    check_allocator "snapshot" "$work/snap.pickle" "$r"
    check_whatif "snapshot" "$work/snap.pickle" "$r" trace
    expect "snapshot: every check" "$(field "$r" ok)" true
    expect "snapshot: the run's line gives the allocator's figures" \
        "$(grep -o '"run_line":"[^"]*"' <<<"$r" | cut -d'"' -f4)" \
        "allocator peak 80.00 MiB allocated at 5.00 us, 80.00 MiB reserved at 3.00 us, 20.00 MiB allocated at the end (no driver calls recorded)"
    check_history "snapshot" "$work/snap.pickle" "$r" oom
    "$cli" html -o "$work/snap-nofree.html" "$work/snap-nofree.pickle" >/dev/null
    r=$(selftest "$work/snap-nofree.html")
    echo "snap-nofree.html: $r"
    expect "snapshot without free memory: no errors" "$(grep -o '"errors":\[[^]]*\]' <<<"$r")" '"errors":[]'
    check_whatif "snapshot without free memory" "$work/snap-nofree.pickle" "$r" unknown
    expect "snapshot without free memory: the page says the capacity is unknown" \
        "$(grep -o '"whatif_capacity_shown":"[^"]*"' <<<"$r" | cut -d'"' -f4)" \
        "capacity unknown: the trace does not say"
else
    echo "html_browser: the snapshot part is skipped: python3 is missing"
fi

# ---- memory outside the allocator (html/outside_views.js) ----------------------------------
# On the record --torch run that holds 96 MiB outside torch's allocator (ctest torch_torch_oom's
# "outside": a ctypes cuMemAlloc_v2 before the failing request), the band drawn at the OOM, its
# tip and the segment view's list there hold `oom --json`'s outside_bytes; a snapshot alone
# says in one line that memory outside the allocator is not known. CMT_HTML_SHOTS=DIR: both
# views of that run (docs/img/outside-active.png, outside-segments.png).
outside_trace=${3:-}/outside.cmt
if [[ -n ${3:-} && -f $outside_trace ]]; then
    "$cli" html --no-whatif -o "$work/outside.html" "$outside_trace" >/dev/null
    r=$(selftest "$work/outside.html")
    echo "outside.html: $(grep -oE '"outside_[a-z_]*":[^,]*' <<<"$r" | tr '\n' ' ')"
    want=$("$cli" oom --json "$outside_trace" | grep -o '"outside_bytes":[0-9]*' | head -1 | cut -d: -f2)
    expect "outside: no errors" "$(grep -o '"errors":\[[^]]*\]' <<<"$r")" '"errors":[]'
    expect "outside: oom --json's outside_bytes is the 96 MiB the program held" "$want" 100663296
    expect "outside: the band at the OOM is oom's outside_bytes" "$(field "$r" outside_band_at_oom)" "$want"
    expect "outside: hovering the band there gives those bytes" "$(field "$r" outside_hover_bytes)" "$want"
    expect "outside: ... and names the driver call site" "$(field "$r" outside_hover_ok)" true
    expect "outside: the segment view at the OOM lists them" "$(field "$r" outside_listed_at_oom)" "$want"
    expect "outside: every check" "$(field "$r" ok)" true
    for v in active segments; do # #shot-VIEW: that view alone
        if [[ -n ${CMT_HTML_SHOTS:-} ]]; then
            mkdir -p "$CMT_HTML_SHOTS"
            chrome --window-size=1100,560 --screenshot="$CMT_HTML_SHOTS/outside-$v.png" \
                "file://$work/outside.html#shot-$v"
        fi
    done
elif [[ ${CI:-} == true ]]; then
    echo "FAIL: no record --torch trace at $outside_trace (ctest torch_torch_oom writes it)"
    failures=$((failures + 1))
else
    echo "html_browser: no record --torch trace at $outside_trace: the outside part is skipped"
fi
if [[ -f $work/snap.html ]]; then
    r=$(selftest "$work/snap.html")
    expect "snapshot: one line says memory outside the allocator is not known" \
        "$(grep -o '"outside_message":"[^"]*"' <<<"$r" | cut -d'"' -f4)" \
        "This file has no driver-level records, so memory outside the allocator is not known."
fi
# ---- end of memory outside the allocator ---------------------------------------------------

r=$(selftest "$work/diff.html")
echo "diff.html: $r"
expect "diff: no errors" "$(grep -o '"errors":\[[^]]*\]' <<<"$r")" '"errors":[]'
expect "diff: both runs drawn" "$(field "$r" diff_runs)" 2
expect "diff: both runs named" "$(field "$r" diff_ok)" true
expect "diff: A's summary before B's" "$(field "$r" summary_order)" '"AB"'
expect "diff: every check" "$(field "$r" ok)" true

# ---- the ranks view (ranks_view.js): `html DIR` of several traces ----
# Each rank's drawn maximum and its peak label are `report --json`'s peak for its file (the
# allocator's peak_reserved_bytes where the trace has allocator records, else peak_live_bytes),
# its OOM markers sit at `oom --json`'s episode times (mapped back within a pixel), hovering the
# shown rank's peak names the rank, the time and its bytes, and a click on another rank's line
# says how to open its page.
oom_times() { # the episodes' t_ns of a trace, space-separated
    "$cli" oom --json "$1" | python3 -c 'import json, sys
print(" ".join(str(e["t_ns"]) for e in json.load(sys.stdin)["episodes"]))'
}
check_ranks() { # name, directory of traces
    local page=$work/ranks-$1.html r line file source drawn ooms ok rep want
    "$cli" html --no-whatif -o "$page" "$2" >/dev/null
    r=$(selftest "$page")
    echo "ranks-$1.html: $(cut -c1-400 <<<"$r")..."
    expect "ranks $1: no errors" "$(grep -o '"errors":\[[^]]*\]' <<<"$r")" '"errors":[]'
    expect "ranks $1: every trace a rank" "$(field "$r" ranks)" "$(ls "$2"/*.cmt | wc -l)"
    while IFS='|' read -r file source drawn ooms ok; do
        rep=$("$cli" report --json "$file")
        if [[ $source == allocator ]]; then want=$(max_field "$rep" peak_reserved_bytes)
        else want=$(field "$rep" peak_live_bytes); fi
        expect "ranks $1: $(basename "$file"): drawn peak is report's" "$drawn" "$want"
        expect "ranks $1: $(basename "$file"): OOM markers at oom's times" "$ooms" "$(oom_times "$file")"
        expect "ranks $1: $(basename "$file"): its peak label and markers as drawn" "$ok" true
    done < <(grep -o '"ranks_check":\[[^]]*\]' <<<"$r" | sed -e 's/^"ranks_check":\["//' -e 's/"\]$//' -e 's/","/\n/g')
    expect "ranks $1: hovering a peak names the rank, time and bytes" "$(field "$r" ranks_hover_ok)" true
    expect "ranks $1: a click on a rank says how to open its page" "$(field "$r" ranks_click_ok)" true
    expect "ranks $1: every check" "$(field "$r" ok)" true
}
snapshots=$(dirname "$0")/../../../../shared/data/snapshots
if [[ -f $snapshots/github-JasperSolt_EoR_NN__snapshot.pickle ]] && command -v python3 >/dev/null; then
    mkdir -p "$work/ranks-snap"
    for s in github-JasperSolt_EoR_NN__snapshot github-Yiyi-philosophy_LLM-inference__oom_snapshot; do
        "$cli" import "$snapshots/$s.pickle" -o "$work/ranks-snap/$s.cmt" >/dev/null 2>&1
    done
    check_ranks snapshots "$work/ranks-snap"
elif [[ ${CI:-} == true ]]; then
    echo "FAIL: no real snapshots in $snapshots, or no python3 (CI has both)"
    failures=$((failures + 1))
else
    echo "html_browser: no real snapshots in $snapshots: the ranks view on them is skipped"
fi
if [[ -n ${3:-} && -f $torch_trace ]] && command -v python3 >/dev/null; then
    check_ranks torch "$3"
    if [[ -n ${CMT_HTML_SHOTS:-} ]]; then
        mkdir -p "$CMT_HTML_SHOTS"
        chrome --window-size=1300,900 --screenshot="$CMT_HTML_SHOTS/ranks.png" "file://$work/ranks-torch.html"
    fi
else
    echo "html_browser: no record --torch traces in ${3:-}: the ranks view on them is skipped"
fi
# ---- end of the ranks view ----

if [[ -n ${CMT_HTML_SHOTS:-} ]]; then
    mkdir -p "$CMT_HTML_SHOTS"
    chrome --window-size=1300,1300 --screenshot="$CMT_HTML_SHOTS/timeline.png" "file://$work/oom.html"
    chrome --window-size=1300,1700 --screenshot="$CMT_HTML_SHOTS/diff.png" "file://$work/diff.html"
    chrome --window-size=1300,1900 --screenshot="$CMT_HTML_SHOTS/allocator.png" "file://$work/oom.html"
    [[ -f $work/snap.html ]] && chrome --window-size=1300,1100 \
        --screenshot="$CMT_HTML_SHOTS/snapshot.png" "file://$work/snap.html"
    [[ -f $work/snap-nofree.html ]] && chrome --window-size=1300,1600 \
        --screenshot="$CMT_HTML_SHOTS/snapshot-nofree.png" "file://$work/snap-nofree.html"
    page=$work/real.html
    [[ -f $page ]] || page=$work/snap.html
    for v in active segments icicle; do # the allocator views alone (alloc_views.js, #shot-VIEW)
        [[ -f $page ]] && chrome --window-size=1100,760 --screenshot="$CMT_HTML_SHOTS/alloc-$v.png" \
            "file://$page#shot-$v"
    done
    echo "screenshots in $CMT_HTML_SHOTS"
fi
exit $((failures > 0))
