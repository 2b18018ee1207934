#!/bin/sh
# scripts/setup-deps.sh as a user who is not root, on a machine missing every package (a fake
# dpkg-query and id on PATH): it prints the exact apt-get command, exits 1, never runs apt-get.
# Usage: check_setup_deps.sh SOURCE_DIR
set -eu
src=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
printf '#!/bin/sh\nexit 1\n' >"$d/dpkg-query"
printf '#!/bin/sh\necho 1000\n' >"$d/id"
printf '#!/bin/sh\ntouch "%s/apt-get-ran"\n' "$d" >"$d/apt-get"
chmod +x "$d/dpkg-query" "$d/id" "$d/apt-get"
status=0
PATH=$d:$PATH bash "$src/scripts/setup-deps.sh" >"$d/out" 2>&1 || status=$?
fail() {
    cat "$d/out"
    echo "setup_deps: $1"
    exit 1
}
[ "$status" = 1 ] || fail "exited with $status, not 1"
[ ! -e "$d/apt-get-ran" ] || fail "ran apt-get without being root"
grep -q '^  sudo apt-get install -y --no-install-recommends cmake make gcc .*libzstd-dev' "$d/out" ||
    fail "printed no apt-get command"
