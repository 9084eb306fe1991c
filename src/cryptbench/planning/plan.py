"""The plan: every choice of a run, validated before any I/O happens.

A plan that cannot run fails here, with the reason, before a byte is written.
"""

from __future__ import annotations

import argparse
import os
import secrets
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Protocol, TypeVar

from cryptbench.backends import DEFAULT, REGISTRY
from cryptbench.backends.base import FILESYSTEMS, STATES, TargetSpec
from cryptbench.backends.filesystem import probe_fs
from cryptbench.engines.apps import AppWorkload
from cryptbench.engines.apps.command import CommandWorkload
from cryptbench.machine import keys
from cryptbench.machine.session import check_target_dir, free_bytes
from cryptbench.machine.system import is_root
from cryptbench.model.errors import UnavailableError, UsageError, did_you_mean
from cryptbench.model.json_types import JsonObject
from cryptbench.model.result import RunPlan
from cryptbench.model.units import format_bytes, format_duration, parse_duration, parse_percent, parse_size
from cryptbench.model.vocabulary import Medium
from cryptbench.planning.suite import (
    Suite,
    Workload,
    WorkloadSpec,
    builtin_suites,
    check_repeats_range,
    check_size_range,
    command_suite,
    load_suite,
    primary_metric,
)
from cryptbench.stats.stopping import OVERRUNS, Stopping
from cryptbench.store.database import default_db_path

