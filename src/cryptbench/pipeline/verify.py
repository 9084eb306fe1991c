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
from dataclasses import replace

from cryptbench.backends import REGISTRY
from cryptbench.backends.base import DirectIO, Target, cache_files, iter_files
from cryptbench.engines.apps.base import durable
from cryptbench.machine.session import Session
from cryptbench.measure.cache import make_cold, resident_bytes
from cryptbench.model.json_types import JsonObject
from cryptbench.model.vocabulary import Property, Verdict
from cryptbench.protection import probes
from cryptbench.protection.findings import PropertyFinding, Protection
from cryptbench.protection.sight import Entry, contains, look

MARKER_NAME = ".cryptbench-marker"
MARKER_REPEATS = 4096  # the token fills 128 KiB, so every block of the file holds it


def marker_in_backing(session: Session, target: Target) -> bool:
    """Write a marker through `target.path`; is it visible in the backing?"""
    token = secrets.token_hex(16).encode()
    marker = session.check_inside(target.path / MARKER_NAME)
    before = _dir_sight(target)
    with open(marker, "wb") as f:
        f.write(token * MARKER_REPEATS)
        f.flush()
        os.fsync(f.fileno())
    try:
        # Metadata and journal too: the whole filesystem, then the loop device below it,
        # must have written back before the backing is searched; and a daemon that keeps
        # blocks in its own memory (CryFS) must have written the marker's before their
        # absence means anything.
        if before is None:
            durable()
        else:
            probes.until_changed(target, lambda: _dir_sight(target) or {}, before)
        return any(contains(p, token) for p in iter_files(target.backing))
    finally:
        marker.unlink()


def _dir_sight(target: Target) -> dict[str, Entry] | None:
    """A ciphertext directory's files and sizes; None for an image backing."""
    if len(target.backing) == 1 and target.backing[0].is_dir():
        return look(target.backing).entries
    return None


PROBE_NAME = ".cryptbench-direct-probe"
PROBE_BYTES = 1 << 20


def probe_direct_io(session: Session, target: Target) -> tuple[DirectIO, str]:
    """Write 1 MiB with O_DIRECT and see whether any of it lands in a page cache."""
    probe = session.check_inside(target.path / PROBE_NAME)
    make_cold(target, cache_files(target))
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


# The positive controls: an unencrypted target on which the probes must see every property.
CONTROLS = ("plain", "ext4-loop")


def probe_protection(session: Session, targets: dict[str, Target]) -> None:
    """What each target's backing hides and whether it detects tampering
    (protection/probes.py), with the proof of encryption as its contents' finding, and its
    space against its baseline's; stored on each target. Where a positive
    control (plain, ext4-loop) protects what it cannot, the probe is broken: every
    target's findings say so, and are no evidence. A target whose backing is another's
    format (a LUKS option given only at activation) takes that one's findings, probed
    once; its proof of encryption is still its own."""
    owners = {name: _format_owner(t, targets) for name, t in targets.items()}
    probed = {name: probes.probe(session, t) for name, t in targets.items() if owners[name] is None}
    for name, owner in owners.items():
        if owner is not None:
            p = probed[owner]
            probed[name] = replace(p, sight=f"{p.sight} (read on {owner}: the same format)", probed_on=owner)
    found: dict[str, Protection] = {}
    for name, t in targets.items():
        p = probed[name]
        said = REGISTRY[t.backend].declared() if t.backend in REGISTRY else {}
        findings = {Property.CONTENTS: _contents(t), **p.findings}
        found[name] = replace(
            p,
            findings={prop: f.as_declared(said[prop]) if prop in said else f for prop, f in findings.items()},
        )
    broken = None
    for name, t in targets.items():
        if t.backend not in CONTROLS or name not in found:
            continue
        for prop, f in found[name].findings.items():
            if f.protects is not False:
                broken = f"the {prop} probe did not see {prop} on {name}, a positive control ({f.evidence})"
                break
        if broken:
            break
    for name, t in targets.items():
        base = found.get(t.baseline) if t.baseline else None
        measured = with_ratios(found[name].space, base.space if base else {})
        t.protection = replace(found[name], broken=broken, space=measured).to_json()


def _format_owner(t: Target, targets: dict[str, Target]) -> str | None:
    """The name of the run's target on t's medium whose backing has t's format, or None."""
    backend = REGISTRY.get(t.backend)
    same = backend.same_format_as() if backend else None
    if same is None:
        return None
    return next((n for n, o in targets.items() if o.backend == same and o.medium == t.medium), None)


def with_ratios(space: JsonObject, baseline: JsonObject) -> JsonObject:
    """Each data set's space, with its baseline's and their ratio where both were measured;
    and the baseline's fixed cost beside the target's (a LUKS header against none)."""
    out = dict(space)
    if "fixed" in space and "fixed" in baseline:
        out["baseline_fixed"] = baseline["fixed"]
    for kind in ("tree", "large"):
        mine, theirs = space.get(kind), baseline.get(kind)
        if not mine or not theirs or "used" not in mine or "used" not in theirs or theirs["used"] <= 0:
            continue
        out[kind] = {
            **mine,
            "baseline_used": theirs["used"],
            "ratio": round(mine["used"] / theirs["used"], 3),
        }
    return out


def _contents(t: Target) -> PropertyFinding:
    if t.marker_in_backing:
        return PropertyFinding(Verdict.SHOWN, "a marker written through the target appeared in its backing")
    if t.encryption_verified:
        return PropertyFinding(
            Verdict.HIDDEN, "a marker written through the target is nowhere in its backing"
        )
    return PropertyFinding(
        Verdict.UNKNOWN, "the marker was not found, but its baseline's positive control did not run"
    )
