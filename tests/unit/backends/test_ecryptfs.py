"""eCryptfs's parts that run on any kernel: what ecryptfs-add-passphrase prints, the
mount's options and the reason `backends` gives. The journaled key tokens, released
through the kernel's real keyring, are tests/integration/test_ecryptfs_keys.py's (a
unit test touches nothing outside its tmp_path); the mount itself runs in the kernel
lab (tests/lab/test_ecryptfs.py): this machine's kernel has no eCryptfs."""

from __future__ import annotations

import pytest

from cryptbench.backends import REGISTRY
from cryptbench.backends.ecryptfs import kernel_missing, mount_options, signatures

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