DEFAULT_SIZE = "64M"
DEFAULT_SUITE = "quick"
DEFAULT_PRECISION = "5%"
# Within this much of no change, a whole interval is "no measurable cost" and two
# targets are "equal": the user would not notice, and more trials would not change it.
DEFAULT_EQUIVALENCE = "3%"
EQUIVALENCE_RANGE = (0.1, 50.0)  # percent
DEFAULT_MIN_REPEATS = 3
DEFAULT_MAX_REPEATS = 10
PRECISION_RANGE = (0.1, 50.0)  # percent
# Adaptive runs' default budgets. Bytes: a tenth of the free space, at most
# 8 GiB (wear is the user's cost; more only when asked, --max-bytes). Time:
# five minutes of trials: on the 2-core development VM the default run's first
# round of 42 trials (seven targets, the quick suite, each trial stopped at
# twice the trial time) took about 80 s, so its three rounds fit with room for
# a fourth where the ranking is open; four minutes did not, and every run
# dropped workloads. With provisioning, the probes, the data files and the
# teardown the default run takes about seven. A fixed count (--repeats, a
# study's suite) is run in full unless a budget is given.
DEFAULT_MAX_BYTES_FRACTION = 0.10
DEFAULT_MAX_BYTES_CAP = 8 << 30
DEFAULT_MAX_TIME = 300.0  # seconds
# Each fio trial lasts at least this much I/O where passes can make it
# (trial/sizing.py); the environment variable sets the default, 0 turns it off.
DEFAULT_TRIAL_TIME = "1s"
TRIAL_TIME_VARIABLE = "CRYPTBENCH_TRIAL_TIME"
# of the byte budget, what laying out the grown data files may write together; as much
# again is left for the minimum rounds' writes (sizing.WRITE_SHARE)
GROWTH_SHARE = 0.25
MAX_TRIAL_TIME = 600.0  # seconds: a longer trial is a soak test, not a trial
SIZE_ALIGN = 1 << 20  # data files are whole MiB so that every block size divides them
# --ram: the twins may take at most half the memory the kernel calls available,
# so that the page cache and fio keep room; the tmpfs gets a little slack for
# markers and probe files.
RAM_FRACTION = 0.5
RAM_SLACK = 64 << 20  # bytes
SPACE_MARGIN = 256 << 20  # bytes kept free on the target filesystem beyond the plan's need
IO_MODES = ("auto", "direct", "buffered")
# fio's engines a run may be asked for (--ioengine); without one, the first of
# these that works here (engines/fio.probe_ioengine)
IO_ENGINES = ("io_uring", "libaio", "psync")
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
    # seconds of I/O each fio trial lasts at least, where passes can make it; 0: one pass
    trial_time: float = 0.0
    # bytes the data file may grow to so that buffered trials last trial_time
    # (sizing.grow; targets are made to hold it); 0: it keeps `size`
    data_size_limit: int = 0
    # what a target must be proven to protect to be ranked (--needs: names, sizes, tree, tamper)
    needs: tuple[str, ...] = ()
    protection_probes: bool = True  # False: --skip-protection
    ioengine: str | None = None  # fio's engine as asked (--ioengine); None: the best that works here
    # target name -> the name of the target it is compared with (None: a baseline itself)
    baselines: dict[str, str | None] = field(default_factory=dict)
    # the run's backends that write a file only from its start (Backend.writes_from_start)
    from_start: tuple[str, ...] = ()
    # workload -> {target: why} for the trials the run leaves out: a target that writes a
    # file only from its start, at a workload that writes at other offsets
    skip: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def write_new_file(self) -> bool:
        """Each write trial writes a new file: as the suite asks, or on every target where one
        of them can write a file only from its start (Backend.writes_from_start), so that
        every target's writes are alike."""
        return self.suite.write_new_file or bool(self.from_start)

    @property
    def repeats(self) -> int:
        """Trials per (workload, target): exactly, or at most when adaptive."""
        return self.rule.max_repeats

    def to_json(self) -> JsonObject:
        return RunPlan.write(
            suite=self.suite.name,
            workloads=[w.name for w in self.suite.workloads],
            primary_metrics={w.name: primary_metric(w) for w in self.suite.workloads},
            workload_specs={
                w.name: {"rw": w.rw, "bs": w.bs, "iodepth": w.iodepth, "view": w.view}
                for w in self.suite.workloads
                if isinstance(w, WorkloadSpec)
            },
            apps={w.name: w.describe(self.size) for w in self.suite.workloads if isinstance(w, AppWorkload)},
            backends=list(self.backends),
            targets=[t.name for t in self.targets],
            states=list(self.states),
            fs=self.fs,
            write_new_file=self.write_new_file,
            not_run=[
                {"workload": w, "target": t, "reason": why}
                for w, targets in self.skip.items()
                for t, why in targets.items()
            ],
            added_baselines=list(self.added_baselines),
            skipped=[{"backend": b, "reason": r} for b, r in self.skipped],
            target_dir=str(self.target_dir),
            size=self.size,
            repeats=self.repeats,
            stopping=self.rule.to_json(),
            seed=self.seed,
            io_mode=self.io_mode,
            data="zero" if self.zero_data else "random",
            space_needed=self.space_needed,
            target_bytes=self.target_bytes,
            keys=keys.describe(self.passphrase),
            summary=self.suite.summary,
            # the study's own commands, faults included, run beside the corrected workloads
            as_published=[w.name for w in self.suite.as_published] if self.as_published else [],
            needs=list(self.needs),
            protection_probes=self.protection_probes,
            ram=self.ram_bytes > 0,
            trial_time=self.trial_time,
            data_size_limit=self.data_size_limit,
            ram_bytes=self.ram_bytes,
            ioengine=self.ioengine or "auto",
        ).raw


def checked_seed(seed: int | None) -> int:
    """The seed asked for (--seed), checked, or a random one."""
    if seed is None:
        return secrets.randbits(32)
    if not 0 <= seed < 2**32:
        raise UsageError("--seed must be from 0 to 4294967295")
    return seed


R = TypeVar("R")  # a request: a frozen dataclass of what the user asked


def request_from_args(cls: type[R], args: argparse.Namespace) -> R:
    """A request (a frozen dataclass) from an argparse namespace: each field its flag's
    value, where the command has that flag; the others keep their defaults."""
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    given: dict[str, Any] = {n: getattr(args, n) for n in names if hasattr(args, n)}
    return cls(**given)


