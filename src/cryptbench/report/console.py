"""The terminal report's --details figures (screens.py puts them together with the costs
and a fleet's hosts; answer_console.py prints the one-screen answer): the header and
ranking, a row per workload and target, the variants, each phase, what each target
hides, the study's summary, the repetition, each target's I/O and every warning
(figures); then the conclusions and failed trials (closing)."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from cryptbench.analysis import study_summary
from cryptbench.analysis.document import results_by_key
from cryptbench.analysis.speed_change import (
    NO_INTERVAL,
    SIGNIFICANT,
    change_cell,
    change_words,
    speed_change,
    symmetric,
)
from cryptbench.engines.metric_catalog import info
from cryptbench.model.metrics import PRIMARY
from cryptbench.model.result import Comparison, ComparisonKind, Document, Result, TargetInfo
from cryptbench.model.stored_run import RunPlan
from cryptbench.model.study import StudySummary
from cryptbench.model.units import format_bytes, format_mb_per_s, format_value
from cryptbench.model.warning_kinds import RunWarning
from cryptbench.report import protection_rows
from cryptbench.report.narrow import fold, table_width
from cryptbench.report.sentences import header, scratch_encrypted, stack_line, stopping_lines, the_answer


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _interval(lo: float | None, hi: float | None, unit: str, median: float) -> str:
    """The interval in the median's unit and scale (MB/s for a throughput)."""
    if lo is None or hi is None:
        return "[no interval]"
    if unit == "bytes/s":
        return f"[{lo / 1e6:.0f}, {hi / 1e6:.0f}]"
    if unit == "s":
        scale = 1e6 if median < 1e-3 else 1e3 if median < 1 else 1.0
        return f"[{_number(lo * scale)}, {_number(hi * scale)}]"
    if "/" in unit and unit != "s/GB":
        return f"[{_number(lo)}, {_number(hi)}]"
    return f"[{format_value(lo, unit)}, {format_value(hi, unit)}]"


def _relative(r: Result, tight: bool = False) -> str:
    """The interval's reach from the median, as a share of it: the compact form ('±4%' where
    both halves print alike, else '[-12%, +30%]'; `tight`: '[-12,+30]', as the change
    columns write theirs, in % as the header says)."""
    if r.ci_low is None or r.ci_high is None or not r.median:
        return NO_INTERVAL
    lo, hi = (r.ci_low - r.median) / abs(r.median) * 100, (r.ci_high - r.median) / abs(r.median) * 100
    if symmetric(0.0, lo, hi):
        return f"±{hi:.0f}%"
    return f"[{lo:+.0f},{hi:+.0f}]" if tight else f"[{lo:+.0f}%, {hi:+.0f}%]"


def _change(c: Comparison | None, compact: bool) -> Text:
    """The change against a baseline, in percent, with its interval (or its larger half-width)."""
    if c is None:
        return Text("")
    pct, interval, differs = speed_change(c)
    style = "yellow" if interval is None else ("red" if pct < 0 else "green") if differs else "dim"
    return Text(change_cell(pct, interval) if compact else change_words(pct, interval), style=style)


def _commands_only(doc: Document) -> bool:
    """Every workload is the user's own commands, which do their own I/O."""
    apps = doc.plan.apps
    return bool(doc.plan.workloads) and all(
        apps.get(w, {}).get("app") == "command" for w in doc.plan.workloads
    )


def _io_line(t: TargetInfo, commands_only: bool = False) -> str:
    if commands_only:
        return "your commands' own I/O (cryptbench chose no I/O mode)"
    if t.io_mode == "direct":
        return "direct I/O"
    if t.direct_io == "honoured":
        return "buffered I/O (O_DIRECT works here; buffered to match the other targets)"
    return f"buffered I/O ({t.direct_io_reason})"


def _metric_for(doc: Document, workload: str, metric: str | None) -> str:
    return metric if metric is not None else doc.plan.primary(workload)


