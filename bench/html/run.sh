#!/usr/bin/env bash
# run.sh [BUILD_DIR] — the HTML page's benchmark: cmt_bench_gen_trace writes a BENCH_EVENTS-event
# trace (default 10,000,000; its stress workload: 300 call sites, thousands of live buffers, an
# OOM episode), `cumemtrace html` writes its page, and headless Chromium opens it with #selftest,
# where the page times itself (chart_levels.js, levelSelftest): 60 hovers across the device
# chart, then zoom steps that halve the span around the peak down to the chart's smallest span.
# Printed: the page's size, html's time next to `report`'s on the same trace (the anchor, in
# CPU seconds: user + system), hover median / p95 / max and zoom-step median / max in
# milliseconds, and the detail the zoom reached. Prints figures only; never fails on a slow
# result. Knobs: BENCH_EVENTS, BENCH_KEEP=1, CMT_CHROMIUM (default: chromium on PATH).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
events=${BENCH_EVENTS:-10000000}
cli=$build/bin/cumemtrace gen=$build/bench/cmt_bench_gen_trace
for f in "$cli" "$gen"; do
    [[ -x $f ]] || { echo "run.sh: $f is missing; build first" >&2; exit 2; }
done
browser=${CMT_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[[ -n $browser ]] || { echo "run.sh: chromium is missing (apt-get install chromium)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/cmt-bench-html.XXXXXX")
[[ ${BENCH_KEEP:-0} == 1 ]] || trap 'rm -rf "$work"' EXIT

cpu() { # command...: prints its user + system seconds
    local TIMEFORMAT='%U %S' t
    t=$( { time "$@" >/dev/null 2>&1; } 2>&1 | tail -1)
    awk '{ printf "%.2f", $1 + $2 }' <<<"$t"
}
"$gen" "$work/t.cmt" "$events" >/dev/null
html_s=$(cpu "$cli" html --no-whatif -o "$work/t.html" "$work/t.cmt")
report_s=$(cpu "$cli" report "$work/t.cmt")
size=$(stat -c %s "$work/t.html")
r=$(timeout 300 "$browser" --headless --disable-gpu --no-sandbox --user-data-dir="$work/profile" \
    --virtual-time-budget=60000 --dump-dom "file://$work/t.html#selftest" 2>/dev/null |
    grep -o '<pre id="selftest">.*</pre>' || true)
field() { grep -o "\"$1\":[^,}]*" <<<"$r" | head -1 | cut -d: -f2; }

printf 'events                %s\n' "$events"
printf 'page                  %.2f MiB\n' "$(awk -v b="$size" 'BEGIN { print b / 1048576 }')"
printf 'html                  %s s CPU (report %s s, %.2fx report)\n' "$html_s" "$report_s" \
    "$(awk -v a="$html_s" -v b="$report_s" 'BEGIN { print (b > 0 ? a / b : 0) }')"
printf 'page render           %s ms\n' "$(field render_ms)"
printf 'hover                 median %s ms, p95 %s ms, max %s ms (60 hovers)\n' \
    "$(field hover_ms_median)" "$(field hover_ms_p95)" "$(field hover_ms_max)"
printf 'zoom step             median %s ms, max %s ms (%s steps to the smallest span)\n' \
    "$(field zoom_step_ms_median)" "$(field zoom_step_ms_max)" "$(field zoom_steps)"
printf 'detail                levels %s; whole run %s points of %s ns; first finer level %s points where the coarse one has %s; finest %s ns\n' \
    "$(field levels)" "$(field full_points)" "$(field full_bucket_ns)" "$(field zoom_points)" \
    "$(field zoom_points_coarse)" "$(field finest_bucket_ns)"
printf 'peak drawn exactly    %s (zoomed max %s, report peak %s)\n' "$(field zoom_detail_ok)" \
    "$(field zoom_plotted_max)" "$(field peak_bytes)"
