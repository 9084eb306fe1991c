"""Key material: where secrets may live, the user's passphrase, derived keys.

Secrets never touch a disk or a command line. Files that helpers must read
(gocryptfs' -passfile, qemu's secret file) are 0600 files in a 0700 directory on
a RAM filesystem, made per run by `Session.secret_file` and wiped at teardown.
Keys the kernel takes directly (fscrypt) go from memory to an ioctl.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path

import psutil

from cryptbench.machine.system import filesystem_of
from cryptbench.model.errors import UnavailableError, UsageError

RAM_FILESYSTEMS = frozenset({"tmpfs", "ramfs"})
SECRET_DIR_PREFIX = "cryptbench-secrets-"
SECRET_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
MAX_PASSPHRASE = 512  # bytes, as cryptsetup's interactive limit
# scrypt cost for a key derived from a passphrase: about 0.1 s and 16 MiB here,
# enough to show the shape of a real derivation; the benchmark does not time it.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 1 << 14, 8, 1


def _ram_candidates() -> list[Path]:
    """Where a per-user private directory on a RAM filesystem may be made, in order."""
    return [Path(c) for c in (os.environ.get("XDG_RUNTIME_DIR"), "/dev/shm") if c and os.path.isdir(c)]


def ram_dir() -> Path:
    """A directory on a RAM filesystem this user may create a private directory in."""
    for candidate in _ram_candidates():
        if not os.access(candidate, os.W_OK | os.X_OK):
            continue
        entry = filesystem_of(candidate)
        if entry is not None and entry.fstype in RAM_FILESYSTEMS:
            return candidate
    raise UnavailableError(
        "no RAM filesystem for key files (neither $XDG_RUNTIME_DIR nor /dev/shm is a writable tmpfs); "
        "cryptbench keeps keys off disk: mount a tmpfs on /dev/shm"
    )


def secret_dirs_of(run_name: str | None = None) -> list[Path]:
    """Secret directories the run named `run_name` (default: any run) may have left."""
    pattern = f"{SECRET_DIR_PREFIX}{run_name}-*" if run_name is not None else f"{SECRET_DIR_PREFIX}*"
    return sorted({d for base in _ram_candidates() for d in base.glob(pattern)})


def orphan_secret_dirs() -> list[Path]:
    """Secret directories whose run process is gone (by the pid in their name).

    A run that lost its run directory but not its secrets (or whose scratch is
    on a target `cleanup` was not told about) still has its keys found here.
    """
    orphans = []
    for d in secret_dirs_of():
        m = re.fullmatch(rf"{SECRET_DIR_PREFIX}run-[0-9T]+-([0-9]+)-[0-9a-f]+", d.name)
        if m and d.is_dir() and d.stat().st_uid == os.geteuid() and not psutil.pid_exists(int(m.group(1))):
            orphans.append(d)
    return orphans


def read_private_file(path: str, option: str, limit: int) -> bytes:
    """At most `limit` bytes of the secret file the user named with `option`.

    Refused, with the reason, unless it is a regular file only its owner may read: a
    secret that others may read has leaked already.
    """
    name = f"{option} {path[:80]!r}"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as e:
        raise UsageError(f"{name}: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{name} is not a regular file")
        if st.st_mode & 0o077:
            raise UsageError(
                f"{name} is readable by other users (mode {stat.S_IMODE(st.st_mode):o}); chmod 600 it first"
            )
        return os.read(fd, limit)
    finally:
        os.close(fd)


def read_passphrase_file(path: str) -> bytes:
    """The user's passphrase: the file's bytes less one trailing newline."""
    data = read_private_file(path, "--passphrase-file", MAX_PASSPHRASE + 2)
    if data.endswith(b"\n"):
        data = data[:-1]
    if not data:
        raise UsageError(f"--passphrase-file {path!r} is empty")
    if len(data) > MAX_PASSPHRASE:
        raise UsageError(f"--passphrase-file {path!r}: passphrase longer than {MAX_PASSPHRASE} bytes")
    if b"\n" in data or b"\0" in data:
        raise UsageError(f"--passphrase-file {path!r}: passphrase must be one line without NUL bytes")
    return data


def derive_key(passphrase: bytes, salt: bytes, length: int) -> bytearray:
    """A raw key from a passphrase (scrypt), for layers that take raw keys."""
    return bytearray(
        hashlib.scrypt(
            passphrase, salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, maxmem=64 << 20, dklen=length
        )
    )


def new_password(passphrase: bytes | None) -> bytes:
    """A password for a helper: the user's passphrase, or 32 random bytes as hex."""
    return passphrase if passphrase is not None else os.urandom(32).hex().encode()


def new_raw_key(passphrase: bytes | None, length: int) -> bytearray:
    """A raw key: derived from the user's passphrase with a fresh salt, or random."""
    if passphrase is None:
        return bytearray(os.urandom(length))
    return derive_key(passphrase, os.urandom(16), length)


def describe(passphrase: bytes | None) -> str:
    """Where a target's key came from, for the record (never the key)."""
    return "from --passphrase-file" if passphrase is not None else "generated for this run"
