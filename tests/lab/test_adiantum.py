"""Adiantum, the cipher for CPUs without AES instructions, for real on a kernel that has
it: fscrypt with an Adiantum v2 policy and dm-crypt with xchacha12,aes-adiantum-plain64,
each provisioned with the module loaded on demand, proven encrypted, measured and torn
down (in the shared run of tests/lab/conftest.py; the SIGKILL is in test_sigkill.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lab import FinishedRun
from tests.lab.conftest import WORKLOADS

pytestmark = [pytest.mark.lab, pytest.mark.integration]
ADIANTUM = ["fscrypt-adiantum", "luks-adiantum"]


def test_adiantum_targets_end_to_end(kernel_only_run: FinishedRun) -> None:
    doc = kernel_only_run.doc
    targets = {t["name"]: t for t in doc["targets"]}
    for name in ADIANTUM:
        assert targets[name]["encryption_verified"] is True, name
        assert targets[name]["baseline"] == "ext4-loop"
    assert targets["fscrypt-adiantum"]["details"]["policy"].startswith("v2, contents and filenames Adiantum")
    luks = targets["luks-adiantum"]["details"]
    print(f"luks-adiantum: dm-crypt cipher {luks['dm_table_cipher']}, options {luks['dm_table_options']}")
    assert "adiantum" in luks["dm_table_cipher"] and "sector_size:4096" in luks["dm_table_options"]
    ran = {(r["target"], r["workload"]) for r in doc["results"] if r["n"] == 2}
    assert {(t, w) for t in ADIANTUM for w in WORKLOADS} <= ran
    # the kernel registered the algorithm when the targets asked for it
    assert "adiantum(xchacha12,aes)" in Path("/proc/crypto").read_text()
