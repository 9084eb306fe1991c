"""Each kernel-crypto target records the driver the kernel chose for its cipher
(pipeline/provision.name_kernel_ciphers), read from /proc/crypto as this machine printed it."""

from __future__ import annotations

from pathlib import Path

from cryptbench.backends import Target
from cryptbench.cipher.kernel import DRIVER_DETAIL
from cryptbench.pipeline.provision import name_kernel_ciphers
from tests.support.paths import TESTS

PROC_CRYPTO = (TESTS / "fixtures" / "proc" / "crypto-6.18-generic-aes.txt").read_text()


def _targets(tmp_path: Path, *backends: str) -> dict[str, Target]:
    return {b: Target(b, b, b != "ext4-loop", None, tmp_path, (tmp_path,)) for b in backends}


def test_each_kernel_cipher_target_gets_its_algorithms_driver(tmp_path: Path) -> None:
    targets = _targets(tmp_path, "fscrypt", "luks-aes256", "ecryptfs", "gocryptfs", "ext4-loop")
    name_kernel_ciphers(targets, PROC_CRYPTO)
    assert targets["fscrypt"].details[DRIVER_DETAIL] == "xts(ecb(aes-fixed-time))"
    assert targets["luks-aes256"].details[DRIVER_DETAIL] == "xts(ecb(aes-fixed-time))"
    assert targets["ecryptfs"].details[DRIVER_DETAIL] == "cbc(ecb(aes-fixed-time))"  # its cbc(aes)
    # a userspace cipher and no cipher: no kernel driver to name
    assert DRIVER_DETAIL not in targets["gocryptfs"].details
    assert DRIVER_DETAIL not in targets["ext4-loop"].details


def test_the_highest_priority_implementation_that_passed_its_self_test_is_named(tmp_path: Path) -> None:
    faster = (
        "name         : xts(aes)\ndriver       : xts-aes-vaes-avx2\nmodule       : aesni_intel\n"
        "priority     : 600\ninternal     : no\nselftest     : passed\ntype         : skcipher\n\n"
        "name         : xts(aes)\ndriver       : xts-aes-broken\nmodule       : x\n"
        "priority     : 900\ninternal     : no\nselftest     : failed\ntype         : skcipher\n\n"
    )
    targets = _targets(tmp_path, "fscrypt")
    name_kernel_ciphers(targets, PROC_CRYPTO + "\n" + faster)
    assert targets["fscrypt"].details[DRIVER_DETAIL] == "xts-aes-vaes-avx2"


def test_an_algorithm_the_kernel_lists_not_is_not_recorded(tmp_path: Path) -> None:
    targets = _targets(tmp_path, "fscrypt-adiantum", "luks-adiantum")
    name_kernel_ciphers(targets, PROC_CRYPTO)  # this kernel has no Adiantum
    assert all(DRIVER_DETAIL not in t.details for t in targets.values())
