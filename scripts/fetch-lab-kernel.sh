#!/usr/bin/env bash
# The kernel lab's second kernel: Debian 13's own (trixie's linux-image-amd64, Linux 6.12),
# beside the Debian 12 kernel install-system-deps.sh installs (tests/kernel_lab.py).
#
# Fetched with Debian's own apt from the trixie suite, through a sources list and a lists
# directory of its own, for the download only: the host's sources, package lists and
# installed packages stay untouched, and nothing is installed. The package is unpacked
# (dpkg-deb -x) into $CACHE/RELEASE/, its modules indexed there by depmod; virtme-ng boots
# the image from there and finds the modules beside it.
#
# Idempotent: does nothing, and touches no network, when a 6.12 kernel is unpacked already.
#   scripts/fetch-lab-kernel.sh [--where]   (--where: print the cache directory and stop)
set -euo pipefail

# Not under /var/cache: virtme-ng mounts a tmpfs there in the guest, which would hide the
# modules it links to.
cache=${CRYPTBENCH_LAB_KERNELS:-/var/lib/cryptbench/lab-kernels}
suite=trixie
mirror=http://deb.debian.org/debian

if [ "${1:-}" = --where ]; then
    echo "$cache"
    exit 0
fi
if compgen -G "$cache/*/boot/vmlinuz-6.12.*-amd64" >/dev/null; then
    exit 0
fi

# What the user must read even when scripts/quietly.sh sends the rest to its log: on fd 3 where it is open.
notice() { if { true >&3; } 2>/dev/null; then echo "$*" >&3; else echo "$*" >&2; fi; }

if [ "$(id -u)" -ne 0 ]; then
    notice "fetch-lab-kernel: not root; the kernel lab's tests on Debian 13's 6.12 will skip and say why"
    exit 0
fi

mkdir -p "$cache"
work=$(mktemp -d "$cache/.fetch-XXXXXX")  # a dot: not taken for a kernel while it fills
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/archives/partial"
echo "deb $mirror $suite main" >"$work/sources.list"
# Debian's archive keyring (the host's, which holds trixie's key) checks the suite's Release
# file as for any apt source; the package's own checksum is checked against it on download.
opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
      -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work" -o "Dir::Cache::Archives=$work/archives"
      -o APT::Architecture=amd64 -o APT::Architectures::=amd64
      -o APT::Sandbox::User=root)  # its own directory is root's: apt's _apt user cannot write there
echo "fetch-lab-kernel: $suite's package lists, into $work (the host's stay as they are)"
apt-get -q "${opts[@]}" update
# linux-image-amd64 is the metapackage; the image it depends on is the suite's current kernel.
image=$(apt-cache "${opts[@]}" show linux-image-amd64 | sed -n 's/^Depends: \(linux-image-[^ ,]*\).*/\1/p' | head -n 1)
case $image in
    linux-image-6.12.*-amd64) ;;
    *) echo "fetch-lab-kernel: $suite's linux-image-amd64 depends on '$image', not a 6.12 image" >&2; exit 1 ;;
esac
(cd "$work" && apt-get -q "${opts[@]}" download "$image")
release=${image#linux-image-}
unpacked=$work/$release
dpkg-deb -x "$work"/"$image"_*.deb "$unpacked"
# Debian 13 ships modules under /usr/lib/modules; depmod's base is the directory above lib/.
if [ -d "$unpacked/usr/lib/modules/$release" ]; then base=$unpacked/usr; else base=$unpacked; fi
depmod -b "$base" "$release"
test -f "$unpacked/boot/vmlinuz-$release"
test -f "$base/lib/modules/$release/modules.dep"
rm -rf "${cache:?}/$release"
mv "$unpacked" "$cache/$release"
echo "fetch-lab-kernel: $image unpacked into $cache/$release"
