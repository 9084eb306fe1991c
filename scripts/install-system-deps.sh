#!/usr/bin/env bash
# Install the system packages cryptbench uses, when they are missing.
# Idempotent: installs nothing (and does not touch apt) when all are present.
# Without root it only reports what is missing; cryptbench then measures what
# it can and says why it skipped the rest.
set -euo pipefail

packages=(fio gocryptfs fuse3 fscrypt e2fsprogs util-linux util-linux-extra mount python3 python3-venv python3-pip
          qemu-utils qemu-system-common cryptsetup-bin dmsetup securefs cryfs encfs rclone xfsprogs btrfs-progs
          gcc libc6-dev libssl-dev python3-dev)  # the last four build the C cipher-timing loop
# `make test` only: the browser test opens the HTML report in headless Chromium;
# a font so its screenshot shows text, not boxes. The kernel lab
# (tests/support/kernel_lab.py) boots Debian 12's own kernel under qemu, with busybox
# for virtme-ng's initramfs.
# ecryptfs-utils is for the kernel lab's eCryptfs tests only: its package enables a PAM
# module (pam-auth-update), a change to a user's login we do not make for `make run`;
# `backends` tells a user who wants the ecryptfs target to install it.
# git and sqlite3 are for the example suites of your own commands (docs/own-work.md),
# which the tests run; each example names what it needs (`needs = […]`).
# kmod's depmod indexes the modules of the lab's second kernel (scripts/fetch-lab-kernel.sh).
# zsh and fish load the generated completions in their test (tests/integration/test_shell.py).
# strace records every program a run starts for the secrets test (tests/integration/test_secrets.py).
#   --list: print the packages (with --test, the tests' too) and install nothing; the
#   tests read it to tell a backend the install missed from one this machine cannot run.
test=0 list=0
for arg in "$@"; do
    case $arg in
        --test) test=1 ;;
        --list) list=1 ;;
        *) echo "install-system-deps: unknown option $arg" >&2; exit 2 ;;
    esac
done
if [ $test = 1 ]; then
    packages+=(chromium fonts-dejavu-core qemu-system-x86 linux-image-amd64 busybox-static ecryptfs-utils git sqlite3
               zsh fish strace kmod)
fi

if [ $list = 1 ]; then
    echo "${packages[@]}"
    exit 0
fi

missing=()
for pkg in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$pkg")
    fi
done

# A python3 that is not Debian's (pyenv, a container image) still needs venv to work.
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    missing+=(python3-venv)
fi

if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi

# What the user must read even when scripts/quietly.sh sends the rest to its log: on fd 3 where it is open.
notice() { if { true >&3; } 2>/dev/null; then echo "$*" >&3; else echo "$*" >&2; fi; }

if [ "$(id -u)" -ne 0 ]; then
    notice "install-system-deps: not root; missing packages: ${missing[*]}"
    notice "install-system-deps: cryptbench will skip what needs them and say why"
    exit 0
fi

echo "install-system-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
