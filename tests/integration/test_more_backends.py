"""The disk images and the distribution's FUSE filesystems, for real:
provisioned, proven encrypted, measured with a tiny workload, torn down.
(LUKS needs a device-mapper: it runs in the kernel lab, tests/lab/test_luks.py.)

Each backend skips with the reason `backends` gives where it cannot run.
"""

# Over 60 s of make test (197 s in the fresh-clone run of fee2b51, 2026-11-27): every
# disk image kind and cipher in both states (19 targets, each made anew before every
# write trial, protection probes included), and each FUSE filesystem measured for real.
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cryptbench.backends import REGISTRY, images
from cryptbench.backends.base import TargetSpec
from cryptbench.backends.overlay import FuseOverlayBackend
from cryptbench.machine.session import Session
from cryptbench.measure.cache import drop_caches
from tests.support.cli import cli
from tests.support.leaks import leftovers
from tests.support.reliability import count
from tests.support.targets import available, need_backend, provisioned, requires_root, skip_unavailable

pytestmark = pytest.mark.integration

# every FUSE overlay the registry holds, so that a backend added by the recipe is run here
OVERLAYS = [n for n, b in REGISTRY.items() if isinstance(b, FuseOverlayBackend)]
IMAGES = [n for n in REGISTRY if n.startswith("image-")]
TINY = """
name = "tiny"
write_new_file = true
[[workloads]]
name = "write"
rw = "write"
bs = "1M"
iodepth = 1
[[workloads]]
name = "read"
rw = "read"
bs = "1M"
iodepth = 1
"""


def _suite(tmp_path: Path) -> str:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    return str(path)


