#!/bin/sh
# The README names every CUMEMTRACE_* variable the shim, the CLI and the scripts read, and says
# how to get the shell completion (issue 23: CUMEMTRACE_PROGRESS and completion were missing).
# usage: check_readme_env.sh SOURCE_DIR
src=${1:?usage: check_readme_env.sh SOURCE_DIR}
readme="$src/README.md"
[ -r "$readme" ] || { echo "no $readme"; exit 1; }
vars=$(grep -rhoE '(getenv|env_path|env_int|env_bool|environ\.get|setenv)\(?"CUMEMTRACE_[A-Z_]+' \
    "$src/interpose" "$src/tools" "$src/scripts" 2>/dev/null |
    grep -oE 'CUMEMTRACE_[A-Z_]+' | sort -u)
vars="$vars $(grep -rhoE '\$\{?CUMEMTRACE_[A-Z_]+' "$src/scripts" 2>/dev/null | grep -oE 'CUMEMTRACE_[A-Z_]+' | sort -u)"
[ -n "$vars" ] || { echo "found no CUMEMTRACE_ variable in the sources: the pattern is stale"; exit 1; }
missing=0
for v in $(printf '%s\n' $vars | sort -u); do
    grep -q "\`$v\`" "$readme" || { echo "README.md does not name \`$v\`"; missing=1; }
done
grep -q 'bash-completion' "$readme" || { echo "README.md does not say where the completion is"; missing=1; }
exit $missing
