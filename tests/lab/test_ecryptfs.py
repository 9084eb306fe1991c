"""eCryptfs for real, on a kernel that has it: mounted over a plain directory with its
key tokens in the kernel keyring, proven encrypted, measured and torn down with the
tokens gone (in the shared run of tests/lab/conftest.py; the SIGKILL is in
test_sigkill.py)."""

from __future__ import annotations

import errno

import pytest

from cryptbench.machine.resources import KEY_SPEC_USER_KEYRING, KEYCTL_SEARCH, keyctl
from tests.lab import FinishedRun, ecryptfs_mounts
from tests.lab.conftest import WORKLOADS

pytestmark = [pytest.mark.lab, pytest.mark.integration]


def _in_keyring(sig: str) -> bool:
    try:
        keyctl(KEYCTL_SEARCH, KEY_SPEC_USER_KEYRING, b"user", sig.encode(), 0)
    except OSError as e:
        # Only these say "no such key"; any other failure of keyctl is the test's to report.
        if e.errno in (errno.ENOKEY, errno.EKEYREVOKED):
            return False
        raise
    return True


def test_ecryptfs_end_to_end(kernel_only_run: FinishedRun) -> None:
    doc = kernel_only_run.doc
    t = {t["name"]: t for t in doc["targets"]}["ecryptfs"]
    assert t["encryption_verified"] is True and t["baseline"] == "plain"
    print(f"ecryptfs: {t['details']['mount']}")  # the mount as the kernel lists it, in the lab's log
    assert "ecryptfs_cipher=aes" in t["details"]["mount"] and "ecryptfs_key_bytes=32" in t["details"]["mount"]
    sigs = t["details"]["signatures"].split()
    assert len(sigs) == 2
    ran = {r["workload"] for r in doc["results"] if r["target"] == "ecryptfs" and r["n"] == 2}
    assert ran == set(WORKLOADS)
    assert not any(_in_keyring(s) for s in sigs)  # no token outlives the run
    assert ecryptfs_mounts() == []
