"""The report's charts, drawn with Matplotlib from the result document (and,
for CPU over time, the trials' sampled timelines).

Each chart is a `Chart`: a file stem for `--png DIR` / `--svg DIR`, a title,
a caption saying what is drawn and how to read it, and the Figure. Figures
are made with `matplotlib.figure.Figure`, not pyplot: no global state, no GUI
backend, nothing kept alive between reports.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from cryptbench.analysis.document import results_by_key
from cryptbench.analysis.speed_change import speed_change
from cryptbench.engines.metric_catalog import info
from cryptbench.measure.cpu_timeline import CpuTimeline
from cryptbench.model.result import ComparisonKind, Document, Result
from cryptbench.model.units import format_bytes
from cryptbench.model.vocabulary import Medium
from cryptbench.stats import estimates

WIDTH = 7.0  # inches: readable when scaled down to a phone's width, not sparse on a desktop
# Any: Matplotlib types rc_context's keys as a Literal of every rc name
STYLE: Any = {
    "svg.fonttype": "none",  # text stays text: searchable, selectable, scales with the page
    "svg.hashsalt": "cryptbench",  # the same run draws the same file
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
}
# Unencrypted targets in greys, encrypted ones in colour, each keeping its colour in every chart.
GREYS = ["#4d4d4d", "#8c8c8c", "#b3b3b3", "#262626"]
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#bcbd22"]
CLIP = 100.0  # percent: the overhead chart's axis ends here; a longer whisker is labelled
_SERIES = re.compile(r"^(write|read)-(\d+)([mk])\.throughput$")


@dataclass(frozen=True)
class Chart:
    name: str  # file stem: bars-sequential-1m, overhead, latency, cpu, file-size
    kind: str  # bars, overhead, latency, cpu, file-size (report sections) or comparison (compare)
    title: str
    caption: str  # what is drawn, in words, under the chart
    figure: Figure

    def svg(self) -> str:
        """The chart as an <svg> element to inline in HTML (no XML prolog, no date)."""
        text = self.image("svg").decode("utf-8")
        return _own_ids(text[text.index("<svg") :], self.name)

    def image(self, fmt: str) -> bytes:
        """The chart as a PNG (150 dpi) or a standalone SVG file, for posts and slides."""
        buf = io.BytesIO()
        with matplotlib.rc_context(STYLE):
            # no date in an SVG, so that the same run draws the same file
            meta: dict[str, str | None] = (
                {"Date": None} if fmt == "svg" else {"Software": "cryptbench (Matplotlib)"}
            )
            self.figure.savefig(buf, format=fmt, dpi=150, metadata=meta, bbox_inches="tight")
        return buf.getvalue()


_ID = re.compile(r'\bid="([^"]+)"')


def _own_ids(svg: str, prefix: str) -> str:
    """Prefix every element id (and each reference to it) with the chart's name: Matplotlib
    numbers ids per file, so charts inlined in one page would otherwise share them, and a
    clip path or marker could be taken from another chart."""
    ids = set(_ID.findall(svg))
    if not ids:
        return svg

    def rename(m: re.Match[str]) -> str:
        name = m.group(2)
        return f"{m.group(1)}{prefix}-{name}{m.group(3)}" if name in ids else m.group(0)

    return re.sub(r'(\bid="|href="#|url\(#)([^")]+)([")])', rename, svg)


@dataclass(frozen=True)
class TrialTimeline:
    """One trial's CPU samples, as stored (measure/cpu_timeline.py)."""

    target: str
    workload: str
    timeline: CpuTimeline


def colours(doc: Document) -> dict[str, str]:
    """A colour per target; a RAM twin takes its device twin's."""
    out: dict[str, str] = {}
    grey = colour = 0
    for t in doc.targets:
        name = t.name
        twin = name.split(":", 1)[1] if t.medium == Medium.RAM and ":" in name else None
        if twin in out:
            out[name] = out[twin]
        elif t.encrypted:
            out[name] = COLOURS[colour % len(COLOURS)]
            colour += 1
        else:
            out[name] = GREYS[grey % len(GREYS)]
            grey += 1
    return out