def _rows(
    doc: Document, metric: str | None, compact: bool, tight: bool = False
) -> list[tuple[TargetInfo, list[list[Any]]]]:
    """Per target, a row per workload: name, median, interval (compact: its reach from the
    median, `_relative`), change against the baseline and (for a target whose baseline is
    not plain) against plain."""
    results = results_by_key(doc)
    comps = {(c.workload, c.target, c.kind): c for c in doc.comparisons}
    workloads = [w for w in doc.plan.workloads if any(r.workload == w for r in doc.results)]
    left_out = doc.plan.not_run
    out = []
    for t in doc.targets:
        rows = []
        for w in workloads:
            m = _metric_for(doc, w, metric)
            r = results.get((w, t.name, m))
            if r is None:
                planned = (w, t.name) in left_out
                shown = Text("not run", style="dim") if planned else Text("failed", style="red")
                rows.append([f"  {w}", shown, "", Text(""), Text("")])
                continue
            primary = m == doc.plan.primary(w)
            base = comps.get((w, t.name, ComparisonKind.BASELINE)) if primary else None
            plain = comps.get((w, t.name, ComparisonKind.PLAIN)) if primary else None
            rows.append(
                [
                    f"  {w}",
                    format_value(r.median, r.unit),
                    _relative(r, tight) if compact else _interval(r.ci_low, r.ci_high, r.unit, r.median),
                    _change(base, compact),
                    _change(plain, compact),
                ]
            )
        out.append((t, rows))
    return out


def _label(t: TargetInfo) -> str:
    return t.name + (f" (vs {t.baseline})" if t.baseline else "")


def _long_table(doc: Document, metric: str | None, width: int) -> tuple[Table, bool]:
    """A row per workload under a row per target. Where the intervals would not fit `width`,
    each figure carries its interval's reach from the median as a share of it instead,
    written tighter, then over two lines, as it must; a workload's name is never folded,
    and a target's row breaks only after a '-' or a space (narrow.fold)."""
    compact = False
    rows = _rows(doc, metric, compact=False)
    cells = [r for _t, rs in rows for r in rs]
    # a target's row can break after each '-' and space: only its longest piece counts
    pieces = [piece for t, _ in rows for piece in fold(_label(t), 1).splitlines()]

    def columns() -> list[list[str]]:
        interval = "±95%" if compact else "95% interval"
        heads = ("target / workload", "median", interval, "vs baseline", "vs plain")
        return [
            [heads[0], *(str(c[0]) for c in cells), *pieces],
            *([heads[i], *(str(c[i]) for c in cells)] for i in range(1, 5)),
        ]

    if table_width(columns()) > width:
        compact = True
        rows = _rows(doc, metric, compact=True)
        cells = [r for _t, rs in rows for r in rs]
        if table_width(columns()) > width:
            rows = _rows(doc, metric, compact=True, tight=True)
            cells = [r for _t, rs in rows for r in rs]
        if table_width(columns()) > width:
            for c in cells:
                c[2] = str(c[2]).replace(",", ",\n")
    laid = columns()
    names = max(map(len, laid[0]))
    names = max(names, width - (table_width(laid) - names))  # the room the figures leave
    with_plain = any(str(c[4]) for _t, rs in rows for c in rs)
    table = Table(box=box.SIMPLE_HEAD, title_justify="left")
    table.add_column("target / workload", no_wrap=True)
    table.add_column("median", justify="right", no_wrap=True)
    table.add_column("±95%" if compact else "95% interval", justify="right", no_wrap=True)
    table.add_column("vs baseline", justify="right", no_wrap=True)
    if with_plain:
        table.add_column("vs plain", justify="right", no_wrap=True)
    for t, rs in rows:
        name = Text(fold(_label(t), names))
        vs = name.plain.find("(vs")
        name.stylize("bold", 0, vs if vs >= 0 else len(name))
        if vs >= 0:
            name.stylize("dim", vs)
        table.add_row(name)
        for i, r in enumerate(rs):
            table.add_row(*(r if with_plain else r[:4]), end_section=i == len(rs) - 1)
    return table, compact


def _repeats(plan: RunPlan) -> str:
    rule = plan.stopping
    if rule is None or rule["precision"] is None:
        return f"{plan.repeats} repeats"
    return f"{rule['min_repeats']} to {rule['max_repeats']} repeats to ±{rule['precision'] * 100:g}%"


def figures(doc: Document, console: Console, metric: str | None = None) -> None:
    """--details up to the costs (screens.py puts the rest after it): the answer's header
    and ranking, then every figure, the repetition, each target's I/O and every warning."""
    console.print(Text(header(doc), style="bold"))
    stack = stack_line(doc)
    if stack:
        console.print(Text(stack, style="dim"))
    encrypted = scratch_encrypted(doc)
    for line in the_answer(doc):
        console.print(Text(line, style="bold yellow") if line == encrypted else line)
    console.print()
    _full(doc, console, metric)


def closing(doc: Document, console: Console) -> None:
    """--details after the costs: the run's conclusions and its failed trials."""
    if doc.conclusions:
        console.print()
        for line in doc.conclusions:
            console.print(f"• {line}")
    if doc.trials.failed:
        console.print(f"[red]{doc.trials.failed} trial(s) failed[/red]; see the warnings above.")