class AsksStopping(Protocol):
    """The stopping flags of a request (RunRequest, a fleet's FleetRequest), as typed."""

    @property
    def repeats(self) -> int | None: ...
    @property
    def precision(self) -> str | None: ...
    @property
    def equivalence(self) -> str | None: ...
    @property
    def overrun(self) -> str: ...
    @property
    def min_repeats(self) -> int | None: ...
    @property
    def max_repeats(self) -> int | None: ...
    @property
    def max_time(self) -> str | None: ...


def stopping_rule(
    suite: Suite, request: AsksStopping, *, max_bytes: str | None, target_dir: Path | None
) -> Stopping:
    """Adaptive unless the number of rounds is fixed: by --repeats, or by a
    suite that reproduces a study's count (unless --precision asks otherwise).

    Without a local `target_dir` (a fleet run writes on its hosts) there is no
    default byte budget: each host writes at most max-repeats trials' data."""
    repeats, precision, equivalence = request.repeats, request.precision, request.equivalence
    min_repeats, max_repeats = request.min_repeats, request.max_repeats
    max_time, overrun = request.max_time, request.overrun
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
    if overrun not in OVERRUNS:
        raise UsageError(f"--overrun must be one of {', '.join(OVERRUNS)}")
    low, high = EQUIVALENCE_RANGE
    margin = parse_percent(equivalence or DEFAULT_EQUIVALENCE, what="--equivalence", low=low, high=high)
    fixed = repeats if repeats is not None else (None if adaptive_flags else suite.repeats)
    if fixed is not None:
        check_repeats_range(fixed, "--repeats")
        return Stopping(None, fixed, fixed, budget, seconds, margin, overrun)
    if budget is None and target_dir is not None:
        budget = default_max_bytes(target_dir)
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
    return Stopping(fraction, least, most, budget, seconds, margin, overrun)


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
            hint = did_you_mean(name, known)
            raise UsageError(f"{what}: unknown {noun} {name[:40]!r}{hint or f' ({listed})'}")
    if len(set(chosen)) != len(chosen):
        raise UsageError(f"{what} names a {noun} twice")
    return tuple(chosen)


def _expand(
    ordered: list[str], states: tuple[str, ...], fs: str, ram: bool = False
) -> tuple[TargetSpec, ...]:
    """Backends x states on the device, then (--ram) the same on RAM where it means something."""
    specs: list[TargetSpec] = []
    for medium in (Medium.DEVICE, Medium.RAM) if ram else (Medium.DEVICE,):
        for name in ordered:
            if medium == Medium.RAM and not REGISTRY[name].ram:
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


@dataclass(frozen=True)
class RunRequest:
    """What the user asked of a run, as given (sizes and durations unparsed): built once
    from the command line (`from_args`) or by a caller, and checked by `build_plan`."""

    suite: str | None = None  # a built-in suite's name or a TOML file; None: quick, or --command's
    commands: tuple[str, ...] | list[str] | None = None  # the user's own commands, a workload each
    prepare: str | None = None  # with commands: before each trial, outside the clock
    cleanup: str | None = None  # with commands: after each trial, outside the clock
    inputs: str | None = None  # with commands: a path copied onto each target once
    backends: str | None = None  # comma-separated; None: the suite's, else every available default one
    size: str | None = None  # bytes, as typed ("64M"); None: the suite's, else DEFAULT_SIZE
    repeats: int | None = None  # a fixed count of trials; None: adaptive
    seed: int | None = None  # None: a random one
    target: str = "/var/tmp"  # the directory the scratch space goes in
    io_mode: str = "auto"  # auto, direct or buffered
    ioengine: str | None = None  # fio's engine; None: the best that works here
    data: str = "random"  # random or zero write buffers
    db: Path | None = None  # None: the default database
    passphrase_file: str | None = None
    state: str | None = None  # image backends' states, comma-separated
    fs: str | None = None  # the filesystem inside image backends
    as_published: bool = False
    precision: str | None = None  # percent, as typed ("5%")
    equivalence: str | None = None  # percent, as typed ("3%")
    overrun: str = "drop"  # when the minimum rounds cannot fit --max-time: drop workloads, or extend it
    min_repeats: int | None = None  # count
    max_repeats: int | None = None  # count
    max_bytes: str | None = None  # bytes, as typed
    max_time: str | None = None  # a duration, as typed ("5m")
    ram: bool = False  # also run each stack on RAM
    trial_time: str | None = None  # a duration, as typed ("1s", "0"); None: $CRYPTBENCH_TRIAL_TIME, else 1s
    needs: str | None = None  # comma-separated properties a ranked target must be proven to protect
    skip_protection: bool = False  # no protection probes at provisioning

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RunRequest:
        return request_from_args(cls, args)