def _scale(unit: str, values: Iterable[float]) -> tuple[float, str]:
    """Divisor and axis unit for a metric's values: bytes/s in MB/s, seconds in ms or µs."""
    top = max((abs(v) for v in values), default=0.0)
    if unit == "bytes/s":
        return (1e9, "GB/s") if top >= 2e9 else (1e6, "MB/s")
    if unit == "s":
        if top < 1e-3:
            return 1e-6, "µs"
        return (1e-3, "ms") if top < 1 else (1.0, "s")
    if unit == "fraction":
        return 0.01, "%"
    return 1.0, unit


def _interval_in(r: Result, div: float) -> tuple[float, float] | None:
    """A result's 95 % interval in the chart's unit (None without one)."""
    if r.ci_low is None or r.ci_high is None:
        return None
    return r.ci_low / div, r.ci_high / div


def _whiskers(
    ax: Any,
    positions: Sequence[float],
    spans: list[tuple[float, float] | None],
    *,
    horizontal: bool = False,
    colour: str = "black",
) -> None:
    """Each interval as a whisker from its low to its high end. Drawn about the interval's own
    middle, not the median: a bootstrap interval of a few trials need not contain the median,
    and then offsets from it would be negative."""
    at = [p for p, s in zip(positions, spans, strict=True) if s is not None]
    mid = [(s[0] + s[1]) / 2 for s in spans if s is not None]
    half = [(s[1] - s[0]) / 2 for s in spans if s is not None]
    if not at:
        return
    if horizontal:
        ax.errorbar(mid, at, xerr=half, fmt="none", ecolor=colour, capsize=2, elinewidth=1, zorder=3)
    else:
        ax.errorbar(at, mid, yerr=half, fmt="none", ecolor=colour, capsize=2, elinewidth=1, zorder=3)


def _family(doc: Document, workload: str) -> tuple[str, str]:
    """(file stem part, title) of a workload's family: fio patterns by access and block size,
    application workloads by the unit they are measured in."""
    spec = doc.plan.workload_specs.get(workload)
    if spec is None:
        metric = info(doc.plan.primary(workload))
        slug = re.sub(r"[^a-z0-9]+", "-", metric.name.lower()).strip("-") or "other"
        return f"apps-{slug}", f"Application workloads: {metric.label}"
    random = str(spec.get("rw", "")).startswith("rand")
    size = format_bytes(int(spec.get("bs", 0))).replace(".0 ", " ")
    kind = "random" if random else "sequential"
    slug = size.replace(" ", "").lower().removesuffix("ib")
    return f"{kind}-{slug}", f"{kind.capitalize()} {size} requests"


def bar_charts(doc: Document) -> list[Chart]:
    """One grouped bar chart per workload family and medium: the median of each workload's own
    metric for every target, whiskers at its 95 % interval."""
    results = results_by_key(doc)
    palette = colours(doc)
    metric_of = {w: doc.plan.primary(w) for w in doc.plan.workloads}
    families: dict[tuple[str, str], list[str]] = {}
    titles: dict[str, str] = {}
    for w in doc.plan.workloads:
        if any(r.workload == w for r in doc.results):
            slug, title = _family(doc, w)
            titles[slug] = title
            families.setdefault((slug, info(metric_of[w]).unit), []).append(w)
    charts = []
    media = list(dict.fromkeys(t.medium for t in doc.targets))
    for (slug, unit), workloads in families.items():
        for medium in media:
            targets = [t.name for t in doc.targets if t.medium == medium]
            rows = {
                (w, tn): results[(w, tn, metric_of[w])]
                for w in workloads
                for tn in targets
                if (w, tn, metric_of[w]) in results
            }
            if not rows:
                continue
            div, axis_unit = _scale(unit, (r.ci_high or r.median for r in rows.values()))
            fig = Figure(figsize=(WIDTH, 3.4), layout="constrained")
            ax = fig.add_subplot()
            width = 0.8 / len(targets)
            for i, tn in enumerate(targets):
                xs, ys, spans = [], [], []
                for j, w in enumerate(workloads):
                    r = rows.get((w, tn))
                    if r is None:
                        continue
                    xs.append(j - 0.4 + width * (i + 0.5))
                    ys.append(r.median / div)
                    spans.append(_interval_in(r, div))
                ax.bar(xs, ys, width * 0.92, color=palette[tn], label=tn)
                _whiskers(ax, xs, spans)
            ax.set_xticks(range(len(workloads)), workloads)
            metric = metric_of[workloads[0]]
            better = info(metric).higher_is_better
            direction = "" if better is None else (" (higher is better)" if better else " (lower is better)")
            ax.set_ylabel(f"{info(metric).label}, {axis_unit}{direction}")
            ax.legend(ncols=min(len(targets), 4), loc="upper center", bbox_to_anchor=(0.5, -0.12))
            where = "on RAM" if medium == Medium.RAM else "on the device"
            title = f"{titles[slug]}, {where}" if len(media) > 1 else titles[slug]
            ax.set_title(title)
            charts.append(
                Chart(
                    f"bars-{slug}" + (f"-{medium}" if len(media) > 1 else ""),
                    "bars",
                    title,
                    "Median of the trials per target; whiskers: its 95 % bootstrap interval. "
                    f"{where[0].upper()}{where[1:]}.",
                    fig,
                )
            )
    return charts


