"""The plan: every choice of a run, validated before any I/O happens.

A plan that cannot run fails here, with the reason, before a byte is written.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cryptbench import keys
from cryptbench.adaptive import Stopping
from cryptbench.backends import DEFAULT, REGISTRY
from cryptbench.backends.base import FILESYSTEMS, STATES, TargetSpec
from cryptbench.backends.filesystem import probe_fs
from cryptbench.engines.apps import AppWorkload
from cryptbench.errors import UnavailableError, UsageError
from cryptbench.session import check_target_dir, free_bytes
from cryptbench.suite import (
    Suite,
    WorkloadSpec,
    builtin_suites,
    check_repeats_range,
    check_size_range,
    load_suite,
    primary_metric,
)
from cryptbench.system import is_root
from cryptbench.units import format_bytes, parse_duration, parse_percent, parse_size

DEFAULT_SIZE = "64M"
DEFAULT_PRECISION = "5%"
DEFAULT_MIN_REPEATS = 3
DEFAULT_MAX_REPEATS = 10
PRECISION_RANGE = (0.1, 50.0)  # percent
# Adaptive runs' default budgets. Bytes: a tenth of the free space, at most
# 8 GiB (wear is the user's cost; more only when asked, --max-bytes). Time:
# four minutes of trials, so that with provisioning, the data files and the
# teardown the default run answers within five minutes on a noisy machine
# too. A fixed count (--repeats, a study's suite) is run in full unless a
# budget is given.
DEFAULT_MAX_BYTES_FRACTION = 0.10
DEFAULT_MAX_BYTES_CAP = 8 << 30
DEFAULT_MAX_TIME = 240.0  # seconds
SIZE_ALIGN = 1 << 20  # data files are whole MiB so that every block size divides them
# --ram: the twins may take at most half the memory the kernel calls available,
# so that the page cache and fio keep room; the tmpfs gets a little slack for
# markers and probe files.
RAM_FRACTION = 0.5
RAM_SLACK = 64 << 20  # bytes
SPACE_MARGIN = 256 << 20  # bytes kept free on the target filesystem beyond the plan's need
IO_MODES = ("auto", "direct", "buffered")
DATA_KINDS = ("random", "zero")


@dataclass(frozen=True)
class Plan:
    suite: Suite
    backends: tuple[str, ...]  # run order; includes baselines that were added
    targets: tuple[TargetSpec, ...]  # what is provisioned, in order: backends x states
    added_baselines: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]  # (backend, reason): unavailable, not asked for
    target_dir: Path
    size: int  # bytes: the data file on each target, and bytes moved per trial
    rule: Stopping  # how many rounds: a fixed count or adaptive, and the budgets
    seed: int  # trial order and fio random offsets
    io_mode: str  # auto, direct or buffered, as asked
    zero_data: bool
    db_path: Path
    space_needed: int  # bytes on the target filesystem
    # The user's passphrase (--passphrase-file); never stored, printed or logged.
    passphrase: bytes | None = field(default=None, repr=False)
    states: tuple[str, ...] = ()  # states of image targets, as asked; empty without any
    fs: str = "ext4"  # filesystem inside image targets
    # bytes each target must hold at once: fio's data file plus what the
    # application workloads keep and write there; targets are sized for it
    target_bytes: int = 0
    as_published: bool = False  # the suite's as_published workloads are in suite.workloads
    # --ram: the size of the tmpfs the RAM twins live on (bytes); 0 without --ram
    ram_bytes: int = 0

    @property
    def repeats(self) -> int:
        """Trials per (workload, target): exactly, or at most when adaptive."""
        return self.rule.max_repeats

    def baseline_of(self, spec: TargetSpec) -> str | None:
        """The name of the target `spec` is compared with: its baseline, in the same state."""
        base = REGISTRY[spec.backend].baseline
        if base is None:
            return None
        return TargetSpec(base, spec.state if REGISTRY[base].stateful else None, spec.fs, spec.medium).name

    def to_json(self) -> dict[str, Any]:
        return {
            "suite": self.suite.name,
            "workloads": [w.name for w in self.suite.workloads],
            "primary_metrics": {w.name: primary_metric(w) for w in self.suite.workloads},
            "workload_specs": {
                w.name: {"rw": w.rw, "bs": w.bs, "iodepth": w.iodepth, "view": w.view}
                for w in self.suite.workloads
                if isinstance(w, WorkloadSpec)
            },
            "apps": {
                w.name: w.describe(self.size) for w in self.suite.workloads if isinstance(w, AppWorkload)
            },
            "backends": list(self.backends),
            "targets": [t.name for t in self.targets],
            "states": list(self.states),
            "fs": self.fs,
            "write_new_file": self.suite.write_new_file,
            "added_baselines": list(self.added_baselines),
            "skipped": [{"backend": b, "reason": r} for b, r in self.skipped],
            "target_dir": str(self.target_dir),
            "size": self.size,
            "repeats": self.repeats,
            "stopping": self.rule.to_json(),
            "seed": self.seed,
            "io_mode": self.io_mode,
            "data": "zero" if self.zero_data else "random",
            "space_needed": self.space_needed,
            "target_bytes": self.target_bytes,
            "keys": keys.describe(self.passphrase),
            "summary": self.suite.summary,
            # the study's own commands, faults included, run beside the corrected workloads
            "as_published": [w.name for w in self.suite.as_published] if self.as_published else [],
            "ram": self.ram_bytes > 0,
            "ram_bytes": self.ram_bytes,
        }


def stopping_rule(
    suite: Suite,
    repeats: int | None,
    precision: str | None,
    min_repeats: int | None,
    max_repeats: int | None,
    max_bytes: str | None,
    max_time: str | None,
    target_dir: Path | None,
) -> Stopping:
    """Adaptive unless the number of rounds is fixed: by --repeats, or by a
    suite that reproduces a study's count (unless --precision asks otherwise).

    Without a local `target_dir` (a fleet run writes on its hosts) there is no
    default byte budget: each host writes at most max-repeats trials' data."""
    adaptive_flags = [
        f
        for f, v in (
            ("--precision", precision),
            ("--min-repeats", min_repeats),
            ("--max-repeats", max_repeats),
        )
        if v is not None
    ]
    if repeats is not None and adaptive_flags:
        raise UsageError(
            f"--repeats fixes the number of trials; {adaptive_flags[0]} is for adaptive repetition: give one"
        )
    budget: int | None = None
    if max_bytes is not None:
        budget = parse_size(max_bytes, what="--max-bytes")
        if budget <= 0:
            raise UsageError("--max-bytes must be more than zero")
    seconds = parse_duration(max_time, what="--max-time") if max_time is not None else None
    fixed = repeats if repeats is not None else (None if adaptive_flags else suite.repeats)
    if fixed is not None:
        check_repeats_range(fixed, "--repeats")
        return Stopping(None, fixed, fixed, budget, seconds)
    if budget is None and target_dir is not None:
        budget = min(int(free_bytes(target_dir) * DEFAULT_MAX_BYTES_FRACTION), DEFAULT_MAX_BYTES_CAP)
    if seconds is None:
        seconds = DEFAULT_MAX_TIME
    low, high = PRECISION_RANGE
    fraction = parse_percent(precision or DEFAULT_PRECISION, what="--precision", low=low, high=high)
    least = min_repeats if min_repeats is not None else DEFAULT_MIN_REPEATS
    most = max_repeats if max_repeats is not None else max(DEFAULT_MAX_REPEATS, least)
    check_repeats_range(least, "--min-repeats")
    check_repeats_range(most, "--max-repeats")
    if least < 2:
        raise UsageError("--min-repeats must be at least 2: one trial has no interval to judge")
    if most < least:
        raise UsageError(f"--max-repeats {most} is below --min-repeats {least}")
    return Stopping(fraction, least, most, budget, seconds)


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
    return list(_parse_choices(text.split(","), tuple(REGISTRY), "--backends", "backend"))


