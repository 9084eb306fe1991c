"""The default terminal report: the answer on one screen.

In order: one header line; which way of encrypting costs least (the ranking);
a compact matrix, a row per target and a column per workload, each cell the
change against the target's baseline with the half-width of its interval (and
for a variant, a second row against the target it varies in one option);
one line per encrypted target naming what limits it; one line counting the
warnings and the precision reached, with the command that shows everything
(`show N --details`, which prints console.render's full report).
"""

from __future__ import annotations

from collections import Counter

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from cryptbench import stats
from cryptbench.analysis import ranking, study_summary
from cryptbench.analysis.document import results_by_key
from cryptbench.analysis.speed_change import speed_change
from cryptbench.json_types import JsonObject
from cryptbench.metrics import PRIMARY, primary_of
from cryptbench.report import protection_table
from cryptbench.result_model import Answer, Comparison, ComparisonKind, Document, Result
from cryptbench.suite import command_name
from cryptbench.units import format_bytes, format_count_range, format_duration, format_value

# Rich's SIMPLE box pads each column by one space on either side and puts one between columns.
PADDING = 3
MIN_CELL = 6  # the narrowest workload column: its header's pieces fold to this


def header(doc: Document) -> str:
    """Suite, targets, trials, time spent on them and the bytes the device wrote."""
    plan = doc.plan
    fleet = plan.get("fleet")
    kind = "fleet run" if fleet else "run"
    trials = f"{doc.trials.ok} trials"
    if doc.trials.failed:
        trials += f" (+{doc.trials.failed} failed)"
    if doc.stopping is not None:
        trials += f" in {format_duration(doc.stopping.seconds)}"
    text = f"{kind.capitalize()} {doc.run_id} ({doc.suite} suite"
    if fleet:
        text += f", {len(fleet['hosts'])} hosts"
    text += ")" if doc.status == "complete" else f", {doc.status})"
    text += f": {len(doc.targets)} targets, {trials}"
    dw = doc.device_writes
    if dw:
        text += f"; {dw.device} wrote {format_bytes(int(dw.bytes))}"
    return text


def _plain_cell(r: Result) -> str:
    if r.unit == "bytes/s":
        mb = r.median / 1e6
        return f"{mb:.0f}" if mb >= 10 else f"{mb:.1f}"
    return format_value(r.median, r.unit)


def _change_cell(c: Comparison) -> Text:
    pct, interval, differs = speed_change(c)
    if interval is None:
        return Text(f"{pct:+.0f}", style="yellow")
    half = max(pct - interval[0], interval[1] - pct)
    style = ("red" if pct < 0 else "green") if differs else ""
    return Text(f"{pct:+.0f}±{half:.0f}", style=style)


def _cells(doc: Document, workloads: list[str]) -> list[tuple[str, str, list[Text]]]:
    """(target, what its cells are against, a cell per workload)."""
    results = results_by_key(doc)
    comps = {(c.workload, c.target, c.baseline): c for c in doc.comparisons}
    rows = []
    for t in doc.targets:
        cells = []
        for w in workloads:
            r = results.get((w, t.name, primary_of(doc.plan, w)))
            if r is None:
                cells.append(Text("failed", style="red"))
            elif not t.baseline:
                cells.append(Text(_plain_cell(r), style="dim"))
            else:
                c = comps.get((w, t.name, t.baseline))
                cells.append(Text("-") if c is None else _change_cell(c))
        against = (
            f"vs {t.baseline}" if t.baseline else ("MB/s" if _all_throughput(doc, workloads) else "median")
        )
        rows.append((t.name, against, cells))
        # a variant's second row: what its one option changes against the target it varies
        variant = {
            c.workload: c for c in doc.comparisons if c.target == t.name and c.kind == ComparisonKind.VARIANT
        }
        if variant:
            parent = next(iter(variant.values())).baseline
            rows.append(("", f"vs {parent}", [_variant_cell(variant.get(w)) for w in workloads]))
    return rows


