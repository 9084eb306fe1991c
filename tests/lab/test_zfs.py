"""OpenZFS in Debian 12's and Debian 13's kernels: the ground the zfs targets stand on.

scripts/fetch-zfs.sh builds Debian's zfs-dkms against each lab kernel's headers; here
the module loads, and a pool cycles as the targets will use it: on a loop device over an
image in the scratch space, imported under a name of its own with an altroot inside that
space and no cache file, a dataset natively encrypted with a raw key read from a file
(keylocation=file://, never a command line). What the ARC holds goes with `zpool export`,
which is what makes a trial after export and import a cold read; `drop_caches` does not
empty it (openzfs/zfs#12810), which a later target's test holds the tool to.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cryptbench.machine.resources import zpool_names
from cryptbench.model.json_types import JsonObject
from tests.support import zfs_lab
from tests.support.cli import cli, own_state
from tests.support.leaks import leak_checked_dir, leftovers

# Both kernels: each has its own build of the module (6.12's made with Debian 13's compiler)
pytestmark = [pytest.mark.lab("6.1", "6.12"), pytest.mark.integration]

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
    target_dir: Path, tmp_path: Path, with_zfs: zfs_lab.LabZfs
) -> None:
    zfs = with_zfs
    assert Path("/sys/module/zfs/version").read_text().startswith(zfs.version.split("-")[0])

    def run(*argv: str) -> str:
        return subprocess.run(argv, check=True, capture_output=True, text=True).stdout

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
                subprocess.run(["zpool", "export", pool], check=False)


ZFS_TARGETS = ("zfs", "zfs-native", "zfs-on-luks")
# One sequential read, buffered: a read the ARC could serve is what the cache control is
# for (with O_DIRECT, ZFS 2.3 reads past the ARC anyway); and one sequential write, which
# ends with zpool sync. Tiny: under TCG every block is encrypted in emulated software.
READ_SUITE = """
name = "zfs-lab"
description = "One sequential read and one write, for the kernel lab's ZFS targets"
[[workloads]]
name = "seq1m-q8-read"
rw = "read"
bs = "1M"
iodepth = 8
[[workloads]]
name = "seq1m-q8-write"
rw = "write"
bs = "1M"
iodepth = 8
"""
SIZE = 8 << 20  # bytes: the data file each trial reads
# The whole run and what reads it, on 6.12 alone: both kernels load the same OpenZFS (one
# version of Debian's packages, a module built for each), and the first test cycles a pool
# on each; the targets' code above the module is the same on both. 6.12's guest runs it
# once the host's tests have ended, 6.1's beside them, where it took 333 s against 195 s
# (docs/results/make-test.md).
ONE_RUN = pytest.mark.lab("6.12")


@pytest.fixture(scope="module", autouse=True)
def with_zfs() -> Iterator[zfs_lab.LabZfs]:
    """The module loaded, and zpool and zfs found through PATH by this process and all it
    starts, as on a machine with the packages installed: the runs, `cleanup`, and the leak
    checks (tests/support/leaks.py), which then see a pool left imported."""
    zfs = zfs_lab.need()
    zfs_lab.load(zfs)
    with pytest.MonkeyPatch.context() as patch:
        for name in ("PATH", "LD_LIBRARY_PATH"):
            patch.setenv(name, zfs.environ()[name])
        yield zfs


@pytest.fixture(scope="module")
def zfs_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JsonObject]:
    """`cryptbench run --backends zfs,zfs-native,zfs-on-luks,plain` as a user with ZFS types it."""
    home = tmp_path_factory.mktemp("zfs")
    suite = home / "suite.toml"
    suite.write_text(READ_SUITE)
    env = own_state(home)
    with leak_checked_dir() as target:
        proc = cli(
            *("run", "--backends", ",".join((*ZFS_TARGETS, "plain")), "--suite", str(suite)),
            *("--size", str(SIZE), "--repeats", "2", "--io-mode", "buffered", "--json"),
            *("--target", str(target), "--db", str(home / "r.sqlite")),
            env=env,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert not zpool_names("cryptbench-"), "a pool was left imported"
    doc: JsonObject = json.loads(proc.stdout)
    return doc


@ONE_RUN
def test_the_three_are_measured_ranked_and_proven(zfs_run: JsonObject) -> None:
    targets = {t["name"]: t for t in zfs_run["targets"]}
    assert set(ZFS_TARGETS) <= set(targets)
    assert zfs_run["trials"]["failed"] == 0
    assert targets["zfs"]["baseline"] == "plain"
    for name in ("zfs-native", "zfs-on-luks"):
        assert targets[name]["baseline"] == "zfs"
        assert targets[name]["encryption_verified"] is True, name
    # the positive control: the marker written through it is in its image as written
    assert targets["zfs"]["encryption_verified"] is None and targets["zfs"]["marker_in_backing"] is True
    assert "encryption=aes-256-gcm" not in targets["zfs"]["details"]["dataset"]
    assert targets["zfs-native"]["details"]["encryption"].startswith("ZFS native, aes-256-gcm")
    for name in ZFS_TARGETS:
        details = targets[name]["details"]
        assert "recordsize=128K" in details["dataset"] and "compression=off" in details["dataset"]
        assert "not aligned to a record (128K) goes through it" in details["o_direct"]
    compared = {(c["target"], c["baseline"]) for c in zfs_run["comparisons"]}
    assert {("zfs-native", "zfs"), ("zfs-on-luks", "zfs")} <= compared
    # both encrypted ways set against plain in the ranking, each with its verdict
    ranked = {r["target"]: r for group in zfs_run["ranking"] for r in group["overall"]}
    assert {"zfs-native", "zfs-on-luks"} <= set(ranked), zfs_run["ranking"]
    assert all(ranked[n].get("verdict") for n in ("zfs-native", "zfs-on-luks"))


@ONE_RUN
def test_the_probes_read_each_pool_as_zdb_shows_it_at_rest(zfs_run: JsonObject) -> None:
    """zdb reads a pool's image without a key. The plain pool shows names, exact sizes and
    the tree; native encryption hides names and which directory holds which, but its
    dnodes give each file's size to 512 bytes away (and each dataset's name); on LUKS the
    pool is ciphertext whole. Each finding agrees with what the backend declares."""
    targets = {t["name"]: t for t in zfs_run["targets"]}
    found = {
        n: {p: targets[n]["protection"][p]["verdict"] for p in ("names", "sizes", "tree")}
        for n in ZFS_TARGETS
    }
    assert found == {
        "zfs": {"names": "shown", "sizes": "shown", "tree": "shown"},
        "zfs-native": {"names": "hidden", "sizes": "block", "tree": "hidden"},
        "zfs-on-luks": {"names": "hidden", "sizes": "hidden", "tree": "hidden"},
    }, {n: {p: targets[n]["protection"][p] for p in ("names", "sizes", "tree")} for n in ZFS_TARGETS}
    sights = {n: targets[n]["protection"]["sight"] for n in ZFS_TARGETS}
    assert sights == {"zfs": "ZFS pool", "zfs-native": "ZFS pool", "zfs-on-luks": "LUKS container"}, sights
    assert targets["zfs-native"]["protection"]["sizes"]["detail"]["block"] == 512
    assert not [w for w in zfs_run["warnings"] if w["kind"].startswith("protection-")], zfs_run["warnings"]


@ONE_RUN
def test_every_cold_read_comes_from_the_device_not_the_arc(zfs_run: JsonObject) -> None:
    """Each trial reads the whole data file from the scratch device: the pool was exported
    and imported before it, so its blocks had left the ARC. Without that control the file,
    written at layout and read by the first trial, sits in the ARC and the device reads
    next to nothing (openzfs/zfs#12810: drop_caches leaves the ARC as it is)."""
    reads = [
        r
        for r in zfs_run["results"]
        if r["target"] in ZFS_TARGETS
        and (r["workload"], r["metric"]) == ("seq1m-q8-read", "device_bytes_read")
    ]
    assert {r["target"] for r in reads} == set(ZFS_TARGETS)
    for r in reads:
        assert min(r["samples"]) >= SIZE * 0.9, (r["target"], r["samples"])


@ONE_RUN
def test_each_write_ends_with_zpool_sync_inside_its_clock(zfs_run: JsonObject) -> None:
    synced = {
        r["target"]: r["samples"]
        for r in zfs_run["results"]
        if r["workload"] == "seq1m-q8-write" and r["metric"] == "backing_sync_seconds"
    }
    assert set(synced) == set(ZFS_TARGETS), synced  # and not plain, whose fsync is its commit
    assert all(s > 0 for samples in synced.values() for s in samples), synced
    for t in zfs_run["targets"]:
        if t["name"] in ZFS_TARGETS:
            assert t["details"]["writes"] == "each write trial ends with zpool sync, inside its clock"


@ONE_RUN
def test_the_tamper_probe_tells_a_checksum_from_a_mac(zfs_run: JsonObject) -> None:
    """A flipped byte fails its read on every pool; only native encryption's is a MAC."""
    targets = {t["name"]: t for t in zfs_run["targets"]}
    verdicts = {name: targets[name]["protection"]["tamper"]["verdict"] for name in ZFS_TARGETS}
    assert verdicts == {"zfs": "checked", "zfs-native": "detected", "zfs-on-luks": "checked"}, verdicts


@pytest.mark.lab  # on 6.1 alone: recovery finds pools by name, the same on every kernel
def test_sigkill_with_the_three_up_then_cleanup_leaves_no_pool(target_dir: Path, tmp_path: Path) -> None:
    """A run SIGKILLed with every ZFS target up leaves its pools imported, the LUKS mapping
    under one and the loop devices under all; `cryptbench cleanup` exports the pools (by
    their names, which carry the run's), then closes and detaches: nothing is left."""
    suite = tmp_path / "suite.toml"
    suite.write_text(READ_SUITE)
    argv = [
        *(sys.executable, "-m", "cryptbench", "run", "--backends", ",".join(ZFS_TARGETS)),
        *("--suite", str(suite), "--size", str(SIZE), "--repeats", "5", "--io-mode", "buffered"),
        *("--target", str(target_dir), "--db", str(tmp_path / "r.sqlite")),
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while len(zpool_names("cryptbench-")) < len(ZFS_TARGETS):
        assert proc.poll() is None and time.monotonic() < deadline, "the pools did not all come up"
        time.sleep(0.1)
    time.sleep(2)  # into the proof, the probes or the trials
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert zpool_names("cryptbench-"), "no pool was left to clean up"
    assert leftovers(target_dir), "nothing was left to clean up"
    clean = cli("cleanup", "--target", str(target_dir))
    assert clean.returncode == 0, clean.stderr
    print(f"cleanup said: {clean.stdout.strip()}")
    assert "exported ZFS pool" in clean.stdout
    assert zpool_names("cryptbench-") == [] and leftovers(target_dir) == []
    assert not list(Path("/dev/mapper").glob("cryptbench-*"))
