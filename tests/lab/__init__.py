"""Tests that run inside the kernel lab (tests/support/kernel_lab.py): Debian 12's own
kernel, with modules, device-mapper, AF_ALG and cgroup v2 only.

Each run stays tiny (one or two workloads, 8 MiB, 2 trials), and tests that only
inspect a finished run share one (conftest.py): under TCG every figure is slow,
and no figure measured there is a performance figure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from cryptbench.machine.system import mounts
from cryptbench.model.json_types import JsonObject
from tests.support.cli import cli

ONE_WORKLOAD = """
name = "lab"
description = "One sequential write, durable, for the kernel lab"
[[workloads]]
name = "seq1m-q8-write"
rw = "write"
bs = "1M"
iodepth = 8
"""


def suite(tmp_path: Path) -> str:
    path = tmp_path / "lab.toml"
    path.write_text(ONE_WORKLOAD)
    return str(path)


def run_args(target_dir: Path, tmp_path: Path, backends: list[str], *extra: str) -> list[str]:
    return [
        *("run", "--backends", ",".join(backends), "--suite", suite(tmp_path)),
        *("--size", "8M", "--repeats", "2", "--target", str(target_dir)),
        *("--db", str(tmp_path / "r.sqlite"), *extra),
    ]


def run_json(target_dir: Path, tmp_path: Path, backends: list[str], *extra: str) -> JsonObject:
    """A whole `cryptbench run` as a user types it; its result document."""
    proc = cli(*run_args(target_dir, tmp_path, backends, "--json", *extra))
    assert proc.returncode == 0, proc.stderr
    doc: JsonObject = json.loads(proc.stdout)
    return doc


@dataclass(frozen=True)
class FinishedRun:
    """A `cryptbench run` that completed, and where to ask about it again."""

    doc: JsonObject  # the document `run --json` printed
    db: Path  # the SQLite database it was stored in
    env: dict[str, str]  # the environment it ran in, for later commands on the same state


@dataclass(frozen=True)
class RamRun(FinishedRun):
    """A `--ram` run of fscrypt that began with ext4 not loaded."""

    ext4_loaded_before: bool  # whether /proc/filesystems listed ext4 when the run began
    rows: dict[str, JsonObject]  # `cryptbench backends`, by name, asked with ext4 not loaded


def ecryptfs_mounts() -> list[Path]:
    return [m.mountpoint for m in mounts() if m.fstype == "ecryptfs"]
