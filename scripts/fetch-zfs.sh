#!/usr/bin/env bash
# OpenZFS for the kernel lab (tests/kernel_lab.py, docs/kernel-lab.md): Debian's own packages,
# the module built by DKMS against the lab kernel's headers, cached by ZFS version and kernel.
#
# ZFS is not in Debian's kernel; Debian packages it in contrib (zfs-dkms, zfsutils-linux and
# its libraries), 2.3.x in bookworm-backports. Those packages are fetched with Debian's apt
# through a sources list and a lists directory of their own (the host's sources and package
# lists stay untouched) and unpacked, not installed: a user's machine would load the module
# at boot, which the lab's guest does from the cache instead (tests/support/zfs_lab.py).
# The module is built by Debian's dkms, with the package's own dkms.conf, in a DKMS tree of
# its own: nothing is registered in the host's /var/lib/dkms, so no kernel update rebuilds
# it. What this installs on the host through apt: dkms, and the headers of the lab's kernel.
# (dkms signs what it builds with a key pair it makes in /var/lib/dkms once, as it does for
# every DKMS package.)
#
# Cache: $CACHE/ZFS_VERSION/root (the unpacked packages: sbin/zpool, sbin/zfs and their
# libraries) and $CACHE/ZFS_VERSION/modules/KERNEL_RELEASE/{spl,zfs}.ko.
#
# Kernels: Debian 12's 6.1, the lab's default. Debian 13's 6.12 has no module here yet:
# trixie's headers are built for gcc-14 (-fmin-function-alignment) and their objtool needs
# glibc 2.38, neither of which Debian 12 has.
#
# Idempotent: does nothing, and touches no network, when the lab kernel's module is built.
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

# The lab's 6.1 kernel: the newest image the lab boots (tests/kernel_lab.py, KERNELS["6.1"]).
image=$(find /boot -maxdepth 1 -name 'vmlinuz-6.1.0-*-amd64' | sort -V | tail -n 1)
if [ -z "$image" ]; then
    notice "fetch-zfs: no Debian 12 kernel in /boot (install-system-deps.sh --test installs it); the ZFS lab tests will skip and say why"
    exit 0
fi
release=${image#/boot/vmlinuz-}
for built in "$cache"/*/; do  # a whole build: its module for this kernel and its programs
    if [ -f "$built/modules/$release/zfs.ko" ] && [ -f "$built/root/sbin/zpool" ]; then
        exit 0
    fi
done
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

# The headers of exactly the lab's kernel (its -common and kbuild come with them).
headers=linux-headers-$release
missing=()
for pkg in dkms "$headers"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "fetch-zfs: installing ${missing[*]}"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"; then
        notice "fetch-zfs: could not install ${missing[*]}: the lab's kernel $release may be older than the archive's (apt-get install linux-image-amd64 linux-headers-amd64 brings both to the newest)"
        exit 1
    fi
fi

echo "fetch-zfs: building ZFS $zfs for $release with dkms (a few minutes, once)"
mkdir -p "$work/dkms" "$work/source"
mv "$src" "$work/source/"
tree=(--dkmstree "$work/dkms" --sourcetree "$work/source")
dkms add -m zfs -v "$zfs" "${tree[@]}"
dkms build -m zfs -v "$zfs" -k "$release" "${tree[@]}"
built=$work/dkms/zfs/$zfs/$release/x86_64/module
mkdir -p "$work/modules/$release"
cp "$built/spl.ko" "$built/zfs.ko" "$work/modules/$release/"
rm -rf "$work/root/usr/src"  # built: the source is not needed again

# Into place: the packages' tree whole, the module beside any other kernel's of this version.
dest=$cache/$version
mkdir -p "$dest/modules"
rm -rf "${dest:?}/root" "${dest:?}/modules/$release"
mv "$work/root" "$dest/root"
mv "$work/modules/$release" "$dest/modules/$release"
echo "fetch-zfs: ZFS $version for $release in $dest"