def build_plan(request: RunRequest) -> Plan:
    """Every choice checked, in the order a user fixes them: suite, size, options, backends,
    image states and filesystem, the RAM twins, the space on the target."""
    r = request
    suite = _suite(r)
    size, target_bytes, input_bytes = _size(r, suite)
    if r.io_mode not in IO_MODES:
        raise UsageError(f"--io-mode must be one of {', '.join(IO_MODES)}")
    if r.ioengine is not None and r.ioengine not in IO_ENGINES:
        raise UsageError(f"--ioengine must be one of {', '.join(IO_ENGINES)}")
    if r.data not in DATA_KINDS:
        raise UsageError(f"--data must be one of {', '.join(DATA_KINDS)}")
    seed = checked_seed(r.seed)
    target_dir = check_target_dir(Path(r.target))
    rule = stopping_rule(suite, r, max_bytes=r.max_bytes, target_dir=target_dir)
    passphrase = keys.read_passphrase_file(r.passphrase_file) if r.passphrase_file is not None else None
    ordered, added, skipped = _backends(r, suite)
    states, fs = _states_and_fs(r, suite, ordered)
    targets = _expand(ordered, states, fs, r.ram)
    ram_bytes = _ram_bytes(targets, target_bytes) if r.ram else 0
    trial_time = _trial_time(r)
    limit = _growth_limit(r, suite, size, targets, rule, target_dir, trial_time)
    if limit:
        target_bytes += limit - size  # each target holds the data file grown to its limit
    space = _space(targets, target_bytes, input_bytes, target_dir, _inputs_note(suite, len(targets)))
    return Plan(
        suite=suite,
        backends=tuple(ordered),
        targets=targets,
        added_baselines=tuple(added),
        skipped=tuple(skipped),
        target_dir=target_dir,
        size=size,
        rule=rule,
        seed=seed,
        io_mode=r.io_mode,
        zero_data=r.data == "zero",
        db_path=r.db or default_db_path(),
        space_needed=space,
        passphrase=passphrase,
        states=states,
        fs=fs,
        target_bytes=target_bytes,
        as_published=r.as_published,
        ram_bytes=ram_bytes,
        trial_time=trial_time,
        data_size_limit=limit,
        needs=_needs(r),
        protection_probes=not r.skip_protection,
        ioengine=r.ioengine,
        baselines={t.name: _baseline_of(t) for t in targets},
        from_start=tuple(b for b in ordered if REGISTRY[b].writes_from_start),
        skip=_skip(targets, suite),
    )


def _skip(targets: tuple[TargetSpec, ...], suite: Suite) -> dict[str, dict[str, str]]:
    """workload -> {target: why} for the trials a run leaves out (Plan.skip)."""
    out: dict[str, dict[str, str]] = {}
    for t in targets:
        for w in not_run(t.backend, suite):
            out.setdefault(w, {})[t.name] = REGISTRY[t.backend].writes_from_start
    return out


