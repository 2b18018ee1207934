#!/usr/bin/env bash
# Runs a memory-only PyTorch program on a simulated GPU, inside the Debian trixie root that
# scripts/setup-torch.sh built (real torch 2.6, CUDA 12.4 build), under `cumemtrace record --torch`:
#
#   scripts/torch-run.sh [--gpu-size 24GiB] [--devices 1] [-o TRACE] -- python3 snippet.py
#
# The program runs in the root's python3 with the project's own libraries from the build tree
# (simcuda's libcuda.so.1, simcudart's libcudart.so.12, the libcudnn.so.9 stand-in, the shim and
# the CLI) first on the loader's path; no NVIDIA library is loaded. Kernels "succeed" without
# computing: tensors' memory is real, their values are not.
#
# options:
#   --gpu-size SIZE   each simulated device's memory (SIMCUDA_MEMORY; default 24GiB)
#   --devices N       simulated devices (SIMCUDA_DEVICES; default 1)
#   -o TRACE          the trace (record's -o; default cumemtrace.%p.cmt in the directory)
#   --no-record       run the command as it is (no `cumemtrace record --torch` around it)
#   --bind DIR        also make DIR visible inside the root, at the same path (repeatable)
#   --build DIR       the build tree (default: CUMEMTRACE_BUILD, else build/ of this clone)
# The current directory is visible inside at the same path, and is where the program runs.
# Variables passed in: PYTORCH_*, SIMCUDA_*, CUMEMTRACE_*, CMT_*, and TORCH_RUN_ENV (a
# space-separated list of more names). Needs root (chroot, mounts in a private namespace).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
root=${CUMEMTRACE_TORCH_ROOT:-/var/cache/cumemtrace/torch-root}
build=${CUMEMTRACE_BUILD:-$here/build}
gpu_size=24GiB
devices=1
trace=""
record=1
binds=()
die() { echo "torch-run: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case "$1" in
        --gpu-size) gpu_size=${2:?--gpu-size needs a size}; shift 2 ;;
        --gpu-size=*) gpu_size=${1#*=}; shift ;;
        --devices) devices=${2:?--devices needs a count}; shift 2 ;;
        --devices=*) devices=${1#*=}; shift ;;
        -o) trace=${2:?-o needs a path}; shift 2 ;;
        --no-record) record=0; shift ;;
        --bind) binds+=("$(cd "${2:?--bind needs a directory}" && pwd)"); shift 2 ;;
        --build) build=${2:?--build needs a directory}; shift 2 ;;
        -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        --) shift; break ;;
        *) die "unknown option '$1' (the command comes after --; try --help)" ;;
    esac
done
[ $# -gt 0 ] || die "no command (usage: torch-run.sh [options] -- python3 snippet.py)"
[ "$(id -u)" = 0 ] || die "needs root (chroot into $root)"
[ -f "$root/.cumemtrace-torch-root-complete" ] ||
    die "no complete torch root at $root; build it once with scripts/setup-torch.sh"
build=$(cd "$build" 2>/dev/null && pwd) || die "no build tree at $build (cmake -S . -B build)"
[ -x "$build/bin/cumemtrace" ] || die "no $build/bin/cumemtrace (cmake --build build)"

# The project's libraries, by soname, wherever the build put them.
libdirs=""
for so in libcuda.so.1 libcudart.so.12 libcudnn.so.9; do
    f=$(find "$build/lib" -name "$so" 2>/dev/null | head -n 1)
    [ -n "$f" ] || die "the build tree has no $so (needed by torch; built with the simulator on)"
    libdirs="${libdirs:+$libdirs:}$(dirname "$f")"
done

envs=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
    LANG=C.UTF-8 LD_LIBRARY_PATH="$libdirs" SIMCUDA_MEMORY="$gpu_size" SIMCUDA_DEVICES="$devices"
    CUMEMTRACE_BUILD="$build" CUMEMTRACE_TORCH_ROOT="$root")
for name in $(compgen -e); do
    case "$name" in
        PYTORCH_*|SIMCUDA_*|CUMEMTRACE_*|CMT_*|CI) envs+=("$name=${!name}") ;;
    esac
done
for name in ${TORCH_RUN_ENV:-}; do
    [ -n "${!name+set}" ] && envs+=("$name=${!name}")
done
# The settings this script owns win over the caller's.
envs+=(SIMCUDA_MEMORY="$gpu_size" SIMCUDA_DEVICES="$devices" LD_LIBRARY_PATH="$libdirs")

cmd=("$@")
if [ "$record" = 1 ]; then
    cmd=("$build/bin/cumemtrace" record --torch ${trace:+-o "$trace"} -- "$@")
fi

# Mounts live in a private namespace: they vanish with the command, whatever happens to it.
binds+=("$build" "$(pwd)")
exec unshare --mount --propagation private -- /bin/bash -c '
    set -e
    root=$1 cwd=$2 nbinds=$3; shift 3
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount -t tmpfs tmpfs "$root/tmp"
    for ((i = 0; i < nbinds; i++)); do
        mkdir -p "$root$1"
        mount --bind "$1" "$root$1"
        shift
    done
    exec chroot "$root" /bin/sh -c "cd \"\$0\" && exec /usr/bin/env -i \"\$@\"" "$cwd" "$@"
' torch-run "$root" "$(pwd)" "${#binds[@]}" "${binds[@]}" "${envs[@]}" "${cmd[@]}"