def _full(doc: Document, console: Console, metric: str | None) -> None:
    plan = doc.plan
    if _commands_only(doc):
        console.print(f"[bold]Every figure[/bold]: your commands, {_repeats(plan)}")
    else:
        modes = sorted({t.io_mode for t in doc.targets})
        console.print(
            f"[bold]Every figure[/bold]: {format_bytes(plan.size or 0)} per target, {_repeats(plan)}, "
            f"{'/'.join(modes)} I/O, {plan.data} data"
        )
    table, compact = _long_table(doc, metric, console.width)
    console.print(table)
    _legend(doc, console, metric, compact)
    for table in variant_tables(doc, console.width):
        console.print(table)
    for table in phase_tables(doc, console.width):
        console.print(table)
    for table in protection_tables(doc, console.width):
        console.print(table)
    _study_summary(doc.study_summary, doc.results, console)
    _footer(doc, console)


# Figures a phase table shows under its phases, where the run has them.
PHASE_TOTALS = (
    ("seconds", "whole task"),
    ("command_cpu_seconds", "CPU of its processes"),
    ("helper_cpu_seconds", "CPU of the target's helpers"),
    ("device_bytes_read", "device read"),
    ("device_bytes_written", "device wrote"),
)


def phase_tables(doc: Document, width: int) -> list[Table]:
    """Per application or command workload with several phases: a row per phase and a
    column per target, each cell the phase's median time (and, where `width` has room,
    for an encrypted target the change in speed against its baseline's median); then
    the whole task, the CPU and the device's bytes."""
    # a label column, and a column per target of its name or a "123.45 ms (+100%)" cell
    wide = 30 + sum(max(len(t.name), 18) + 3 for t in doc.targets) <= width
    results = results_by_key(doc)
    tables = []
    for w in doc.plan.workloads:
        recorded = dict.fromkeys(
            r.metric.removesuffix(".seconds")
            for r in doc.results
            if r.workload == w and r.metric.endswith(".seconds")
        )
        # in the order they ran, where the plan says it (a command's phases)
        planned = [p["name"] for p in (doc.plan.apps.get(w) or {}).get("phases", [])]
        phases = [p for p in planned if p in recorded] + [p for p in recorded if p not in planned]
        if len(phases) < 2:
            continue
        table = Table(
            title=f"{w}: each phase, median over the trials",
            title_justify="left",
            caption=(
                "(n%): the change in speed of the target's median against its baseline's (negative: "
                "slower); intervals for the whole task above"
                if wide
                else "intervals for the whole task above"
            ),
            caption_justify="left",
            box=box.SIMPLE_HEAD,
        )
        rows = [(f"{p}.seconds", p) for p in phases]
        rows += [
            (m, label)
            for m, label in PHASE_TOTALS
            if any(r.metric == m and r.workload == w for r in doc.results)
        ]
        body = []
        for metric, label in rows:
            cells = []
            for t in doc.targets:
                r = results.get((w, t.name, metric))
                if r is None:
                    cells.append("-")
                    continue
                cell = format_value(r.median, r.unit)
                base = results.get((w, t.baseline, metric)) if t.baseline else None
                if wide and base is not None and r.median > 0 and metric.endswith("seconds"):
                    # a change in speed, as every figure: the baseline's time over the target's
                    cell += f" ({(base.median / r.median - 1) * 100:+.0f}%)"
                cells.append(cell)
            body.append((label, cells))
        # a target's name heads its column, broken after a '-' where the column is narrower
        # (narrow.fold), never mid-word; where the terminal is narrow, the phases' labels
        # wrap at their spaces instead
        table.add_column("phase")
        for i, t in enumerate(doc.targets):
            figures = max((len(cells[i]) for _label, cells in body), default=0)
            head = fold(t.name, max(figures, 8))
            widest = max(figures, *map(len, head.split()))
            table.add_column(head, justify="right", no_wrap=True, min_width=widest)
        for label, cells in body:
            table.add_row(label, *cells)
        tables.append(table)
    return tables