def parse_states(text: str | tuple[str, ...], what: str = "--state") -> tuple[str, ...]:
    return _parse_choices(text.split(",") if isinstance(text, str) else text, STATES, what, "state")


def _parse_choices(
    items: list[str] | tuple[str, ...], known: tuple[str, ...], what: str, noun: str
) -> tuple[str, ...]:
    """Names from `known`, each once, at least one; `what` and `noun` word the errors."""
    chosen = [i.strip() for i in items if i.strip()]
    if not chosen:
        raise UsageError(f"{what} names no {noun}")
    for name in chosen:
        if name not in known:
            listed = ", ".join(known) if len(known) <= 10 else f"cryptbench {noun}s lists all {len(known)}"
            raise UsageError(f"{what}: unknown {noun} {name[:40]!r} ({listed})")
    if len(set(chosen)) != len(chosen):
        raise UsageError(f"{what} names a {noun} twice")
    return tuple(chosen)


def _expand(
    ordered: list[str], states: tuple[str, ...], fs: str, ram: bool = False
) -> tuple[TargetSpec, ...]:
    """Backends x states on the device, then (--ram) the same on RAM where it means something."""
    specs: list[TargetSpec] = []
    for medium in ("device", "ram") if ram else ("device",):
        for name in ordered:
            if medium == "ram" and not REGISTRY[name].ram:
                continue
            for state in states if REGISTRY[name].stateful else (None,):
                specs.append(TargetSpec(name, state, fs, medium))
    return tuple(specs)


