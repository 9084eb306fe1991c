"""Tests that run inside the kernel lab (tests/kernel_lab.py): Debian 12's own
kernel, with modules, device-mapper, AF_ALG and cgroup v2 only.

Each stays tiny (one workload, 8 MiB, 2 trials): under TCG every figure is
slow, and no figure measured there is a performance figure.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import cli

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


def run_json(target_dir: Path, tmp_path: Path, backends: list[str], *extra: str) -> dict:  # type: ignore[type-arg]
    """A whole `cryptbench run` as a user types it; its result document."""
    proc = cli(*run_args(target_dir, tmp_path, backends, "--json", *extra))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)