def variant_tables(doc: Document, width: int = 200) -> list[Table]:
    """Per target that others vary in one option (luks-aes256): a row per workload and a
    column per option, each cell the change in speed the option makes with its interval;
    split into several tables of option columns where one would not fit `width`."""
    by_parent: dict[str, dict[tuple[str, str], Comparison]] = {}
    for c in doc.comparisons:
        if c.kind == ComparisonKind.VARIANT:
            by_parent.setdefault(c.baseline, {})[(c.workload, c.target)] = c
    tables = []
    for parent, comps in by_parent.items():
        variants = list(dict.fromkeys(t for _w, t in comps))
        workloads = list(dict.fromkeys(w for w, _t in comps))
        # the option's part of the name: luks-aes256-noqueue shows as -noqueue
        short = {v: v.replace(parent, "", 1) if parent in v else v for v in variants}
        cells = {v: [_change(comps.get((w, v)), compact=True) for w in workloads] for v in variants}
        groups: list[list[str]] = [[]]
        for v in variants:
            column = [short[v], *(c.plain for c in cells[v])]
            if groups[-1] and table_width([workloads, *_columns(groups[-1], short, cells), column]) > width:
                groups.append([])
            groups[-1].append(v)
        for i, group in enumerate(groups):
            title = f"What each option changes against {parent}" + (
                f" ({i + 1} of {len(groups)})" if len(groups) > 1 else ""
            )
            table = Table(
                title=title,
                title_justify="left",
                caption=f"change in speed, %, with its 95% interval; {SIGNIFICANT}: it excludes no change"
                if i == len(groups) - 1
                else None,
                caption_justify="left",
                box=box.SIMPLE_HEAD,
                min_width=min(len(title), width),
            )
            table.add_column("workload", no_wrap=True)
            for v in group:
                table.add_column(short[v], justify="right", no_wrap=True)
            for j, w in enumerate(workloads):
                table.add_row(w, *(cells[v][j] for v in group))
            tables.append(table)
    return tables


def _columns(group: list[str], short: dict[str, str], cells: dict[str, list[Text]]) -> list[list[str]]:
    return [[short[v], *(c.plain for c in cells[v])] for v in group]