def _run(target_dir: Path, tmp_path: Path, backends: list[str], *extra: str, size: str = "4M") -> dict:  # type: ignore[type-arg]
    proc = cli(
        "run",
        "--backends",
        ",".join(backends),
        "--suite",
        _suite(tmp_path),
        "--size",
        size,
        "--repeats",
        "1",
        "--target",
        str(target_dir),
        "--db",
        str(tmp_path / "r.sqlite"),
        "--json",
        *extra,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("backend", OVERLAYS)
def test_fuse_overlay_measured_for_real(target_dir: Path, tmp_path: Path, backend: str) -> None:
    need_backend(backend)
    # 64 MiB, not 4: psutil counts the daemon's CPU in clock ticks (10 ms), and with
    # AES instructions 4 MiB can cost it less than one tick (CI saw 0.0 for securefs).
    # Without the probes: nothing here reads them (test_protection_real.py does), and
    # CryFS's wait out its block cache on every look.
    doc = _run(target_dir, tmp_path, [backend], "--skip-protection", size="64M")
    t = {x["name"]: x for x in doc["targets"]}[backend]
    assert t["encryption_verified"] is True and t["marker_in_backing"] is False
    tool = REGISTRY[backend].tool
    assert t["details"]["cipher"] and f"{tool} (pid" in t["details"]["helpers"]
    assert doc["trials"]["failed"] == 0 and doc["trials"]["ok"] == 4
    helper = [r for r in doc["results"] if r["target"] == backend and r["metric"] == "helper_cpu_seconds"]
    assert len(helper) == 2
    # Recorded per trial: encrypting and writing 64 MiB costs the daemon many ticks
    # (0.49 s or more here); a helper not followed would read 0.
    by_workload = {r["workload"]: r["median"] for r in helper}
    assert by_workload["write"] > 0, by_workload


@requires_root
def test_every_image_kind_and_cipher_in_both_states(target_dir: Path, tmp_path: Path) -> None:
    names = available(IMAGES)
    if not names:
        skip_unavailable("image backends", REGISTRY["image-raw"].probe().reason)
    doc = _run(target_dir, tmp_path, names, "--state", "fresh,rewrite")
    targets = {x["name"]: x for x in doc["targets"]}
    assert len(targets) == 1 + 2 * len(names)
    for name in names:
        for state in ("fresh", "rewrite"):
            t = targets[f"{name}@{state}"]
            assert t["details"]["state"] == state
            assert "qemu-storage-daemon (pid" in t["details"]["helpers"]
            if REGISTRY[name].encrypted:
                assert t["encryption_verified"] is True, t
                assert t["baseline"] == f"{REGISTRY[name].baseline}@{state}"
            else:
                assert t["marker_in_backing"] is True  # the positive control
            # the protection probes: qemu's LUKS has no authentication tag, so a flipped
            # byte comes back silently; its names are nowhere in the image, in the clear ones'
            # they are (raw: through debugfs; qcow2: in its bytes)
            p = t["protection"]
            assert p["tamper"]["verdict"] == "silent", p["tamper"]
            assert p["names"]["verdict"] == ("hidden" if REGISTRY[name].encrypted else "shown"), p["names"]
            assert p["space"]["large"]["used"] >= p["space"]["large"]["data"], p["space"]
    assert doc["trials"]["failed"] == 0
    assert not [w for w in doc["warnings"] if w["kind"].startswith("protection-")], doc["warnings"]
    threads = [r for r in doc["results"] if r["metric"] == "helper_threads" and r["target"] != "plain"]
    assert threads and all(r["median"] >= 1 for r in threads)
    of_plain = {(c["target"], c["workload"]) for c in doc["comparisons"] if c["baseline"] == "plain"}
    # every image backend needs the same tools, so all of them are here when one is
    assert names == IMAGES
    assert ("image-qcow2-aes256@rewrite", "write") in of_plain


@requires_root
@pytest.mark.parametrize("fs", ["xfs", "btrfs"])
def test_images_hold_the_filesystem_asked_for(target_dir: Path, tmp_path: Path, fs: str) -> None:
    need_backend("image-qcow2-aes128")
    doc = _run(target_dir, tmp_path, ["image-qcow2-aes128"], "--fs", fs)
    t = {x["name"]: x for x in doc["targets"]}["image-qcow2-aes128@fresh"]
    assert t["details"]["filesystem"] == fs and t["details"]["mount"].startswith(fs)
    assert t["encryption_verified"] is True


def _allocated(path: Path) -> int:
    return os.stat(path).st_blocks * 512


@requires_root
@pytest.mark.parametrize("backend", ["image-sparse", "image-qcow2-aes256"])
def test_state_is_what_it_says_and_data_survives_the_stack(target_dir: Path, backend: str) -> None:
    size = 16 << 20
    with provisioned(target_dir, backend, size, state="fresh") as (_s, fresh):
        fresh_bytes = _allocated(fresh.backing[0])
    with provisioned(target_dir, backend, size, state="rewrite") as (_s, target):
        image = target.backing[0]
        # The rewrite precondition wrote `size` bytes that were then deleted:
        # a growing image keeps the room, a fresh one never had it.
        assert _allocated(image) >= fresh_bytes + size // 2
        data = os.urandom(4 << 20)
        f = target.path / "check.bin"
        f.write_bytes(data)
        os.sync()
        drop_caches([f, image, *target.cached])
        assert f.read_bytes() == data  # through filesystem, loop, FUSE export, qemu and back


@requires_root
@pytest.mark.parametrize("backend", ["image-raw-aes256", "image-sparse-aes128", "image-qcow2-aes256"])
def test_an_encrypted_image_made_again_is_a_copy_of_the_first(target_dir: Path, backend: str) -> None:
    """qemu-img spends seconds timing PBKDF2 per encrypted image, so a stateful target's
    next image is the first one copied: the same header, allocated as qemu-img left it
    (a raw image preallocated, the others sparse), opened with the same password."""
    need_backend(backend)
    size = 16 << 20
    session = Session.create(target_dir)
    spec = TargetSpec(backend, "fresh", "ext4")
    try:
        with REGISTRY[backend].provision(session, spec, size) as first:
            made = first.backing[0]
            pristine = next((session.path("pristine")).iterdir())
            assert _allocated(pristine) <= images.PRISTINE_BYTES  # kept sparse
            header = made.read_bytes()[:4096]
            made_bytes = _allocated(made)
        with REGISTRY[backend].provision(session, spec, size) as again:
            copy = again.backing[0]
            assert copy != made and copy.read_bytes()[:4096] == header
            if backend.startswith("image-raw"):
                assert _allocated(copy) >= REGISTRY[backend].image_spec("ext4", size).size
            else:
                assert _allocated(copy) < 2 * made_bytes + (1 << 20)
            data = os.urandom(1 << 20)
            f = again.path / "check.bin"
            f.write_bytes(data)
            os.sync()
            drop_caches([f, copy, *again.cached])
            assert f.read_bytes() == data
    finally:
        session.close()
    assert leftovers(target_dir) == []


@requires_root
def test_sigkill_with_image_and_fuse_daemons_then_cleanup(target_dir: Path, tmp_path: Path) -> None:
    names = available(["image-qcow2-aes256", "securefs"])
    if not names:
        pytest.skip("neither image-qcow2-aes256 nor securefs is available here")
    args = ["run", "--backends", ",".join(names), "--size", "8M", "--repeats", "3"]
    args += ["--target", str(target_dir), "--db", str(tmp_path / "r.sqlite")]
    proc = subprocess.Popen(
        [sys.executable, "-m", "cryptbench", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 120
    daemons = [
        d for b, d in (("image-qcow2-aes256", "qemu-storage-daemon"), ("securefs", "securefs")) if b in names
    ]

    def daemons_up() -> list[str]:
        # leftovers() lists a helper as "process PID ARGV…"
        return [x for x in leftovers(target_dir) if x.startswith("process ") and any(d in x for d in daemons)]

    while not daemons_up():
        assert proc.poll() is None and time.monotonic() < deadline, "no daemon came up"
        time.sleep(0.1)
    time.sleep(1)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    assert daemons_up(), leftovers(target_dir)  # a real mess: the daemons outlive the run
    clean = cli("cleanup", "--target", str(target_dir))
    assert clean.returncode == 0, clean.stderr
    assert leftovers(target_dir) == []
    count("SIGKILLs with qemu-storage-daemon or securefs up, cleaned up")
