"""eCryptfs: the kernel's stacked encrypted filesystem, mounted over a plain directory
in the scratch space, as Ubuntu's legacy encrypted home directories are (the Linux
counterpart of the FileVault home study 000 measured).

The passphrase (generated per run, or the user's --passphrase-file) goes to
ecryptfs-add-passphrase on its standard input, never a command line; it derives
the file-encryption key-encryption keys (contents and names) and puts them in
root's user keyring as eCryptfs authentication tokens, printing only their
signatures. The kernel mount (`mount -i`, bypassing mount.ecryptfs and its
prompts) names the tokens by signature: AES with a 32-byte key, file names
encrypted too. The tokens are journaled and invalidated at teardown or by
`cryptbench cleanup`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from cryptbench.backends.base import (
    Availability,
    Backend,
    CipherUse,
    DirectIO,
    Target,
    TargetSpec,
    target_dir,
)
from cryptbench.backends.filesystem import describe_mount
from cryptbench.machine import keys
from cryptbench.machine.interrupts import signals_blocked
from cryptbench.machine.resources import EcryptfsKeys, Mount
from cryptbench.machine.session import Session
from cryptbench.machine.system import is_root, kernel_config, kernel_module, run_cmd, which
from cryptbench.model.errors import ProvisionError
from cryptbench.model.vocabulary import Property, Verdict

KEY_BYTES = 32  # AES-256
MAX_PASSPHRASE = 64  # bytes: ecryptfs-utils' ECRYPTFS_MAX_PASSWORD_LENGTH
# A header per file (8 KiB at most) and the names' encoding: a few percent at most
# for the data file, more only for many small files.
OVERHEAD = 1.02
SLACK = 16 << 20  # bytes
BUFFERED_REASON = "eCryptfs encrypts in its own page cache and writes the lower file through the page cache"
_SIG = re.compile(r"auth tok with sig \[([0-9a-f]{16})\]")


def kernel_missing(proc_filesystems: str | None = None) -> str | None:
    """Why the kernel cannot mount eCryptfs, or None (also when it cannot be told)."""
    if proc_filesystems is None:
        try:
            with open("/proc/filesystems") as f:
                proc_filesystems = f.read()
        except OSError:
            proc_filesystems = ""
    if "ecryptfs" in proc_filesystems.split() or kernel_module("ecryptfs") is not None:
        return None
    if kernel_config("CONFIG_ECRYPT_FS") == "n":
        return "the kernel has no eCryptfs (CONFIG_ECRYPT_FS is not set)"
    return None


def signatures(output: str) -> list[str]:
    """The tokens' signatures in ecryptfs-add-passphrase's output: contents, then names."""
    return _SIG.findall(output)


def mount_options(sig: str, fnek_sig: str) -> str:
    return ",".join(
        [
            f"ecryptfs_sig={sig}",
            f"ecryptfs_fnek_sig={fnek_sig}",
            "ecryptfs_cipher=aes",
            f"ecryptfs_key_bytes={KEY_BYTES}",
            "ecryptfs_unlink_sigs",  # the kernel unlinks the tokens at unmount
            "noatime",
        ]
    )


class EcryptfsBackend(Backend):
    name = "ecryptfs"
    encrypted = True
    baseline = "plain"
    summary = "eCryptfs (AES-256, names encrypted) stacked over a directory on the target filesystem"
    # The kernel's AES (ecb(aes) per 16-byte block in cbc) on one page at a time, in the
    # writing thread; no eCryptfs ceiling is measured yet, so its ceiling is unknown.
    cipher_use = CipherUse("kernel", "cbc(aes)", 4096, parallel=False)

    def declared(self) -> dict[Property, tuple[Verdict, str]]:
        src = "gocryptfs-website docs/comparison.md"
        return {
            Property.CONTENTS: (Verdict.HIDDEN, f"{src}: File Contents, ecryptfs: CBC"),
            Property.NAMES: (
                Verdict.HIDDEN,
                f"{src}: File Names, ecryptfs: CBC (with fnek, as mounted here)",
            ),
            Property.SIZES: (Verdict.BLOCK, f"{src}: File size obfuscation: yes (4 KB increments)"),
            Property.TREE: (Verdict.SHOWN, f"{src}: Directory flattening: no"),
            Property.TAMPER: (Verdict.SILENT, f"{src}: File Contents, Integrity, ecryptfs: none"),
        }

    def probe(self) -> Availability:
        if not is_root():
            return Availability(False, "needs root (to mount eCryptfs)")
        if which("ecryptfs-add-passphrase") is None:
            return Availability(False, "ecryptfs-utils is not installed (apt-get install ecryptfs-utils)")
        missing = kernel_missing()
        if missing:
            return Availability(False, missing)
        return Availability(True)

    def space_needed(self, spec: TargetSpec, data_bytes: int) -> int:
        return int(data_bytes * OVERHEAD) + SLACK

    @contextmanager
    def provision(self, session: Session, spec: TargetSpec, data_bytes: int) -> Iterator[Target]:
        base = target_dir(session, spec)
        lower = base / "lower"
        mountpoint = base / "mnt"
        lower.mkdir()
        mountpoint.mkdir()
        passphrase = keys.new_password(session.passphrase)
        if len(passphrase) > MAX_PASSPHRASE:
            raise ProvisionError(f"eCryptfs takes a passphrase of at most {MAX_PASSPHRASE} bytes")
        with signals_blocked():  # the tokens are journaled as soon as they exist
            out = run_cmd(["ecryptfs-add-passphrase", "--fnek", "-"], input_bytes=passphrase, timeout=60)
            sigs = signatures(out.stdout.decode(errors="replace"))
            tokens = EcryptfsKeys(sigs)
            session.acquire(tokens)
        try:
            if len(sigs) != 2:
                raise ProvisionError(
                    f"ecryptfs-add-passphrase printed {len(sigs)} signature(s), not 2 (contents, names)"
                )
            mount = session.acquire(Mount(session.check_inside(mountpoint)))
            try:
                with signals_blocked():
                    run_cmd(
                        [
                            "mount",
                            "-i",
                            "-t",
                            "ecryptfs",
                            "-o",
                            mount_options(*sigs),
                            str(lower),
                            str(mountpoint),
                        ]
                    )
                yield Target(
                    name=spec.name,
                    backend=self.name,
                    encrypted=True,
                    baseline=self.baseline,
                    path=mountpoint,
                    backing=(lower,),
                    details={
                        "cipher": f"AES, {KEY_BYTES}-byte key; file names encrypted (fnek)",
                        "key": keys.describe(session.passphrase) + ", through the kernel keyring",
                        "signatures": " ".join(sigs),
                        "mount": describe_mount(mountpoint),
                    },
                    direct_io=DirectIO.BUFFERED,
                    direct_io_reason=BUFFERED_REASON,
                )
            finally:
                session.release(mount)
        finally:
            session.release(tokens)