def _baseline_of(spec: TargetSpec) -> str | None:
    """The name of the target `spec` is compared with: its baseline, in the same state."""
    base = REGISTRY[spec.backend].baseline
    if base is None:
        return None
    return TargetSpec(base, spec.state if REGISTRY[base].stateful else None, spec.fs, spec.medium).name


def _needs(r: RunRequest) -> tuple[str, ...]:
    needs = parse_needs(r.needs)
    if needs and r.skip_protection:
        raise UsageError("--needs ranks by what the protection probes prove: drop --skip-protection")
    return needs


def _growth_limit(
    r: RunRequest,
    suite: Suite,
    size: int,
    targets: tuple[TargetSpec, ...],
    rule: Stopping,
    target_dir: Path,
    trial_time: float,
) -> int:
    """Bytes the data file may grow to so that buffered trials last the trial time: each
    target's share of GROWTH_SHARE of the byte budget (a tenth of the free space at most),
    since every target's file is written at layout. 0 where it keeps its size: a size
    asked for (--size, a study's own), --ram (its twins live in memory), no trial time,
    no fio workload, or a share no larger than the size."""
    fio = any(isinstance(w, WorkloadSpec) for w in suite.workloads)
    if r.size is not None or suite.size is not None or r.ram or trial_time <= 0 or not fio:
        return 0
    budget = default_max_bytes(target_dir)
    if rule.max_bytes is not None:
        budget = min(budget, rule.max_bytes)
    limit = int(budget * GROWTH_SHARE / max(1, len(targets))) // SIZE_ALIGN * SIZE_ALIGN
    return limit if limit > size else 0


def default_max_bytes(target_dir: Path) -> int:
    """The byte budget of an adaptive run that gives none: a tenth of the free space, at most 8 GiB."""
    return min(int(free_bytes(target_dir) * DEFAULT_MAX_BYTES_FRACTION), DEFAULT_MAX_BYTES_CAP)


NEEDS = ("names", "sizes", "tree", "tamper")  # what --needs can ask a ranked target to protect


def parse_needs(text: str | None, flag: str = "--needs") -> tuple[str, ...]:
    """--needs (or check --require) as properties, each once, in NEEDS' order."""
    if text is None:
        return ()
    asked = [p.strip() for p in text.split(",") if p.strip()]
    if not asked:
        raise UsageError(f"{flag}: name one or more of {', '.join(NEEDS)}")
    for p in asked:
        if p not in NEEDS:
            raise UsageError(f"{flag}: unknown property {p[:40]!r} (known: {', '.join(NEEDS)})")
    return tuple(p for p in NEEDS if p in asked)


def _trial_time(r: RunRequest) -> float:
    """--trial-time in seconds: as given, else from the environment, else the default; 0 allowed."""
    if r.trial_time is not None:
        text, what = r.trial_time, "--trial-time"
    else:
        text, what = os.environ.get(TRIAL_TIME_VARIABLE, DEFAULT_TRIAL_TIME), TRIAL_TIME_VARIABLE
    if text.strip() in ("0", "0s"):
        return 0.0
    seconds = parse_duration(text, what=what)
    if seconds > MAX_TRIAL_TIME:
        raise UsageError(f"{what} {text[:40]} is longer than {format_duration(MAX_TRIAL_TIME)}")
    return seconds