Bar = tuple[str, float, tuple[float, float] | None, bool]  # label, change %, its interval, clear


def _change_figure(
    panels: list[tuple[str, str, list[Bar]]], xlabel: str, colour_of: dict[str, str] | None = None
) -> Figure:
    """Horizontal bars of a change in percent, one panel per (title, colour, bars), with whiskers.
    A clear change (its interval excludes none) is filled; the rest are grey. With `colour_of`,
    a bar takes its label's colour instead of its panel's."""
    count = sum(len(bars) for _, _, bars in panels)
    fig = Figure(figsize=(WIDTH, 0.9 + 0.22 * count + 0.35 * len(panels)), layout="constrained")
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    # A wide interval (three trials of a noisy target) would squeeze every bar into a corner:
    # the axis stops at +100 % and a whisker beyond says where it ends in words.
    every = [bar for _, _, bars in panels for bar in bars]
    right = max(5.0, *(p for _, p, _, _ in every), *(i[1] for _, _, i, _ in every if i is not None))
    right = min(right, CLIP) + 8
    for ax, (title, colour, bars) in zip(axes, panels, strict=True):
        for y, (_, pct, interval, clear) in enumerate(bars):
            if interval is not None:
                _whiskers(ax, [y], [(max(interval[0], -100), min(interval[1], CLIP))], horizontal=True)
                if interval[1] > CLIP:
                    ax.annotate(
                        f"→ {interval[1]:+.0f} %",
                        (CLIP, y),
                        xytext=(2, 0),
                        textcoords="offset points",
                        va="center",
                        fontsize=7,
                    )
            own = colour if colour_of is None else colour_of.get(bars[y][0].split(" ")[0], colour)
            ax.barh(y, min(pct, CLIP), 0.7, color=own if clear else "#d9d9d9", edgecolor=own, zorder=1)
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_xlim(-105, right)
        ax.set_yticks(range(len(bars)), [label for label, _, _, _ in bars])
        ax.invert_yaxis()
        ax.set_title(title, loc="left", fontsize=9)
    axes[-1].set_xlabel(xlabel)
    fig.legend(
        handles=[
            Patch(color="#555555", label="a clear difference"),
            Patch(facecolor="#d9d9d9", edgecolor="#555555", label="no clear difference"),
        ],
        loc="outside lower center",
        ncols=2,
    )
    return fig


def ranking_chart(doc: Document) -> Chart | None:
    """The ranking (analysis/ranking.py): each encrypted target's change in speed against plain,
    cheapest first, overall and, where the run has several, per family of workloads."""
    sections = [s for s in doc.ranking if s.overall]
    if not sections:
        return None
    several = len(sections) > 1
    panels: list[tuple[str, str, list[Bar]]] = []
    for s in sections:
        where = ""
        if several:
            where = " ".join(
                [
                    *([f"on {s.host}"] if s.host else []),
                    "on RAM" if s.medium == Medium.RAM else "on the device",
                ]
            )
            where = f" {where}"
        n = len(s.workloads)
        groups = [(f"Overall{where}: geometric mean over {n} workload{'s' if n != 1 else ''}", s.overall)]
        if len(s.families) > 1:
            groups += [
                (f"{f.family.capitalize()}{where} ({len(f.workloads)})", f.entries) for f in s.families
            ]
        for title, entries in groups:
            bars: list[Bar] = []
            for e in entries:
                pct, interval, clear = speed_change(e)
                label = e.target + ("" if e.verdict == estimates.COSTLIER else f" ({e.verdict})")
                bars.append((label, pct, interval, clear))
            panels.append((title, GREYS[0], bars))
    figure = _change_figure(panels, "change in speed against plain, % (negative: slower)", colours(doc))
    return Chart(
        "ranking",
        "ranking",
        "Which way of encrypting costs least here",
        "Each encrypted target's change in speed against plain on the same medium, cheapest first: the "
        "geometric mean of its per-workload ratios, whiskers at its 95 % interval (paired by round where "
        "the trials pair). Targets marked equal differ from the cheapest by less than the run's "
        "equivalence margin; those marked tied cannot be told apart from it (their intervals reach it).",
        figure,
    )


