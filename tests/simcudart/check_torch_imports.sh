#!/bin/sh
# Checks that the project's stand-ins serve everything Debian's PyTorch 2.6 asks of NVIDIA's
# libraries, read from the dynamic symbol tables and strings of its libraries in the torch root
# (scripts/setup-torch.sh): every import versioned libcudart.so.12 is defined by simcudart's
# libcudart.so.12 in that node, every import versioned libcudnn.so.9 by simcudnn, and every
# driver function the libraries name for a lazy lookup (dlsym or cuGetProcAddress: a string that
# is a driver API name in the toolkit's cudaTypedefs.h) is exported by simcuda.
# Usage: check_torch_imports.sh SIMCUDART12 SIMCUDNN SIMCUDA CUDA_TYPEDEFS_H
# The root is ${CUMEMTRACE_TORCH_ROOT:-/var/cache/cumemtrace/torch-root}; without it the check
# is skipped (exit 77), unless CI=true, where a missing root fails.
set -eu
cudart=$1 cudnn=$2 cuda=$3 typedefs=$4
root=${CUMEMTRACE_TORCH_ROOT:-/var/cache/cumemtrace/torch-root}
libdir=$root/usr/lib/x86_64-linux-gnu
torch_libs="libtorch_cuda.so.2.6 libc10_cuda.so.2.6 libtorch_python.so.2.6"
for name in $torch_libs; do
  if [ ! -f "$libdir/$name" ]; then
    if [ "${CI:-}" = true ]; then
      echo "torch imports: $libdir/$name is missing (run scripts/setup-torch.sh; CI=true needs the torch root)"
      exit 1
    fi
    echo "torch imports: skipped, no torch root at $root (scripts/setup-torch.sh builds it)"
    exit 77
  fi
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/torch_imports.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
status=0
# The undefined symbols of the torch libraries, as name@node, read once.
for name in $torch_libs; do
  readelf --dyn-syms -W "$libdir/$name" | awk '$7 == "UND" { print $8 }'
done >"$tmp/undefined"
# imports NODE: the undefined symbols versioned NODE, one name a line.
imports() {
  awk -v node="@$1" 'index($1, node) { sub(/@.*/, "", $1); print $1 }' "$tmp/undefined" | sort -u
}
# defined LIBRARY NODE: the functions LIBRARY defines in version node NODE.
defined() {
  objdump -T "$1" | awk -v node="$2" '$4 == ".text" && $6 == node { print $7 }' | sort -u
}
for pair in "$cudart libcudart.so.12" "$cudnn libcudnn.so.9"; do
  set -- $pair
  imports "$2" >"$tmp/want"
  defined "$1" "$2" >"$tmp/have"
  missing=$(comm -23 "$tmp/want" "$tmp/have")
  if [ -n "$missing" ]; then
    echo "torch imports: $(basename "$1") lacks in node $2: $(echo $missing)"
    status=1
  fi
  echo "torch imports: $(wc -l <"$tmp/want") imports from $2, $(comm -12 "$tmp/want" "$tmp/have" | wc -l) defined"
done
# The strings of the torch libraries that name a driver function, as its base name
# (PFN_<name>_v<version> in cudaTypedefs.h) or an exported variant of it (cuLinkCreate_v2);
# torch's DriverAPI stringifies names with a trailing underscore (cuMemCreate_).
sed -n 's/.*PFN_\(cu[A-Za-z0-9]*\)_v[0-9].*/\1/p' "$typedefs" | sort -u >"$tmp/driver_api"
# (.rodata only: libtorch_cuda is 1.1 GB, nearly all of it kernels)
for name in $torch_libs; do
  objcopy -O binary --only-section=.rodata "$libdir/$name" /dev/stdout |
    LC_ALL=C grep -aoE 'cu[A-Z][A-Za-z0-9_]+'
done |
  sed 's/_$//' | sort -u >"$tmp/strings"
awk 'NR == FNR { api[$1] = 1; next } { base = $1; sub(/_v[0-9]+$/, "", base) } base in api' \
  "$tmp/driver_api" "$tmp/strings" >"$tmp/lazy"
objdump -T "$cuda" | awk '$4 == ".text" { print $7 }' | sort -u >"$tmp/simcuda"
missing=$(comm -23 "$tmp/lazy" "$tmp/simcuda")
if [ -n "$missing" ]; then
  echo "torch imports: simcuda lacks the driver functions torch looks up: $(echo $missing)"
  status=1
fi
echo "torch imports: $(wc -l <"$tmp/lazy") driver functions named by torch, $(comm -12 "$tmp/lazy" "$tmp/simcuda" | wc -l) in simcuda"
exit "$status"
