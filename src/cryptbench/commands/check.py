"""`cryptbench check --max-overhead 30% --require tamper`: a gate for CI or a fleet image.

Each encrypted target of a stored run (on the device; RAM twins are there to
explain, not to ship) against its baseline, on every workload. The bound is
given as an overhead, the share of the baseline's speed a target may lose
(--max-overhead 30%), and everything printed or stored is a change in speed, as
every figure of the tool is: 30 % lost is a floor of -30 %. A target fails when
its estimated change on some workload is below that floor, or when a workload it
should have run has no figure (a lost target cannot pass). Each finding says
whether its whole 95 % interval lies beyond the bound ("clearly")
or only the estimate does, so a failure near the bound reads as what it is.
On a fleet run every host's target is gated, and each target is also named by
its worst host (a fleet ships when its worst host does). With --require, each
encrypted target must also have been proven, by the run's protection probes, to
protect every property named (names, sizes, tree hidden; tampering detected).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from cryptbench.analysis import document
from cryptbench.analysis.ranking import unmet_need
from cryptbench.analysis.speed_change import speed_change
from cryptbench.commands.common_args import add_db, add_json
from cryptbench.model.errors import UsageError
from cryptbench.model.json_types import JsonObject
from cryptbench.model.result import ComparisonKind, Document
from cryptbench.model.units import parse_percent
from cryptbench.model.vocabulary import Medium
from cryptbench.planning.plan import parse_needs
from cryptbench.planning.request import request_from_args
from cryptbench.report.json_output import print_json
from cryptbench.store.database import Store, default_db_path


@dataclass(frozen=True)
class CheckedCost:
    """One target's change against its baseline at one workload, held to the gate."""

    target: str
    baseline: str
    workload: str
    change: float | None  # percent: the change in speed, negative when slower; None: no figure
    low: float | None  # percent: its 95 % interval
    high: float | None  # percent
    passed: bool
    host: str | None = None  # the fleet host the target is on; None on a one-machine run

    def to_json(self) -> JsonObject:
        return self.__dict__.copy()

    def words(self, floor: float) -> str:
        if self.change is None:
            return (
                f"{self.target} at {self.workload}: no comparison (its trials or {self.baseline}'s failed "
                "or never ran), so it cannot pass"
            )
        low, high = self.low, self.high
        interval = " (no interval)" if low is None or high is None else f" [{low:+.0f}, {high:+.0f}]"
        text = f"{self.target} at {self.workload}: {self.change:+.0f}%{interval} against {self.baseline}"
        if self.passed:
            return text
        past = f" — past the {floor:+g}% bound"
        if high is None:
            return text + past + ", with no interval to say how clearly"
        if high < floor:
            return text + past + ", clearly (its whole interval)"
        return text + past + ", though its interval reaches it"


@dataclass(frozen=True)
class Required:
    """One encrypted target held to --require: None where it meets every property."""

    target: str
    unmet: str | None  # the first property not proven, in words

    @property
    def passed(self) -> bool:
        return self.unmet is None

    def words(self) -> str:
        return f"{self.target}: " + (self.unmet or "proven to protect what is required")


@dataclass(frozen=True)
class Result:
    run_id: int
    floor: float | None  # percent: the lowest change in speed that passes (-30 for --max-overhead
    # 30%); None: no --max-overhead
    findings: list[CheckedCost]
    required: tuple[str, ...] = ()  # --require's properties
    protection: list[Required] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(f.passed for f in self.findings) and all(r.passed for r in self.protection)

    def worst(self) -> dict[str, CheckedCost]:
        """Per target, the finding that decides it: a missing figure, else the lowest change."""
        out: dict[str, CheckedCost] = {}
        for f in self.findings:
            best = out.get(f.target)
            if best is None or _rank(f) > _rank(best):
                out[f.target] = f
        return out

    def worst_hosts(self) -> dict[str, CheckedCost]:
        """On a fleet run, per target as served (fscrypt, not HOST/fscrypt), the
        host whose worst finding is worst; empty on a one-machine run."""
        out: dict[str, CheckedCost] = {}
        for f in self.worst().values():
            if f.host is None:
                continue
            name = f.target.removeprefix(f"{f.host}/")
            best = out.get(name)
            if best is None or _rank(f) > _rank(best):
                out[name] = f
        return out

    def to_json(self) -> JsonObject:
        return {
            "run_id": self.run_id,
            "floor_change_percent": self.floor,
            "passed": self.passed,
            "findings": [f.to_json() for f in self.findings],
            "required": list(self.required),
            "protection": [
                {"target": r.target, "passed": r.passed, "unmet": r.unmet} for r in self.protection
            ],
            "worst_hosts": {name: f.to_json() for name, f in self.worst_hosts().items()},
        }


