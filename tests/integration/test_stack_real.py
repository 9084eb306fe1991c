"""The stack under a path on this machine's own kernel: under the default scratch space,
a tmpfs, every target this machine can provision (loop devices, fscrypt, each FUSE
overlay), and a gocryptfs mount a user made, with a whole run whose scratch space is on
it. dm-crypt, LVM's device-mapper and ZFS, which this kernel lacks, are read in the
kernel lab (tests/lab/test_existing.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cryptbench.backends import REGISTRY
from cryptbench.measure.stack import stack_of
from cryptbench.model.stack import LayerKind, Stack
from cryptbench.planning.request import RunRequest
from tests.support.cli import cli
from tests.support.targets import need_backend, provisioned, requires_root
from tests.support.users_mounts import users_gocryptfs

pytestmark = pytest.mark.integration

# Each backend's top layers, top first: (kind, name, encrypts); None in a name: any.
TOPS: dict[str, list[tuple[LayerKind, str | None, bool | None]]] = {
    "plain": [(LayerKind.FILESYSTEM, None, False)],
    "ext4-loop": [(LayerKind.FILESYSTEM, "ext4", False), (LayerKind.LOOP, None, False)],
    "fscrypt": [
        (LayerKind.FSCRYPT, "fscrypt", True),
        (LayerKind.FILESYSTEM, "ext4", False),
        (LayerKind.LOOP, None, False),
    ],
    "gocryptfs": [(LayerKind.FUSE, "gocryptfs", True), (LayerKind.FILESYSTEM, None, False)],
    "securefs": [(LayerKind.FUSE, "securefs", True), (LayerKind.FILESYSTEM, None, False)],
    "cryfs": [(LayerKind.FUSE, "cryfs", True), (LayerKind.FILESYSTEM, None, False)],
    "encfs": [(LayerKind.FUSE, "encfs", True), (LayerKind.FILESYSTEM, None, False)],
    # whether its remote is a crypt one is in the config file its daemon names, which
    # cryptbench wipes once the mount is up (a user's stays: tests/unit/measure/test_stack.py)
    "rclone-crypt": [(LayerKind.FUSE, "rclone", None)],
}


def _tops(stack: Stack, n: int) -> list[tuple[LayerKind, str | None, bool | None]]:
    return [(x.kind, x.name, x.encrypted) for x in stack.layers[:n]]


@requires_root
@pytest.mark.parametrize("backend", sorted(TOPS))
def test_each_target_s_stack_names_its_layers_down_to_the_scratch_disk(
    target_dir: Path, backend: str
) -> None:
    scratch = stack_of(target_dir)
    with provisioned(target_dir, backend, 4 << 20) as (_session, target):
        stack = stack_of(target.path)
    want = TOPS[backend]
    got = _tops(stack, len(want))
    assert [(k, n if w else None, e) for (k, n, e), (_k, w, _e) in zip(got, want, strict=True)] == want
    if backend == "rclone-crypt":  # whose backing cannot be told (above)
        said = stack.layers[0].detail("encrypts") or ""
        assert said.startswith("unknown: its config file /") and said.endswith("rclone.conf is gone")
        return
    assert stack.disks == scratch.disks  # whatever the layers, the same disk holds them
    assert REGISTRY[backend].encrypted == bool(stack.encrypting)
    if backend == "fscrypt":
        assert stack.layers[0].detail("contents") == "AES-256-XTS"
        assert stack.layers[0].detail("policy") == "v2"
    if stack.layers[0].kind == LayerKind.FUSE:
        # the overlay's backing directory is the target's own ciphertext directory
        assert Path(stack.layers[0].detail("cipher directory") or "") in target.backing


def test_the_default_scratch_space_and_a_tmpfs_on_the_command_line() -> None:
    proc = cli("stack", "--json")
    assert proc.returncode == 0, proc.stderr
    default = json.loads(proc.stdout)
    assert default["path"] == str(Path(RunRequest.target).resolve())
    assert Stack.from_json(default) == stack_of(Path(RunRequest.target))
    text = cli("stack", "/dev/shm")
    assert text.returncode == 0, text.stderr
    first, second = text.stdout.splitlines()[:2]
    assert first == "Nothing under /dev/shm encrypts: a run's plain target here is plain."
    assert second == "/dev/shm: tmpfs"
    assert "none: its files are in memory" in text.stdout
    missing = cli("stack", "/no/such/place")
    assert (missing.returncode, missing.stdout) == (2, "")
    assert missing.stderr.strip() == "cryptbench: error: /no/such/place: no such file or directory"


TINY = """
name = "tiny"
description = "One sequential write, for a run whose scratch space is on a user's gocryptfs"
[[workloads]]
name = "seq1m-q8-write"
rw = "write"
bs = "1M"
iodepth = 8
"""


@requires_root
def test_a_run_on_a_users_gocryptfs_says_first_that_plain_is_encrypted(
    target_dir: Path, tmp_path: Path
) -> None:
    """The scratch space on a gocryptfs mount the user made: the stack names it, the run
    stores it, and the answer says before anything else that plain is encrypted."""
    need_backend("gocryptfs")
    with users_gocryptfs(target_dir) as plain:
        text = cli("stack", str(plain))
        assert text.returncode == 0, text.stderr
        assert text.stdout.splitlines()[0].startswith(f"{plain} is encrypted by gocryptfs:")
        suite = tmp_path / "tiny.toml"
        suite.write_text(TINY)
        args = ("run", "--backends", "plain", "--suite", str(suite), "--size", "4M", "--repeats", "2")
        proc = cli(*args, "--target", str(plain), "--db", str(tmp_path / "r.sqlite"), "--skip-protection")
        assert proc.returncode == 0, proc.stderr
        assert "note: your scratch space is on gocryptfs: plain here is encrypted" in proc.stderr
        flat = " ".join(proc.stdout.split())  # as read, whatever the terminal's width folded
        said = (
            "Your scratch space is on gocryptfs: plain here is encrypted; each figure is the "
            "cost of adding a layer to it. No encrypted target to rank."
        )
        assert flat.startswith("Run 1 (tiny suite): 1 targets")
        assert f" Scratch space {plain}: {stack_of(plain).line()} {said}" in flat
        doc = json.loads(cli("show", "1", "--json", "--db", str(tmp_path / "r.sqlite")).stdout)
        stored = Stack.from_json(doc["environment"]["stack"])
        assert stored.layers[0].name == "gocryptfs" and stored.encrypting == stored.layers[:1]
        # the counters are the disk's under the overlay, not none (a FUSE mount has no device)
        assert doc["environment"]["scratch_device"] == ("+".join(stored.disks) or None)
