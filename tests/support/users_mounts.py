"""Encrypted directories as a user makes them, outside any cryptbench session: what
`stack` reads and `run --existing` measures. Each is unmounted, its daemon gone, however
the test ends."""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from cryptbench.backends.dm_table import format_command, open_command

QUIET = {"capture_output": True, "check": True}


@contextmanager
def users_gocryptfs(where: Path) -> Iterator[Path]:
    """A gocryptfs directory as a user makes one (gocryptfs -init, then a mount)."""
    cipher, plain, password = _dirs(where, "")
    subprocess.run(["gocryptfs", "-q", "-init", "-passfile", str(password), str(cipher)], **QUIET)  # type: ignore[call-overload]
    subprocess.run(["gocryptfs", "-q", "-passfile", str(password), str(cipher), str(plain)], **QUIET)  # type: ignore[call-overload]
    with _unmounted(plain, "gocryptfs", str(cipher)):
        yield plain


@contextmanager
def users_securefs(where: Path) -> Iterator[Path]:
    """A securefs directory as a user makes one (securefs create, then mount -b)."""
    cipher, plain, password = _dirs(where, "s")
    subprocess.run(["securefs", "create", "--keyfile", str(password), str(cipher)], **QUIET)  # type: ignore[call-overload]
    mount = ["securefs", "mount", "-b", "--keyfile", str(password), str(cipher), str(plain)]
    subprocess.run(mount, **QUIET)  # type: ignore[call-overload]
    with _unmounted(plain, "securefs", str(plain)):
        yield plain


def _dirs(where: Path, prefix: str) -> tuple[Path, Path, Path]:
    """The cipher directory, the mountpoint and the password file (0600) of one mount."""
    cipher, plain, password = (where / f"{prefix}{n}" for n in ("cipher", "plain", "password"))
    cipher.mkdir()
    plain.mkdir()
    password.write_text("the user's own\n")
    password.chmod(0o600)
    return cipher, plain, password


@contextmanager
def _unmounted(plain: Path, name: str, named: str) -> Iterator[None]:
    """Unmounts `plain` on leaving and waits for its daemon (the `name` process whose
    arguments hold `named`) to be gone."""
    daemons = [
        p
        for p in psutil.process_iter(["name", "cmdline"])
        if p.info["name"] == name and named in (p.info["cmdline"] or [])
    ]
    try:
        yield
    finally:
        subprocess.run(["fusermount", "-u", str(plain)], check=True)
        # a daemon exits some moments after its unmount (CI's leak check once found
        # gocryptfs still running): the fixture is done only when its daemon is gone
        _gone, alive = psutil.wait_procs(daemons, timeout=10)
        assert not alive, f"{name} still running 10 s after its unmount: {alive}"


MAPPING = "users-volume"  # not cryptbench's: cleanup must leave it alone
# bytes: room for a tiny run's plan and the free-space margin every run keeps (256 MiB)
VOLUME_BYTES = 384 << 20
# bytes: the LUKS2 header (16 MiB) and a small ext4, for a volume the scratch space is not
# on; each MiB of it is checksummed twice under TCG, through dm-crypt and beneath it
SMALL_VOLUME = 48 << 20


def run(*args: str) -> str:
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip()


@contextmanager
def users_luks_volume(
    where: Path, mounted: bool = True, size: int = VOLUME_BYTES, flags: tuple[str, ...] = ()
) -> Iterator[Path]:
    """The user's own LUKS2 volume of `size` bytes, opened with dm-crypt's `flags`,
    mounted, with files on it; closed however the test ends. Not `mounted`: its files
    written, then unmounted, so that nothing writes to it while it is checksummed."""
    image, key, home = where / "volume.img", where / "volume.key", where / "home"
    with open(image, "wb") as f:
        f.truncate(size)  # sparse: the lab's disk holds only what is written
    key.write_bytes(os.urandom(64))
    key.chmod(0o600)
    home.mkdir()
    loop = run("losetup", "--find", "--show", str(image))
    (where / "loop").write_text(loop)  # the device under the mapping, for the checksums
    try:
        run(*format_command(loop, key, 512))
        run(*open_command(loop, key, MAPPING, flags))
        try:
            run("mkfs.ext4", "-q", f"/dev/mapper/{MAPPING}")
            run("mount", f"/dev/mapper/{MAPPING}", str(home))
            try:
                (home / "documents").mkdir()
                (home / "documents" / "letter.txt").write_text("the user's own words\n")
                if not mounted:
                    run("umount", str(home))
                yield home
            finally:
                if mounted:
                    run("umount", str(home))
        finally:
            run("cryptsetup", "close", MAPPING)
    finally:
        run("losetup", "--detach", loop)


def digests(node: str) -> list[str]:
    """SHA-256 of each MiB of a block device, as the device holds it now: its buffer cache
    flushed and dropped first (BLKFLSBUF). Else the loop device's cache keeps what
    luksFormat's probes read before mkfs wrote through the mapping (a bio the cache does
    not see), and a drop of caches by the run makes the same bytes checksum otherwise."""
    run("blockdev", "--flushbufs", node)
    with open(node, "rb") as f:
        return [hashlib.sha256(block).hexdigest() for block in iter(lambda: f.read(1 << 20), b"")]


def changed(before: list[str], after: list[str]) -> list[int]:
    """The MiB of a device whose bytes differ (or that one of the two lacks)."""
    return [i for i in range(max(len(before), len(after))) if before[i : i + 1] != after[i : i + 1]]
