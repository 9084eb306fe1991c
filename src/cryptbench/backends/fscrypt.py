"""fscrypt: a directory encrypted by the kernel's native ext4 encryption.

The key is a raw 64-byte key generated per run (or derived with scrypt from
the user's --passphrase-file) and handed to the kernel with
the fscrypt ioctls (<linux/fscrypt.h>, v2 policy: AES-256-XTS contents,
AES-256-CTS-CBC names; or, as `fscrypt-adiantum`, Adiantum for both, as Android
encrypts on CPUs without AES instructions). It never touches a disk or a command line. We call the
kernel API directly rather than the `fscrypt` command-line tool because that
tool needs /etc/fscrypt.conf and a metadata directory at the filesystem root:
writes outside the scratch space that a benchmark has no business making.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import platform
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptbench import keys
from cryptbench.backends.base import Availability, Backend, CipherUse, DirectIO, Target, TargetSpec
from cryptbench.backends.ext4image import ext4_on_loop, image_size, probe_ext4_loop
from cryptbench.errors import ProvisionError
from cryptbench.resources import FSCRYPT_KEY_SPEC_TYPE_IDENTIFIER, FscryptKey
from cryptbench.session import Session
from cryptbench.system import crypto_missing, kernel_config

FS_IOC_SET_ENCRYPTION_POLICY = 0x800C6613
FS_IOC_GET_ENCRYPTION_POLICY_EX = 0xC0096616
FS_IOC_ADD_ENCRYPTION_KEY = 0xC0506617
FSCRYPT_POLICY_V2 = 2
FSCRYPT_MODE_AES_256_XTS = 1
FSCRYPT_MODE_AES_256_CTS = 4
FSCRYPT_MODE_ADIANTUM = 9
FSCRYPT_POLICY_FLAGS_PAD_32 = 0x03
FSCRYPT_POLICY_FLAG_DIRECT_KEY = 0x04
KEY_BYTES = 64  # AES-256-XTS needs a 512-bit key; v2 derives per-file keys from it


@dataclass(frozen=True)
class Policy:
    """An fscrypt v2 policy: what encrypts file contents and names."""

    contents: int  # FSCRYPT_MODE_*
    names: int  # FSCRYPT_MODE_*
    flags: int  # padding and FSCRYPT_POLICY_FLAG_*
    description: str  # for the target's details
    algorithm: str  # the kernel crypto algorithm that encrypts the contents
    config: str  # the kernel option that builds it
    module: str  # the module that holds it


AES_POLICY = Policy(
    FSCRYPT_MODE_AES_256_XTS,
    FSCRYPT_MODE_AES_256_CTS,
    FSCRYPT_POLICY_FLAGS_PAD_32,
    "v2, contents AES-256-XTS, filenames AES-256-CTS-CBC, padding 32",
    "xts(aes)",
    "CONFIG_CRYPTO_XTS",
    "xts",
)
# Android's choice for CPUs without AES instructions; DIRECT_KEY (the per-file nonce as
# Adiantum's tweak instead of a derived key per file) is how the kernel docs advise it.
ADIANTUM_POLICY = Policy(
    FSCRYPT_MODE_ADIANTUM,
    FSCRYPT_MODE_ADIANTUM,
    FSCRYPT_POLICY_FLAGS_PAD_32 | FSCRYPT_POLICY_FLAG_DIRECT_KEY,
    "v2, contents and filenames Adiantum (XChaCha12, AES-256), DIRECT_KEY, padding 32",
    "adiantum(xchacha12,aes)",
    "CONFIG_CRYPTO_ADIANTUM",
    "adiantum",
)
BUFFERED_REASON = (
    "ext4 encrypts file contents in the page cache unless it is mounted with inlinecrypt "
    "on inline-encryption hardware, so O_DIRECT silently becomes buffered I/O"
)


def _kernel_at_least(major: int, minor: int) -> bool:
    try:
        parts = platform.release().split(".")
        return (int(parts[0]), int(parts[1].split("-")[0])) >= (major, minor)
    except (ValueError, IndexError):
        return False


def add_key(mountpoint: Path, passphrase: bytes | None) -> str:
    """Make a raw key, add it to the filesystem, wipe our copy; return its identifier."""
    key = keys.new_raw_key(passphrase, KEY_BYTES)
    header = struct.pack("=II32sII32s", FSCRYPT_KEY_SPEC_TYPE_IDENTIFIER, 0, b"", KEY_BYTES, 0, b"")
    arg = bytearray(header) + key
    fd = os.open(mountpoint, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.ioctl(fd, FS_IOC_ADD_ENCRYPTION_KEY, arg, True)
        identifier = bytes(arg[8:24]).hex()  # the kernel fills key_spec.u.identifier
    except OSError as e:
        raise ProvisionError(f"the kernel refused the fscrypt key: {e.strerror}") from None
    finally:
        os.close(fd)
        # Best effort: bytes objects cannot be wiped, bytearrays can.
        ctypes.memset((ctypes.c_char * len(key)).from_buffer(key), 0, len(key))
        ctypes.memset((ctypes.c_char * len(arg)).from_buffer(arg), 0, len(arg))
    return identifier


def set_policy(directory: Path, identifier: str, want: Policy = AES_POLICY) -> str:
    policy = struct.pack(
        "=BBBBB3s16s",
        FSCRYPT_POLICY_V2,
        want.contents,
        want.names,
        want.flags,
        0,  # log2_data_unit_size: 0 = the filesystem block size
        b"",
        bytes.fromhex(identifier),
    )
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.ioctl(fd, FS_IOC_SET_ENCRYPTION_POLICY, policy)
        buf = bytearray(struct.pack("=Q", 24) + bytes(24))
        fcntl.ioctl(fd, FS_IOC_GET_ENCRYPTION_POLICY_EX, buf, True)
    except OSError as e:
        raise ProvisionError(f"could not set the fscrypt policy: {e.strerror}") from None
    finally:
        os.close(fd)
    version, contents, names, flags = buf[8], buf[9], buf[10], buf[11]
    if (version, contents, names, flags) != (FSCRYPT_POLICY_V2, want.contents, want.names, want.flags):
        raise ProvisionError(
            f"the kernel reports policy v{version} modes {contents}/{names} flags {flags:#x}, not the one set"
        )
    return want.description


class FscryptBackend(Backend):
    encrypted = True
    baseline = "ext4-loop"

    def declared(self) -> dict[str, tuple[str, str]]:
        src = "Linux Documentation/filesystems/fscrypt.rst, Introduction"
        meta = f"{src}: except for filenames, fscrypt does not encrypt filesystem metadata"
        return {
            "contents": ("hidden", f"{src}: transparent encryption of files' contents"),
            "names": ("hidden", meta),
            "sizes": ("shown", meta),
            "tree": ("shown", meta),
            "tamper": ("silent", f"{src}, Encryption modes: XTS, CTS-CBC and Adiantum, none authenticated"),
        }

    def __init__(self, name: str = "fscrypt", policy: Policy = AES_POLICY) -> None:
        self.name = name
        self.policy = policy
        cipher = "AES-256-XTS" if policy is AES_POLICY else "Adiantum"
        self.summary = f"ext4 native encryption (fscrypt v2, {cipher}) in an image on a loop device"
        # Writes are encrypted by the thread doing writeback, one page at a time;
        # reads are decrypted in a workqueue that may use every core.
        self.cipher_use = CipherUse("kernel", policy.algorithm, 4096, parallel=False)

    def probe(self) -> Availability:
        base = probe_ext4_loop()
        if not base.ok:
            return base
        # /sys/fs/ext4 exists once ext4 is loaded; before that (a module
        # mount has not loaded yet) the kernel's build configuration says.
        if Path("/sys/fs/ext4").is_dir():
            has = Path("/sys/fs/ext4/features/encryption").exists()
        else:
            has = kernel_config("CONFIG_FS_ENCRYPTION") != "n"  # unknown: the key ioctl will tell
        if not has:
            return Availability(False, "kernel was built without ext4 encryption (CONFIG_FS_ENCRYPTION)")
        if not _kernel_at_least(5, 4):
            return Availability(False, "fscrypt v2 policies need Linux 5.4 or later")
        if self.policy is not AES_POLICY:
            missing = crypto_missing(self.policy.algorithm, self.policy.config, self.policy.module)
            if missing:
                return Availability(False, missing)
        return Availability(True)

    def space_needed(self, spec: TargetSpec, data_bytes: int) -> int:
        return image_size(data_bytes)

    @contextmanager
    def provision(self, session: Session, spec: TargetSpec, data_bytes: int) -> Iterator[Target]:
        with ext4_on_loop(session, spec, data_bytes, extra_features=("encrypt",)) as fs:
            identifier = add_key(fs.mountpoint, session.passphrase)
            key = session.acquire(FscryptKey(fs.mountpoint, identifier))
            try:
                path = fs.mountpoint / "data"
                path.mkdir()
                policy = set_policy(path, identifier, self.policy)
                yield Target(
                    name=spec.name,
                    backend=self.name,
                    encrypted=True,
                    baseline=self.baseline,
                    path=path,
                    backing=(fs.image,),
                    details={
                        "filesystem": "ext4",
                        "policy": policy,
                        "key": keys.describe(session.passphrase)
                        + (" (scrypt)" if session.passphrase is not None else ""),
                        **fs.details,
                    },
                    direct_io=DirectIO.BUFFERED,
                    direct_io_reason=BUFFERED_REASON,
                )
            finally:
                session.release(key)