def _rank(f: CheckedCost) -> float:
    # larger is worse: a missing figure, then the most speed lost
    return float("inf") if f.change is None else -f.change


def evaluate(doc: Document, floor: float | None, require: tuple[str, ...] = ()) -> Result:
    """Pure: the findings of one result document against the lowest change in speed that
    passes, in percent (None: no bound), and the properties each encrypted target must be
    proven to protect."""
    comps = {(c.workload, c.target): c for c in doc.comparisons if c.kind == ComparisonKind.BASELINE}
    findings = []
    gated = [t for t in doc.targets if t.encrypted and t.medium != Medium.RAM]
    protection = [Required(t.name, unmet_need(require, t)) for t in gated] if require else []
    for t in gated:
        if floor is None or not t.baseline:
            continue
        for w in doc.plan.workloads:
            c = comps.get((w, t.name))
            if c is None:
                findings.append(CheckedCost(t.name, t.baseline, w, None, None, None, False, t.host))
                continue
            pct, interval, _ = speed_change(c)
            low, high = (None, None) if interval is None else interval
            findings.append(CheckedCost(t.name, t.baseline, w, pct, low, high, pct >= floor, t.host))
    if not findings and not protection:
        what = "measured against a baseline " if floor is not None else ""
        raise UsageError(f"run {doc.run_id} has no encrypted target {what}on the device: nothing to check")
    return Result(doc.run_id, floor, findings, require, protection)


@dataclass(frozen=True)
class CheckRequest:
    """What `cryptbench check` was asked, as typed."""

    ref: str = "latest"  # a run id, or latest
    max_overhead: str | None = None  # percent, as typed ("30%")
    require: str | None = None  # comma-separated properties every encrypted target must protect
    db: Path | None = None  # None: the default database


def run(request: CheckRequest) -> Result:
    ref, max_overhead, require, db = request.ref, request.max_overhead, request.require, request.db
    if max_overhead is None and require is None:
        raise UsageError("check needs --max-overhead, --require or both")
    floor = None
    if max_overhead is not None:
        floor = -parse_percent(max_overhead, what="--max-overhead", low=0, high=100) * 100
    needs = parse_needs(require, "--require")
    store = Store.open(db or default_db_path(), create=False)
    try:
        run_id = store.resolve_run(ref)
        doc = document.build(store, run_id)
    finally:
        store.close()
    return evaluate(doc, floor, needs)


# What exit status 1 means for this command (its --help lists every status).
EXIT_ONE = "a gate failed: a target past --max-overhead, or not proven to protect what --require asks"

HELP = (
    "exit 1 when an encrypted target's overhead against its baseline exceeds a bound, or it was not "
    "proven to protect what is required (for CI gates)"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("ref", nargs="?", default="latest", help="run id, or latest (default)")
    p.add_argument(
        "--max-overhead",
        metavar="P",
        help="the most speed a target may lose against its baseline on any workload, e.g. 30%%",
    )
    p.add_argument(
        "--require",
        metavar="PROPS",
        help="what every encrypted target must have been proven to protect, comma-separated: names, "
        "sizes, tree (hidden), tamper (detected)",
    )
    add_db(p)
    add_json(p, "the findings")


def main(args: argparse.Namespace, out: Console, err: Console) -> int:
    result = run(request_from_args(CheckRequest, args))
    if args.json:
        print_json(result.to_json())
        return 0 if result.passed else 1
    floor = result.floor
    if floor is not None:
        for target, f in result.worst().items():
            verdict = "[green]pass[/green]" if f.passed else "[red]FAIL[/red]"
            out.print(f"{verdict} {f.words(floor)}", highlight=False)
            for other in result.findings:
                if other.target == target and not other.passed and other is not f:
                    out.print(f"     also {other.words(floor)}", highlight=False)
        for name, f in result.worst_hosts().items():
            out.print(f"worst host for {name}: {f.host} ({f.words(floor)})", highlight=False)
    for r in result.protection:
        verdict = "[green]pass[/green]" if r.passed else "[red]FAIL[/red]"
        out.print(f"{verdict} {r.words()}", highlight=False)
    gates = []
    if floor is not None:
        within = all(f.passed for f in result.findings)
        gates.append(
            ("every target within" if within else "past")
            + f" {floor:+g}% change in speed against its baseline (worst workload shown)"
        )
    if result.required:
        proven = all(r.passed for r in result.protection)
        gates.append(
            ("every target" if proven else "not every target")
            + f" proven to protect {', '.join(result.required)}"
        )
    out.print(f"run {result.run_id}: " + "; ".join(gates))
    return 0 if result.passed else 1
