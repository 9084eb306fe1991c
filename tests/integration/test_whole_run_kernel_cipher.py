"""A kernel-crypto target names the driver this kernel chose for its cipher, read from the
real /proc/crypto after data went through the target (the shared whole run, conftest.py).
Named to sort after test_protection_real.py, which sets that run up and says what it
costs: the first module to read it pays its two minutes (112 s here in the fresh-clone
run of 59a6a38, when this module came first)."""

from __future__ import annotations

import pytest

from cryptbench.cipher import kernel
from cryptbench.cipher.kernel import DRIVER_DETAIL
from tests.support.targets import need_backend
from tests.support.whole_run import WholeRun

pytestmark = pytest.mark.integration


def test_fscrypt_names_the_xts_aes_driver_the_kernel_chose(whole_run: WholeRun) -> None:
    need_backend("fscrypt")  # skips with the reason backends gives (fails where make test installs it)
    targets = {t["name"]: t for t in whole_run.doc["targets"]}
    chosen = kernel.selected(kernel.parse(kernel.PROC_CRYPTO.read_text()), "xts(aes)")
    assert chosen is not None  # fscrypt instantiated it in the run
    assert targets["fscrypt"]["details"][DRIVER_DETAIL] == chosen.driver
    print(f"fscrypt's xts(aes): {chosen.driver} ({chosen.acceleration})")
    for userspace in ("gocryptfs", "plain", "ext4-loop"):
        if userspace in targets:
            assert DRIVER_DETAIL not in targets[userspace]["details"], userspace
