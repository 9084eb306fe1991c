#!/usr/bin/env bash
# OpenZFS for the kernel lab (tests/support/kernel_lab.py, docs/kernel-lab.md): Debian's own packages,
# the module built by DKMS against each lab kernel's headers, cached by ZFS version and kernel.
#
# ZFS is not in Debian's kernel; Debian packages it in contrib (zfs-dkms, zfsutils-linux and
# its libraries), 2.3.x in bookworm-backports. Those packages are fetched with Debian's apt
# through a sources list and a lists directory of their own (the host's sources and package
# lists stay untouched) and unpacked, not installed: a user's machine would load the module
# at boot, which the lab's guest does from the cache instead (tests/support/zfs_lab.py).
# The module is built by Debian's dkms, with the package's own dkms.conf, in a DKMS tree of
# its own: nothing is registered in the host's /var/lib/dkms, so no kernel update rebuilds it.
#
# Kernels, each built with the compiler its headers are made for:
# - Debian 12's 6.1 (/boot): on this host, whose gcc-12 it was built with. What this installs
#   on the host through apt: dkms, and the headers of exactly that kernel. (dkms signs what it
#   builds with a key pair it makes in /var/lib/dkms once, as for every DKMS package.)
# - Debian 13's 6.12 (scripts/fetch-lab-kernel.sh's cache): its headers need gcc-14
#   (-fmin-function-alignment) and their objtool glibc 2.38, which Debian 12 lacks. So it is
#   built in a minimal Debian 13 made by debootstrap (installed on the host through apt) in
#   the script's own work directory, from the kernel's own packages kept beside it
#   (RELEASE/debs) and trixie's dkms and compiler; the work directory goes when it is done.
#   /proc is mounted for the build in a mount namespace of its own, so it never outlives it.
#
# Cache: $CACHE/ZFS_VERSION/root (the unpacked packages: sbin/zpool, sbin/zfs, sbin/zdb and
# their libraries) and $CACHE/ZFS_VERSION/modules/KERNEL_RELEASE/{spl,zfs}.ko.
#
# Idempotent: does nothing, and touches no network, when every lab kernel's module is built.
#   scripts/fetch-zfs.sh [--where]   (--where: print the cache directory and stop)
set -euo pipefail
. "$(dirname "$0")/own-apt.sh"

cache=${CRYPTBENCH_LAB_ZFS:-/var/lib/cryptbench/lab-zfs}  # not /var/cache: vng hides it in the guest
suite=bookworm-backports
mirror=http://deb.debian.org/debian
packages=(zfs-dkms zfsutils-linux libnvpair3linux libuutil3linux libzfs6linux libzpool6linux)

if [ "${1:-}" = --where ]; then
    echo "$cache"
    exit 0
fi

