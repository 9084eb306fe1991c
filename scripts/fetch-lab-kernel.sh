#!/usr/bin/env bash
# The kernel lab's second kernel: Debian 13's own (trixie's linux-image-amd64, Linux 6.12),
# beside the Debian 12 kernel install-system-deps.sh installs (tests/support/kernel_lab.py).
#
# Fetched with Debian's own apt from the trixie suite, through a sources list and a lists
# directory of its own, for the download only: the host's sources, package lists and
# installed packages stay untouched, and nothing is installed. The package is unpacked
# (dpkg-deb -x) into $CACHE/RELEASE/, its modules indexed there by depmod; virtme-ng boots
# the image from there and finds the modules beside it.
#
# The image's package and its headers' (with their -common and linux-kbuild) are kept in
# $CACHE/RELEASE/debs/: scripts/fetch-zfs.sh builds the lab's ZFS module against exactly
# this kernel with them, even after the archive has moved on to a newer one.
#
# Idempotent: does nothing, and touches no network, when a 6.12 kernel is unpacked already
# with its packages. One unpacked without them (before they were kept) gets them, or,
# where the archive no longer has its release, the suite's current kernel is fetched.
#   scripts/fetch-lab-kernel.sh [--where|--image]   (print the cache directory, or the
#   newest 6.12 image in it or nothing, and stop: fetch-zfs.sh builds for that image)
set -euo pipefail
. "$(dirname "$0")/own-apt.sh"

# Not under /var/cache: virtme-ng mounts a tmpfs there in the guest, which would hide the
# modules it links to.
cache=${CRYPTBENCH_LAB_KERNELS:-/var/lib/cryptbench/lab-kernels}
suite=trixie
mirror=http://deb.debian.org/debian

newest_image() {  # the newest 6.12 image unpacked in the cache, by version; nothing if none
    { find "$cache" -mindepth 3 -maxdepth 3 -path '*/boot/vmlinuz-6.12.*-amd64' 2>/dev/null || true; } |
        sort -V | tail -n 1
}
case ${1:-} in
    --where) echo "$cache"; exit 0 ;;
    --image) newest_image; exit 0 ;;
esac
have=$(newest_image)
have=${have%/boot/*}
if [ -n "$have" ] && compgen -G "$have/debs/linux-headers-*.deb" >/dev/null; then
    exit 0
fi

need_root "fetch-lab-kernel: not root; the kernel lab's tests on Debian 13's 6.12 will skip and say why"
work_in "$cache"
own_apt "$work" "deb $mirror $suite main"

# The image of RELEASE and its headers' packages, downloaded into $work/debs.
download() {
    local release=$1 headers
    headers=$(apt-cache "${opts[@]}" depends "linux-headers-$release" |
        sed -n 's/^ *Depends: \(linux-headers-[^ ]*-common\|linux-kbuild-[^ ]*\)$/\1/p')
    mkdir -p "$work/debs"
    (cd "$work/debs" && apt-get -q "${opts[@]}" download "linux-image-$release" "linux-headers-$release" $headers)
}

if [ -n "$have" ]; then
    release=${have##*/}
    if download "$release"; then
        mv "$work/debs" "$have/debs"
        echo "fetch-lab-kernel: the packages of $release kept in $have/debs"
        exit 0
    fi
    echo "fetch-lab-kernel: $suite no longer has $release's packages: fetching its current kernel"
    rm -rf "$work/debs"
fi
# linux-image-amd64 is the metapackage; the image it depends on is the suite's current kernel.
image=$(apt-cache "${opts[@]}" show linux-image-amd64 | sed -n 's/^Depends: \(linux-image-[^ ,]*\).*/\1/p' | head -n 1)
case $image in
    linux-image-6.12.*-amd64) ;;
    *) echo "fetch-lab-kernel: $suite's linux-image-amd64 depends on '$image', not a 6.12 image" >&2; exit 1 ;;
esac
release=${image#linux-image-}
download "$release"
unpacked=$work/$release
dpkg-deb -x "$work/debs/${image}"_*.deb "$unpacked"
# Debian 13 ships modules under /usr/lib/modules; depmod's base is the directory above lib/.
if [ -d "$unpacked/usr/lib/modules/$release" ]; then base=$unpacked/usr; else base=$unpacked; fi
depmod -b "$base" "$release"
test -f "$unpacked/boot/vmlinuz-$release"
test -f "$base/lib/modules/$release/modules.dep"
mv "$work/debs" "$unpacked/debs"
rm -rf "${cache:?}/$release"
mv "$unpacked" "$cache/$release"
echo "fetch-lab-kernel: $image unpacked into $cache/$release, its packages in $cache/$release/debs"
