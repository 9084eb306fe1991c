"""fscrypt's two policies as the kernel takes them (<linux/fscrypt.h>), and what
`backends` says where the kernel lacks Adiantum. Both run for real: fscrypt on this
machine (tests/integration), fscrypt-adiantum in the kernel lab (tests/lab/test_adiantum.py)."""

from __future__ import annotations

import pytest

from cryptbench.backends import REGISTRY
from cryptbench.backends.fscrypt import ADIANTUM_POLICY, AES_POLICY
from cryptbench.system import crypto_missing
from tests.support.targets import need_backend


def test_the_policies_carry_the_kernels_mode_numbers() -> None:
    # FSCRYPT_MODE_AES_256_XTS 1, FSCRYPT_MODE_AES_256_CTS 4, FSCRYPT_MODE_ADIANTUM 9
    assert (AES_POLICY.contents, AES_POLICY.names, AES_POLICY.flags) == (1, 4, 0x03)
    # padding 32, and DIRECT_KEY (0x04), which the kernel allows with Adiantum only
    assert (ADIANTUM_POLICY.contents, ADIANTUM_POLICY.names, ADIANTUM_POLICY.flags) == (9, 9, 0x07)
    assert REGISTRY["fscrypt-adiantum"].cipher_use is not None
    assert REGISTRY["fscrypt-adiantum"].cipher_use.algorithm == "adiantum(xchacha12,aes)"
    assert REGISTRY["fscrypt-adiantum"].baseline == "ext4-loop"


WHY = crypto_missing("adiantum(xchacha12,aes)", "CONFIG_CRYPTO_ADIANTUM", "adiantum")


@pytest.mark.skipif(WHY is None, reason="this kernel has Adiantum (or says nothing either way)")
def test_without_adiantum_backends_says_which_option_is_missing() -> None:
    need_backend("fscrypt")
    avail = REGISTRY["fscrypt-adiantum"].probe()
    assert not avail.ok and avail.reason == WHY and "CONFIG_CRYPTO_ADIANTUM is not set" in avail.reason
