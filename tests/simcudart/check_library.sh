#!/bin/sh
# Checks simcudart's library against NVIDIA's: the soname, one version node named as the real
# runtime's, every export in that node, and, when the real runtime is at hand, that every
# export also exists there (a program linked against simcudart runs on the real one).
# Usage: check_library.sh SIMCUDART MAJOR [REAL_LIBCUDART]   (MAJOR: 13 or 12; for 12 the real
# runtime defaults to the torch root's, see check_torch_imports.sh)
set -eu
lib=$1 want=libcudart.so.$2 real=${3:-}
# CUDA 12's real runtime is Debian's libcudart12, in the torch root when one is built.
if [ -z "$real" ] && [ "$2" = 12 ]; then
  real=${CUMEMTRACE_TORCH_ROOT:-/var/cache/cumemtrace/torch-root}/usr/lib/x86_64-linux-gnu/libcudart.so.12
fi
status=0
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
[ "$soname" = "$want" ] || { echo "simcudart: soname is '$soname', not $want"; status=1; }
nodes=$(objdump -p "$lib" | sed -n '/^Version definitions:/,/^$/p' | awk 'NF == 4 && $2 != "0x01" { print $4 }' | sort -u)
[ "$nodes" = "$want" ] || { echo "simcudart: version nodes '$nodes', expected $want"; status=1; }
exports=$(objdump -T "$lib" | awk '$4 == ".text" { print $6 " " $7 }')
echo "$exports" | awk -v want="$want" '$1 != want { print "simcudart: " $2 " is not in node " want; bad = 1 } END { exit bad }' || status=1
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
