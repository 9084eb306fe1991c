"""eCryptfs's parts that run on any kernel: what ecryptfs-add-passphrase prints, the
mount's options, the reason `backends` gives, and the journaled key tokens, released
through this kernel's real keyring. The mount itself runs in the kernel lab
(tests/lab/test_ecryptfs.py): this machine's kernel has no eCryptfs."""

from __future__ import annotations

import ctypes
import os

import pytest

from cryptbench.backends import REGISTRY
from cryptbench.backends.ecryptfs import kernel_missing, mount_options, signatures
from cryptbench.resources import KEY_SPEC_USER_KEYRING, KEYCTL_SEARCH, EcryptfsKeys, from_json, keyctl

# ecryptfs-add-passphrase --fnek's two lines (src/utils/ecryptfs_add_passphrase.c)
PRINTED = (
    "Inserted auth tok with sig [7c9e2b1a4d3f5e60] into the user session keyring\n"
    "Inserted auth tok with sig [0a1b2c3d4e5f6071] into the user session keyring\n"
)


def test_the_two_signatures_are_read_in_order() -> None:
    assert signatures(PRINTED) == ["7c9e2b1a4d3f5e60", "0a1b2c3d4e5f6071"]
    assert signatures("Error attempting to insert key into the user session keyring [1]\n") == []


def test_the_mount_names_both_tokens_aes_with_a_32_byte_key() -> None:
    opts = mount_options("7c9e2b1a4d3f5e60", "0a1b2c3d4e5f6071").split(",")
    assert "ecryptfs_sig=7c9e2b1a4d3f5e60" in opts and "ecryptfs_fnek_sig=0a1b2c3d4e5f6071" in opts
    assert "ecryptfs_cipher=aes" in opts and "ecryptfs_key_bytes=32" in opts
    assert "ecryptfs_unlink_sigs" in opts
    assert not [o for o in opts if "passphrase" in o or "passwd" in o]  # no secret among them


def test_the_kernel_counts_as_having_ecryptfs_when_it_lists_it() -> None:
    assert kernel_missing("nodev\tsysfs\nnodev\tecryptfs\n") is None


def test_backends_says_why_where_the_kernel_has_no_ecryptfs() -> None:
    why = kernel_missing()
    if why is None:
        pytest.skip("this kernel has eCryptfs (or says nothing either way)")
    avail = REGISTRY["ecryptfs"].probe()
    assert not avail.ok and avail.reason in (
        why,
        "ecryptfs-utils is not installed (apt-get install ecryptfs-utils)",
    )
    assert why == "the kernel has no eCryptfs (CONFIG_ECRYPT_FS is not set)"


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
    """A "user" key named like a token, in root's user keyring as ecryptfs-add-passphrase
    puts them; released through the journal's JSON, as `cleanup` would after a SIGKILL."""
    sig = os.urandom(8).hex()
    try:
        _add_user_key(sig.encode(), b"not a real token")
    except OSError as e:
        pytest.skip(f"this kernel takes no user keys here: {e.strerror}")
    tokens = from_json(EcryptfsKeys([sig, "ffffffffffffffff"]).to_json())
    assert tokens.release() == f"invalidated eCryptfs key(s) {sig}"
    with pytest.raises(OSError):
        keyctl(KEYCTL_SEARCH, KEY_SPEC_USER_KEYRING, b"user", sig.encode(), 0)
    assert tokens.release() is None
