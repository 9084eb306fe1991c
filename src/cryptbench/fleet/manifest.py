"""A serving host's manifest: what `cryptbench serve` provisioned and where.

`serve` writes it into its run directory once its targets are up and proven;
`serve --print-manifest` prints it; the coordinator of a fleet run reads it
through each host's `manifest_command` and checks it before any trial. It
holds no secret: key origins only, as a run's plan does.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from cryptbench.machine.session import MARKER, _run_lock, scratch_root
from cryptbench.model.errors import UsageError
from cryptbench.model.result import JsonObject, TargetInfo

SCHEMA = 1
FILE_NAME = "manifest.json"


@dataclass(frozen=True)
class ManifestTarget:
    name: str  # the target's name on its host (fscrypt, ext4-loop, …)
    backend: str
    baseline: str | None
    encrypted: bool
    io_mode: str  # direct or buffered, as the host decided like for like
    direct_io: str  # what O_DIRECT does there (probed)
    direct_io_reason: str
    marker_in_backing: bool | None
    encryption_verified: bool | None
    details: JsonObject  # the backend's own facts, as the host reported them
    data_file: str  # absolute path of the file fio reads and writes, inside the host's scratch

    def to_json(self) -> JsonObject:
        return dict(self.__dict__)

    def on_host(self, host: str) -> TargetInfo:
        """The target as a fleet run stores it: named, and its baseline named, under its host."""
        return TargetInfo(
            name=f"{host}/{self.name}",
            backend=self.backend,
            baseline=None if self.baseline is None else f"{host}/{self.baseline}",
            encrypted=self.encrypted,
            io_mode=self.io_mode,
            direct_io=self.direct_io,
            direct_io_reason=self.direct_io_reason,
            marker_in_backing=self.marker_in_backing,
            encryption_verified=self.encryption_verified,
            details=dict(self.details),
            host=host,
        )


@dataclass(frozen=True)
class Manifest:
    listen: str  # where its fio server listens, as typed (host:port, unix:/path)
    scratch: str  # the serving run's directory: every data file lies inside it
    size: int  # bytes: each target's data file, and bytes moved per trial
    ioengine: str  # the engine fio supports there (io_uring, libaio, psync)
    zero_data: bool  # fio fills write buffers with zeros instead of random bytes
    targets: tuple[ManifestTarget, ...]
    environment: JsonObject  # measure/environment.collect() on the host
    skipped: tuple[dict[str, str], ...]  # backends the host could not provide: {"backend", "reason"}
    version: str  # cryptbench's version there
    started_at: str  # ISO 8601, UTC: when the host started serving
    added_baselines: tuple[str, ...]  # baselines the host added to what it was asked to serve
    raw: JsonObject | None = None  # exactly as read from the host; None for one built here

    def stored(self) -> JsonObject:
        """What the run stores: the host's own words where they were read, else ours."""
        return self.raw if self.raw is not None else self.to_json()

    def target(self, name: str) -> ManifestTarget | None:
        return next((t for t in self.targets if t.name == name), None)

    def to_json(self) -> JsonObject:
        """What `serve` writes and a coordinator reads (`parse`)."""
        return {
            "schema": SCHEMA,
            "cryptbench": self.version,
            "started_at": self.started_at,
            "listen": self.listen,
            "scratch": self.scratch,
            "size": self.size,
            "ioengine": self.ioengine,
            "zero_data": self.zero_data,
            "targets": [t.to_json() for t in self.targets],
            "skipped": list(self.skipped),
            "added_baselines": list(self.added_baselines),
            "environment": self.environment,
        }


def write(run_dir: Path, manifest: Manifest) -> Path:
    """Write the manifest whole (temporary file, then rename) inside the run directory."""
    path = run_dir / FILE_NAME
    tmp = run_dir / f".{FILE_NAME}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "w") as f:
        json.dump(manifest.to_json(), f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)
    return path


def find_live(target: Path) -> Path:
    """The manifest of the `serve` that holds this target directory's scratch space."""
    root = scratch_root(target)
    if (root / MARKER).is_file():
        for run_dir in sorted(root.glob("run-*"), reverse=True):
            path = run_dir / FILE_NAME
            if not path.is_file():
                continue
            with _run_lock(run_dir) as free:
                if not free:  # a live process holds it: the serving one
                    return path
    raise UsageError(
        f"no cryptbench serve is running with --target {target} (or it has not finished provisioning)"
    )


