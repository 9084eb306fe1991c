"""fscrypt's policies as the kernel takes them (<linux/fscrypt.h>), and what `backends`
says where the kernel lacks Adiantum, HCTR2 or encryption in the block layer. fscrypt runs
for real on this machine (tests/integration), fscrypt-adiantum in the kernel lab
(tests/lab/test_adiantum.py); fscrypt-inline's guard against an ignored inlinecrypt on this
kernel (tests/integration/test_fscrypt_inline_real.py); neither lab kernel builds HCTR2
nor blk-crypto-fallback (tests/lab/test_kernels.py reads the refusals)."""

from __future__ import annotations

import pytest

from cryptbench.backends import REGISTRY
from cryptbench.backends.fscrypt import (
    ADIANTUM_POLICY,
    AES_POLICY,
    HCTR2_POLICY,
    INLINE_CONFIG,
    inline_missing,
)
from cryptbench.machine.system import crypto_missing
from tests.support.targets import need_backend


def test_the_policies_carry_the_kernels_mode_numbers() -> None:
    # FSCRYPT_MODE_AES_256_XTS 1, FSCRYPT_MODE_AES_256_CTS 4, FSCRYPT_MODE_ADIANTUM 9
    assert (AES_POLICY.contents, AES_POLICY.names, AES_POLICY.flags) == (1, 4, 0x03)
    # padding 32, and DIRECT_KEY (0x04), which the kernel allows with Adiantum only
    assert (ADIANTUM_POLICY.contents, ADIANTUM_POLICY.names, ADIANTUM_POLICY.flags) == (9, 9, 0x07)
    assert REGISTRY["fscrypt-adiantum"].cipher_use is not None
    assert REGISTRY["fscrypt-adiantum"].cipher_use.algorithm == "adiantum(xchacha12,aes)"
    assert REGISTRY["fscrypt-adiantum"].baseline == "ext4-loop"
    # FSCRYPT_MODE_AES_256_HCTR2 10, for names only, beside AES-256-XTS contents (Linux 6.0)
    assert (HCTR2_POLICY.contents, HCTR2_POLICY.names, HCTR2_POLICY.flags) == (1, 10, 0x03)
    assert HCTR2_POLICY.since == (6, 0) and [r.algorithm for r in HCTR2_POLICY.requires] == ["hctr2(aes)"]
    for variant in ("fscrypt-inline", "fscrypt-hctr2"):  # each compared with fscrypt, one choice apart
        assert REGISTRY[variant].variant_of == "fscrypt"  # type: ignore[attr-defined]
        assert REGISTRY[variant].cipher_use == REGISTRY["fscrypt"].cipher_use


def test_inline_needs_both_options_and_names_each_one_unset() -> None:
    def kernel(**set_: str):  # type: ignore[no-untyped-def]
        return lambda option: set_.get(option, "n")

    both = {o: "y" for o in INLINE_CONFIG}
    assert inline_missing(kernel(**both)).ok
    assert inline_missing(lambda _o: None).ok  # no configuration to read: the mount will tell
    crypt, fallback = INLINE_CONFIG
    without_fallback = inline_missing(kernel(**{crypt: "y"}))
    assert not without_fallback.ok and without_fallback.reason.endswith(f"built without {fallback}")
    neither = inline_missing(kernel())
    assert not neither.ok and neither.reason.endswith(f"built without {crypt} and {fallback}")


WHY = crypto_missing("adiantum(xchacha12,aes)", "CONFIG_CRYPTO_ADIANTUM", "adiantum")


@pytest.mark.skipif(WHY is None, reason="this kernel has Adiantum (or says nothing either way)")
def test_without_adiantum_backends_says_which_option_is_missing() -> None:
    need_backend("fscrypt")
    avail = REGISTRY["fscrypt-adiantum"].probe()
    assert not avail.ok and avail.reason == WHY and "CONFIG_CRYPTO_ADIANTUM is not set" in avail.reason