def _variant_cell(c: Comparison | None) -> Text:
    return Text("-") if c is None else _change_cell(c)


def _all_throughput(doc: Document, workloads: list[str]) -> bool:
    return all(primary_of(doc.plan, w) == PRIMARY for w in workloads)


def _fold(name: str, width: int) -> str:
    """A workload's name over lines no wider than its column, broken after a '-'."""
    lines: list[str] = []
    for piece in name.replace("-", "- ").split(" "):
        if lines and len(lines[-1]) + len(piece) <= width:
            lines[-1] += piece
        else:
            lines.append(piece)
    return "\n".join(lines)


def _tables(doc: Document, width: int) -> list[Table]:
    """The matrix, split into several tables of workload columns where one would not fit."""
    workloads = [w for w in doc.plan["workloads"] if any(r.workload == w for r in doc.results)]
    rows = _cells(doc, workloads)
    if not rows or not workloads:
        return []
    first = max(len(name) for name, _a, _c in rows) + PADDING
    second = max(len(a) for _n, a, _c in rows) + PADDING
    cell = [max(MIN_CELL, *(len(c[i].plain) for _n, _a, c in rows)) for i in range(len(workloads))]
    tables, start = [], 0
    while start < len(workloads):
        # no padding outside the table's edges: the last column saves its gap
        room, end = width + PADDING - first - second, start
        while end < len(workloads) and (end == start or room >= cell[end] + PADDING):
            room -= cell[end] + PADDING
            end += 1
        table = Table(box=box.SIMPLE, pad_edge=False, show_edge=False, padding=(0, 1))
        table.add_column("target", style="bold", no_wrap=True)
        table.add_column("", no_wrap=True, style="dim")
        for i in range(start, end):
            table.add_column(_fold(workloads[i], cell[i]), justify="right", no_wrap=True, min_width=cell[i])
        for name, against, cells in rows:
            table.add_row(name, against, *cells[start:end])
        tables.append(table)
        start = end
    return tables


LIMITS = {
    "inconsistent-bound": "bounds that contradict its speed",
    "device-bound": "the device",
    "kernel-cipher-bound": "the kernel's cipher",
    "userspace-cipher-bound": "its userspace cipher",
    "daemon-bound": "its FUSE daemon",
    "cpu-saturated": "the CPU, saturated",
    "layer-bound": "the layer itself",
    "unknown": "not identified (no diagnosis rule fits)",
}


def limit_lines(doc: Document) -> list[str]:
    """One line per diagnosed target: the limit found at most of its workloads."""
    lines = []
    for d in doc.diagnosis:
        findings = d.findings
        if not findings:
            continue
        counts = Counter(f.rule for f in findings)
        # the diagnosis orders its groups (known rules before unknown, then by count)
        rule = min(counts, key=lambda r: (r == "unknown", -counts[r]))
        effs = sorted(f.efficiency for f in findings if f.efficiency is not None)
        median = f" (median {effs[len(effs) // 2]:.0%} of its bound)" if effs else ""
        hint = ""
        if rule == "unknown" and any("cryptbench cipher" in f.sentence for f in findings):
            hint = "; `cryptbench cipher` measures its cipher"
        lines.append(
            f"{d.target}: {LIMITS.get(rule, rule)} at {counts[rule]} of {len(findings)}{median}{hint}"
        )
    return lines


def _halfwidths(values: list[float]) -> str:
    lo, hi = min(values) * 100, max(values) * 100
    return f"±{lo:.1f}%" if round(lo, 1) == round(hi, 1) else f"±{lo:.1f}% to ±{hi:.1f}%"


# What stopped a comparison, in the order the precision line tells them.
STOPPED = (
    "precision",
    "equivalent",
    "max-time",
    "max-bytes",
    "max-repeats",
    "dropped",
    "target-lost",
    "open",
)


