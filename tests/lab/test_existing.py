"""The encryption a user already has, on the kernels users run: a LUKS2 volume made as a
user makes one (a loop device over a file on the lab's disk, formatted, opened, ext4 on
it, mounted, files on it), outside any cryptbench session. `cryptbench stack` names each
layer down to the disk, and a run whose scratch space is on the volume says before its
answer that its plain target is encrypted, and counts the disk under the mapping."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cryptbench.backends.luks import format_command, open_command
from cryptbench.model.stack import LayerKind, Stack
from tests.lab import run_json
from tests.support.cli import cli

pytestmark = [pytest.mark.lab("6.1", "6.12"), pytest.mark.integration]
MAPPING = "users-volume"  # not cryptbench's: cleanup must leave it alone
# bytes: room for a tiny run's plan and the free-space margin every run keeps (256 MiB)
VOLUME_BYTES = 384 << 20


def _run(*args: str) -> str:
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip()


@contextmanager
def users_luks_volume(where: Path) -> Iterator[Path]:
    """The user's own LUKS2 volume, mounted, with files on it; closed however the test ends."""
    image, key, home = where / "volume.img", where / "volume.key", where / "home"
    with open(image, "wb") as f:
        f.truncate(VOLUME_BYTES)  # sparse: the lab's disk holds only what is written
    key.write_bytes(os.urandom(64))
    key.chmod(0o600)
    home.mkdir()
    loop = _run("losetup", "--find", "--show", str(image))
    try:
        _run(*format_command(loop, key, 512))
        _run(*open_command(loop, key, MAPPING))
        try:
            _run("mkfs.ext4", "-q", f"/dev/mapper/{MAPPING}")
            _run("mount", f"/dev/mapper/{MAPPING}", str(home))
            try:
                (home / "documents").mkdir()
                (home / "documents" / "letter.txt").write_text("the user's own words\n")
                yield home
            finally:
                _run("umount", str(home))
        finally:
            _run("cryptsetup", "close", MAPPING)
    finally:
        _run("losetup", "--detach", loop)


def test_stack_names_every_layer_of_a_users_luks_volume(tmp_path: Path) -> None:
    with users_luks_volume(tmp_path) as home:
        proc = cli("stack", str(home / "documents"), "--json")
        assert proc.returncode == 0, proc.stderr
        stack = Stack.from_json(json.loads(proc.stdout))
        text = cli("stack", str(home / "documents"))
        table = _run("dmsetup", "table", MAPPING)
    assert [(x.kind, x.depth) for x in stack.layers] == [
        (LayerKind.FILESYSTEM, 0),
        (LayerKind.DM_CRYPT, 1),
        (LayerKind.LOOP, 2),
        (LayerKind.FILESYSTEM, 3),  # the lab's xfs on its virtual disk
        (LayerKind.DISK, 4),
    ]
    ext4, crypt, loop, xfs, disk = stack.layers
    assert (ext4.name, xfs.name, disk.name) == ("ext4", "xfs", "vda")
    assert crypt.name.endswith(f"({MAPPING})") and crypt.encrypted is True
    assert dict(crypt.details) | {"data starts at": ""} == {
        "format": "LUKS2",
        "cipher": "aes-xts-plain64",
        "key": "512-bit key",
        "key held": "in the kernel keyring",
        "data starts at": "",
        "sector size": "4096 bytes",
        "flags": "none",
    }
    assert loop.detail("file") == str(tmp_path / "volume.img")
    assert stack.disks == ("vda",)
    assert stack.notes == ()
    # the table's key field (the keyring's reference) is nowhere in what is printed
    key_field = table.split()[4]
    assert key_field.startswith(":64:logon:") and key_field not in proc.stdout + text.stdout
    said = f"{home / 'documents'} is encrypted by dm-crypt (aes-xts-plain64, 512-bit key)"
    assert " ".join(text.stdout.split()).startswith(said)  # as read, whatever the width folded


def test_a_run_on_a_users_luks_volume_says_plain_is_encrypted(tmp_path: Path) -> None:
    with users_luks_volume(tmp_path) as home:
        doc = run_json(home, tmp_path, ["plain"], "--skip-protection")
        shown = cli("show", str(doc["run_id"]), "--db", str(tmp_path / "r.sqlite"))
        table = _run("dmsetup", "table", MAPPING)
    assert shown.returncode == 0, shown.stderr
    stored = Stack.from_json(doc["environment"]["stack"])
    assert [x.kind for x in stored.encrypting] == [LayerKind.DM_CRYPT]
    # the counters read the disk under the mapping and its loop device, not the mapping
    assert doc["environment"]["scratch_device"] == "vda"
    flat = " ".join(shown.stdout.split())  # as read, whatever the terminal's width folded
    said = (
        "Your scratch space is on dm-crypt (aes-xts-plain64, 512-bit key): plain here is encrypted; "
        "each figure is the cost of adding a layer to it."
    )
    assert flat.startswith(f"Run {doc['run_id']} (lab suite): 1 targets")
    # under the header, the stack; then, before the answer, what it means for plain
    assert "; vda wrote " in flat.split(" Scratch space ")[0]
    assert f" Scratch space {home}: {stored.line()} {said} No encrypted target to rank." in flat
    assert table.split()[4] not in json.dumps(doc)
