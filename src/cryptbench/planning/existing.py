"""The plan of `run --existing`: a user's own dm-crypt volume read through its mapping and
on the device under it, at the same offsets (study 002's protocol, made safe). Two
targets, nothing provisioned: the mapping (the plaintext, what the user's files are
read through) against the raw device (the ciphertext, what the disk gives without the
cipher). Only the suite's fio reads are run; every write is left out and said why."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from cryptbench.engines.fio_workload import WorkloadSpec
from cryptbench.engines.metric_catalog import info
from cryptbench.machine.session import check_target_dir
from cryptbench.measure.volume import CryptVolume
from cryptbench.model.errors import UsageError
from cryptbench.model.json_types import JsonObject
from cryptbench.model.stored_run import RunPlan
from cryptbench.model.units import format_bytes
from cryptbench.model.vocabulary import Existing
from cryptbench.planning.flag_trial import FlagSet, crypttab_entry, flag_sets, own_flags
from cryptbench.planning.plan import DEFAULT_SUITE, IO_ENGINES
from cryptbench.planning.quantities import run_quantities
from cryptbench.planning.questions import RankingGroups, workload_questions, workload_seeds
from cryptbench.planning.request import RunRequest, checked_seed
from cryptbench.planning.stopping_rule import stopping_rule
from cryptbench.planning.suite import Suite, family, load_suite, primary_metric
from cryptbench.stats.stopping import Question, StoppingRule
from cryptbench.store.database import default_db_path

# bytes of the volume a run reads (each trial a pass over it, or its trial time): large
# enough that a drive's own cache holds little of it, and only read, so no wear
DEFAULT_REGION = 1 << 30
REGION_ALIGN = 1 << 20  # bytes: the region's start and size, a multiple of every sector size
# What a flag of `run` asks that a read-only run of the user's own volume cannot do.
REFUSED = (
    ("backends", "--backends: --existing measures your volume, not targets it provisions"),
    ("state", "--state: --existing provisions no images"),
    ("fs", "--fs: --existing provisions no images"),
    ("commands", "--command: --existing runs fio reads only: your commands could write to the volume"),
    ("prepare", "--prepare goes with --command, which --existing does not run"),
    ("cleanup", "--cleanup goes with --command, which --existing does not run"),
    ("inputs", "--inputs goes with --command, which --existing does not run"),
    ("as_published", "--as-published: a study's own commands are not run on your volume"),
    ("needs", "--needs ranks by what the protection probes prove; --existing probes nothing"),
    ("passphrase_file", "--passphrase-file: --existing reads a volume already open; no key is asked"),
    ("max_bytes", "--max-bytes: --existing writes nothing, so there is no byte budget"),
    (
        "ram",
        "--ram: a twin is made of a dm-crypt volume only; for an overlay's cost without the device, "
        "run its backend with --ram (cryptbench run --backends gocryptfs --ram)",
    ),
)
WRITES_LEFT_OUT = (
    "not run: writes to your volume cannot be compared with its raw device without destroying "
    "its data. What can be measured: writes above your encryption, in scratch space on its "
    "filesystem (cryptbench run --target DIR, DIR a directory on the volume: its plain target "
    "is then your encryption, said so first), and your volume's twin, the same cipher and flags "
    "in scratch space and on RAM (the same command with --ram)"
)


@dataclass(frozen=True)
class ExistingPlan:
    volume: CryptVolume
    suite: Suite  # the reads run: the suite's fio reads of the decrypted view
    target_dir: Path  # the scratch space: job files and the journal, never the volume
    region_start: int  # bytes into the mapping where the region read starts
    region_bytes: int  # bytes of the region each trial reads (a pass, or its trial time's worth)
    rule: StoppingRule
    seed: int  # trial order, the region's place and fio's random offsets
    trial_time: float  # seconds of I/O each trial lasts; 0: one pass over the region
    db_path: Path
    ioengine: str | None = None  # fio's engine as asked; None: the best that works here
    left_out: tuple[str, ...] = ()  # the suite's workloads not run (writes, other views)
    notes: tuple[str, ...] = ()
    seeds: dict[str, int] = field(default_factory=dict)
    questions: tuple[Question, ...] = ()
    ranking: RankingGroups | None = None
    flag_sets: tuple[FlagSet, ...] = ()  # --try-flags: each read through its own shadow mapping
    flag_notes: tuple[str, ...] = ()  # the flags not tried, and why
    crypttab: str | None = None  # --try-flags: /etc/crypttab's line for the mapping, as read

    @property
    def mapping_target(self) -> str:
        return self.volume.mapping

    @property
    def raw_target(self) -> str:
        return f"raw-{self.volume.device}"

    @property
    def targets(self) -> tuple[str, ...]:
        return (self.raw_target, self.mapping_target, *(s.name for s in self.flag_sets))

    @property
    def raw_offset(self) -> int:
        """Bytes into the device where the region starts: the same sectors as the mapping's."""
        return self.volume.data_offset + self.region_start

    def existing_json(self) -> JsonObject:
        """What the stored plan says of the volume: names, sizes and offsets only."""
        return {
            **self.volume.to_json(),
            "region_start": self.region_start,
            "region_bytes": self.region_bytes,
            "raw_offset": self.raw_offset,
            "targets": {"mapping": self.mapping_target, "raw": self.raw_target},
            "left_out": list(self.left_out),
            **({"flags": self.flags_json()} if self.flag_sets else {}),
        }

    def flags_json(self) -> JsonObject:
        """The flag trial as stored: the volume's own flags, each set tried, what was not."""
        options = self.volume.options
        return {
            "own": list(own_flags(options)),
            "options": [o for o in options if ":" not in o],  # its flags and discards, no sizes or keys
            "luks2": self.volume.layer.detail("format") == "LUKS2",
            "sets": [s.to_json() for s in self.flag_sets],
            "crypttab": self.crypttab,
            "not_tried": list(self.flag_notes),
        }

    def to_json(self) -> JsonObject:
        return stored_plan(
            self.suite,
            [Existing.RAW, Existing.MAPPING, *([Existing.FLAGS] if self.flag_sets else [])],
            self.targets,
            self.target_dir,
            self.region_bytes,
            self.rule,
            self.seed,
            "direct",
            self.trial_time,
            self.ioengine,
            self.existing_json(),
        )


