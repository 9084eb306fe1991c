"""Proof of encryption, and what O_DIRECT really does on a target.

A random marker is written through the target's decrypted view and made
durable; then the target's backing (image file or ciphertext directory) is
searched for it. Encrypted targets must not contain it; unencrypted ones must
(the positive control that shows the search can find plaintext at all).
"""

from __future__ import annotations

import errno
import mmap
import os
import secrets
from pathlib import Path

from cryptbench.backends.base import DirectIO, Target, cache_files, iter_files
from cryptbench.measure.cache import drop_caches, resident_bytes
from cryptbench.session import Session

MARKER_NAME = ".cryptbench-marker"
MARKER_REPEATS = 4096  # the token fills 128 KiB, so every block of the file holds it
CHUNK = 8 << 20  # bytes read at a time while searching


def _contains(path: Path, token: bytes) -> bool:
    overlap = len(token) - 1
    tail = b""
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            if token in tail + chunk:
                return True
            tail = chunk[-overlap:]
    return False


def marker_in_backing(session: Session, target: Target) -> bool:
    """Write a marker through `target.path`; is it visible in the backing?"""
    token = secrets.token_hex(16).encode()
    marker = session.check_inside(target.path / MARKER_NAME)
    with open(marker, "wb") as f:
        f.write(token * MARKER_REPEATS)
        f.flush()
        os.fsync(f.fileno())
    try:
        # Metadata and journal too: the whole filesystem, then the loop device
        # below it, must have written back before the backing is searched.
        os.sync()
        return any(_contains(p, token) for p in iter_files(target.backing))
    finally:
        marker.unlink()


PROBE_NAME = ".cryptbench-direct-probe"
PROBE_BYTES = 1 << 20


def probe_direct_io(session: Session, target: Target) -> tuple[DirectIO, str]:
    """Write 1 MiB with O_DIRECT and see whether any of it lands in a page cache."""
    probe = session.check_inside(target.path / PROBE_NAME)
    drop_caches(cache_files(target))
    before = resident_bytes(cache_files(target))
    buf = mmap.mmap(-1, PROBE_BYTES)  # page-aligned, as O_DIRECT requires
    buf.write(secrets.token_bytes(PROBE_BYTES))
    try:
        try:
            fd = os.open(probe, os.O_CREAT | os.O_WRONLY | os.O_DIRECT, 0o600)
        except OSError as e:
            if e.errno == errno.EINVAL:
                return DirectIO.REFUSED, "open with O_DIRECT fails with EINVAL"
            raise
        try:
            os.pwrite(fd, buf, 0)
            os.fsync(fd)
        except OSError as e:
            if e.errno == errno.EINVAL:
                return DirectIO.REFUSED, "writes with O_DIRECT fail with EINVAL"
            raise
        finally:
            os.close(fd)
        after = resident_bytes(cache_files(target, probe))
        cached = after - before
        if cached >= PROBE_BYTES // 2:
            return DirectIO.BUFFERED, (
                f"O_DIRECT accepted, but {cached // 1024} KiB of a 1 MiB write stayed in the page cache"
            )
        return DirectIO.HONOURED, "1 MiB written with O_DIRECT left nothing in the page cache"
    finally:
        buf.close()
        probe.unlink(missing_ok=True)
