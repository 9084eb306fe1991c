"""OpenZFS in the kernel lab: what scripts/fetch-zfs.sh built on the host, found and loaded.

The host fetches Debian's ZFS packages (bookworm-backports, contrib) and builds the module
with dkms against the lab kernel's headers, into a cache the guest sees (/var/lib is the
host's in the guest). A user's machine has the packages installed and the module loaded at
boot; the guest loads it from the cache (`load`) and finds `zpool` and `zfs` through PATH
(`environ`), the packages' libraries beside them.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.versions import version_key

CACHE = Path(os.environ.get("CRYPTBENCH_LAB_ZFS", "/var/lib/cryptbench/lab-zfs"))
FETCH = "scripts/fetch-zfs.sh"  # what builds the cache (make test runs it)
LIBRARIES = ("lib/x86_64-linux-gnu",)  # where the packages put theirs


@dataclass(frozen=True)
class LabZfs:
    version: str  # Debian's version of the packages (2.3.2-2~bpo12+2)
    root: Path  # the unpacked packages: sbin/zpool, sbin/zfs and their libraries
    modules: Path  # spl.ko and zfs.ko, built for the running kernel

    def environ(self) -> dict[str, str]:
        """This process's environment with the packages' programs and libraries found first."""
        env = dict(os.environ)
        env["PATH"] = f"{self.root / 'sbin'}:{self.root / 'usr/sbin'}:{env.get('PATH', '')}"
        libraries = [str(self.root / d) for d in LIBRARIES]
        env["LD_LIBRARY_PATH"] = ":".join([*libraries, *filter(None, [env.get("LD_LIBRARY_PATH")])])
        return env


def find(release: str | None = None) -> LabZfs | None:
    """The newest build for kernel `release` (the running one by default), or None."""
    release = release or os.uname().release
    builds = [
        d
        for d in (CACHE.iterdir() if CACHE.is_dir() else ())
        if not d.name.startswith(".")
        and (d / "modules" / release / "zfs.ko").is_file()
        and (d / "root/sbin/zpool").is_file()
    ]
    if not builds:
        return None
    newest = max(builds, key=lambda d: version_key(d.name))
    return LabZfs(newest.name, newest / "root", newest / "modules" / release)


def why_missing(release: str | None = None) -> str | None:
    """Why the lab has no ZFS for `release`, in words a developer can act on, or None."""
    release = release or os.uname().release
    if find(release) is None:
        return f"no ZFS module built for {release} in {CACHE}: {FETCH} builds it (as root; make test runs it)"
    return None


def need(release: str | None = None) -> LabZfs:
    """The lab's ZFS, or the test skips saying why (which CRYPTBENCH_REQUIRE_LAB, as CI
    sets it, turns into a failure: tests/support/kernel_lab.py)."""
    found = find(release)
    if found is None:
        pytest.skip(why_missing(release) or "")
    return found


def load(zfs: LabZfs) -> None:
    """Load spl and zfs from the cache unless the kernel has them already."""
    for module in ("spl", "zfs"):
        if not Path("/sys/module", module).is_dir():
            subprocess.run(["insmod", str(zfs.modules / f"{module}.ko")], check=True, capture_output=True)