def _study_summary(summary: StudySummary | None, of_run: list[Result], console: Console) -> None:
    """The study's own figures beside ours, a row per target under a row per workload, and
    what the page cache made of its commands."""
    if summary is None or not summary.rows:
        return
    table = Table(
        title=f"The study's own summary: {summary.description}", title_justify="left", box=box.SIMPLE_HEAD
    )
    table.add_column("workload / target", no_wrap=True)
    for name in ("used", "mean s", "sd s", "MB/s"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("ours: median MB/s\n[95% interval]", justify="right", no_wrap=True)
    results = {(r.workload, r.target): r for r in of_run if r.metric == PRIMARY}
    workload = None
    for row in summary.rows:
        if row.workload != workload:
            workload = row.workload
            table.add_row(Text(workload, style="bold"))
        r = results.get((row.workload, row.target))
        ours = (
            "-"
            if r is None
            else format_mb_per_s(r.median) + " " + _interval(r.ci_low, r.ci_high, r.unit, r.median)
        )
        table.add_row(
            f"  {row.target}",
            f"{row.used}/{row.n}",
            "-" if row.mean_seconds is None else f"{row.mean_seconds:.3f}",
            "-" if row.sd_seconds is None else f"{row.sd_seconds:.3f}",
            format_mb_per_s(row.throughput),
            ours,
        )
    console.print()
    console.print(table)
    console.print("[dim]used: the trials the study's rule kept, of those run.[/dim]")
    for p in summary.page_cache:
        console.print(f"• {study_summary.page_cache_line(p)}")


def _legend(doc: Document, console: Console, metric: str | None, compact: bool) -> None:
    shown = {_metric_for(doc, w, metric) for w in doc.plan.workloads}
    if shown == {PRIMARY}:
        what = "Median throughput; intervals in MB/s (10^6 bytes/s)"
    elif len(shown) == 1:
        m = info(next(iter(shown)))
        unit = "in MB/s (10^6 bytes/s)" if m.unit == "bytes/s" else "" if "/" in m.unit else f"in {m.unit}"
        if m.unit == "s":  # times are printed in s, ms or µs, each in its own
            unit = "in the median's unit"
        what = f"Median {m.label}; intervals {unit}".rstrip()
    else:
        what = "Each workload's median; intervals in its unit (MB/s for throughput, ms or µs for times)"
    if compact:  # the form chosen where intervals would not fit the terminal
        what = "Each workload's median; ±95%: its 95% interval's reach from it, in % of it"
    console.print(
        f"[dim]{what}, 95% bootstrap over the trials; vs baseline/plain: the change in speed against "
        "the target's baseline (named beside it) and against plain, with its 95% interval (for a time, "
        f"speed is its inverse; {SIGNIFICANT}: the interval excludes no change, which red or green "
        f"repeats; {NO_INTERVAL}: no interval, from one trial or trials that all read one figure).[/dim]"
    )
    console.print()


def _footer(doc: Document, console: Console) -> None:
    dw = doc.device_writes
    if dw:
        stack = doc.environment.stack
        # the disk at the bottom of the scratch space's stack, never a mapping over it
        under = f", the disk under {stack.line()}" if stack is not None and stack.disks else ""
        console.print(
            f"{dw.device} wrote {format_bytes(int(dw.bytes))} during the {dw.trials} trials "
            f"(its own counter{under}: what the layers added, and anything else the machine wrote "
            "meanwhile, included)"
        )
    for line in stopping_lines(doc.stopping):
        console.print(line)
    for t in doc.targets:
        proof = ""
        if t.encrypted:
            proof = ", encryption verified" if t.encryption_verified else ", ENCRYPTION NOT VERIFIED"
        console.print(f"[bold]{t.name}[/bold]: {_io_line(t, _commands_only(doc))}{proof}")
    if doc.warnings:
        console.print()
        _warnings(doc.warnings, console)


def _warnings(warnings: list[RunWarning], console: Console) -> None:
    """One paragraph per kind: run-wide ones as they are, per-result ones listed by place."""
    by_kind: dict[str, list[RunWarning]] = {}
    for w in warnings:
        by_kind.setdefault(w.kind, []).append(w)
    for kind, items in by_kind.items():
        if len(items) == 1 or not any(w.workload for w in items):
            for w in items:
                where = "/".join(x for x in (w.target, w.workload) if x)
                console.print(f"[yellow]warning[/yellow] {kind}{' ' + where if where else ''}: {w.message}")
            continue
        console.print(f"[yellow]warning[/yellow] {kind} ({len(items)}):")
        for w in items:
            # a warning about a whole workload has no target, one about a target no workload
            console.print(f"  {'/'.join(x for x in (w.target, w.workload) if x)}: {w.message}")


HIDES_TITLE = "What each target's backing hides from someone who reads it at rest, probed here"
PROTECTION_TITLE = HIDES_TITLE + ", and what it costs in space"


def protection_tables(doc: Document, width: int = 200) -> list[Table]:
    """A row per target, a column per property, each cell the proven verdict, and the space it
    costs: one table where it fits `width`; else the verdicts and the space in two, each
    cell a verdict's mark where words would not fit (the caption says what each means), and
    long names and headers folded, never cut."""
    rows = protection_rows.rows(doc)
    if not rows:
        return []
    props = protection_rows.columns()[: -len(protection_rows.SPACE_COLUMNS)]
    space = list(protection_rows.SPACE_COLUMNS)
    n = len(props)
    whole = [[r[0] for r in rows] + ["target"], [r[1] for r in rows] + ["read as"]]
    whole += [[r[2][i] for r in rows] + [name] for i, name in enumerate(props + space)]
    caption = protection_rows.CAPTION
    broken = protection_rows.broken(doc)
    if broken:
        caption = f"NOT EVIDENCE: {broken}"
    parts: list[tuple[str, list[str], list[list[str]], str | None]]
    if table_width(whole) <= width:
        parts = [(PROTECTION_TITLE, ["read as", *props, *space], [[r[1], *r[2]] for r in rows], caption)]
    else:
        verdicts = [[r[1], *r[2][:n]] for r in rows]
        words = table_width([whole[0], *whole[1 : 2 + n]]) <= width
        if not words:
            verdicts = [[sight, *(c[:1] for c in cells)] for sight, *cells in verdicts]
        parts = [
            (
                PROTECTION_TITLE.split(", probed here")[0] + ", probed here",
                ["read as", *props],
                verdicts,
                None,
            ),
            ("What it costs in space", space, [r[2][n:] for r in rows], caption),
        ]
    name_width = max(12, min(max(len(r[0]) for r in rows), width // 4))
    tables = []
    for title, headers, cells, cap in parts:
        t = Table(title=title, title_justify="left", caption=cap, caption_justify="left", box=box.SIMPLE_HEAD)
        t.add_column("target", no_wrap=True)
        for h in headers:
            wraps = h == "read as" or h in space
            t.add_column(fold(h, 10) if h in space else h, no_wrap=not wraps)
        for (target, _sight, _cells), row in zip(rows, cells, strict=True):
            t.add_row(fold(target, name_width), *row)
        tables.append(t)
    return tables
