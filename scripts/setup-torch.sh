#!/usr/bin/env bash
# Builds, once, a Debian trixie root with Debian's CUDA build of PyTorch (python3-torch-cuda, CUDA
# 12.4) in it, for scripts/torch-run.sh and the tests in tests/torch/. Needs root (debootstrap,
# chroot). The root lives outside the clone, in $CUMEMTRACE_TORCH_ROOT (default
# /var/cache/cumemtrace/torch-root); it is marked complete only when every step below is done, so
# a machine that keeps it skips all of this and an interrupted run starts over.
#
# Inside the root, NVIDIA's libcuda1 and libnvidia-ml1 (pulled by the package) are diverted out of
# the loader's way: without a driver, the real NVML turns every out-of-memory into an internal
# assert of c10's allocator. The project's own libraries (simcuda's libcuda.so.1, simcudart's
# libcudart.so.12, the libcudnn.so.9 stand-in, the shim) are never copied in: torch-run.sh binds
# the build tree into the root at run time.
#
# The archive is the one the host's apt sources name (/etc/apt/sources.list.d/*.sources, then
# /etc/apt/sources.list); CUMEMTRACE_TORCH_MIRROR overrides it.
#
#   scripts/setup-torch.sh            build the root unless it is complete
#   scripts/setup-torch.sh --check    exit 0 when it is complete, 1 otherwise (builds nothing)
#   scripts/setup-torch.sh --path     print the root's path
set -euo pipefail

root=${CUMEMTRACE_TORCH_ROOT:-/var/cache/cumemtrace/torch-root}
stamp="$root/.cumemtrace-torch-root-complete"
say() { echo "setup-torch: $*"; }
die() { echo "setup-torch: $*" >&2; exit 1; }

case "${1:-}" in
    --path) echo "$root"; exit 0 ;;
    --check) [ -f "$stamp" ] && exit 0; exit 1 ;;
    "") ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (try --help)" ;;
esac

if [ -f "$stamp" ]; then
    say "$root is complete ($(cat "$stamp")); nothing to do"
    exit 0
fi
[ "$(id -u)" = 0 ] || die "needs root (debootstrap and chroot); run it as root or with sudo"
case "$root" in
    /|"") die "CUMEMTRACE_TORCH_ROOT must name a directory of its own, not '$root'" ;;
esac

# The archive: the first deb URI of the host's sources that serves Debian itself (not -security).
mirror=${CUMEMTRACE_TORCH_MIRROR:-}
if [ -z "$mirror" ]; then
    mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
        awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }')
fi
if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
    mirror=$(awk '$1 == "deb" && $2 !~ /security/ && $2 !~ /^\[/ { print $2; exit }' /etc/apt/sources.list)
fi
[ -n "$mirror" ] || die "no Debian archive in the host's apt sources; set CUMEMTRACE_TORCH_MIRROR to one"
mirror=${mirror%/}

if ! curl -fsS -o /dev/null --max-time 30 "$mirror/dists/trixie/Release" 2>/dev/null; then
    die "cannot reach the Debian archive $mirror (dists/trixie/Release); check the network or set CUMEMTRACE_TORCH_MIRROR"
fi

if ! command -v debootstrap >/dev/null; then
    say "installing debootstrap with apt-get"
    apt-get install -y -qq debootstrap >/dev/null || die "apt-get could not install debootstrap"
fi

# debootstrap's base system is kept when a previous run finished it with the same archive and
# components (its own mark); anything else under $root from an interrupted run is redone. No
# mount may be left in it (torch-run.sh mounts in a private namespace, so none should be).
components=main,contrib,non-free # libcudart12 and the other CUDA 12 libraries are non-free
base="$root/.cumemtrace-base-complete"
base_id="trixie $components $mirror"
if grep -q " $root/" /proc/self/mounts; then
    die "$root has mounts under it ($(grep -c " $root/" /proc/self/mounts)); unmount them first"
fi
start=$(date +%s)
if [ -f "$base" ] && [ "$(cat "$base")" = "$base_id" ]; then
    say "keeping the base system of an earlier run in $root"
