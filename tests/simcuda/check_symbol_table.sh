#!/bin/sh
# Checks simcuda's one symbol table (simcuda_symbols.h) in both directions:
#   1. the library exports exactly the table's exported names;
#   2. every entry's (base, version, per-thread) is a PFN_<base>_v<version>[_ptsz|_ptds]
#      typedef of the toolkit's cudaTypedefs.h;
#   3. every such typedef of a base name in the table has its entry (no variant missing).
# Usage: check_symbol_table.sh LIBRARY SYMBOLS_HEADER CUDA_TYPEDEFS_HEADER
set -eu
lib=$1 table=$2 typedefs=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

sed -n 's/^ *X(\([A-Za-z0-9_]*\), \([A-Za-z0-9_]*\), \([0-9]*\), \([01]\)).*/\1 \2 \3 \4/p' \
  "$table" > "$tmp/table"
[ -s "$tmp/table" ] || { echo "simcuda: no entries parsed from $table"; exit 1; }

nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | sort > "$tmp/exports"
awk '{ print $2 }' "$tmp/table" | sort > "$tmp/listed"
if ! cmp -s "$tmp/exports" "$tmp/listed"; then
  echo "simcuda: exports (>) and symbol table (<) differ:"
  diff "$tmp/listed" "$tmp/exports" || true
  status=1
fi

while read -r base exported version per_thread; do
  suffix=
  if [ "$per_thread" = 1 ]; then
    case $exported in
      *_ptsz) suffix=_ptsz ;;
      *_ptds) suffix=_ptds ;;
      *) echo "simcuda: $exported is marked per-thread but has no _ptsz/_ptds suffix"; status=1 ;;
    esac
  fi
  if ! grep -q "PFN_${base}_v${version}${suffix})" "$typedefs"; then
    echo "simcuda: $exported: no PFN_${base}_v${version}${suffix} in cudaTypedefs.h"
    status=1
  fi
done < "$tmp/table"

for base in $(awk '{ print $1 }' "$tmp/table" | sort -u); do
  for pfn in $(grep -o "PFN_${base}_v[0-9]*\(_pt[sd][sz]\)\{0,1\})" "$typedefs" | sort -u); do
    rest=${pfn#PFN_${base}_v}
    rest=${rest%)}
    version=${rest%%_*}
    suffix=
    [ "$version" = "$rest" ] || suffix=_${rest#*_}
    if ! awk -v b="$base" -v v="$version" -v s="$suffix" '
        $1 == b && $3 == v && ((s == "" && $4 == 0) || (s != "" && $4 == 1 && $2 ~ (s "$"))) { found = 1 }
        END { exit !found }' "$tmp/table"; then
      echo "simcuda: cudaTypedefs.h has $pfn but the symbol table has no such variant"
      status=1
    fi
  done
done

[ "$status" = 0 ] && echo "simcuda: symbol table matches $(wc -l < "$tmp/table") exports and cudaTypedefs.h"
exit "$status"
