#!/bin/sh
# Fetches Debian's pytorch source package, extracts only c10/ and version.txt, patches the known
# use-after-free, and builds libc10, libc10_cuda and oracle_driver (c10/CMakeLists.txt) in the
# build tree. Reruns reuse the download, the extraction and the build.
# Usage: build_oracle.sh SOURCE_TREE ORACLE_DIR VERSION CUDART CUDA_INCLUDE_DIR
# Exit 77 (ctest: skipped) when the source package cannot be fetched, unless CI=true.
set -eu
src_tree=$1 dir=$2 version=$3 cudart=$4 cuda_include=$5
mkdir -p "$dir/download"
dir=$(cd "$dir" && pwd)

# sha256 of the orig tarball, pinned per Debian version (ORACLE_PYTORCH_SHA256 overrides).
case $version in
  2.6.0+dfsg-7) pinned=099a9601bc40d67656e75735c44abedb0fbe92d08817852ab7472eebb7e6ddff ;;
  *) pinned= ;;
esac
pinned=${ORACLE_PYTORCH_SHA256:-$pinned}
upstream=${version%-*}
tarball=$dir/download/pytorch_${upstream}.orig.tar.xz

unavailable() {
  echo "oracle: $1"
  if [ "${CI:-}" = true ]; then
    echo "oracle: CI=true, so this is a failure"
    exit 1
  fi
  echo "oracle: skipped (needs the pytorch source package: a deb-src entry for trixie main, see .ci/run)"
  exit 77
}

if [ ! -f "$tarball" ]; then
  echo "oracle: downloading Debian's pytorch $version source package"
  (cd "$dir/download" && apt-get source --download-only "pytorch=$version" >apt.log 2>&1) ||
    unavailable "apt-get source --download-only pytorch=$version failed: $(tail -n 1 "$dir/download/apt.log")"
  [ -f "$tarball" ] || unavailable "the download holds no $(basename "$tarball")"
fi
sum=$(sha256sum "$tarball" | cut -d' ' -f1)
if [ -n "$pinned" ] && [ "$sum" != "$pinned" ]; then
  echo "oracle: $(basename "$tarball") has sha256 $sum, expected $pinned"
  exit 1
fi
[ -n "$pinned" ] || echo "oracle: no sha256 pinned for $version (apt checked the archive's signature): $sum"

src=$dir/src-$version
if [ ! -f "$src/.patched" ]; then
  rm -rf "$src" && mkdir -p "$src"
  tar -xJf "$tarball" -C "$src" --strip-components=1 --wildcards '*/c10/*' '*/version.txt'
  # PyTorch 2.6.0's release_available_cached_blocks calls release_block(*cur), which deletes the
  # block, and then reads (*cur)->size. Read the size first.
  file=$src/c10/cuda/CUDACachingAllocator.cpp
  perl -0pi -e 's/(\n(\s*))release_block\(\*cur, context\);\n\s*totalReleased \+= \(\*cur\)->size;/$1totalReleased += (*cur)->size; \/\/ cumemtrace oracle: read before release_block deletes it$1release_block(*cur, context);/' "$file"
  if grep -q 'cumemtrace oracle: read before' "$file"; then
    echo "oracle: patched the use-after-free in release_available_cached_blocks"
  elif grep -q 'totalReleased += (\*cur)->size' "$file"; then
    echo "oracle: $version does not have the release_available_cached_blocks pattern; left as it is"
  fi
  touch "$src/.patched"
fi

build=$dir/c10-build
cmake -S "$src_tree/tests/oracle/c10" -B "$build" -DC10_SOURCE_DIR="$src" \
  -DCMT_CUDART="$cudart" -DCMT_CUDA_INCLUDE_DIR="$cuda_include" -DCMT_SOURCE_DIR="$src_tree" \
  >"$dir/configure.log" 2>&1 || { tail -n 20 "$dir/configure.log"; exit 1; }
cmake --build "$build" -j"$(nproc)" >"$dir/build.log" 2>&1 || { grep -m 20 -E 'error|Error' "$dir/build.log"; exit 1; }
echo "oracle: PyTorch $(cat "$src/version.txt") c10 built: $build/bin/oracle_driver"
