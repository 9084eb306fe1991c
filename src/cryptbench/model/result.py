"""The result document as types: what `analysis/document.build` returns and every
renderer reads.

Its JSON form is the contract of `--json` and `show --json` (docs/architecture.md
lists its keys): `to_json()` writes the keys in the order they have always had, and
`from_json(d).to_json() == d` for every document this version writes
(tests/unit/test_result_model.py checks it on the recorded ones).

The types: `Document`, `TargetInfo`, `Result`, `Comparison`, `RunWarning`, `QdCurve`,
`Stopping` with its `Answer`s, `DeviceWrites`, `TrialCounts`, `EfficiencyRow` (with its
`CipherInfo`), `TargetDiagnosis` (with each `WorkloadFinding`), the ranking's
`RankingSection`, the study summary's `StudySummary`, and the fleet's `FleetSection`.
A foundation: every layer may hold a document.

Throughput is in bytes/s and latency in seconds; each field says its unit. The plan
and the environment are typed records (`RunPlan`, `Environment`) over the objects as
stored, which they write back untouched. A backend's own details and the stopping
rule stay JSON objects (free-form by nature); `JsonObject` names them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from cryptbench.model.json_types import JsonObject
from cryptbench.model.metrics import primary_of
from cryptbench.model.vocabulary import Medium, RunStatus
from cryptbench.model.warning_kinds import RunWarning

# The plan's keys only one kind of run records (RunPlan.write's parameters with a default).
_ONE_KIND = frozenset(
    {
        "not_run",
        "target_dir",
        "space_needed",
        "target_bytes",
        "keys",
        "needs",
        "protection_probes",
        "trial_time",
        "data_size_limit",
        "ioengine",
        "fleet",
    }
)


@dataclass(frozen=True)
class RunPlan:
    """The plan a run followed, as `write` made it for the store (from planning/plan.Plan
    for a local run, from pipeline/fleet_run for a fleet run's coordinator). `raw` is the
    stored object, written back untouched: older runs lack newer keys, so each choice has
    its default where it was not recorded."""

    raw: JsonObject

    @classmethod
    def write(
        cls,
        *,
        # in the order runs have always stored the keys; those with a default only one
        # kind of run records (None: left out)
        suite: str,
        workloads: list[str],  # in the suite's order
        primary_metrics: dict[str, str],  # workload -> the metric it is compared on
        workload_specs: dict[str, JsonObject],  # fio workload -> rw, bs (bytes), iodepth, view
        apps: dict[str, JsonObject],  # application workload -> what its task does (describe())
        backends: list[str],
        targets: list[str],
        states: list[str],
        fs: str,
        write_new_file: bool,
        not_run: list[JsonObject] | None = None,  # a local run's: {workload, target, reason}
        added_baselines: list[str],
        skipped: list[JsonObject],  # {backend, reason}
        target_dir: str | None = None,  # a local run's
        size: int,  # bytes of data per target
        repeats: int | None,  # a fixed count of rounds; None: adaptive
        stopping: JsonObject,  # the stopping rule (stopping.Stopping.to_json)
        seed: int,
        io_mode: str,
        data: str,  # "random" or "zero" write buffers
        space_needed: int | None = None,  # a local run's: bytes
        target_bytes: int | None = None,  # a local run's: bytes per target
        keys: str | None = None,  # a local run's: where the keys came from, in words (keys.describe)
        summary: str | None,
        as_published: list[str],
        needs: list[str] | None = None,  # a local run's
        protection_probes: bool | None = None,  # a local run's
        ram: bool,
        trial_time: float | None = None,  # a local run's: seconds of I/O a fio trial lasts at least
        data_size_limit: int | None = None,  # a local run's: bytes a buffered data file may grow to
        ram_bytes: int,  # bytes of RAM the RAM twins may take
        ioengine: str | None = None,  # a local run's: fio's engine asked for, or "auto"
        fleet: JsonObject | None = None,  # a fleet run's: {hosts: [name, ...]}
    ) -> RunPlan:
        """The plan as every run stores it: a local run's (planning/plan.Plan.to_json) and
        a fleet run's (pipeline/fleet_run) alike, its keys in the order of the parameters;
        a key given None that only one kind of run records is left out."""
        given = {key: value for key, value in locals().items() if key != "cls"}  # parameter order
        return cls({key: value for key, value in given.items() if value is not None or key not in _ONE_KIND})

    @property
    def workloads(self) -> list[str]:  # in the suite's order
        return list(self.raw.get("workloads") or [])

    @property
    def workload_specs(self) -> dict[str, JsonObject]:  # fio workload -> rw, bs, iodepth, view
        return self.raw.get("workload_specs") or {}

    @property
    def apps(self) -> dict[str, JsonObject]:  # application workload -> app, phases, params
        return self.raw.get("apps") or {}

    def spec(self, workload: str) -> JsonObject | None:
        """A workload's definition: its fio pattern or its application's."""
        return self.workload_specs.get(workload) or self.apps.get(workload)

    def primary(self, workload: str) -> str:
        """The metric the workload is compared on."""
        return primary_of(self.raw, workload)

    @property
    def seed(self) -> int:  # trial order and fio offsets; 0 where none was stored
        return int(self.raw.get("seed") or 0)

    @property
    def size(self) -> int | None:  # bytes of data per target
        value = self.raw.get("size")
        return None if value is None else int(value)

    @property
    def repeats(self) -> int | None:  # a fixed count of rounds; None: adaptive
        value = self.raw.get("repeats")
        return None if value is None else int(value)

    @property
    def stopping(self) -> JsonObject | None:  # the stopping rule (stopping.Stopping.to_json)
        return self.raw.get("stopping")

    @property
    def data(self) -> str | None:  # "random" or "zero" write buffers
        value = self.raw.get("data")
        return None if value is None else str(value)

    @property
    def trial_time(self) -> float | None:  # seconds of I/O a fio trial lasts at least; 0: one pass
        value = self.raw.get("trial_time")
        return None if value is None else float(value)

    @property
    def data_size_limit(self) -> int | None:  # bytes a buffered data file may grow to; 0: not grown
        value = self.raw.get("data_size_limit")
        return None if value is None else int(value)

    @property
    def write_new_file(self) -> bool | None:  # each write trial to a new file; None: not recorded
        value = self.raw.get("write_new_file")
        return None if value is None else bool(value)

    @property
    def not_run(self) -> dict[tuple[str, str], str]:
        """(workload, target) -> why the plan left that trial out (a target that writes a file
        only from its start); none in older runs."""
        return {(d["workload"], d["target"]): d["reason"] for d in self.raw.get("not_run", [])}

    @property
    def target_dir(self) -> str | None:  # where the scratch space was
        value = self.raw.get("target_dir")
        return None if value is None else str(value)

    @property
    def summary(self) -> str | None:  # the study summary's method, where the suite asks one
        value = self.raw.get("summary")
        return None if value is None else str(value)

    @property
    def as_published(self) -> list[str]:  # workloads run as their study published them
        return list(self.raw.get("as_published") or [])

    @property
    def needs(self) -> list[str]:  # properties a ranked target must be proven to protect
        return list(self.raw.get("needs") or [])

    @property
    def fleet(self) -> JsonObject | None:  # a fleet run's hosts; None for a local run
        return self.raw.get("fleet")


@dataclass(frozen=True)
class Environment:
    """The machine a run measured, as measure/environment.collect recorded it (a fleet
    run's: its coordinator's). `raw` is the stored object, written back untouched:
    older runs lack newer keys, so each fact is None (or empty) where it was not
    recorded, and readers ask these properties instead of spelling keys."""

    raw: JsonObject

    def _text(self, key: str) -> str | None:
        value = self.raw.get(key)
        return None if value is None else str(value)

    @property
    def hostname(self) -> str | None:
        return self._text("hostname")

    @property
    def kernel(self) -> str | None:
        return self._text("kernel")

    @property
    def os(self) -> str | None:
        return self._text("os")

    @property
    def cpu_model(self) -> str | None:
        return self._text("cpu_model")

    @property
    def cpu_count(self) -> int | None:  # logical CPUs
        value = self.raw.get("cpu_count")
        return int(value) if value else None

    @property
    def cpu_flags(self) -> tuple[str, ...]:  # /proc/cpuinfo's flags ("aes", …)
        return tuple(self.raw.get("cpu_flags") or ())

    @property
    def memory_bytes(self) -> int | None:  # bytes of RAM
        value = self.raw.get("memory_bytes")
        return int(value) if value else None

    @property
    def kernel_crypto(self) -> JsonObject:
        """The kernel's driver per crypto algorithm ("xts(aes)": "xts-aes-aesni"), and
        whether it is generic software AES."""
        return self.raw.get("kernel_crypto") or {}

    def driver(self, algorithm: str) -> str | None:
        """The kernel's driver for `algorithm`, where one was instantiated at collection."""
        value = self.kernel_crypto.get(algorithm)
        return None if value is None else str(value)

    @property
    def target_filesystem(self) -> JsonObject:  # mountpoint, source, fstype, options; {} unknown
        return self.raw.get("target_filesystem") or {}

    @property
    def cache_drop(self) -> str | None:  # how the page cache was dropped: "drop_caches", "fadvise"
        return self._text("cache_drop")

    @property
    def scratch_device(self) -> str | None:  # whose write counter the trials read; None: none
        return self._text("scratch_device")

    @property
    def versions(self) -> dict[str, str]:  # backend -> its own program's version
        return {str(k): str(v) for k, v in (self.raw.get("versions") or {}).items()}

    @property
    def gocryptfs(self) -> str | None:  # runs stored before Backend.version() named it here
        return self._text("gocryptfs")

    @property
    def fio(self) -> str | None:  # fio's version
        return self._text("fio")

    @property
    def ioengine(self) -> str | None:  # the engine the run's fio jobs used
        return self._text("ioengine")

    @property
    def python(self) -> str | None:  # Python's version
        return self._text("python")


@dataclass(frozen=True)
class TargetInfo:
    """One provisioned target of the run."""

    name: str  # unique in the run: backend, then @state, :fs, ram: or host/ where they apply
    backend: str  # the registry's name
    baseline: str | None  # the same stack without the cipher; None for plain
    encrypted: bool
    io_mode: str  # "direct" or "buffered": what its trials used
    direct_io: str | None  # whether the layer honours O_DIRECT: "honoured", "ignored", …
    direct_io_reason: str | None  # the probe's evidence for it
    marker_in_backing: bool | None  # the plaintext marker was found in the backing store
    encryption_verified: bool | None  # the proof of encryption passed; None: not encrypted
    details: JsonObject  # the backend's own facts: cipher, mount, helpers, state, …
    medium: Medium = Medium.DEVICE
    host: str | None = None  # a fleet run's host label; None on one machine
    # what its backing hides, probed (protection/findings.py); None in runs before the probes
    protection: JsonObject | None = None

    def to_json(self) -> JsonObject:
        d: JsonObject = {
            "name": self.name,
            "backend": self.backend,
            "baseline": self.baseline,
            "encrypted": self.encrypted,
            "io_mode": self.io_mode,
            "direct_io": self.direct_io,
            "direct_io_reason": self.direct_io_reason,
            "marker_in_backing": self.marker_in_backing,
            "encryption_verified": self.encryption_verified,
            "details": self.details,
            "medium": self.medium,
            "host": self.host,
        }
        if self.protection is not None:
            d["protection"] = self.protection
        return d

    @classmethod
    def from_json(cls, d: JsonObject) -> TargetInfo:
        return cls(
            d["name"],
            d["backend"],
            d["baseline"],
            d["encrypted"],
            d["io_mode"],
            d["direct_io"],
            d["direct_io_reason"],
            d["marker_in_backing"],
            d["encryption_verified"],
            d["details"],
            Medium(d.get("medium", "device")),
            d.get("host"),
            d.get("protection"),
        )


@dataclass(frozen=True)
class Result:
    """One metric of one target at one workload, over its trials. Values are in the
    metric's unit (`unit`: bytes/s for throughput, s for latency, …)."""

    workload: str
    target: str
    metric: str
    unit: str  # the metric's unit as metrics.CATALOG names it
    samples: list[float]  # one per trial, in the order the trials ran
    n: int  # count of samples
    median: float
    mean: float
    sd: float  # standard deviation
    cv: float  # coefficient of variation, sd/mean, a fraction
    min: float
    max: float
    ci_low: float | None  # the median's bootstrap interval (stats.CONFIDENCE)
    ci_high: float | None
    # the round (from 0) each sample ran in, parallel to samples; None in documents
    # recorded before rounds were kept, whose comparisons could not pair
    rounds: list[int] | None = None

    def to_json(self) -> JsonObject:
        d: JsonObject = {
            "workload": self.workload,
            "target": self.target,
            "metric": self.metric,
            "unit": self.unit,
            "samples": self.samples,
            "n": self.n,
            "median": self.median,
            "mean": self.mean,
            "sd": self.sd,
            "cv": self.cv,
            "min": self.min,
            "max": self.max,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
        }
        if self.rounds is not None:
            d["rounds"] = self.rounds
        return d

    @classmethod
    def from_json(cls, d: JsonObject) -> Result:
        return cls(**{k: d[k] for k in _RESULT_KEYS if k in d})


_RESULT_KEYS = tuple(Result.__dataclass_fields__)


class ComparisonKind(StrEnum):
    """What a target is held against in a comparison."""

    BASELINE = "baseline"  # the same stack without the cipher
    PLAIN = "plain"  # plain on the same medium, where the baseline is another
    RAM = "ram"  # its RAM twin (--ram): what the device costs it
    VARIANT = "variant"  # the target it differs from in one option: luks-aes256 for -noqueue


@dataclass(frozen=True)
class Comparison:
    """A target against one of its baselines at one workload, on the workload's primary
    metric. `ratio` is the target's speed over the baseline's (below 1: slower), whatever
    the metric's direction."""

    workload: str
    target: str
    baseline: str
    kind: ComparisonKind
    metric: str
    ratio: float  # a fraction: target's speed / baseline's
    ci_low: float | None  # the ratio's bootstrap interval; None without one
    ci_high: float | None
    change_percent: float  # (ratio - 1) * 100: the change in speed, negative when slower
    precision: float | None  # the interval's relative half-width, a fraction
    stopped_by: str | None  # what ended its repetition (stopping.StopReason); "baseline" kind only
    # how the interval was made: stats.PAIRED (by round) or stats.UNPAIRED; None in
    # documents recorded before either was named, all of them unpaired
    method: str | None = None

    def to_json(self) -> JsonObject:
        return {k: getattr(self, k) for k in _COMPARISON_KEYS if k != "method" or self.method is not None}

    @classmethod
    def from_json(cls, d: JsonObject) -> Comparison:
        fields = {k: d[k] for k in _COMPARISON_KEYS if k in d}
        return cls(**{**fields, "kind": ComparisonKind(d["kind"])})


_COMPARISON_KEYS = tuple(Comparison.__dataclass_fields__)


@dataclass(frozen=True)
class QdPoint:
    iodepth: int  # count
    workload: str
    change_percent: float  # the change in speed against the baseline, negative when slower
    change_low: float | None  # percent: its 95 % interval, the ratio's; None without one
    change_high: float | None  # percent

    def to_json(self) -> JsonObject:
        return {k: getattr(self, k) for k in _QD_POINT_KEYS}


_QD_POINT_KEYS = tuple(QdPoint.__dataclass_fields__)


@dataclass(frozen=True)
class QdCurve:
    """One target's change against its baseline as queue depth grows, for one pattern."""

    rw: str  # fio's rw
    bs: int  # bytes
    target: str
    baseline: str | None
    points: list[QdPoint]  # by iodepth, ascending

    def to_json(self) -> JsonObject:
        return {
            "rw": self.rw,
            "bs": self.bs,
            "target": self.target,
            "baseline": self.baseline,
            "points": [p.to_json() for p in self.points],
        }

    @classmethod
    def from_json(cls, d: JsonObject) -> QdCurve:
        return cls(d["rw"], d["bs"], d["target"], d["baseline"], [QdPoint(**p) for p in d["points"]])


@dataclass(frozen=True)
class RankEntry:
    """One encrypted target's cost against plain, over one or more workloads, and how it
    stands against the cheapest: held to it directly, never by two intervals overlapping."""

    target: str
    ratio: float  # a fraction: target's speed / plain's (1.0: no cost; 0.4: 60 % slower)
    ci_low: float | None  # its bootstrap interval; None when a side has < 2 trials
    ci_high: float | None
    workloads: int  # count of workloads the ratio is taken over (a geometric mean when > 1)
    verdict: str = ""  # "cheapest", "equal", "tied" (with the cheapest) or "costlier"
    # a fraction: target's speed / the cheapest's, compared directly (paired by round where
    # both pair); None for the cheapest itself
    vs_cheapest: float | None = None
    vs_ci_low: float | None = None  # its 95 % interval; None without one (a side with < 2 trials)
    vs_ci_high: float | None = None
    reason: str = ""  # why the verdict, in words: "securefs varies ±75% trial to trial"

    @property
    def change_percent(self) -> float:  # percent of plain's speed gained (+) or lost (-)
        return (self.ratio - 1) * 100

    def to_json(self) -> JsonObject:
        d: JsonObject = {
            "target": self.target,
            "ratio": self.ratio,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "change_percent": self.change_percent,
            "workloads": self.workloads,
            "verdict": self.verdict,
        }
        # the cheapest is held to nothing, and a document recorded before the direct
        # comparison has none: both leave these out, so that a stored document reads back
        # byte for byte
        if self.vs_cheapest is not None or self.reason:
            d |= {
                "vs_cheapest": self.vs_cheapest,
                "vs_ci_low": self.vs_ci_low,
                "vs_ci_high": self.vs_ci_high,
                "reason": self.reason,
            }
        return d

    @classmethod
    def from_json(cls, d: JsonObject) -> RankEntry:
        # documents stored before the direct comparison have none
        return cls(
            d["target"], d["ratio"], d["ci_low"], d["ci_high"], d["workloads"], d["verdict"],
            d.get("vs_cheapest"), d.get("vs_ci_low"), d.get("vs_ci_high"), d.get("reason", ""),
        )  # fmt: skip


def _entries(ds: list[JsonObject]) -> list[RankEntry]:
    return [RankEntry.from_json(e) for e in ds]


@dataclass(frozen=True)
class FamilyRanking:
    family: str  # "sequential", "random" or "application"
    workloads: list[str]
    entries: list[RankEntry]  # cheapest first

    def to_json(self) -> JsonObject:
        return {
            "family": self.family,
            "workloads": self.workloads,
            "entries": [e.to_json() for e in self.entries],
        }


@dataclass(frozen=True)
class WorkloadRanking:
    workload: str
    entries: list[RankEntry]  # cheapest first

    def to_json(self) -> JsonObject:
        return {"workload": self.workload, "entries": [e.to_json() for e in self.entries]}


@dataclass(frozen=True)
class NotRanked:
    target: str
    reason: str  # why it is not ranked: unproven encryption, failed trials, …

    def to_json(self) -> JsonObject:
        return {"target": self.target, "reason": self.reason}


@dataclass(frozen=True)
class RankingSection:
    """The encrypted targets beside one plain target: one host and medium."""

    host: str | None  # a fleet run's host label; None on one machine
    medium: Medium
    plain: str  # the plain target they are set against
    workloads: list[str]  # those plain has a result at
    overall: list[RankEntry]  # cheapest first, over every workload
    families: list[FamilyRanking]
    per_workload: list[WorkloadRanking]
    not_ranked: list[NotRanked]

    def to_json(self) -> JsonObject:
        return {
            "host": self.host,
            "medium": self.medium,
            "plain": self.plain,
            "workloads": self.workloads,
            "overall": [e.to_json() for e in self.overall],
            "families": [f.to_json() for f in self.families],
            "per_workload": [w.to_json() for w in self.per_workload],
            "not_ranked": [x.to_json() for x in self.not_ranked],
        }

    @classmethod
    def from_json(cls, d: JsonObject) -> RankingSection:
        return cls(
            d["host"],
            d["medium"],
            d["plain"],
            d["workloads"],
            _entries(d["overall"]),
            [FamilyRanking(f["family"], f["workloads"], _entries(f["entries"])) for f in d["families"]],
            [WorkloadRanking(w["workload"], _entries(w["entries"])) for w in d["per_workload"]],
            [NotRanked(**x) for x in d["not_ranked"]],
        )


@dataclass(frozen=True)
class CipherInfo:
    """The cipher a layer uses, as its backend declares it."""

    where: str  # "kernel" or "userspace"
    algorithm: str  # e.g. "xts(aes)", "aes-256-gcm"
    unit: int  # bytes encrypted per call (a sector, a block)

    def to_json(self) -> JsonObject:
        return {"where": self.where, "algorithm": self.algorithm, "unit": self.unit}


@dataclass(frozen=True)
class EfficiencyRow:
    """An encrypted target's throughput at one workload against the lower of plain's on its
    medium and its cipher's ceiling (cipher/ceilings.py computes it)."""

    workload: str
    target: str
    achieved: float  # bytes/s, median
    plain: float | None  # bytes/s, median of plain on the same medium
    plain_target: str | None  # its name
    cipher: CipherInfo | None
    ceiling: float | None  # bytes/s: the cipher's rate; None when unknown
    ceiling_source: str  # where the ceiling comes from, or why there is none
    cores: int  # count of cores the ceiling was measured on
    openssl: float | None  # bytes/s: OpenSSL on the layer's cipher and unit, on those cores
    bound: float | None  # bytes/s: the lower of plain and ceiling
    limit: str | None  # which sets the bound: "plain" or "cipher"
    efficiency: float | None  # achieved over bound, a fraction
    cpu_seconds_per_gb: float | None  # s/GB, median, system-wide
    plain_cpu_seconds_per_gb: float | None  # s/GB, median of the plain target

    def to_json(self) -> JsonObject:
        d = {k: getattr(self, k) for k in _EFFICIENCY_KEYS}
        d["cipher"] = None if self.cipher is None else self.cipher.to_json()
        return d

    @classmethod
    def from_json(cls, d: JsonObject) -> EfficiencyRow:
        cipher = d["cipher"]
        return cls(
            **{
                **{k: d[k] for k in _EFFICIENCY_KEYS},
                "cipher": None if cipher is None else CipherInfo(**cipher),
            }
        )


_EFFICIENCY_KEYS = tuple(EfficiencyRow.__dataclass_fields__)


@dataclass(frozen=True)
class WorkloadFinding:
    """What limits one encrypted target at one workload (analysis/diagnosis.py's rules)."""

    workload: str
    target: str
    rule: str  # a diagnosis.Rule's value, e.g. "device-bound"
    sentence: str  # the limit, in words, with its numbers
    efficiency: float | None  # achieved over the bound, a fraction

    def to_json(self) -> JsonObject:
        return {k: getattr(self, k) for k in _FINDING_KEYS}


_FINDING_KEYS = tuple(WorkloadFinding.__dataclass_fields__)


@dataclass(frozen=True)
class TargetDiagnosis:
    target: str
    sentences: list[str]  # what the reader is told, in order
    findings: list[WorkloadFinding]  # every workload's, for the record

    def to_json(self) -> JsonObject:
        return {
            "target": self.target,
            "sentences": self.sentences,
            "findings": [f.to_json() for f in self.findings],
        }

    @classmethod
    def from_json(cls, d: JsonObject) -> TargetDiagnosis:
        return cls(d["target"], d["sentences"], [WorkloadFinding(**f) for f in d["findings"]])


@dataclass(frozen=True)
class Answer:
    """How one question (a target against its baseline at a workload) was answered."""

    workload: str
    target: str
    baseline: str
    metric: str
    stopped_by: str | None  # an stopping.StopReason's value; None while still open
    rounds: int  # count of rounds it took part in
    samples: int  # count of trials of the target
    halfwidth: float | None  # its ratio's interval's relative half-width, a fraction

    def to_json(self) -> JsonObject:
        return {k: getattr(self, k) for k in _ANSWER_KEYS}


_ANSWER_KEYS = tuple(Answer.__dataclass_fields__)


@dataclass(frozen=True)
class Stopping:
    """What decided how many trials ran."""

    rule: JsonObject  # stopping.Stopping's JSON: precision, min/max repeats, max bytes, max time
    answers: list[Answer]
    stopped_by: str | None  # what ended the run's trials (stopping.StopReason's value)
    bytes_written: float  # bytes the trials wrote
    bytes_source: str  # "device" (its own counter) or "workloads" (what fio reported)
    seconds: float  # seconds the trials took

    def to_json(self) -> JsonObject:
        return {
            "rule": self.rule,
            "answers": [a.to_json() for a in self.answers],
            "stopped_by": self.stopped_by,
            "bytes_written": self.bytes_written,
            "bytes_source": self.bytes_source,
            "seconds": self.seconds,
        }

    @classmethod
    def from_json(cls, d: JsonObject) -> Stopping:
        return cls(
            d["rule"],
            [Answer(**a) for a in d["answers"]],
            d["stopped_by"],
            d["bytes_written"],
            d["bytes_source"],
            d["seconds"],
        )


@dataclass(frozen=True)
class DeviceWrites:
    """What wore the scratch device: its own counter over every trial."""

    device: str | None  # the block device's name, e.g. "vda"
    bytes: float  # bytes written, layers' overhead included
    trials: int  # count of trials it covers

    def to_json(self) -> JsonObject:
        return {"device": self.device, "bytes": self.bytes, "trials": self.trials}


@dataclass(frozen=True)
class TrialCounts:
    ok: int  # count
    failed: int  # count

    def to_json(self) -> JsonObject:
        return {"ok": self.ok, "failed": self.failed}


@dataclass(frozen=True)
class Document:
    """A run's whole result: what it ran on, every figure, and what they mean."""

    schema_version: int
    run_id: int
    status: RunStatus
    started_at: str  # ISO 8601, UTC
    finished_at: str | None  # ISO 8601, UTC; None while running
    tool_version: str
    suite: str  # the suite's name
    plan: RunPlan  # plan.Plan's JSON, as stored
    environment: Environment  # measure/environment's facts, as stored
    targets: list[TargetInfo]
    results: list[Result]
    comparisons: list[Comparison]
    trials: TrialCounts
    notes: list[str]  # what the plan decided and why, one sentence each
    stopping: Stopping | None = None  # None for runs stored before adaptive stopping
    device_writes: DeviceWrites | None = None  # None where the scratch space has no block device
    study_summary: StudySummary | None = None  # analysis/study_summary.py's, for a suite that follows a study
    efficiency: list[EfficiencyRow] = field(default_factory=list)
    qd_curves: list[QdCurve] = field(default_factory=list)
    warnings: list[RunWarning] = field(default_factory=list)
    ranking: list[RankingSection] = field(default_factory=list)  # per host and medium
    conclusions: list[str] = field(default_factory=list)  # one sentence per (target, baseline)
    diagnosis: list[TargetDiagnosis] = field(default_factory=list)  # per encrypted target
    fleet: FleetSection | None = None  # fleet/spread.py's section, for a fleet run

    @property
    def equivalence(self) -> float | None:
        """Ratio units within which no change is "no measurable cost" (the stopping rule's
        --equivalence); None for runs recorded before the rule had one."""
        return None if self.stopping is None else self.stopping.rule.get("equivalence")

    def to_json(self) -> JsonObject:
        d: JsonObject = {
            "schema_version": self.schema_version,
            "run_id": self.run_id,
            "status": self.status,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "tool_version": self.tool_version,
            "suite": self.suite,
            "plan": self.plan.raw,
            "environment": self.environment.raw,
            "targets": [t.to_json() for t in self.targets],
            "results": [r.to_json() for r in self.results],
            "comparisons": [c.to_json() for c in self.comparisons],
            "trials": self.trials.to_json(),
            "notes": self.notes,
        }
        if self.stopping is not None:
            d["stopping"] = self.stopping.to_json()
        if self.device_writes is not None:
            d["device_writes"] = self.device_writes.to_json()
        if self.study_summary is not None:
            d["study_summary"] = self.study_summary.to_json()
        d["efficiency"] = [e.to_json() for e in self.efficiency]
        d["qd_curves"] = [c.to_json() for c in self.qd_curves]
        d["warnings"] = [w.to_json() for w in self.warnings]
        d["ranking"] = [r.to_json() for r in self.ranking]
        d["conclusions"] = self.conclusions
        d["diagnosis"] = [x.to_json() for x in self.diagnosis]
        if self.fleet is not None:
            d["fleet"] = self.fleet.to_json()
        return d

    @classmethod
    def from_json(cls, d: JsonObject) -> Document:
        stopping, writes = d.get("stopping"), d.get("device_writes")
        return cls(
            schema_version=d["schema_version"],
            run_id=d["run_id"],
            status=RunStatus(d["status"]),
            started_at=d["started_at"],
            finished_at=d["finished_at"],
            tool_version=d["tool_version"],
            suite=d["suite"],
            plan=RunPlan(d["plan"]),
            environment=Environment(d["environment"]),
            targets=[TargetInfo.from_json(t) for t in d["targets"]],
            results=[Result.from_json(r) for r in d["results"]],
            comparisons=[Comparison.from_json(c) for c in d["comparisons"]],
            trials=TrialCounts(**d["trials"]),
            notes=d["notes"],
            stopping=None if stopping is None else Stopping.from_json(stopping),
            device_writes=None if writes is None else DeviceWrites(**writes),
            study_summary=None
            if d.get("study_summary") is None
            else StudySummary.from_json(d["study_summary"]),
            efficiency=[EfficiencyRow.from_json(e) for e in d.get("efficiency", [])],
            qd_curves=[QdCurve.from_json(c) for c in d.get("qd_curves", [])],
            warnings=[RunWarning.from_json(w) for w in d.get("warnings", [])],
            ranking=[RankingSection.from_json(r) for r in d.get("ranking", [])],
            conclusions=d.get("conclusions", []),
            diagnosis=[TargetDiagnosis.from_json(x) for x in d.get("diagnosis", [])],
            fleet=None if d.get("fleet") is None else FleetSection.from_json(d["fleet"]),
        )

    def target(self, name: str) -> TargetInfo:
        """The target of that name (KeyError when the run has none)."""
        for t in self.targets:
            if t.name == name:
                return t
        raise KeyError(name)


@dataclass(frozen=True)
class FleetHost:
    """One host of a fleet run: how the coordinator reached it, what became of it, and
    what its manifest said it is."""

    name: str  # the label from hosts.toml
    address: str  # its fio server, as the coordinator reached it
    status: str  # ok, failed (stopped answering), unusable (no manifest)
    reason: str | None  # why, when not ok
    hostname: str | None  # the machine's own name; None without a manifest
    kernel: str | None  # uname -r there
    cpu_model: str | None
    xts_aes: str | None  # the kernel's xts(aes) driver there
    ioengine: str | None  # the engine fio uses there
    cryptbench: str | None  # cryptbench's version there
    targets: list[str]  # the targets it served, by their names there
    skipped: list[dict[str, str]]  # backends it could not provide: {"backend", "reason"}

    def to_json(self) -> JsonObject:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, d: JsonObject) -> FleetHost:
        return cls(**d)


