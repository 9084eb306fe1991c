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
. "$(dirname "$0")/own-apt.sh"

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

need_root "fetch-lab-kernel: not root; the kernel lab's tests on Debian 13's 6.12 will skip and say why"
work_in "$cache"
own_apt "$work" "deb $mirror $suite main"
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
