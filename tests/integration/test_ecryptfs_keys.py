"""eCryptfs's journaled key tokens, released through this kernel's real keyring as
teardown and `cleanup` release them (root's user keyring: machine state, so not a unit
test). The mount itself runs in the kernel lab (tests/lab/test_ecryptfs.py)."""

from __future__ import annotations

import ctypes
import os

import pytest

from cryptbench.machine.resources import KEY_SPEC_USER_KEYRING, KEYCTL_SEARCH, EcryptfsKeys, from_json, keyctl
from tests.support.leaks import TEST_KEY_PREFIX

pytestmark = pytest.mark.integration

SYS_ADD_KEY = {"x86_64": 248, "aarch64": 217}


def _add_user_key(description: bytes, payload: bytes) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    key = libc.syscall(
        ctypes.c_long(SYS_ADD_KEY[os.uname().machine]),
        ctypes.c_char_p(b"user"),
        ctypes.c_char_p(description),
        ctypes.c_char_p(payload),
        ctypes.c_size_t(len(payload)),
        ctypes.c_long(KEY_SPEC_USER_KEYRING),
    )
    if key == -1:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return int(key)


@pytest.mark.skipif(
    os.uname().machine not in SYS_ADD_KEY, reason="add_key's number is known here for x86_64 and arm64"
)
def test_released_tokens_are_gone_from_the_keyring_and_releasing_again_does_nothing() -> None:
    """A "user" key, in root's user keyring as ecryptfs-add-passphrase puts tokens;
    released through the journal's JSON, as `cleanup` would after a SIGKILL. Its name
    says it is a test's (TEST_KEY_PREFIX): the unit tests beside (make test's lane 2)
    check that keyring and must not count it as theirs."""
    sig = TEST_KEY_PREFIX + os.urandom(8).hex()
    try:
        _add_user_key(sig.encode(), b"not a real token")
    except OSError as e:
        pytest.skip(f"this kernel takes no user keys here: {e.strerror}")
    tokens = from_json(EcryptfsKeys([sig, "ffffffffffffffff"]).to_json())
    assert tokens.release() == f"invalidated eCryptfs key(s) {sig}"
    with pytest.raises(OSError):
        keyctl(KEYCTL_SEARCH, KEY_SPEC_USER_KEYRING, b"user", sig.encode(), 0)
    assert tokens.release() is None
