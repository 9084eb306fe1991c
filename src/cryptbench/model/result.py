"""The result document as types: what `analysis/document.build` returns and every
renderer reads.

Its JSON form is the contract of `--json` and `show --json` (docs/architecture.md
lists its keys): `to_json()` writes the keys in the order they have always had, and
`from_json(d).to_json() == d` for every document this version writes
(tests/unit/model/test_result.py checks it on the recorded ones).

The types: `Document`, `TargetInfo`, `Result`, `Comparison`, `RunWarning`, `QdCurve`,
`Stopping` with its `Answer`s, `DeviceWrites`, `TrialCounts`, `EfficiencyRow` (with its
`CipherInfo`), `TargetDiagnosis` (with each `WorkloadFinding`); the ranking's
`RankingSection` (model/ranking_section.py), a study's `StudySummary` (model/study.py)
and a fleet's `FleetSection` (model/fleet_section.py) each in a module of its own.
A foundation: every layer may hold a document.

Throughput is in bytes/s and latency in seconds; each field says its unit. The plan
and the environment are typed records (`RunPlan`, `Environment`, model/stored_run.py)
over the objects as stored, which they write back untouched. A backend's own details and the stopping
rule stay JSON objects (free-form by nature); `JsonObject` names them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from cryptbench.model.fleet_section import FleetSection
from cryptbench.model.json_types import JsonObject
from cryptbench.model.ranking_section import RankingSection
from cryptbench.model.stored_run import Environment, RunPlan
from cryptbench.model.study import StudySummary
from cryptbench.model.vocabulary import Medium, RunStatus
from cryptbench.model.warning_kinds import RunWarning


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

    rule: JsonObject  # stopping.StoppingRule's JSON: precision, min/max repeats, max bytes, max time
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
