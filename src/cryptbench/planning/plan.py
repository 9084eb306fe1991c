"""The plan: every choice of a run, validated before any I/O happens.

A plan that cannot run fails here, with the reason, before a byte is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from cryptbench.backends import REGISTRY
from cryptbench.backends.base import TargetSpec
from cryptbench.engines.apps import AppWorkload
from cryptbench.engines.apps.command import CommandWorkload
from cryptbench.machine import keys
from cryptbench.machine.session import check_target_dir, free_bytes
from cryptbench.machine.system import is_root
from cryptbench.model.errors import UnavailableError, UsageError
from cryptbench.model.json_types import JsonObject
from cryptbench.model.stored_run import RunPlan
from cryptbench.model.units import format_bytes, parse_size
from cryptbench.model.vocabulary import Medium
from cryptbench.planning.quantities import checked_size, run_quantities
from cryptbench.planning.questions import RankingGroups, ranking_groups, workload_questions, workload_seeds
from cryptbench.planning.request import RunRequest, checked_seed
from cryptbench.planning.stopping_rule import default_max_bytes, stopping_rule
from cryptbench.planning.suite import (
    Suite,
    WorkloadSpec,
    builtin_suites,
    command_suite,
    load_suite,
    primary_metric,
)
from cryptbench.planning.targets import (
    baseline_of,
    choose_backends,
    expand,
    skipped_trials,
    states_and_fs,
)
from cryptbench.stats.stopping import Question, StoppingRule
from cryptbench.store.database import default_db_path

DEFAULT_SIZE = "64M"

DEFAULT_SUITE = "quick"

# of the byte budget, what laying out the grown data files may write together; as much
# again is left for the minimum rounds' writes (sizing.WRITE_SHARE)
GROWTH_SHARE = 0.25

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
    rule: StoppingRule  # how many rounds: a fixed count or adaptive, and the budgets
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
    # bytes a write that makes a new file writes beside the data file, on a target not made
    # anew before it (trial/context.file_name); 0 where the writes overwrite the data file
    write_bytes: int = 0
    # workload -> {target: why} for the trials the run leaves out: a target that writes a
    # file only from its start, at a workload that writes at other offsets
    skip: dict[str, dict[str, str]] = field(default_factory=dict)
    # target name -> bytes it must hold at once: target_bytes, and the new-file writes' own
    # file where the target is not made anew before each write; it is provisioned for them
    holds: dict[str, int] = field(default_factory=dict)
    # what the run notes of its plan, before any trial: baselines added, backends skipped,
    # writes made new files on every target, trials left out
    notes: tuple[str, ...] = ()
    # workload -> its own seed (fio's random offsets, an app's inputs), from `seed`
    seeds: dict[str, int] = field(default_factory=dict)
    # what the run's repetition stops on: each target asked for (not a baseline cryptbench
    # added) against its baseline, per workload's primary metric, but the trials left out
    questions: tuple[Question, ...] = ()
    # each encrypted target and the plain it is ranked against; the workloads' kinds of work
    ranking: RankingGroups | None = None

    @property
    def write_new_file(self) -> bool:
        """Each write trial writes a new file: as the suite asks, or on every target where one
        of them can write a file only from its start (Backend.writes_from_start), so that
        every target's writes are alike."""
        return _writes_new_files(self.suite, self.from_start)

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


