"""`cryptbench cleanup`: tear down whatever a crashed (SIGKILLed) run left behind."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from cryptbench.machine import keys
from cryptbench.machine.resources import SecretDir
from cryptbench.machine.session import candidate_run_dirs
from cryptbench.model.errors import UsageError
from cryptbench.pipeline.provision import recover_stale

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


HELP = "tear down what a crashed run left behind"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", help="also look in this target directory's scratch space")


def main(args: argparse.Namespace, out: Console, err: Console) -> int:
    removed, alive = run(target=args.target)
    for msg in removed:
        out.print(msg)
    for p in alive:
        out.print(f"left alone (a live run holds its lock): {p}")
    if not removed:
        out.print("nothing to clean up")
    return 0