def _stopped(reason: str, answers: list[Answer], rule: JsonObject, margin: float | None) -> str:
    """One group of the precision line: how many, what stopped them, and how far they got."""
    n = len(answers)
    if reason == "precision":
        return f"{n} answered to ±{rule['precision'] * 100:g}%"
    if reason == "equivalent":
        return f"{n} equal within ±{(margin or 0) * 100:g}%"
    why = {
        "max-time": f"stopped by the {format_duration(rule['max_time'] or 0)} budget",
        "max-bytes": f"stopped by the {format_bytes(rule['max_bytes'] or 0)} budget",
        "max-repeats": f"stopped at {rule['max_repeats']} trials",
        "dropped": "dropped to fit the time budget",
        "target-lost": "stopped: a target was lost",
        "open": "still open when the run ended",
    }.get(reason, f"stopped by {reason}")
    trials = [a.samples for a in answers]
    widths = [a.halfwidth for a in answers if a.halfwidth is not None]
    # at max-repeats the trials are what stopped them: said once
    tail = (
        ""
        if reason == "max-repeats"
        else f" after {format_count_range(trials)} trial{'s' if max(trials) != 1 else ''}"
    )
    return f"{n} {why}{tail}" + (f" ({_halfwidths(widths)})" if widths else " (no interval)")


def precision_line(doc: Document) -> str:
    """How many comparisons the run answered, and how: to the asked precision, equal to
    their baseline within the equivalence margin, or stopped short, by what and how far
    they got."""
    st = doc.stopping
    base = [c for c in doc.comparisons if c.kind == ComparisonKind.BASELINE]
    reached = [c.precision for c in base if c.precision is not None]
    margin = doc.equivalence
    if st and st.rule["precision"] is not None:
        groups: dict[str, list[Answer]] = {}
        for a in st.answers:
            groups.setdefault(a.stopped_by or "open", []).append(a)
        order = [*STOPPED, *sorted(set(groups) - set(STOPPED))]
        return ", ".join(_stopped(r, groups[r], st.rule, margin) for r in order if r in groups)
    equal = [c for c in base if stats.equivalent(stats.Ratio(c.ratio, c.ci_low, c.ci_high), margin)]
    also = f", {len(equal)} of them equal within ±{(margin or 0) * 100:g}%" if equal else ""
    if reached:
        return f"{len(base)} comparisons, fixed trials: {_halfwidths(reached)}{also}"
    return f"{len(base)} comparisons, without intervals"


SERIOUS = (
    "interrupted",
    "failed-trials",
    "encryption-unverified",
    "io-mode-mismatch",
    "cache-not-dropped",
    "protection-disagrees",
    "protection-unproven",
)


def warnings_lines(doc: Document) -> list[Text]:
    counts = Counter(w.kind for w in doc.warnings)
    line = Text()
    if not counts:
        line.append("No warnings")
    else:
        kinds = sorted(counts, key=lambda k: (k not in SERIOUS, -counts[k]))
        line.append("Warnings: ")
        for i, k in enumerate(kinds):
            line.append(", " if i else "")
            line.append(f"{counts[k]} {k}", style="red" if k in SERIOUS else "yellow")
    line.append(".")
    return [
        line,
        Text(f"Precision: {precision_line(doc)}."),
        Text(f"Every figure, warning and the diagnosis: cryptbench show {doc.run_id} --details"),
    ]


def _time(seconds: float, digits_of: float | None = None) -> str:
    """Seconds to three figures, in ms below one second; `digits_of` sets the scale
    (an interval's bounds are written like its median)."""
    scale = digits_of if digits_of is not None else seconds
    if scale < 1:
        ms, ref = seconds * 1000, scale * 1000
        return f"{ms:.0f} ms" if ref >= 100 else f"{ms:.1f} ms" if ref >= 10 else f"{ms:.2f} ms"
    return f"{seconds:.0f} s" if scale >= 100 else f"{seconds:.1f} s" if scale >= 10 else f"{seconds:.2f} s"


def _bare(text: str) -> str:
    return text.rsplit(" ", 1)[0]


