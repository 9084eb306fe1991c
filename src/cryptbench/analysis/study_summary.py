"""A study's own summary of its trials, computed the study's way, for the
report to show beside cryptbench's median and interval: users can then see
both what the study's method would have said on their machine and how sure
either figure is.

`drop-min-max` is study 004's R code: from each set of trial times, drop the
longest, then the shortest (`C[-which(C$V3 == max(C$V3)), ]` drops *every*
trial equal to the extreme, so ties go together), then mean, sample standard
deviation and speed = bytes written / mean time.

With `--as-published`, each of the study's own commands is also set against
its corrected twin (the workload of the same app and parameters, written
durably): the ratio of their speeds is how much the page cache inflated the
published kind of figure here.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

from cryptbench.model.stored_run import RunPlan
from cryptbench.model.study import PageCacheRatio, StudyRow, StudySummary
from cryptbench.model.units import format_mb_per_s
from cryptbench.stats import estimates

# Parameters by which an as-published workload differs from its corrected twin.
_STYLE_KEYS = frozenset({"name", "style", "fsync"})
DESCRIPTIONS = {
    "drop-min-max": "the longest and shortest trials dropped, then the mean time, "
    "its standard deviation, and speed = bytes / mean time",
}


@dataclass(frozen=True)
class DropMinMax:
    used: int  # trials left after dropping the extremes, count
    mean: float | None  # seconds: mean time of those trials; None when none is left
    sd: float | None  # seconds: their sample standard deviation; None below two


def drop_min_max(values: list[float]) -> DropMinMax:
    """Study 004's arithmetic: every value equal to the maximum dropped, then
    every value equal to the minimum of what is left."""
    rest = [v for v in values if v != max(values)] if values else []
    rest = [v for v in rest if v != min(rest)] if rest else []
    return DropMinMax(
        len(rest),
        statistics.fmean(rest) if rest else None,
        statistics.stdev(rest) if len(rest) >= 2 else None,
    )


def twin_of(plan: RunPlan, name: str) -> str | None:
    """The corrected workload an as-published one is the study's version of."""
    apps = plan.apps
    mine = {k: v for k, v in apps.get(name, {}).items() if k not in _STYLE_KEYS}
    published = set(plan.as_published)
    for other, params in apps.items():
        if other in published or other == name:
            continue
        if {k: v for k, v in params.items() if k not in _STYLE_KEYS} == mine:
            return other
    return None


def build(
    plan: RunPlan,
    samples: dict[tuple[str, str, str], list[float]],
    targets: list[str],
    seed_of: Callable[..., int],
) -> StudySummary | None:
    """The study's summary of every workload on every target, and the
    page-cache ratios of its as-published commands; None without a summary."""
    method = plan.summary
    if method != "drop-min-max":
        return None
    rows = []
    for w in plan.workloads:
        for t in targets:
            times = samples.get((w, t, "seconds"))
            moved = samples.get((w, t, "io_bytes"))
            if not times or not moved:
                continue
            s = drop_min_max(times)
            nbytes = statistics.median(moved)
            rows.append(
                StudyRow(w, t, len(times), s.used, s.mean, s.sd, nbytes, nbytes / s.mean if s.mean else None)
            )
    page_cache = []
    for published in plan.as_published:
        twin = twin_of(plan, published)
        if twin is None:
            continue
        for t in targets:
            a = samples.get((published, t, "throughput"))
            b = samples.get((twin, t, "throughput"))
            if not a or not b:
                continue
            r = estimates.ratio(a, b, seed=seed_of(published, twin, t))
            page_cache.append(
                PageCacheRatio(
                    published,
                    twin,
                    t,
                    statistics.median(a),
                    statistics.median(b),
                    r.ratio,
                    r.ci_low,
                    r.ci_high,
                )
            )
    return StudySummary(method, DESCRIPTIONS[method], rows, page_cache)


def page_cache_line(p: PageCacheRatio) -> str:
    """What the page cache (or the command's own work) did to a study command's figure."""
    interval = "" if p.ci_low is None else f" [{p.ci_low:.2f}, {p.ci_high:.2f}]"
    if p.ci_low is not None and p.ci_low > 1:
        verdict = "the page cache inflated it"
    elif p.ci_high is not None and p.ci_high < 1:
        verdict = (
            "the study's command was slower: its own work in the clock "
            "(dd reading /dev/urandom) cost more than the page cache saved"
        )
    else:
        verdict = "no clear difference"
    return (
        f"{p.target}: {p.workload} (as published, no fsync) "
        f"{format_mb_per_s(p.published_throughput)} MB/s, "
        f"{p.durable} (durable) {format_mb_per_s(p.durable_throughput)} MB/s: "
        f"{p.ratio:.2f}x{interval} the durable speed; {verdict}"
    )
