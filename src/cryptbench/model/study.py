"""A study preset's part of the result document: its own table as the study printed it,
beside cryptbench's figures, and what the page cache did to them
(analysis/study_summary.py builds it)."""

from __future__ import annotations

from dataclasses import dataclass

from cryptbench.model.json_types import JsonObject


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
