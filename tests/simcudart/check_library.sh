#!/bin/sh
# Checks simcudart's library against NVIDIA's: the soname, one version node named as the real
# runtime's, every export in that node, and, when the real runtime is at hand, that every
# export also exists there (a program linked against simcudart runs on the real one).
# Usage: check_library.sh SIMCUDART [REAL_LIBCUDART]
set -eu
lib=$1 real=${2:-}
status=0
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
[ "$soname" = libcudart.so.13 ] || { echo "simcudart: soname is '$soname', not libcudart.so.13"; status=1; }
nodes=$(objdump -p "$lib" | sed -n '/^Version definitions:/,/^$/p' | awk 'NF == 4 && $2 != "0x01" { print $4 }' | sort -u)
[ "$nodes" = libcudart.so.13 ] || { echo "simcudart: version nodes '$nodes', expected libcudart.so.13"; status=1; }
exports=$(objdump -T "$lib" | awk '$4 == ".text" { print $6 " " $7 }')
echo "$exports" | awk '$1 != "libcudart.so.13" { print "simcudart: " $2 " is not in node libcudart.so.13"; bad = 1 } END { exit bad }' || status=1
if [ -n "$real" ] && [ -f "$real" ]; then
  node=$(objdump -p "$real" | sed -n '/^Version definitions:/,/^$/p' | awk 'NF == 4 && $2 != "0x01" { print $4 }' | sort -u)
  [ "$node" = "$nodes" ] || { echo "simcudart: the real runtime's node is '$node'"; status=1; }
  objdump -T "$real" | awk '$4 == ".text" { print $7 }' | sort > "${TMPDIR:-/tmp}/simcudart_real.$$"
  for name in $(echo "$exports" | awk '{ print $2 }'); do
    grep -qx "$name" "${TMPDIR:-/tmp}/simcudart_real.$$" || { echo "simcudart: $name is not exported by $real"; status=1; }
  done
  rm -f "${TMPDIR:-/tmp}/simcudart_real.$$"
fi
[ "$status" = 0 ] && echo "simcudart: $(echo "$exports" | wc -l) exports in node $nodes"
exit "$status"
