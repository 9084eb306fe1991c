"""The kernel's cipher through AF_ALG, on a kernel that has it (and loads
af_alg, algif_skcipher and its AES driver on demand), set against the RAM-stack
method on the same kernel: both are what `cryptbench cipher` prints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cryptbench.cipher import kernel
from tests.conftest import cli

pytestmark = [pytest.mark.lab, pytest.mark.integration]


def test_af_alg_per_unit_on_every_core_against_the_ram_stack(target_dir: Path, tmp_path: Path) -> None:
    assert kernel.af_alg_unavailable() is None
    proc = cli(
        *("cipher", "--json", "--seconds", "0.3", "--repeats", "2", "--ram-size", "16M"),
        *("--target", str(target_dir), "--db", str(tmp_path / "r.sqlite")),
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    af = doc["kernel"]["af_alg"]
    assert af["available"], af["reason"]
    got = {(r["unit"], r["cores"]): r["throughput"] for r in af["results"]}
    assert set(got) == {(512, 1), (4096, 1), (512, 2), (4096, 2)}
    assert all(x > 0 for x in got.values())
    # Per-request cost weighs less on bigger units: 4 KiB requests move more bytes/s than 512 B ones.
    assert got[(4096, 1)] > got[(512, 1)]
    ram = doc["kernel"]["ram_stack"]
    assert ram["measured"], ram["reason"]
    stack = {r["target"]: r for r in ram["results"]}
    print(json.dumps({"af_alg": {f"{u}B/{c}": x for (u, c), x in got.items()}, "ram_stack": ram}, indent=1))
    # An honest ceiling is not below what a stack with that cipher achieved:
    # fscrypt on RAM encrypts 4 KiB units with xts(aes) on the cores it uses.
    fscrypt = min(r["throughput"] for r in ram["results"] if r["target"].endswith("fscrypt"))
    assert max(got[(4096, 1)], got[(4096, 2)]) >= fscrypt, (got, stack)