def overhead_chart(doc: Document) -> Chart | None:
    """Each target's change in speed against its baseline, per workload, with its interval."""
    comps = [c for c in doc.comparisons if c.kind == ComparisonKind.BASELINE]
    if not comps:
        return None
    palette = colours(doc)
    targets = list(dict.fromkeys(c.target for c in comps))
    workloads = [w for w in doc.plan.workloads if any(c.workload == w for c in comps)]
    panels = []
    for tn in targets:
        mine = {c.workload: c for c in comps if c.target == tn}
        rows = [w for w in workloads if w in mine]
        bars = [(w, *speed_change(mine[w])) for w in rows]
        panels.append((f"{tn} against {mine[rows[0]].baseline}", palette[tn], bars))
    return Chart(
        "overhead",
        "overhead",
        "What encryption costs, per target",
        "Change in speed of each target against the same stack without its cipher (or plain), per "
        "workload; whiskers: the 95 % bootstrap interval of the ratio of medians, filled where it "
        "excludes no change. For latency and time, slower means a higher figure.",
        _change_figure(panels, "change in speed against the baseline, % (negative: slower)"),
    )


def comparison_chart(rows: list[Any], palette: dict[str, str], a: int, b: int) -> Chart:
    """Run B's change in speed against run A, per target and workload (`compare --html`); `rows`
    are run_comparison.Row, filled where the difference is significant."""
    panels = []
    for tn in dict.fromkeys(r.target for r in rows):
        bars: list[Bar] = []
        for r in rows:
            if r.target != tn:
                continue
            interval = None if r.ratio_low is None else ((r.ratio_low - 1) * 100, (r.ratio_high - 1) * 100)
            bars.append((r.workload, (r.ratio - 1) * 100, interval, bool(r.significant)))
        panels.append((tn, palette.get(tn, GREYS[0]), bars))
    with matplotlib.rc_context(STYLE):
        figure = _change_figure(panels, "change in speed, B against A, % (negative: B is slower)")
    return Chart(
        "comparison",
        "comparison",
        "B against A",
        f"Change in speed of B (run {b}) against A (run {a}), per target and workload; whiskers: the 95 % "
        "bootstrap interval of the ratio of medians; filled where the difference is significant "
        "(Mann-Whitney U at 5 %, or disjoint intervals where too few trials allow the test).",
        figure,
    )


def latency_chart(doc: Document) -> Chart | None:
    """p50, p99 and p99.9 completion latency per target, one panel per workload, log scale."""
    results = results_by_key(doc)
    palette = colours(doc)
    workloads = [w for w in doc.plan.workloads if any((w, t.name, "lat_p50") in results for t in doc.targets)]
    if not workloads:
        return None
    names = [t.name for t in doc.targets]
    cols = 2 if len(workloads) > 1 else 1
    rows = math.ceil(len(workloads) / cols)
    fig = Figure(figsize=(WIDTH, 0.6 + rows * (0.5 + 0.2 * len(names))), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    marks = (("lat_p50", "o", "p50"), ("lat_p99", "^", "p99"), ("lat_p99_9", "s", "p99.9"))
    for ax, w in zip(axes, workloads, strict=False):
        shown = [tn for tn in names if (w, tn, "lat_p50") in results]
        for y, tn in enumerate(shown):
            present = [(results[(w, tn, m)].median * 1e3, mk) for m, mk, _ in marks if (w, tn, m) in results]
            ax.plot([v for v, _ in present], [y] * len(present), color=palette[tn], linewidth=1)
            for v, mk in present:
                ax.plot([v], [y], marker=mk, color=palette[tn], markersize=5, linestyle="none")
        ax.set_xscale("log")
        lo, hi = ax.get_xlim()
        # 1-2-5 ticks within a few decades; beyond that they would overlap
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0) if hi / lo < 300 else (1.0,)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_yticks(range(len(shown)), shown)
        ax.invert_yaxis()
        ax.set_title(w, loc="left", fontsize=9)
        ax.set_xlabel("ms (log scale)")
    for ax in axes[len(workloads) :]:
        ax.set_visible(False)
    fig.legend(
        handles=[
            Line2D([], [], marker=mk, color="#555555", linestyle="none", label=lab) for _, mk, lab in marks
        ],
        loc="outside lower center",
        ncols=3,
    )
    return Chart(
        "latency",
        "latency",
        "Completion latency percentiles",
        "Median over the trials of fio's p50, p99 and p99.9 completion latency, per workload and target.",
        fig,
    )


