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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptbench.backends.base import Availability, Backend, CipherUse, DirectIO, Target, TargetSpec
from cryptbench.backends.ext4image import ext4_on_loop, image_size, probe_ext4_loop
from cryptbench.machine import keys
from cryptbench.machine.resources import FSCRYPT_KEY_SPEC_TYPE_IDENTIFIER, FscryptKey
from cryptbench.machine.session import Session
from cryptbench.machine.system import crypto_missing, kernel_config, mount_entry
from cryptbench.model.errors import ProvisionError
from cryptbench.model.vocabulary import Property, Verdict

FS_IOC_SET_ENCRYPTION_POLICY = 0x800C6613
FS_IOC_GET_ENCRYPTION_POLICY_EX = 0xC0096616
FS_IOC_ADD_ENCRYPTION_KEY = 0xC0506617
FSCRYPT_POLICY_V2 = 2
FSCRYPT_MODE_AES_256_XTS = 1
FSCRYPT_MODE_AES_256_CTS = 4
FSCRYPT_MODE_ADIANTUM = 9
FSCRYPT_MODE_AES_256_HCTR2 = 10
FSCRYPT_POLICY_FLAGS_PAD_32 = 0x03
FSCRYPT_POLICY_FLAG_DIRECT_KEY = 0x04
KEY_BYTES = 64  # AES-256-XTS needs a 512-bit key; v2 derives per-file keys from it


@dataclass(frozen=True)
class KernelCrypto:
    """A kernel crypto algorithm a policy needs, and where the kernel gets it."""

    algorithm: str  # the crypto API's name, e.g. hctr2(aes)
    config: str  # the kernel option that builds it
    module: str  # the module that holds it


@dataclass(frozen=True)
class Policy:
    """An fscrypt v2 policy: what encrypts file contents and names."""

    contents: int  # FSCRYPT_MODE_*
    names: int  # FSCRYPT_MODE_*
    flags: int  # padding and FSCRYPT_POLICY_FLAG_*
    description: str  # for the target's details
    algorithm: str  # the kernel crypto algorithm that encrypts the contents
    cipher: str  # what a reader calls it, for the summary
    requires: tuple[KernelCrypto, ...] = ()  # beyond AES-XTS and CTS-CBC, which fscrypt selects
    since: tuple[int, int] = (5, 4)  # the Linux release that takes it (v2 policies: 5.4)