else
    if [ -e "$root" ]; then
        say "removing the incomplete root $root"
        rm -rf --one-file-system "$root"
    fi
    mkdir -p "$root"
    say "downloading from $mirror: Debian trixie (minbase, about 50 MB) and python3-torch-cuda with"
    say "its dependencies (about 210 packages, 2.5 GB to download, 4.4 GB installed) into $root"
    debootstrap --variant=minbase --components=$components trixie "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
        die "debootstrap failed (last lines of $root.debootstrap.log: $(tail -n 3 "$root.debootstrap.log" | tr '\n' ' '))"
    rm -f "$root.debootstrap.log"
    echo "$base_id" >"$base"
    say "base system in $(( $(date +%s) - start )) s"
fi

in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 "$@"; }

# python3-torch-cuda, and what the project's binaries from the build tree link against
# (the CLI: libdw, libzstd; the shim: libunwind, libzstd).
packages="python3-torch-cuda libdw1t64 libunwind8 libzstd1"
log="$root.apt.log"
apt_step() { # what, then the apt-get arguments; the log's last lines are the one line on failure
    local what=$1
    shift
    in_root apt-get -y -q "$@" >"$log" 2>&1 ||
        die "$what failed inside the root: $(grep -E '^(E|Err):' "$log" | head -n 2 | tr '\n' ' ')(all of it in $log)"
}
echo "deb $mirror trixie ${components//,/ }" >"$root/etc/apt/sources.list"
# dpkg writes without fsync (an interrupted run is redone anyway) and leaves out what no program
# here reads: the CUDA toolkit's static archives (2.6 GB of nvidia-cuda-dev and friends), docs.
printf '%s\n' force-unsafe-io 'path-exclude=/usr/lib/x86_64-linux-gnu/*_static*.a' \
    'path-exclude=/usr/share/doc/*' 'path-exclude=/usr/share/man/*' \
    >"$root/etc/dpkg/dpkg.cfg.d/cumemtrace-torch-root"
apt_step "apt-get update" update
apt_step "downloading $packages" install --no-install-recommends --download-only $packages
say "downloaded $(ls "$root"/var/cache/apt/archives/*.deb | wc -l) packages in $(( $(date +%s) - start )) s"

# nvidia-cudnn is an installer that fetches cuDNN from NVIDIA in its postinst: decline its licence
# (every select question that offers "I Decline"), so it installs nothing; libcudnn.so.9 is then
# the project's stand-in.
for deb in "$root"/var/cache/apt/archives/nvidia-cudnn_*.deb; do
    [ -f "$deb" ] || continue
    dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./templates 2>/dev/null |
        awk '/^Template:/ { t = $2 } /^Choices:.*I Decline/ { print t }' |
        while read -r q; do
            echo "nvidia-cudnn $q select I Decline" | in_root debconf-set-selections
            say "answered nvidia-cudnn's $q: I Decline"
        done
done

apt_step "installing $packages" install --no-install-recommends $packages
in_root apt-get clean
rm -f "$log"

# NVIDIA's driver libraries out of the loader's way, as diversions (the packages stay installed,
# so apt stays consistent); ldconfig's cache then no longer names them.
for pkg in libcuda1 libnvidia-ml1; do
    in_root dpkg -s "$pkg" >/dev/null 2>&1 || continue
    in_root dpkg -L "$pkg" | grep -E '/lib(cuda|nvidia-ml)\.so' | while read -r f; do
        [ -e "$root$f" ] || [ -L "$root$f" ] || continue
        in_root dpkg-divert --quiet --local --rename --divert "$f.cumemtrace-diverted" --add "$f"
    done
    say "diverted $pkg's libraries"
done
in_root ldconfig
if in_root ldconfig -p | grep -Eq 'lib(cuda|nvidia-ml)\.so\.1 '; then
    die "an NVIDIA libcuda.so.1 or libnvidia-ml.so.1 is still on the root's loader path"
fi

version=$(in_root dpkg-query -W -f '${Version}' python3-torch-cuda)
echo "python3-torch-cuda $version, built $(date -u +%Y-%m-%dT%H:%MZ) in $(( $(date +%s) - start )) s" >"$stamp"
say "done: $(cat "$stamp")"