def _get(d: JsonObject, key: str, kind: type, where: str) -> Any:
    if key not in d:
        raise UsageError(f"{where}: the manifest lacks {key!r}")
    value = d[key]
    # JSON's true is a Python bool, which is also an int: a count must not be one.
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise UsageError(f"{where}: the manifest's {key!r} has the wrong type")
    return value


def parse(text: str, where: str) -> Manifest:
    """A manifest from JSON text, checked; `where` names the host in every error."""
    try:
        d = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise UsageError(f"{where}: the manifest is not JSON ({str(e)[:60]})") from None
    if not isinstance(d, dict):
        raise UsageError(f"{where}: the manifest is not a JSON object")
    if d.get("schema") != SCHEMA:
        raise UsageError(
            f"{where}: manifest schema {str(d.get('schema'))[:10]!r}, this cryptbench reads {SCHEMA}"
        )
    scratch = _get(d, "scratch", str, where)
    if not PurePosixPath(scratch).is_absolute() or ".." in PurePosixPath(scratch).parts:
        raise UsageError(f"{where}: the manifest's scratch {scratch[:60]!r} is not an absolute path")
    size = _get(d, "size", int, where)
    if size <= 0:
        raise UsageError(f"{where}: the manifest's size must be positive")
    targets = []
    for i, t in enumerate(_get(d, "targets", list, where)):
        if not isinstance(t, dict):
            raise UsageError(f"{where}: target {i} of the manifest is not an object")
        data_file = _get(t, "data_file", str, where)
        path = PurePosixPath(data_file)
        if ".." in path.parts or not path.is_relative_to(PurePosixPath(scratch)):
            raise UsageError(
                f"{where}: target {str(t.get('name'))[:40]!r}'s data file {data_file[:80]!r} "
                "lies outside the host's scratch space; refusing to send fio a job for it"
            )
        baseline = t.get("baseline")
        if baseline is not None and not isinstance(baseline, str):
            raise UsageError(f"{where}: the manifest's 'baseline' has the wrong type")
        targets.append(
            ManifestTarget(
                name=_get(t, "name", str, where),
                backend=_get(t, "backend", str, where),
                baseline=baseline,
                encrypted=_get(t, "encrypted", bool, where),
                io_mode=_get(t, "io_mode", str, where),
                direct_io=_get(t, "direct_io", str, where),
                direct_io_reason=_get(t, "direct_io_reason", str, where),
                marker_in_backing=t.get("marker_in_backing"),
                encryption_verified=t.get("encryption_verified"),
                details=_get(t, "details", dict, where),
                data_file=data_file,
            )
        )
    names = [t.name for t in targets]
    if len(set(names)) != len(names):
        raise UsageError(f"{where}: the manifest names a target twice")
    for t in targets:
        if t.io_mode not in ("direct", "buffered"):
            raise UsageError(f"{where}: target {t.name[:40]!r} has I/O mode {t.io_mode[:20]!r}")
        if t.baseline is not None and t.baseline not in names:
            raise UsageError(f"{where}: target {t.name[:40]!r}'s baseline {t.baseline[:40]!r} is not served")
    skipped = _get(d, "skipped", list, where)
    added = d.get("added_baselines", [])  # a coordinator reads manifests without it
    if not isinstance(added, list) or not all(isinstance(b, str) for b in added):
        raise UsageError(f"{where}: the manifest's 'added_baselines' has the wrong type")
    return Manifest(
        listen=_get(d, "listen", str, where),
        scratch=scratch,
        size=size,
        ioengine=_get(d, "ioengine", str, where),
        zero_data=_get(d, "zero_data", bool, where),
        targets=tuple(targets),
        environment=_get(d, "environment", dict, where),
        skipped=tuple(s for s in skipped if isinstance(s, dict)),
        version=_get(d, "cryptbench", str, where),
        started_at=str(d.get("started_at", "")),
        added_baselines=tuple(added),
        raw=d,
    )