def cpu_chart(doc: Document, timelines: list[TrialTimeline]) -> Chart | None:
    """Busy cores over the run, system-wide and per helper process, with which target ran when."""
    timelines = [t for t in timelines if t.timeline.ends]
    if not timelines:
        return None
    palette = colours(doc)
    media = {t.name: t.medium for t in doc.targets}
    # Trials back to back: between them the run drops caches and remakes stateful targets,
    # which can take longer than the trials themselves and would leave the chart mostly empty.
    start = 0.0
    fig = Figure(figsize=(WIDTH, 3.6), layout="constrained")
    ax, strip = fig.subplots(2, 1, sharex=True, height_ratios=[6, 1])
    helpers = sorted({h for t in timelines for h in t.timeline.helpers})
    series: dict[str, tuple[list[float], list[float]]] = {"system-wide": ([], [])}
    for h in helpers:
        series[h] = ([], [])
    for t in sorted(timelines, key=lambda t: t.timeline.started_at):
        tl = t.timeline
        xs = [start + e for e in tl.ends]
        strip.broken_barh(
            [(start, tl.ends[-1])],
            (0, 1),
            facecolor=palette.get(t.target, "#999999"),
            hatch=_hatch(t.target, media),
            edgecolor="white",
            linewidth=0,
        )
        for name, (sx, sy) in series.items():
            # a helper is drawn only in the trials of targets that have it
            values = tl.system if name == "system-wide" else tl.helpers.get(name, [math.nan] * len(xs))
            # Steps: sample i holds over (end i-1, end i], the first from the trial's start, so a
            # trial shorter than one interval is still a segment; each trial its own line.
            sx.extend([start, *xs, math.nan])
            sy.extend([values[0], *values, math.nan])
        start += tl.ends[-1]
    cores = doc.environment.cpu_count
    for i, (name, (sx, sy)) in enumerate(series.items()):
        # a helper in its target's colour (gocryptfs's daemon is named gocryptfs)
        colour = "black" if not i else palette.get(name, COLOURS[-i % len(COLOURS)])
        ax.plot(
            sx,
            sy,
            drawstyle="steps-pre",
            linewidth=0.9 if i else 1.1,
            color=colour,
            label=f"helper {name}" if i else name,
        )
    if cores:
        ax.axhline(cores, color="#999999", linestyle="--", linewidth=0.8, label=f"all {cores} cores")
    ax.set_ylabel("busy cores")
    ax.set_ylim(bottom=0)
    ax.legend(ncols=min(len(series) + 1, 4), loc="upper right", fontsize=8)
    strip.set_yticks([])
    strip.grid(False)
    strip.set_xlabel("seconds of measured work, trials back to back in the order they ran")
    shown = list(dict.fromkeys(t.target for t in timelines))
    strip.legend(
        handles=[
            Patch(facecolor=palette.get(tn, "#999999"), hatch=_hatch(tn, media), edgecolor="white", label=tn)
            for tn in shown
        ],
        loc="upper center",
        bbox_to_anchor=(0.5, -1.4),
        ncols=min(len(shown), 5),
        fontsize=8,
    )
    return Chart(
        "cpu",
        "cpu",
        "CPU over time",
        "Busy cores, sampled every 0.25 s during each trial's work: the whole machine (kernel workers "
        "included), and each helper process (a FUSE daemon) by name. The strip below says which target "
        "each trial ran on. Trials are drawn back to back, without the time between them (cache drops, "
        "targets made anew), where the run's own work, not a trial's, used the CPU.",
        fig,
    )


def _hatch(target: str, media: dict[str, Medium]) -> str | None:
    """RAM twins share their device twin's colour; stripes tell them apart."""
    return "////" if media.get(target) == Medium.RAM else None