def command_lines(doc: Document) -> list[str]:
    """Each of the user's commands as hyperfine would put it: how long it took on the
    baseline, with the median's interval, and how much longer (+) or shorter (-) on each
    target, with the interval of that change."""
    apps = doc.plan.get("apps", {})
    results = results_by_key(doc)
    lines = []
    for w in doc.plan["workloads"]:
        desc = apps.get(w) or {}
        if desc.get("app") != "command":
            continue
        phases = desc.get("phases", [])
        if len(phases) != 1:
            text = f"{w} ({' → '.join(p['name'] for p in phases)})"
        elif w == command_name(phases[0]["command"]):  # run --command's: named after it
            text = f"`{phases[0]['command']}`"
        else:
            text = f"{w} (`{phases[0]['command']}`)"
        parts = []
        for t in doc.targets:
            r = results.get((w, t.name, "seconds"))
            if t.baseline or r is None:
                continue
            interval = ""
            if r.ci_low is not None and r.ci_high is not None:
                interval = f" [{_bare(_time(r.ci_low, r.median))}, {_bare(_time(r.ci_high, r.median))}]"
            parts.append(f"took {_time(r.median)}{interval} on {t.name}")
        changes = []
        for c in doc.comparisons:
            if c.workload != w or c.kind != ComparisonKind.BASELINE or c.ratio <= 0:
                continue
            # the ratio is a speed (baseline's seconds over the target's): its inverse is the time's
            pct = (1 / c.ratio - 1) * 100
            change = f"on {c.target} {pct:+.0f}%"
            if c.ci_low and c.ci_high:
                change += f" [{(1 / c.ci_high - 1) * 100:+.0f}, {(1 / c.ci_low - 1) * 100:+.0f}]"
            against = next((t.baseline for t in doc.targets if t.name == c.target), None)
            if against and against not in {t.name for t in doc.targets if not t.baseline}:
                change += f" against {c.baseline}"
            changes.append(change)
        if parts:
            lines.append(f"{text} {', '.join(parts)}" + (f"; {', '.join(changes)}" if changes else "") + ".")
    return lines


def render(doc: Document, console: Console) -> None:
    console.print(Text(header(doc), style="bold"))
    for line in ranking.sentences(doc):
        console.print(line)
    for line in protection_table.cheapest_lines(doc):
        console.print(line)
    commands = command_lines(doc)
    if commands:
        console.print()
        for line in commands:
            console.print(Text(line))
        console.print(
            "[dim]Time of each command (+: longer), its median's and the change's 95% intervals.[/dim]"
        )
    console.print()
    for table in _tables(doc, console.width):
        console.print(table)
    console.print(
        "[dim]Change in speed against the baseline named beside each target, in %, ± the half-width "
        "of its 95% interval; coloured where that interval excludes no change.[/dim]"
    )
    if any(c.kind == ComparisonKind.VARIANT for c in doc.comparisons):
        console.print(
            "[dim]A row with no target name holds the target above it against the one it differs "
            "from in one option: what that option changes.[/dim]"
        )
    hides = protection_table.hides_line(doc)
    if hides:
        console.print()
        console.print(hides)
    limits = limit_lines(doc)
    if limits:
        console.print()
        console.print("[bold]What limits each[/bold] (at how many workloads; the diagnosis in the details):")
        for line in limits:
            console.print(line)
    summary = doc.study_summary
    if summary is not None and summary.page_cache:
        console.print()
        for p in summary.page_cache:
            console.print(f"• {study_summary.page_cache_line(p)}")
    fleet = doc.fleet
    if fleet:
        console.print()
        console.print(f"Fleet: {len(fleet.hosts)} hosts; each overhead's spread over them is in the details.")
        for h in fleet.hosts:
            if h.status != "ok":
                console.print(Text(f"{h.name} {h.status}: {h.reason or 'no reason recorded'}", style="red"))
    console.print()
    for text in warnings_lines(doc):
        console.print(text)
    if doc.trials.failed:
        console.print(f"[red]{doc.trials.failed} trial(s) failed[/red]; the details say where and why.")