def _suite(r: RunRequest) -> Suite:
    if r.commands:
        if r.suite is not None:
            raise UsageError("--command builds its own suite: give --command or --suite, not both")
        if r.as_published:
            raise UsageError("--as-published needs a study's suite, not --command")
        return command_suite(tuple(r.commands), r.prepare, r.cleanup, r.inputs)
    for flag, value in (("--prepare", r.prepare), ("--cleanup", r.cleanup), ("--inputs", r.inputs)):
        if value is not None:
            raise UsageError(f"{flag} goes with --command (a suite file sets it per workload)")
    suite = load_suite(r.suite or DEFAULT_SUITE)
    for w in suite.workloads:
        if isinstance(w, CommandWorkload):
            w.check_needs()
    if not r.as_published:
        return suite
    if not suite.as_published:
        having = [n for n in builtin_suites() if load_suite(n).as_published]
        raise UsageError(
            f"--as-published: suite {suite.name} has no as-published protocol "
            f"(suites with one: {', '.join(having) or 'none'})"
        )
    return replace(suite, workloads=suite.workloads + suite.as_published)


def _size(r: RunRequest, suite: Suite) -> tuple[int, int, int]:
    """(the data file's bytes, the bytes each target holds at once, the bytes of app inputs)."""
    # A flag beats the suite's own default, which beats the tool's.
    size = r.size
    if size is not None:
        size_bytes = parse_size(size, what="--size")
        check_size_range(size_bytes, f"--size {size[:40]}")
    else:
        size_bytes = suite.size if suite.size is not None else parse_size(DEFAULT_SIZE)
        size = format_bytes(size_bytes)
    size_bytes = size_bytes // SIZE_ALIGN * SIZE_ALIGN
    fio = [w for w in suite.workloads if isinstance(w, WorkloadSpec)]
    apps = [w for w in suite.workloads if isinstance(w, AppWorkload)]
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
    return size_bytes, target_bytes, sum(a.input_bytes(size_bytes) for a in apps)


def writes_at_an_offset(w: Workload) -> bool:
    """Whether `w` writes anywhere but from a file's start to its end: fio's writes other
    than `write`, and the built-in tasks that write (a database, a mail store). Your own
    commands are run as they are: a write the target refuses fails their trial, with its
    own message."""
    if isinstance(w, WorkloadSpec):
        return w.is_write and w.rw != "write"
    return w.writes and not w.runs_commands


def not_run(name: str, suite: Suite) -> list[str]:
    """The suite's workloads backend `name` cannot run: it writes a file only from its start
    (Backend.writes_from_start), and they write at other offsets."""
    if not REGISTRY[name].writes_from_start:
        return []
    return [w.name for w in suite.workloads if writes_at_an_offset(w)]


def cannot_run(name: str, suite: Suite) -> str | None:
    """Why backend `name` can run none of the suite's workloads, or None."""
    offsets = not_run(name, suite)
    if not offsets or len(offsets) < len(suite.workloads):
        return None
    why = REGISTRY[name].writes_from_start
    return f"{why}; every workload of the {suite.name} suite writes at other offsets"


def _backends(r: RunRequest, suite: Suite) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """(every backend in run order, the baselines added to them, (backend, reason) skipped)."""
    skipped: list[tuple[str, str]] = []
    if r.backends is None:
        # The suite's own list, else the default one: what can run here, the
        # rest skipped with the reason.
        candidates = (
            _parse_choices(suite.backends, tuple(REGISTRY), "the suite's backends", "backend")
            if suite.backends
            else DEFAULT
        )
        # Each backend probed once, baselines too.
        names = [n for c in candidates for n in (c, REGISTRY[c].baseline) if n]
        probes = {n: REGISTRY[n].probe() for n in dict.fromkeys(names)}
        wanted = []
        for name in candidates:
            why = probes[name].reason if not probes[name].ok else cannot_run(name, suite)
            if why is None:
                wanted.append(name)
            else:
                skipped.append((name, why))
        # An encrypted target whose baseline cannot run has nothing to be compared with.
        for name in list(wanted):
            base = REGISTRY[name].baseline
            if base is not None and not probes[base].ok:
                wanted.remove(name)
                skipped.append((name, f"its baseline {base} is unavailable"))
        if not wanted:
            raise UnavailableError(
                "no backend of this run is available here: "
                + "; ".join(f"{b}: {why}" for b, why in skipped[:3])
            )
        requested = wanted
    else:
        requested = parse_backend_list(r.backends)
    ordered, added = _with_baselines(requested)
    if r.backends is not None:
        # The backends asked for first, so the error names what the user typed.
        for name in [*requested, *added]:
            avail = REGISTRY[name].probe()
            if not avail.ok:
                users = ", ".join(n for n in ordered if REGISTRY[n].baseline == name)
                why = f" (needed as the baseline of {users})" if name in added else ""
                raise UnavailableError(f"backend {name} is not available here{why}: {avail.reason}")
            refused = cannot_run(name, suite)
            if refused is not None:
                raise UsageError(f"backend {name} cannot run this suite: {refused}")
    return ordered, added, skipped


