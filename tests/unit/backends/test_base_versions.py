"""Each backend names its own program's version (Backend.version); the run's environment
records those of the backends it ran, and the page groups backends that share a program."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from cryptbench.backends import REGISTRY, versions
from cryptbench.model.result import Document
from cryptbench.report.sentences import environment_rows
from tests.support.paths import TESTS

DOC = TESTS / "fixtures" / "documents" / "quick-fscrypt-gocryptfs-ram.json"


def test_kernel_backends_name_no_program_of_their_own() -> None:
    assert versions(["plain", "ext4-loop", "fscrypt", "luks-aes256", "ecryptfs", "no-such"]) == {}


@pytest.mark.skipif(
    shutil.which("gocryptfs") is None, reason="gocryptfs is not installed (make setup installs it)"
)
def test_gocryptfs_names_the_version_its_binary_prints() -> None:
    printed = subprocess.run(["gocryptfs", "-version"], capture_output=True, text=True, check=True).stdout
    assert versions(["plain", "gocryptfs", "gocryptfs"]) == {"gocryptfs": printed.splitlines()[0]}


def test_every_image_kind_names_qemu_and_every_overlay_its_package() -> None:
    images = [n for n in REGISTRY if n.startswith("image-")]
    assert len({REGISTRY[n].version() for n in images}) == 1  # one qemu for all of them
    for name in ("securefs", "cryfs", "encfs"):
        assert (REGISTRY[name].version() or "").startswith(name)  # "cryfs 0.11.3-…" (make setup installs it)


def test_backends_sharing_a_program_share_one_row() -> None:
    doc = json.loads(DOC.read_text())
    doc["environment"]["versions"] = {
        "gocryptfs": "gocryptfs v2.3.0",
        "image-raw": "QEMU emulator version 7.2.15",
        "image-qcow2-aes256": "QEMU emulator version 7.2.15",
    }
    rows = dict(environment_rows(Document.from_json(doc)))
    assert rows["image-raw, image-qcow2-aes256"] == "QEMU emulator version 7.2.15"
    assert rows["gocryptfs"] == "gocryptfs v2.3.0"