AES_POLICY = Policy(
    FSCRYPT_MODE_AES_256_XTS,
    FSCRYPT_MODE_AES_256_CTS,
    FSCRYPT_POLICY_FLAGS_PAD_32,
    "v2, contents AES-256-XTS, filenames AES-256-CTS-CBC, padding 32",
    "xts(aes)",
    "AES-256-XTS",
)
# Android's choice for CPUs without AES instructions; DIRECT_KEY (the per-file nonce as
# Adiantum's tweak instead of a derived key per file) is how the kernel docs advise it.
ADIANTUM_POLICY = Policy(
    FSCRYPT_MODE_ADIANTUM,
    FSCRYPT_MODE_ADIANTUM,
    FSCRYPT_POLICY_FLAGS_PAD_32 | FSCRYPT_POLICY_FLAG_DIRECT_KEY,
    "v2, contents and filenames Adiantum (XChaCha12, AES-256), DIRECT_KEY, padding 32",
    "adiantum(xchacha12,aes)",
    "Adiantum",
    (KernelCrypto("adiantum(xchacha12,aes)", "CONFIG_CRYPTO_ADIANTUM", "adiantum"),),
)
# File names by AES-256-HCTR2, a wide-block mode (Linux 6.0): names that share a prefix
# no longer share ciphertext blocks as under CTS-CBC. Contents stay AES-256-XTS, the
# one pairing fscrypt allows (Documentation/filesystems/fscrypt.rst, Encryption modes).
HCTR2_POLICY = Policy(
    FSCRYPT_MODE_AES_256_XTS,
    FSCRYPT_MODE_AES_256_HCTR2,
    FSCRYPT_POLICY_FLAGS_PAD_32,
    "v2, contents AES-256-XTS, filenames AES-256-HCTR2, padding 32",
    "xts(aes)",
    "AES-256-XTS, names AES-256-HCTR2",
    (KernelCrypto("hctr2(aes)", "CONFIG_CRYPTO_HCTR2", "hctr2"),),
    (6, 0),
)
# The block layer's software encryption, for devices without inline-encryption hardware
# (a loop device has none): ext4 mounted with inlinecrypt hands fscrypt's keys to it.
INLINE_CONFIG = ("CONFIG_FS_ENCRYPTION_INLINE_CRYPT", "CONFIG_BLK_INLINE_ENCRYPTION_FALLBACK")
INLINE_OPTION = "inlinecrypt"
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

    def declared(self) -> dict[Property, tuple[Verdict, str]]:
        src = "Linux Documentation/filesystems/fscrypt.rst, Introduction"
        meta = f"{src}: except for filenames, fscrypt does not encrypt filesystem metadata"
        return {
            Property.CONTENTS: (Verdict.HIDDEN, f"{src}: transparent encryption of files' contents"),
            Property.NAMES: (Verdict.HIDDEN, meta),
            Property.SIZES: (Verdict.SHOWN, meta),
            Property.TREE: (Verdict.SHOWN, meta),
            Property.TAMPER: (
                Verdict.SILENT,
                f"{src}, Encryption modes: XTS, CTS-CBC and Adiantum, none authenticated",
            ),
        }

    def __init__(
        self,
        name: str = "fscrypt",
        policy: Policy = AES_POLICY,
        *,
        inline: bool = False,
        variant_of: str | None = None,
        option: str = "",
    ) -> None:
        self.name = name
        self.policy = policy
        self.inline = inline  # mounted with inlinecrypt: the block layer encrypts
        self.variant_of = variant_of  # the target it differs from in one choice
        self.option = option  # that choice, for the comparison against it
        self.summary = (
            f"ext4 native encryption (fscrypt v2, {policy.cipher}) in an image on a loop device"
            + (", encrypted in the block layer (inlinecrypt)" if inline else "")
        )
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
        major, minor = self.policy.since
        if not _kernel_at_least(major, minor):
            return Availability(False, f"fscrypt's {self.policy.cipher} needs Linux {major}.{minor}")
        for need in self.policy.requires:
            missing = crypto_missing(need.algorithm, need.config, need.module)
            if missing:
                return Availability(False, missing)
        if self.inline:
            return inline_missing()
        return Availability(True)

    def space_needed(self, spec: TargetSpec, data_bytes: int) -> int:
        return image_size(data_bytes)

    @contextmanager
    def provision(self, session: Session, spec: TargetSpec, data_bytes: int) -> Iterator[Target]:
        options = (INLINE_OPTION,) if self.inline else ()
        with ext4_on_loop(session, spec, data_bytes, ("encrypt",), options) as fs:
            inline = inline_path(fs.mountpoint, fs.details["loop_device"]) if self.inline else {}
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
                        **inline,
                        **({"variant_of": self.variant_of, "option": self.option} if self.variant_of else {}),
                    },
                    # through the block layer, fscrypt leaves the page cache in plaintext and
                    # O_DIRECT is possible (Linux 5.14): the run's probe says whether it held
                    direct_io=DirectIO.HONOURED if self.inline else DirectIO.BUFFERED,
                    direct_io_reason="" if self.inline else BUFFERED_REASON,
                )
            finally:
                session.release(key)


def inline_missing(config: Callable[[str], str | None] = kernel_config) -> Availability:
    """Whether this kernel can encrypt fscrypt's files in the block layer on a loop device:
    ext4's inlinecrypt needs CONFIG_FS_ENCRYPTION_INLINE_CRYPT, and a device without
    inline-encryption hardware needs blk-crypto-fallback. Without the first, ext4 mounts
    anyway and ignores the option ("inline encryption not supported")."""
    unset = [option for option in INLINE_CONFIG if config(option) not in ("y", None)]
    if unset:
        return Availability(False, f"this kernel was built without {' and '.join(unset)}")
    return Availability(True)


def inline_path(mountpoint: Path, loop: str) -> dict[str, str]:
    """Proof that the kernel took the inline path, or a ProvisionError: ext4 keeps
    inlinecrypt among the mount's options only when it honoured it (it mounts without
    it, saying "inline encryption not supported", on a kernel that lacks it), and a
    loop device has no inline-encryption hardware (no queue/crypto in sysfs), so
    blk-crypto-fallback encrypts."""
    entry = mount_entry(mountpoint)
    options = entry.options.split(",") if entry else []
    if INLINE_OPTION not in options:
        raise ProvisionError(
            f"the kernel mounted ext4 without {INLINE_OPTION} (its options: {','.join(options) or 'none'}): "
            "fscrypt would encrypt in the filesystem, not the block layer; refusing to measure it as "
            "fscrypt-inline"
        )
    hardware = Path("/sys/block", Path(loop).name, "queue", "crypto")
    engine = (
        f"inline-encryption hardware ({hardware})"
        if hardware.exists()
        else "blk-crypto-fallback, software in the block layer (a loop device has no inline hardware)"
    )
    return {"inline_encryption": f"mounted with {INLINE_OPTION}; encrypted by {engine}"}
