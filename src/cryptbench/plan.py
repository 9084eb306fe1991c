"""The plan: every choice of a run, validated before any I/O happens.

A plan that cannot run fails here, with the reason, before a byte is written.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptbench import keys
from cryptbench.backends import REGISTRY
from cryptbench.errors import UnavailableError, UsageError
from cryptbench.session import check_target_dir, free_bytes
from cryptbench.suite import Suite, check_repeats_range, check_size_range, load_suite
from cryptbench.units import format_bytes, parse_size

DEFAULT_SIZE = "64M"
DEFAULT_REPEATS = 5
SIZE_ALIGN = 1 << 20  # data files are whole MiB so that every block size divides them
SPACE_MARGIN = 256 << 20  # bytes kept free on the target filesystem beyond the plan's need
IO_MODES = ("auto", "direct", "buffered")
DATA_KINDS = ("random", "zero")


@dataclass(frozen=True)
class Plan:
    suite: Suite
    backends: tuple[str, ...]  # run order; includes baselines that were added
    added_baselines: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]  # (backend, reason): unavailable, not asked for
    target_dir: Path
    size: int  # bytes: the data file on each target, and bytes moved per trial
    repeats: int  # trials per (workload, target)
    seed: int  # trial order and fio random offsets
    io_mode: str  # auto, direct or buffered, as asked
    zero_data: bool
    db_path: Path
    space_needed: int  # bytes on the target filesystem
    # The user's passphrase (--passphrase-file); never stored, printed or logged.
    passphrase: bytes | None = field(default=None, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "suite": self.suite.name,
            "workloads": [w.name for w in self.suite.workloads],
            "backends": list(self.backends),
            "added_baselines": list(self.added_baselines),
            "skipped": [{"backend": b, "reason": r} for b, r in self.skipped],
            "target_dir": str(self.target_dir),
            "size": self.size,
            "repeats": self.repeats,
            "seed": self.seed,
            "io_mode": self.io_mode,
            "data": "zero" if self.zero_data else "random",
            "space_needed": self.space_needed,
            "keys": keys.describe(self.passphrase),
        }


def _with_baselines(names: list[str]) -> tuple[list[str], list[str]]:
    ordered: list[str] = []
    added: list[str] = []

    def visit(name: str, requested: bool) -> None:
        baseline = REGISTRY[name].baseline
        if baseline is not None:
            visit(baseline, False)
        if name not in ordered:
            ordered.append(name)
            if not requested and name not in names:
                added.append(name)

    for n in names:
        visit(n, True)
    return ordered, added


def parse_backend_list(text: str) -> list[str]:
    """--backends: comma-separated names from the registry, each once."""
    requested = [b.strip() for b in text.split(",") if b.strip()]
    if not requested:
        raise UsageError("--backends names no backend")
    for name in requested:
        if name not in REGISTRY:
            raise UsageError(f"unknown backend {name[:40]!r} (known: {', '.join(REGISTRY)})")
    if len(set(requested)) != len(requested):
        raise UsageError("--backends names a backend twice")
    return requested


def build_plan(
    *,
    backends: str | None,
    suite: str,
    size: str | None,
    repeats: int | None,
    seed: int | None,
    target: str,
    io_mode: str,
    data: str,
    db: Path,
    passphrase_file: str | None = None,
) -> Plan:
    suite_obj = load_suite(suite)
    # A flag beats the suite's own default, which beats the tool's.
    if size is not None:
        size_bytes = parse_size(size, what="--size")
        check_size_range(size_bytes, f"--size {size[:40]}")
    else:
        size_bytes = suite_obj.size if suite_obj.size is not None else parse_size(DEFAULT_SIZE)
        size = format_bytes(size_bytes)
    if repeats is None:
        repeats = suite_obj.repeats if suite_obj.repeats is not None else DEFAULT_REPEATS
    size_bytes = size_bytes // SIZE_ALIGN * SIZE_ALIGN
    biggest = max(w.bs for w in suite_obj.workloads)
    if size_bytes < biggest:
        raise UsageError(f"--size {size} is smaller than the suite's largest block ({format_bytes(biggest)})")
    check_repeats_range(repeats, "--repeats")
    if io_mode not in IO_MODES:
        raise UsageError(f"--io-mode must be one of {', '.join(IO_MODES)}")
    if data not in DATA_KINDS:
        raise UsageError(f"--data must be one of {', '.join(DATA_KINDS)}")
    if seed is not None and not 0 <= seed < 2**32:
        raise UsageError("--seed must be from 0 to 4294967295")
    target_dir = check_target_dir(Path(target))
    passphrase = keys.read_passphrase_file(passphrase_file) if passphrase_file is not None else None

    skipped: list[tuple[str, str]] = []
    if backends is None:
        wanted = []
        for name, backend in REGISTRY.items():
            avail = backend.probe()
            if avail.ok:
                wanted.append(name)
            else:
                skipped.append((name, avail.reason))
        # An encrypted target whose baseline cannot run has nothing to be compared with.
        for name in list(wanted):
            base = REGISTRY[name].baseline
            if base is not None and base not in wanted:
                wanted.remove(name)
                skipped.append((name, f"its baseline {base} is unavailable"))
        requested = wanted
    else:
        requested = parse_backend_list(backends)
    ordered, added = _with_baselines(requested)
    if backends is not None:
        # The backends asked for first, so the error names what the user typed.
        for name in [*requested, *added]:
            avail = REGISTRY[name].probe()
            if not avail.ok:
                users = ", ".join(n for n in ordered if REGISTRY[n].baseline == name)
                why = f" (needed as the baseline of {users})" if name in added else ""
                raise UnavailableError(f"backend {name} is not available here{why}: {avail.reason}")

    space = sum(REGISTRY[n].space_needed(size_bytes) for n in ordered)
    free = free_bytes(target_dir)
    if space + SPACE_MARGIN > free:
        raise UsageError(
            f"not enough free space in {target_dir}: the plan needs {format_bytes(space)} "
            f"plus {format_bytes(SPACE_MARGIN)} margin, {format_bytes(free)} is free "
            "(use a smaller --size or fewer --backends)"
        )
    return Plan(
        suite=suite_obj,
        backends=tuple(ordered),
        added_baselines=tuple(added),
        skipped=tuple(skipped),
        target_dir=target_dir,
        size=size_bytes,
        repeats=repeats,
        seed=seed if seed is not None else secrets.randbits(32),
        io_mode=io_mode,
        zero_data=data == "zero",
        db_path=db,
        space_needed=space,
        passphrase=passphrase,
    )
