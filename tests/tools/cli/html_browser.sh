#!/usr/bin/env bash
# html_browser.sh CUMEMTRACE — `cumemtrace html` in a real browser: the demo's OOM trace and its
# fixed run, each page opened by headless Chromium with #selftest, which makes the page run its
# own checks and write them into the DOM (<pre id="selftest">); --dump-dom reads them back.
# Checked here: no errors on the page, the plotted maximum equals `report --json`'s peak, the OOM
# marker sits at `oom --json`'s time (within a pixel), hovering the largest band shows its stack,
# the wheel zooms, and the diff view draws both runs. Exit 77 (skip) without Chromium, except in
# CI (CI=true), where that is a failure. CMT_HTML_SHOTS=DIR also writes screenshots there.
set -euo pipefail
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
expect "every check of the page" "$(field "$r" ok)" true

r=$(selftest "$work/diff.html")
echo "diff.html: $r"
expect "diff: no errors" "$(grep -o '"errors":\[[^]]*\]' <<<"$r")" '"errors":[]'
expect "diff: both runs drawn" "$(field "$r" diff_runs)" 2
expect "diff: both runs named" "$(field "$r" diff_ok)" true
expect "diff: every check" "$(field "$r" ok)" true

if [[ -n ${CMT_HTML_SHOTS:-} ]]; then
    mkdir -p "$CMT_HTML_SHOTS"
    chrome --window-size=1300,1300 --screenshot="$CMT_HTML_SHOTS/timeline.png" "file://$work/oom.html"
    chrome --window-size=1300,1700 --screenshot="$CMT_HTML_SHOTS/diff.png" "file://$work/diff.html"
    echo "screenshots in $CMT_HTML_SHOTS"
fi
exit $((failures > 0))