def stored_plan(
    suite: Suite,
    backends: list[str],
    targets: tuple[str, ...],
    target_dir: Path,
    size: int,
    rule: StoppingRule,
    seed: int,
    io_mode: str,
    trial_time: float,
    ioengine: str | None,
    existing: JsonObject,
) -> JsonObject:
    """The stored plan of a run --existing (a dm-crypt volume's or a FUSE mount's): the
    suite's reads of two targets, nothing provisioned, written or asked of a state."""
    workloads = [w for w in suite.workloads if isinstance(w, WorkloadSpec)]
    return RunPlan.write(
        suite=suite.name,
        workloads=[w.name for w in workloads],
        primary_metrics={w.name: primary_metric(w) for w in workloads},
        workload_specs={
            w.name: {"rw": w.rw, "bs": w.bs, "iodepth": w.iodepth, "view": w.view} for w in workloads
        },
        apps={},
        backends=backends,
        targets=list(targets),
        states=[],
        fs="",
        write_new_file=False,
        added_baselines=[],
        skipped=[],
        target_dir=str(target_dir),
        size=size,
        repeats=rule.max_repeats if rule.precision is None else None,
        stopping=rule.to_json(),
        seed=seed,
        io_mode=io_mode,
        data="random",
        summary=None,
        as_published=[],
        ram=False,
        trial_time=trial_time,
        ram_bytes=0,
        ioengine=ioengine or "auto",
        existing=existing,
    ).raw


def checked(r: RunRequest, io_modes: tuple[str, ...] = ("auto", "direct"), why: str = "") -> None:
    """Every flag of `run` that a read-only run of the user's own data cannot honour,
    refused in one line each (what --existing reads, a dm-crypt volume or a FUSE mount,
    adds its own checks)."""
    for name, refusal in REFUSED:
        if getattr(r, name) not in (None, False):
            raise UsageError(refusal)
    if r.io_mode not in io_modes:
        raise UsageError(
            why
            or "--io-mode: --existing reads with O_DIRECT only (a buffered read of a block device "
            "is served from the page cache)"
        )
    if r.ioengine is not None and r.ioengine not in IO_ENGINES:
        raise UsageError(f"--ioengine must be one of {', '.join(IO_ENGINES)}")


