"""The tamper probe: does the target notice a flipped ciphertext byte?

A probe file of TAMPER_BYTES random bytes is written through the decrypted view and
made durable, then rewritten (in place, or truncated first where the target writes a file
only from its start) with other random bytes; the backing blocks that
changed (blocks.py) hold its ciphertext, wherever the layers below put it. One byte in
the middle of the longest changed run is flipped in the backing, caches are dropped, and
the file is read back through the view:

- an error (EIO, EPERM: what each daemon returns): the change was detected;
- other bytes, without an error: the file came back silently corrupted;
- the same bytes: the flip missed (a copy in a journal, a stale block). The byte is put
  back and the next run is tried; when every run misses, the probe reports its own
  failure, never a result.

The byte is always put back before the probe returns, and the file removed by its
caller, so the target is as usable after the probe as before. Only the runs that a
rewrite of the probe's own file changed are candidates: in a ciphertext directory only
the files its first write created, and on an image only runs about the file's length
(its data, not a filesystem's metadata).
"""

from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Callable
from pathlib import Path

import numpy as np

from cryptbench.backends.base import Target, cache_files
from cryptbench.machine.session import Session
from cryptbench.measure.cache import make_cold
from cryptbench.model.errors import ProvisionError
from cryptbench.model.vocabulary import Verdict
from cryptbench.protection import blocks
from cryptbench.protection.blocks import Blocks, Run
from cryptbench.protection.findings import PropertyFinding
from cryptbench.protection.sight import is_image, wait_write_behind

TAMPER_BYTES = 64 << 10  # bytes of the probe file: 16 blocks, enough to stand out of metadata
MAX_TRIES = 4  # changed runs flipped, one after the other, before the probe gives up
READS = 2  # reads of the file back before a flip counts as missed


def probe_tamper(
    session: Session,
    folder: Path,
    target: Target,
    write: Callable[[Path, bytes], None],
    settled: Callable[[Blocks | None], Blocks],
) -> PropertyFinding:
    """Whether a flipped ciphertext byte of a probe file in `folder` is detected.
    `write` writes and fsyncs a file; `settled(before)` digests the backing once it
    differs from `before` (or once it has settled, for None)."""
    probe = folder / "tamper"
    first = secrets.token_bytes(TAMPER_BYTES)
    before = settled(None)
    write(probe, first)
    written = settled(before)
    second = secrets.token_bytes(TAMPER_BYTES)
    # in place where the target can; truncated first where it writes only from a file's start
    with open(probe, "wb" if target.writes_from_start else "r+b") as f:
        f.write(second)
        f.flush()
        os.fsync(f.fileno())
    image = is_image(target)
    runs = blocks.changed(written, settled(written))
    if not image:  # only the backing files its first write made: its own, none a neighbour's
        own = set(written.crcs) - set(before.crcs)
        runs = [r for r in runs if r.path in own]
    runs = candidates(runs, image)
    if not runs:
        return PropertyFinding(
            Verdict.UNKNOWN,
            "probe error: no run of backing blocks about the file's length changed when it was rewritten",
        )
    for run in runs[:MAX_TRIES]:
        outcome = _flip_and_read(session, target, probe, second, run)
        if outcome is not None:
            return outcome
    return PropertyFinding(
        Verdict.UNKNOWN,
        f"probe error: a byte flipped in each of {min(len(runs), MAX_TRIES)} changed run(s) of the "
        "backing, and the file read back unchanged each time (the flips missed its ciphertext)",
    )


def candidates(runs: list[Run], image: bool) -> list[Run]:
    """Where to flip, the likeliest first. In a ciphertext directory, the longest runs of
    the probe's own files. On an image, only runs about the file's length (half to twice
    its blocks), so no flip lands in a filesystem's metadata or a run of someone else's
    writes; the closest to its length first, and of those the last (dm-integrity's data
    area lies after its journal)."""
    if not image:
        return sorted(runs, key=lambda r: (r.count, str(r.path), r.first), reverse=True)
    want = TAMPER_BYTES // blocks.BLOCK
    found = [r for r in runs if want // 2 <= r.count <= want * 2]
    return sorted(found, key=lambda r: (abs(r.count - want), -r.first))


def _flip_and_read(
    session: Session, target: Target, probe: Path, expected: bytes, run: Run
) -> PropertyFinding | None:
    backing = session.check_inside(run.path)
    offset = run.middle
    where = f"byte {offset} of {backing.name} (in a run of {run.count} changed 4 KiB block(s))"
    original = blocks.flip_byte(backing, offset)
    try:
        outcome = _read_back(target, probe, expected)
    finally:
        blocks.write_byte(backing, offset, original)
        make_cold(target, cache_files(target, probe))
    dead = [(h.name, why) for h in target.helpers if (why := h.death()) is not None]
    if dead:
        name, why = dead[0]
        raise ProvisionError(
            f"{target.name}: its {name} died when the tamper probe read a flipped ciphertext byte "
            f"({why}); the target was taken down"
        )
    if outcome is None:
        return None
    if isinstance(outcome, OSError):
        code = errno.errorcode.get(outcome.errno or 0, str(outcome.errno))
        return PropertyFinding(
            Verdict.DETECTED,
            f"{where} flipped: reading the file back failed with {code} ({os.strerror(outcome.errno or 0)})",
            {"error": code, "offset": offset, "file": backing.name},
        )
    return PropertyFinding(
        Verdict.SILENT,
        f"{where} flipped: the file read back without an error, {outcome} of its bytes changed",
        {"bytes_changed": outcome, "offset": offset, "file": backing.name},
    )


def _read_back(target: Target, probe: Path, expected: bytes) -> OSError | int | None:
    """The read's error, the count of bytes that differ, or None: read back unchanged.
    A daemon that keeps blocks in its own memory (CryFS) would serve the file from there,
    and every read keeps them there: each read waits, untouched, until they are gone."""
    for _ in range(READS):
        wait_write_behind(target)
        make_cold(target, cache_files(target, probe))
        try:
            got = probe.read_bytes()
        except OSError as e:
            return e
        if got != expected:
            return _differing(got, expected)
    return None


def _differing(got: bytes, expected: bytes) -> int:
    """Bytes that differ where both have one, and those only one has."""
    n = min(len(got), len(expected))
    a, b = np.frombuffer(got, np.uint8, n), np.frombuffer(expected, np.uint8, n)
    return int(np.count_nonzero(a != b)) + abs(len(got) - len(expected))
