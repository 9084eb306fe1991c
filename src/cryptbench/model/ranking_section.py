"""The ranking's part of the result document: per kind of work, each encrypted target's
place against the plain of its medium, and the targets not ranked with why
(analysis/ranking.py decides it)."""

from __future__ import annotations

from dataclasses import dataclass

from cryptbench.model.json_types import JsonObject
from cryptbench.model.vocabulary import Medium


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