def existing_plan(r: RunRequest, volume: CryptVolume) -> ExistingPlan:
    """Every choice of a read-only run of `volume` checked, each refusal in one line."""
    checked(r)  # the flags it cannot honour first: their values need not parse
    q = run_quantities(r)
    suite = load_suite(r.suite or DEFAULT_SUITE)
    reads, left_out = suite_reads(
        suite, ((volume.sector, "encryption sectors"), (volume.device_block, f"{volume.device}'s blocks"))
    )
    seed = checked_seed(r.seed)
    region = _region(q.size, suite, volume)
    slots = (volume.size - region) // REGION_ALIGN
    start = random.Random(seed).randint(0, slots) * REGION_ALIGN
    if volume.data_offset % volume.device_block:
        raise UsageError(
            f"--existing: {volume.mapping}'s data starts at byte {volume.data_offset:,} of "
            f"{volume.device}, not a multiple of its {volume.device_block}-byte blocks: "
            "no direct read lines up"
        )
    rule = stopping_rule(suite, r, q, target_dir=None)
    plan_suite = Suite(suite.name, suite.description, reads, repeats=suite.repeats)
    raw, mapping = f"raw-{volume.device}", volume.mapping
    if raw == mapping:
        raise UsageError(f"--existing: mapping {mapping} is named as its device's raw target would be")
    sets, flag_notes = flag_sets(volume.options) if r.try_flags else ((), [])
    if r.key_file is not None and not r.try_flags:
        raise UsageError("--key-file goes with --try-flags: --existing alone reads a volume already open")
    clash = [s.name for s in sets if s.name in (raw, mapping)]
    if clash:
        raise UsageError(f"--existing: mapping {mapping} is named as a flag set's target would be")
    baselines: dict[str, str | None] = {raw: None, mapping: raw, **{s.name: raw for s in sets}}
    notes = [*flag_notes]
    if left_out:
        notes.append(f"{', '.join(left_out)} {WRITES_LEFT_OUT}")
    return ExistingPlan(
        volume=volume,
        suite=plan_suite,
        target_dir=check_target_dir(Path(r.target)),
        region_start=start,
        region_bytes=region,
        rule=rule,
        seed=seed,
        trial_time=q.trial_time,
        db_path=r.db or default_db_path(),
        ioengine=r.ioengine,
        left_out=tuple(left_out),
        notes=tuple(notes),
        seeds=workload_seeds(seed, reads),
        questions=workload_questions(reads, baselines, [mapping, *(s.name for s in sets)]),
        ranking=RankingGroups(
            {mapping: raw, **{s.name: raw for s in sets}},
            {w.name: family(w) for w in reads},
            {w.name: info(primary_metric(w)).higher_is_better for w in reads},
        ),
        flag_sets=sets,
        flag_notes=tuple(flag_notes),
        crypttab=crypttab_entry(mapping) if sets else None,
    )


def suite_reads(
    suite: Suite, units: tuple[tuple[int, str], ...] = ()
) -> tuple[tuple[WorkloadSpec, ...], list[str]]:
    """The suite's fio reads of the decrypted view, each block a whole number of every
    unit of `units` (bytes, what they are: a volume's sectors); and the names of the rest
    (writes), which are not run. A suite of the user's own tasks is refused: a task could
    write."""
    reads, left_out = [], []
    for w in suite.workloads:
        if not isinstance(w, WorkloadSpec):
            raise UsageError(
                f"--existing: suite {suite.name}'s {w.name} is a task, not a fio read; --existing runs "
                "fio reads only (a suite of fio workloads, such as quick)"
            )
        if w.view == "backing":
            continue  # --existing reads the ciphertext beside every read anyway
        if w.is_write:
            left_out.append(w.name)
            continue
        for unit, what in units:
            if w.bs % unit:
                raise UsageError(
                    f"--existing: {w.name} reads {format_bytes(w.bs)} blocks, not a whole number of "
                    f"the volume's {unit}-byte {what}"
                )
        reads.append(w)
    if not reads:
        raise UsageError(f"--existing: suite {suite.name} has no fio read to run on your data")
    return tuple(reads), left_out


def _region(size: int | None, suite: Suite, volume: CryptVolume) -> int:
    """Bytes of the volume each trial reads: --size (`size`, bytes), else the suite's, else
    DEFAULT_REGION or the whole volume where it is smaller; a whole number of REGION_ALIGN."""
    usable = volume.size // REGION_ALIGN * REGION_ALIGN
    if usable <= 0:
        raise UsageError(f"--existing: {volume.mapping} holds {format_bytes(volume.size)}, less than 1 MiB")
    if size is not None:
        asked = size // REGION_ALIGN * REGION_ALIGN
        if asked <= 0:
            raise UsageError(f"--size {format_bytes(size)}: --existing reads at least 1 MiB")
        if asked > usable:
            holds = format_bytes(volume.size)
            raise UsageError(f"--size {format_bytes(size)} is more than {volume.mapping} holds ({holds})")
        return asked
    wanted = suite.size if suite.size is not None else DEFAULT_REGION
    return max(REGION_ALIGN, min(wanted // REGION_ALIGN * REGION_ALIGN, usable))