def _states_and_fs(r: RunRequest, suite: Suite, ordered: list[str]) -> tuple[tuple[str, ...], str]:
    """The image backends' states and the filesystem inside them."""
    stateful = [n for n in ordered if REGISTRY[n].stateful]
    if r.state is not None and not stateful:
        raise UsageError("--state applies to image backends (image-*), and this run has none")
    if r.fs is not None and not stateful:
        raise UsageError("--fs applies to image backends (image-*), and this run has none")
    states: tuple[str, ...] = ()
    if stateful:
        states = (
            parse_states(r.state)
            if r.state is not None
            else (parse_states(suite.states, "the suite's states") if suite.states else ("fresh",))
        )
    fs = r.fs if r.fs is not None else (suite.fs or "ext4")
    if fs not in FILESYSTEMS:
        raise UsageError(f"--fs must be one of {', '.join(FILESYSTEMS)}, not {fs[:40]!r}")
    if stateful:
        avail = probe_fs(fs)
        if not avail.ok:
            raise UnavailableError(f"--fs {fs} cannot be used here: {avail.reason}")
    return states, fs


def _ram_bytes(targets: tuple[TargetSpec, ...], target_bytes: int) -> int:
    """Bytes of memory the RAM twins take; refused beyond RAM_FRACTION of what is available."""
    if not is_root():
        raise UnavailableError("--ram needs root (to mount the tmpfs the RAM twins live on)")
    twins = [t for t in targets if t.medium == Medium.RAM]
    ram_bytes = sum(REGISTRY[t.backend].space_needed(t, target_bytes) for t in twins) + RAM_SLACK
    memory = mem_available()
    if ram_bytes > memory * RAM_FRACTION:
        raise UsageError(
            f"--ram needs {format_bytes(ram_bytes)} of memory for the RAM twins, more than half of the "
            f"{format_bytes(memory)} available (use a smaller --size or fewer --backends)"
        )
    return ram_bytes


def _inputs_note(suite: Suite, targets: int) -> str:
    """What the user's inputs add to the space a plan needs, for its error."""
    copied = [w for w in suite.workloads if isinstance(w, CommandWorkload) and w.inputs_bytes]
    return "".join(
        f"; the inputs of {w.name} ({format_bytes(w.inputs_bytes)}) are copied onto each of the "
        f"{targets} target(s)"
        for w in copied
    )


def _space(
    targets: tuple[TargetSpec, ...], target_bytes: int, input_bytes: int, target_dir: Path, note: str = ""
) -> int:
    """Bytes the plan needs on the target filesystem; refused when they and the margin are not free."""
    space = input_bytes + sum(
        REGISTRY[t.backend].space_needed(t, target_bytes) for t in targets if t.medium == Medium.DEVICE
    )
    free = free_bytes(target_dir)
    if space + SPACE_MARGIN > free:
        raise UsageError(
            f"not enough free space in {target_dir}: the plan needs {format_bytes(space)} "
            f"plus {format_bytes(SPACE_MARGIN)} margin, {format_bytes(free)} is free{note} "
            "(use a smaller --size or fewer --backends)"
        )
    return space