def mem_available() -> int:
    """Bytes of memory the kernel says can be used without swapping (MemAvailable)."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def build_plan(request: RunRequest) -> Plan:
    """Every choice checked, in the order a user fixes them: the sizes, durations and
    percentages as typed, suite, size, options, backends, image states and filesystem,
    the RAM twins, the space on the target."""
    r = request
    q = run_quantities(r)
    if r.try_flags or r.key_file is not None:
        raise UsageError(
            f"{'--try-flags' if r.try_flags else '--key-file'} goes with --existing: "
            "it tries your own volume's flags"
        )
    suite = _suite(r)
    size, target_bytes, input_bytes = _size(q.size, suite)
    if r.io_mode not in IO_MODES:
        raise UsageError(f"--io-mode must be one of {', '.join(IO_MODES)}")
    if r.ioengine is not None and r.ioengine not in IO_ENGINES:
        raise UsageError(f"--ioengine must be one of {', '.join(IO_ENGINES)}")
    if r.data not in DATA_KINDS:
        raise UsageError(f"--data must be one of {', '.join(DATA_KINDS)}")
    seed = checked_seed(r.seed)
    target_dir = check_target_dir(Path(r.target))
    passphrase = keys.read_passphrase_file(r.passphrase_file) if r.passphrase_file is not None else None
    rule = stopping_rule(suite, r, q, target_dir=target_dir)
    ordered, added, skipped = choose_backends(r, suite)
    states, fs = states_and_fs(r, suite, ordered)
    targets = expand(ordered, states, fs, r.ram)
    from_start = tuple(b for b in ordered if REGISTRY[b].writes_from_start)
    fio_writes = any(isinstance(w, WorkloadSpec) and w.is_write for w in suite.workloads)
    new_files = _writes_new_files(suite, from_start) and fio_writes
    trial_time = q.trial_time
    limit = _growth_limit(q.size is not None or r.ram, suite, size, targets, rule, target_dir, trial_time)
    if limit:
        target_bytes += limit - size  # each target holds the data file grown to its limit
    write_bytes = max(size, limit) if new_files else 0
    note = _inputs_note(suite, len(targets))
    holds = _holds(targets, target_bytes, write_bytes)
    ram_bytes = _ram_bytes(targets, holds) if r.ram else 0  # --ram keeps the size: nothing grows
    space = _space(targets, holds, input_bytes, target_dir, note)
    baselines = {t.name: baseline_of(t) for t in targets}
    skip = skipped_trials(targets, suite)
    asked = [t.name for t in targets if t.backend not in added]  # an added baseline asks nothing
    notes = [f"added {name} as a baseline" for name in added]
    notes += [f"skipped {name}: {reason}" for name, reason in skipped]
    if from_start and not suite.write_new_file and fio_writes:
        notes.append(
            f"every target's write trials write a new file, since {', '.join(from_start)} "
            "can write a file only from its start"
        )
    notes += _not_run_notes(skip)
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
        baselines=baselines,
        from_start=from_start,
        write_bytes=write_bytes,
        holds=holds,
        skip=skip,
        notes=tuple(notes),
        seeds=workload_seeds(seed, suite.workloads),
        questions=workload_questions(suite.workloads, baselines, asked, skip),
        ranking=ranking_groups(targets, suite.workloads),
    )


def _not_run_notes(skip: dict[str, dict[str, str]]) -> list[str]:
    """A note per target the plan leaves out of some workloads: which, and why."""
    by_target: dict[str, list[str]] = {}
    for w, left in skip.items():
        for name in left:
            by_target.setdefault(name, []).append(w)
    return [f"{', '.join(ws)} not run on {name}: {skip[ws[0]][name]}" for name, ws in by_target.items()]


def _needs(r: RunRequest) -> tuple[str, ...]:
    needs = parse_needs(r.needs)
    if needs and r.skip_protection:
        raise UsageError("--needs ranks by what the protection probes prove: drop --skip-protection")
    return needs


def _growth_limit(
    kept: bool,
    suite: Suite,
    size: int,
    targets: tuple[TargetSpec, ...],
    rule: StoppingRule,
    target_dir: Path,
    trial_time: float,
) -> int:
    """Bytes the data file may grow to so that buffered trials last the trial time: each
    target's share of GROWTH_SHARE of the byte budget (a tenth of the free space at most),
    since every target's file is written at layout. 0 where it keeps its size (`kept`: a
    size asked for by --size, or --ram, whose twins live in memory), a study's own size,
    no trial time, no fio workload, or a share no larger than the size."""
    fio = any(isinstance(w, WorkloadSpec) for w in suite.workloads)
    if kept or suite.size is not None or trial_time <= 0 or not fio:
        return 0
    budget = default_max_bytes(target_dir)
    if rule.max_bytes is not None:
        budget = min(budget, rule.max_bytes)
    limit = int(budget * GROWTH_SHARE / max(1, len(targets))) // SIZE_ALIGN * SIZE_ALIGN
    return limit if limit > size else 0


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


def _size(asked: int | None, suite: Suite) -> tuple[int, int, int]:
    """(the data file's bytes, the bytes each target holds at once, the bytes of app inputs),
    from --size (`asked`, bytes; None: not given)."""
    # A flag beats the suite's own default, which beats the tool's.
    if asked is not None:
        checked_size(asked)
        size_bytes = asked
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


def _writes_new_files(suite: Suite, from_start: tuple[str, ...]) -> bool:
    return suite.write_new_file or bool(from_start)


def _holds(targets: tuple[TargetSpec, ...], target_bytes: int, write_bytes: int) -> dict[str, int]:
    """Bytes each target must hold at once: `target_bytes`, and the new-file writes' own
    file (`write_bytes`) where the target is not made anew before each write."""
    return {t.name: target_bytes + (0 if REGISTRY[t.backend].stateful else write_bytes) for t in targets}


def _ram_bytes(targets: tuple[TargetSpec, ...], holds: dict[str, int]) -> int:
    """Bytes of memory the RAM twins take; refused beyond RAM_FRACTION of what is available."""
    if not is_root():
        raise UnavailableError("--ram needs root (to mount the tmpfs the RAM twins live on)")
    twins = [t for t in targets if t.medium == Medium.RAM]
    ram_bytes = sum(REGISTRY[t.backend].space_needed(t, holds[t.name]) for t in twins) + RAM_SLACK
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
    targets: tuple[TargetSpec, ...],
    holds: dict[str, int],
    input_bytes: int,
    target_dir: Path,
    note: str = "",
) -> int:
    """Bytes the plan needs on the target filesystem; refused when they and the margin are not free."""
    space = input_bytes + sum(
        REGISTRY[t.backend].space_needed(t, holds[t.name]) for t in targets if t.medium == Medium.DEVICE
    )
    free = free_bytes(target_dir)
    if space + SPACE_MARGIN > free:
        raise UsageError(
            f"not enough free space in {target_dir}: the plan needs {format_bytes(space)} "
            f"plus {format_bytes(SPACE_MARGIN)} margin, {format_bytes(free)} is free{note} "
            "(use a smaller --size or fewer --backends)"
        )
    return space