def file_size_chart(doc: Document) -> Chart | None:
    """Throughput against file size where a write series ran (study 003's chart)."""
    palette = colours(doc)
    points: dict[tuple[str, str], list[tuple[int, Result]]] = {}
    for r in doc.results:
        m = _SERIES.match(r.metric)
        if m:
            size = int(m.group(2)) << (20 if m.group(3) == "m" else 10)
            points.setdefault((m.group(1), r.target), []).append((size, r))
    if not points:
        return None
    directions = [d for d in ("write", "read") if any(k[0] == d for k in points)]
    fig = Figure(figsize=(WIDTH, 3.2), layout="constrained")
    axes = fig.subplots(1, len(directions), sharey=True, squeeze=False)[0]
    top = max(r.ci_high or r.median for ps in points.values() for _, r in ps)
    div, axis_unit = _scale("bytes/s", [top])
    for ax, d in zip(axes, directions, strict=True):
        for t in doc.targets:
            ps = sorted(points.get((d, t.name), []), key=lambda p: p[0])
            if not ps:
                continue
            xs = [s for s, _ in ps]
            ys = [r.median / div for _, r in ps]
            colour = palette[t.name]
            ax.plot(xs, ys, marker="o", markersize=3, color=colour, label=t.name)
            _whiskers(ax, xs, [_interval_in(r, div) for _, r in ps], colour=colour)
        ax.set_xscale("log", base=2)
        sizes = sorted({s for (dd, _), ps in points.items() if dd == d for s, _ in ps})
        ax.set_xticks(sizes, [format_bytes(s).replace(".0 ", " ") for s in sizes])
        ax.minorticks_off()
        ax.set_title(f"{d}s", loc="left", fontsize=9)
        ax.set_xlabel("file size")
    axes[0].set_ylabel(f"throughput, {axis_unit}")
    axes[-1].legend(fontsize=8)
    return Chart(
        "file-size",
        "file-size",
        "Throughput against file size",
        "The write series: files of each size written (each made durable) and read back with caches "
        "dropped; median over the trials per size class, whiskers at the 95 % interval.",
        fig,
    )


def space_chart(doc: Document) -> Chart | None:
    """What each target's backing takes for the protection probe's two data sets, against
    the same data on its baseline (protection/space.py), as horizontal bars."""
    rows: list[tuple[str, str, float]] = []  # (target, data set, ratio)
    for t in doc.targets:
        space = (t.protection or {}).get("space", {})
        for kind, label in (("tree", "small files"), ("large", "large file")):
            if "ratio" in space.get(kind, {}):
                rows.append((f"{t.name} against {t.baseline}", label, float(space[kind]["ratio"])))
    if not rows:
        return None
    with matplotlib.rc_context(STYLE):
        targets = list(dict.fromkeys(r[0] for r in rows))
        fig = Figure(figsize=(WIDTH, 0.5 + 0.45 * len(targets)), layout="constrained")
        ax = fig.subplots()
        for i, (label, colour) in enumerate((("small files", GREYS[0]), ("large file", GREYS[2]))):
            ys = [targets.index(r[0]) + (i - 0.5) * 0.38 for r in rows if r[1] == label]
            xs = [r[2] for r in rows if r[1] == label]
            ax.barh(ys, xs, height=0.36, color=colour, label=label)
        ax.set_yticks(range(len(targets)), targets)
        ax.invert_yaxis()
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_xlabel("space in the backing against the baseline, x (1: the same)")
        ax.legend(fontsize=8, loc="lower right")
    return Chart(
        "space",
        "space",
        "What each target costs in space",
        "Bytes allocated in each target's backing for a tree of small files (the source-tree workload's "
        "spread) and for one large file, each divided by the same data's bytes on its baseline: `du` "
        "of a ciphertext directory, the filesystem's own count inside an image.",
        fig,
    )


def build(doc: Document, timelines: list[TrialTimeline]) -> list[Chart]:
    """Every chart the run's data allows, in the report's order."""
    with matplotlib.rc_context(STYLE):  # spines, grid and fonts are set when artists are made
        charts = bar_charts(doc)
        for chart in (
            ranking_chart(doc),
            overhead_chart(doc),
            latency_chart(doc),
            cpu_chart(doc, timelines),
            file_size_chart(doc),
        ):
            if chart is not None:
                charts.append(chart)
    return charts