@dataclass(frozen=True)
class HostChange:
    host: str  # the host's label
    change: float  # percent: the change in speed against its own baseline, negative when slower
    low: float | None  # percent: the 95 % interval's low end; None without one
    high: float | None  # percent: its high end

    def to_json(self) -> JsonObject:
        return dict(self.__dict__)


@dataclass(frozen=True)
class StandOut:
    """A host whose whole interval lies beyond the typical other host's (fleet/spread.py)."""

    host: str
    change: float  # percent, this host's change in speed, negative when slower
    others: float  # percent: the other hosts' median change
    others_low: float  # percent: the median of their intervals' low ends
    others_high: float  # percent: the median of their high ends
    direction: str  # "slower" or "faster" than the others

    def to_json(self) -> JsonObject:
        return dict(self.__dict__)


@dataclass(frozen=True)
class FleetCost:
    """One workload and encrypted target's change in speed against its baseline on each
    host, and its spread (every figure in percent, negative when slower)."""

    workload: str
    target: str  # its name on each host (fscrypt, not node1/fscrypt)
    baseline: str  # likewise
    hosts: int  # count of hosts with a comparison
    median: float  # percent, across hosts
    p10: float  # percent: 10th percentile across hosts (the slow end)
    p90: float  # percent: 90th percentile
    worst_host: str  # the host slowed most
    worst: float  # percent, its change (the lowest)
    worst_low: float | None  # percent: its interval's low end
    worst_high: float | None  # percent: its high end
    per_host: list[HostChange]
    stand_out: list[StandOut]

    def to_json(self) -> JsonObject:
        d = dict(self.__dict__)
        d["per_host"] = [h.to_json() for h in self.per_host]
        d["stand_out"] = [s.to_json() for s in self.stand_out]
        return d

    @classmethod
    def from_json(cls, d: JsonObject) -> FleetCost:
        return cls(
            **{
                **d,
                "per_host": [HostChange(**h) for h in d["per_host"]],
                "stand_out": [StandOut(**s) for s in d["stand_out"]],
            }
        )