# The lab's kernels: Debian 12's newest image in /boot (tests/support/kernel_lab.py, KERNELS["6.1"]),
# and Debian 13's in fetch-lab-kernel.sh's cache (KERNELS["6.12"]), each where it is there.
declare -A kernel_dir=()  # release -> the unpacked 6.12 kernel's directory ("" for /boot's)
image=$(find /boot -maxdepth 1 -name 'vmlinuz-6.1.0-*-amd64' | sort -V | tail -n 1)
if [ -n "$image" ]; then
    kernel_dir[${image#/boot/vmlinuz-}]=""
else
    notice "fetch-zfs: no Debian 12 kernel in /boot (install-system-deps.sh --test installs it); its ZFS lab tests will skip and say why"
fi
image=$("$(dirname "$0")/fetch-lab-kernel.sh" --image)
if [ -n "$image" ]; then
    kernel_dir[${image##*/vmlinuz-}]=${image%/boot/*}
else
    notice "fetch-zfs: no Debian 13 kernel in $("$(dirname "$0")/fetch-lab-kernel.sh" --where) (fetch-lab-kernel.sh fetches it); its ZFS lab tests will skip and say why"
fi

built() {  # a whole build for release $1: its module and the programs
    local d
    for d in "$cache"/*/; do
        if [ -f "$d/modules/$1/zfs.ko" ] && [ -f "$d/root/sbin/zpool" ]; then return 0; fi
    done
    return 1
}
todo=()
for release in "${!kernel_dir[@]}"; do
    built "$release" || todo+=("$release")
done
if [ ${#todo[@]} -eq 0 ]; then
    exit 0
fi
need_root "fetch-zfs: not root; the kernel lab's ZFS tests will skip and say why"
work_in "$cache"
own_apt "$work" "deb $mirror $suite main contrib"
version=$(apt-cache "${opts[@]}" show zfs-dkms | sed -n 's/^Version: //p' | sort -V | tail -n 1)
(cd "$work" && apt-get -q "${opts[@]}" download "${packages[@]/%/=$version}")
for deb in "$work"/*.deb; do
    dpkg-deb -x "$deb" "$work/root"
done
src=$(find "$work/root/usr/src" -maxdepth 1 -name 'zfs-*' | head -n 1)
zfs=${src##*/zfs-}  # the module's version as DKMS knows it (2.3.2)
mkdir -p "$work/source"
mv "$src" "$work/source/"
rm -rf "$work/root/usr/src"  # the source is the build's, not the programs'

host_packages() {  # installs the host packages named that are not installed yet
    local missing=() pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "fetch-zfs: installing ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
}

# Debian 12's kernel, with this host's dkms and the kernel's headers (its -common and
# kbuild come with them).
build_on_host() {
    local release=$1
    if ! host_packages dkms "linux-headers-$release"; then
        notice "fetch-zfs: could not install dkms and linux-headers-$release: the lab's kernel $release may be older than the archive's (apt-get install linux-image-amd64 linux-headers-amd64 brings both to the newest)"
        exit 1
    fi
    local tree=(--dkmstree "$work/dkms" --sourcetree "$work/source")
    mkdir -p "$work/dkms"
    dkms add -m zfs -v "$zfs" "${tree[@]}"
    dkms build -m zfs -v "$zfs" -k "$release" "${tree[@]}"
    cp "$work/dkms/zfs/$zfs/$release/x86_64/module/"{spl,zfs}.ko* "$work/modules/$release/"
}

unmount_under() {  # every mount below directory $1, innermost first
    local mounts
    mounts=$(awk -v d="$1/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r)
    [ -z "$mounts" ] || echo "$mounts" | xargs -r -n 1 umount -l
}

# Debian 13's kernel, in a minimal Debian 13 with its own dkms and compiler, from the
# kernel's own packages (the image's too: its headers depend on it).
build_in_trixie() {
    local release=$1 debs=${kernel_dir[$1]}/debs
    if ! compgen -G "$debs/linux-headers-${release}_*.deb" >/dev/null; then
        notice "fetch-zfs: no headers for $release in $debs (scripts/fetch-lab-kernel.sh keeps them)"
        exit 1
    fi
    host_packages debootstrap
    local root=$work/trixie
    # debootstrap mounts /proc and /sys in the tree while it installs: anything it left
    # mounted is unmounted before the work directory goes, and the removal stays on its
    # own filesystem whatever happens
    trap 'unmount_under "$work"; rm -rf --one-file-system "$work"' EXIT
    debootstrap --variant=minbase trixie "$root" "$mirror"
    mkdir -p "$root/build/debs" "$root/build/dkms"
    cp "$debs"/*.deb "$root/build/debs/"
    cp -a "$work/source" "$root/build/source"
    chroot "$root" /bin/sh -ec \
        "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends dkms libc6-dev /build/debs/*.deb"
    local tree="--dkmstree /build/dkms --sourcetree /build/source"
    unshare --mount --propagation private chroot "$root" /bin/sh -ec \
        "mount -t proc proc /proc; dkms add -m zfs -v $zfs $tree; dkms build -m zfs -v $zfs -k $release $tree"
    cp "$root/build/dkms/zfs/$zfs/$release/x86_64/module/"{spl,zfs}.ko* "$work/modules/$release/"
}

for release in "${todo[@]}"; do
    echo "fetch-zfs: building ZFS $zfs for $release with dkms (a few minutes, once)"
    mkdir -p "$work/modules/$release"
    if [ -z "${kernel_dir[$release]}" ]; then build_on_host "$release"; else build_in_trixie "$release"; fi
    # insmod takes a module as it is; Debian 13's dkms compresses what it builds
    for xz in "$work/modules/$release"/*.ko.xz; do
        [ -e "$xz" ] && xz -d -f "$xz"
    done
    test -f "$work/modules/$release/spl.ko" && test -f "$work/modules/$release/zfs.ko"
done

# Into place: the packages' tree whole, each module beside any other kernel's of this version.
dest=$cache/$version
mkdir -p "$dest/modules"
rm -rf "${dest:?}/root"
mv "$work/root" "$dest/root"
for release in "${todo[@]}"; do
    rm -rf "${dest:?}/modules/$release"
    mv "$work/modules/$release" "$dest/modules/$release"
    echo "fetch-zfs: ZFS $version for $release in $dest"
done
