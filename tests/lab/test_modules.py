"""A distribution kernel builds ext4 as a module that mount loads on demand:
ext4-loop and fscrypt must run there without anyone loading it first."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cryptbench.backends.filesystem import kernel_filesystems
from cryptbench.commands import backends
from tests.lab import run_json

pytestmark = [pytest.mark.lab, pytest.mark.integration]


def test_ext4_loop_and_fscrypt_with_ext4_not_yet_loaded(target_dir: Path, tmp_path: Path) -> None:
    if "ext4" in kernel_filesystems():  # an earlier lab test mounted ext4; nothing holds it now
        subprocess.run(["rmmod", "ext4"], check=True)
    assert "ext4" not in kernel_filesystems()
    rows = {r["name"]: r for r in backends.run()}
    assert rows["ext4-loop"]["available"], rows["ext4-loop"]["reason"]
    assert rows["fscrypt"]["available"], rows["fscrypt"]["reason"]
    doc = run_json(target_dir, tmp_path, ["fscrypt"])
    targets = {t["name"]: t for t in doc["targets"]}
    assert set(targets) == {"plain", "ext4-loop", "fscrypt"}
    assert targets["fscrypt"]["encryption_verified"] is True
    assert doc["trials"]["failed"] == 0 and doc["trials"]["ok"] == 6
    assert "ext4" in kernel_filesystems()  # mount loaded it