@dataclass(frozen=True)
class FleetSection:
    """A fleet run's hosts and how each target's cost spreads across them."""

    hosts: list[FleetHost]
    costs: list[FleetCost]

    def to_json(self) -> JsonObject:
        return {
            "hosts": [h.to_json() for h in self.hosts],
            "costs": [o.to_json() for o in self.costs],
        }

    @classmethod
    def from_json(cls, d: JsonObject) -> FleetSection:
        return cls([FleetHost.from_json(h) for h in d["hosts"]], [FleetCost.from_json(o) for o in d["costs"]])


@dataclass(frozen=True)
class StudyRow:
    """One workload on one target summarized the study's way (analysis/study_summary.py)."""

    workload: str
    target: str
    n: int  # trials run
    used: int  # trials the study's rule kept
    mean_seconds: float | None  # seconds: their mean time; None when none was kept
    sd_seconds: float | None  # seconds: their sample standard deviation; None below two
    bytes: float  # bytes each trial wrote, median
    throughput: float | None  # bytes/s: bytes over the mean time

    def to_json(self) -> JsonObject:
        return dict(self.__dict__)


@dataclass(frozen=True)
class PageCacheRatio:
    """A study's command as published against its durable twin on one target."""

    workload: str  # the as-published workload
    durable: str  # its corrected twin
    target: str
    published_throughput: float  # bytes/s, median
    durable_throughput: float  # bytes/s, median
    ratio: float  # published over durable: 1.0 is no inflation
    ci_low: float | None  # the ratio's 95 % interval; None with too few trials
    ci_high: float | None

    def to_json(self) -> JsonObject:
        return dict(self.__dict__)


@dataclass(frozen=True)
class StudySummary:
    """A study's own summary of the trials, for a suite that follows one."""

    method: str  # "drop-min-max"
    description: str  # the method in words
    rows: list[StudyRow]
    page_cache: list[PageCacheRatio]  # with --as-published

    def to_json(self) -> JsonObject:
        return {
            "method": self.method,
            "description": self.description,
            "rows": [r.to_json() for r in self.rows],
            "page_cache": [p.to_json() for p in self.page_cache],
        }

    @classmethod
    def from_json(cls, d: JsonObject) -> StudySummary:
        return cls(
            d["method"],
            d["description"],
            [StudyRow(**r) for r in d["rows"]],
            [PageCacheRatio(**p) for p in d["page_cache"]],
        )
