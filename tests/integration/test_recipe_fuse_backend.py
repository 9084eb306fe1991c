"""docs/architecture.md's recipe "A FUSE backend", followed once: securefs's full format
(`securefs create --format 2`: every file stored by its ID in a flat store, beside a
.meta file) as a backend of its own, written as the recipe says and registered here, in
the test, not in the product.

What the recipe promises is checked for real: with the class and its registry line and
nothing else, `run` provisions it, proves it encrypted, probes what it hides, records
its program's version, lists it in `backends`, and recovery knows its daemon."""

from __future__ import annotations

from pathlib import Path

import pytest

from cryptbench import backends
from cryptbench.backends import REGISTRY
from cryptbench.backends.base import CipherUse
from cryptbench.backends.overlay import FuseOverlayBackend, Layout
from cryptbench.commands import backends as backends_cmd
from cryptbench.commands import run as run_cmd
from cryptbench.machine.session import Session
from cryptbench.machine.system import run_cmd as system_run
from cryptbench.planning.request import RunRequest
from tests.support.targets import requires_root

pytestmark = pytest.mark.integration


# -- the recipe's module: backends/securefs_full.py, as a newcomer would write it ---------


class SecurefsFullBackend(FuseOverlayBackend):
    name = "securefs-full"
    tool = "securefs"
    package = "securefs"
    overhead = 1.02  # per 4 KiB block an IV and a tag, and a .meta file per file
    cipher_label = "AES-256-GCM contents, AES-SIV names, files stored by ID (securefs full format)"
    summary = "securefs FUSE overlay (full format: a flat store by file ID) over a directory"
    cipher_use = CipherUse("userspace", "aes-256-gcm", 4096, parallel=False)

    def create(self, session: Session, layout: Layout, password: bytes) -> None:
        layout.secret = session.secret_file("securefs-key", password)
        system_run(
            ["securefs", "create", "--format", "2", "--keyfile", str(layout.secret.path), str(layout.cipher)],
            timeout=120,
        )

    def mount_argv(self, layout: Layout) -> list[str]:
        assert layout.secret is not None
        return [
            "securefs",
            "mount",
            "--keyfile",
            str(layout.secret.path),
            str(layout.cipher),
            str(layout.mountpoint),
        ]


# -- the recipe's registry line -----------------------------------------------------------


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> SecurefsFullBackend:
    backend = SecurefsFullBackend()
    monkeypatch.setitem(REGISTRY, backend.name, backend)
    avail = backend.probe()
    if not avail.ok:
        pytest.skip(f"securefs-full unavailable here: {avail.reason}")
    return backend


@requires_root
def test_a_fuse_backend_written_by_the_recipe_runs_end_to_end(
    registered: SecurefsFullBackend, target_dir: Path, tmp_path: Path
) -> None:
    assert "securefs" in backends.helper_programs()  # its daemon, for recovery after a SIGKILL
    listed = {row["name"]: row for row in backends_cmd.run()}
    assert listed["securefs-full"]["available"] and listed["securefs-full"]["baseline"] == "plain"

    outcome = run_cmd.run(
        RunRequest(
            commands=["true"],
            backends="securefs-full",
            repeats=1,
            seed=1,
            target=str(target_dir),
            db=tmp_path / "r.sqlite",
        )
    )
    doc = outcome.document.to_json()
    assert outcome.exit_code == 0, doc["notes"]
    targets = {t["name"]: t for t in doc["targets"]}
    assert set(targets) == {"plain", "securefs-full"}  # its baseline added by the plan
    full = targets["securefs-full"]
    assert full["encryption_verified"] is True
    verdicts = {p: full["protection"][p]["verdict"] for p in ("contents", "names", "tree")}
    # a flat store by ID: neither the names nor the tree reach the backing
    assert verdicts == {"contents": "hidden", "names": "hidden", "tree": "hidden"}, full["protection"]
    assert doc["environment"]["versions"]["securefs-full"].startswith("securefs ")
    assert {r["target"] for r in doc["results"]} == {"plain", "securefs-full"}