def mem_available() -> int:
    """Bytes of memory the kernel says can be used without swapping (MemAvailable)."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


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
    state: str | None = None,
    fs: str | None = None,
    as_published: bool = False,
    precision: str | None = None,
    min_repeats: int | None = None,
    max_repeats: int | None = None,
    max_bytes: str | None = None,
    max_time: str | None = None,
    ram: bool = False,
) -> Plan:
    suite_obj = load_suite(suite)
    if as_published:
        if not suite_obj.as_published:
            having = [n for n in builtin_suites() if load_suite(n).as_published]
            raise UsageError(
                f"--as-published: suite {suite_obj.name} has no as-published protocol "
                f"(suites with one: {', '.join(having) or 'none'})"
            )
        suite_obj = replace(suite_obj, workloads=suite_obj.workloads + suite_obj.as_published)
    # A flag beats the suite's own default, which beats the tool's.
    if size is not None:
        size_bytes = parse_size(size, what="--size")
        check_size_range(size_bytes, f"--size {size[:40]}")
    else:
        size_bytes = suite_obj.size if suite_obj.size is not None else parse_size(DEFAULT_SIZE)
        size = format_bytes(size_bytes)
    size_bytes = size_bytes // SIZE_ALIGN * SIZE_ALIGN
    fio = [w for w in suite_obj.workloads if isinstance(w, WorkloadSpec)]
    apps = [w for w in suite_obj.workloads if isinstance(w, AppWorkload)]
    biggest = max((w.bs for w in fio), default=0)
    if size_bytes < biggest:
        raise UsageError(f"--size {size} is smaller than the suite's largest block ({format_bytes(biggest)})")
    for app in apps:
        if size_bytes < app.min_size():
            raise UsageError(
                f"--size {size} is too small for {app.name} ({app.app}): it needs at least "
                f"{format_bytes(app.min_size())}"
            )
    # Setups an app keeps on a target (a mail store) stay between its trials,
    # so the needs add up rather than taking the largest.
    target_bytes = (size_bytes if fio else 0) + sum(a.target_bytes(size_bytes) for a in apps)
    input_bytes = sum(a.input_bytes(size_bytes) for a in apps)
    if io_mode not in IO_MODES:
        raise UsageError(f"--io-mode must be one of {', '.join(IO_MODES)}")
    if data not in DATA_KINDS:
        raise UsageError(f"--data must be one of {', '.join(DATA_KINDS)}")
    if seed is not None and not 0 <= seed < 2**32:
        raise UsageError("--seed must be from 0 to 4294967295")
    target_dir = check_target_dir(Path(target))
    rule = stopping_rule(
        suite_obj, repeats, precision, min_repeats, max_repeats, max_bytes, max_time, target_dir
    )
    passphrase = keys.read_passphrase_file(passphrase_file) if passphrase_file is not None else None

    skipped: list[tuple[str, str]] = []
    if backends is None:
        # The suite's own list, else the default one: what can run here, the
        # rest skipped with the reason.
        candidates = (
            _parse_choices(suite_obj.backends, tuple(REGISTRY), "the suite's backends", "backend")
            if suite_obj.backends
            else DEFAULT
        )
        # Each backend probed once, baselines too.
        names = [n for c in candidates for n in (c, REGISTRY[c].baseline) if n]
        probes = {n: REGISTRY[n].probe() for n in dict.fromkeys(names)}
        wanted = []
        for name in candidates:
            if probes[name].ok:
                wanted.append(name)
            else:
                skipped.append((name, probes[name].reason))
        # An encrypted target whose baseline cannot run has nothing to be compared with.
        for name in list(wanted):
            base = REGISTRY[name].baseline
            if base is not None and not probes[base].ok:
                wanted.remove(name)
                skipped.append((name, f"its baseline {base} is unavailable"))
        if not wanted:
            raise UnavailableError(
                "no backend of this run is available here: " + "; ".join(f"{b}: {r}" for b, r in skipped[:3])
            )
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

    stateful = [n for n in ordered if REGISTRY[n].stateful]
    if state is not None and not stateful:
        raise UsageError("--state applies to image backends (image-*), and this run has none")
    if fs is not None and not stateful:
        raise UsageError("--fs applies to image backends (image-*), and this run has none")
    states: tuple[str, ...] = ()
    if stateful:
        states = (
            parse_states(state)
            if state is not None
            else (parse_states(suite_obj.states, "the suite's states") if suite_obj.states else ("fresh",))
        )
    fs_name = fs if fs is not None else (suite_obj.fs or "ext4")
    if fs_name not in FILESYSTEMS:
        raise UsageError(f"--fs must be one of {', '.join(FILESYSTEMS)}, not {fs_name[:40]!r}")
    if stateful:
        avail = probe_fs(fs_name)
        if not avail.ok:
            raise UnavailableError(f"--fs {fs_name} cannot be used here: {avail.reason}")
    targets = _expand(ordered, states, fs_name, ram)
    ram_bytes = 0
    if ram:
        if not is_root():
            raise UnavailableError("--ram needs root (to mount the tmpfs the RAM twins live on)")
        twins = [t for t in targets if t.medium == "ram"]
        ram_space = sum(REGISTRY[t.backend].space_needed(t, target_bytes) for t in twins)
        ram_bytes = ram_space + RAM_SLACK
        memory = mem_available()
        if ram_bytes > memory * RAM_FRACTION:
            raise UsageError(
                f"--ram needs {format_bytes(ram_bytes)} of memory for the RAM twins, more than half of the "
                f"{format_bytes(memory)} available (use a smaller --size or fewer --backends)"
            )

    space = input_bytes + sum(
        REGISTRY[t.backend].space_needed(t, target_bytes) for t in targets if t.medium == "device"
    )
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
        targets=targets,
        added_baselines=tuple(added),
        skipped=tuple(skipped),
        target_dir=target_dir,
        size=size_bytes,
        rule=rule,
        seed=seed if seed is not None else secrets.randbits(32),
        io_mode=io_mode,
        zero_data=data == "zero",
        db_path=db,
        space_needed=space,
        passphrase=passphrase,
        states=states,
        fs=fs_name,
        target_bytes=target_bytes,
        as_published=as_published,
        ram_bytes=ram_bytes,
    )
