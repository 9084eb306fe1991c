"""OpenZFS in Debian 12's kernel: the ground the zfs targets stand on.

scripts/fetch-zfs.sh builds Debian's zfs-dkms against the lab kernel's headers; here
the module loads, and a pool cycles as the targets will use it: on a loop device over an
image in the scratch space, imported under a name of its own with an altroot inside that
space and no cache file, a dataset natively encrypted with a raw key read from a file
(keylocation=file://, never a command line). What the ARC holds goes with `zpool export`,
which is what makes a trial after export and import a cold read; `drop_caches` does not
empty it (openzfs/zfs#12810), which a later target's test holds the tool to.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support import zfs_lab

pytestmark = [pytest.mark.lab, pytest.mark.integration]

ARCSTATS = Path("/proc/spl/kstat/zfs/arcstats")
DATA_BYTES = 16 << 20  # small: under TCG each block is encrypted in emulated software
MARKER = b"cryptbench-zfs-lab-marker-"


def arc_data_bytes() -> int:
    """Bytes of file data the ARC holds now (arcstats' data_size)."""
    for line in ARCSTATS.read_text().splitlines():
        fields = line.split()
        if fields and fields[0] == "data_size":
            return int(fields[2])
    raise AssertionError(f"no data_size in {ARCSTATS}")


@contextmanager
def loop_over(image: Path) -> Iterator[str]:
    losetup = ["losetup", "--find", "--show", "--direct-io=on", str(image)]
    dev = subprocess.run(losetup, check=True, capture_output=True, text=True).stdout.strip()
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "-d", dev], check=True)


def test_the_module_loads_and_an_encrypted_pool_cycles_with_its_arc_emptied_by_export(
    target_dir: Path, tmp_path: Path
) -> None:
    zfs = zfs_lab.need()
    zfs_lab.load(zfs)
    assert Path("/sys/module/zfs/version").read_text().startswith(zfs.version.split("-")[0])
    env = zfs.environ()

    def run(*argv: str) -> str:
        return subprocess.run(argv, check=True, capture_output=True, text=True, env=env).stdout

    image = target_dir / "pool.img"
    with image.open("wb") as f:
        f.truncate(128 << 20)
    key = tmp_path / "key"
    key.write_bytes(os.urandom(32))
    key.chmod(0o600)
    pool, altroot = f"cbtest-{os.getpid()}", target_dir / "root"
    data = altroot / "data"
    with loop_over(image) as dev:
        run("zpool", "create", "-o", "cachefile=none", "-R", str(altroot), "-O", "canmount=off", pool, dev)
        imported = True
        try:
            run(
                *("zfs", "create", "-o", "encryption=aes-256-gcm", "-o", "keyformat=raw"),
                *("-o", f"keylocation=file://{key}", "-o", "compression=off", "-o", "mountpoint=/data"),
                f"{pool}/data",
            )
            encryption = run("zfs", "get", "-H", "-o", "value", "encryption", f"{pool}/data")
            assert encryption.strip() == "aes-256-gcm"
            payload = (MARKER * (DATA_BYTES // len(MARKER) + 1))[:DATA_BYTES]
            (data / "f").write_bytes(payload)
            run("zpool", "sync", pool)
            assert (data / "f").read_bytes() == payload
            held = arc_data_bytes()
            assert held >= DATA_BYTES // 2, f"the ARC holds {held} bytes of data after writing and reading"

            run("zpool", "export", pool)
            imported = False
            assert not data.exists() or not any(data.iterdir())
            left = arc_data_bytes()
            assert left < held // 8, f"the ARC still holds {left} of {held} bytes after export"

            run("zpool", "import", "-d", dev, "-o", "cachefile=none", "-R", str(altroot), pool)
            imported = True
            run("zfs", "load-key", f"{pool}/data")
            run("zfs", "mount", f"{pool}/data")
            assert (data / "f").read_bytes() == payload
            run("zpool", "export", pool)
            imported = False
            # contents encrypted on the device; the marker is in the file as written
            assert MARKER not in image.read_bytes()
        finally:
            if imported:
                subprocess.run(["zpool", "export", pool], check=False, env=env)
