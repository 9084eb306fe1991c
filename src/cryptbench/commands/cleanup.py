"""`cryptbench cleanup`: tear down whatever a crashed (SIGKILLed) run left behind."""

from __future__ import annotations

from pathlib import Path

from cryptbench import keys
from cryptbench.errors import UsageError
from cryptbench.pipeline.provision import recover_stale
from cryptbench.resources import SecretDir
from cryptbench.session import candidate_run_dirs

DEFAULT_TARGET = Path("/var/tmp")


def run(*, target: str | None = None, registry: Path | None = None) -> tuple[list[str], list[Path]]:
    """Return (what was removed, run directories still in use by live runs)."""
    targets = [DEFAULT_TARGET]
    if target is not None:
        t = Path(target)
        if not t.is_dir():
            raise UsageError(f"target {target!r} is not a directory")
        targets.append(t.resolve())
    messages = recover_stale(targets, registry)
    for orphan in keys.orphan_secret_dirs():
        msg = SecretDir(orphan).release()
        if msg:
            messages.append(msg)
    alive = candidate_run_dirs(targets, registry)
    return messages, alive
