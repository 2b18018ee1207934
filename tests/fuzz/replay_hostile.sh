#!/bin/sh
# replay_hostile.sh CUMEMTRACE DIR — every analysis command on every hostile file of DIR
# (corpus/hostile: the traces written by make_hostile.c, and pickle mutants, each a PyTorch
# snapshot cut, relabelled or turned into a payload; import and the commands that accept a
# snapshot run on those). A file named NAME.exitN.cmt or NAME.exitN.pickle must make each
# command exit N: 0, analysed (a warning may name what is odd), or 1, refused with one line on
# stderr that gives a reason (diff: one for each side). A crash, a sanitizer report or an empty reason fails the test.
set -u
cli=$1
dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# a sanitizer report must not pass for an expected exit 1
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:exitcode=99:detect_leaks=1"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-}:halt_on_error=1:exitcode=99:print_stacktrace=1"
fail=0
files=0
trace_cmds="report|report --json|oom|oom --json|timeline --csv|timeline --json|dump --all --stacks"
trace_cmds="$trace_cmds|html -o $work/page.html|diff FILE|export -f perfetto -o $work/out.json"
trace_cmds="$trace_cmds|export -f csv -o $work/out.csv|export -f jsonl --table sites -o $work/o.jsonl"
trace_cmds="$trace_cmds|export -f csv --partitioned $work/parts --run hostile"
trace_cmds="$trace_cmds|whatif --jobs 1 --max-split-size-mb inf,64"
pickle_cmds="import -o $work/imported.cmt|report|html -o $work/page.html"
for f in "$dir"/*.exit*.cmt "$dir"/*.exit*.pickle; do
    [ -e "$f" ] || continue
    want=${f%.*}
    want=${want##*.exit}
    files=$((files + 1))
    case $f in *.pickle) cmds=$pickle_cmds ;; *) cmds=$trace_cmds ;; esac
    old_ifs=$IFS
    IFS='|'
    for cmd in $cmds; do
        IFS=$old_ifs
        # shellcheck disable=SC2086 # the command's words; FILE: the file again (diff)
        "$cli" $(echo "$cmd" | sed "s|FILE|$f|") "$f" >"$work/out" 2>"$work/err"
        got=$?
        lines=$(wc -l <"$work/err")
        traces=1
        case $cmd in diff*) traces=2 ;; esac # one line for each side
        if [ "$got" -ne "$want" ]; then
            echo "FAIL: cumemtrace $cmd $(basename "$f"): exit $got, expected $want"
            sed 's/^/    /' "$work/err" | head -n 20
            fail=1
        elif grep -q -e 'runtime error' -e 'Sanitizer' -e ': ; ' -e ': $' "$work/err"; then
            echo "FAIL: cumemtrace $cmd $(basename "$f"): a sanitizer report or an empty reason"
            sed 's/^/    /' "$work/err" | head -n 20
            fail=1
        elif [ "$want" -ne 0 ] && [ "$lines" -ne "$traces" ]; then
            echo "FAIL: cumemtrace $cmd $(basename "$f"): refused with $lines lines, not $traces"
            sed 's/^/    /' "$work/err" | head -n 20
            fail=1
        fi
        IFS='|'
    done
    IFS=$old_ifs
done
if [ "$files" -eq 0 ]; then
    echo "replay_hostile.sh: no hostile file in $dir"
    exit 1
fi
[ "$fail" -eq 0 ] && echo "replay_hostile.sh: $files files, every command as expected"
exit "$fail"
