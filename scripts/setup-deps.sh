#!/usr/bin/env bash
# Installs the Debian packages cumemtrace needs to build and test, when missing: as root with
# apt-get, otherwise it prints the exact apt-get command and exits 1. The one list of packages
# (.ci/run uses it too). Usage: scripts/setup-deps.sh [--ci] (--ci adds what CI alone needs:
# clang and libFuzzer for the fuzz run, the oracle's c10 build dependencies, python3 and
# node for the export checks, chromium for the HTML report's browser test).
set -euo pipefail

packages=(cmake make gcc g++ pkg-config libunwind-dev libzstd-dev libcriterion-dev libdw-dev
          clang-format)
if [ "${1:-}" = --ci ]; then
    # python3: the export checks (trace-event JSON, memory-viz pickle); nodejs, npm: the
    # DuckDB test of the partitioned export (npm installs @duckdb/node-api under the build tree);
    # chromium: the HTML report's browser test (tests/tools/cli/html_browser.sh)
    packages+=(clang libclang-rt-dev libfmt-dev libcpuinfo-dev dpkg-dev python3 nodejs chromium)
    command -v npm >/dev/null || packages+=(npm) # NodeSource's nodejs bundles npm (and conflicts)
fi

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    if [ "$(id -u)" = 0 ]; then
        echo "setup-deps: installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}"
    else
        echo "setup-deps: missing Debian packages: ${missing[*]}; install them with" >&2
        echo "  sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
        exit 1
    fi
fi
if [ ! -f "${CUDAToolkit_ROOT:-/usr/local/cuda}/include/cuda.h" ] &&
   [ ! -f /usr/include/cuda.h ]; then
    echo "setup-deps: the CUDA toolkit's cuda.h is required (headers only: no driver, no GPU)" >&2
    echo "  e.g. /usr/local/cuda/include/cuda.h, or set CUDAToolkit_ROOT" >&2
    exit 1
fi
