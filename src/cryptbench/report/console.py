"""The terminal report: one table, the targets, warnings and conclusions."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from cryptbench.metrics import PRIMARY, info
from cryptbench.report import answer_console, cost_console, fleet_console, ranking, study_summary
from cryptbench.report.document import primary_of, results_by_key, speed_change
from cryptbench.units import format_bytes, format_duration, format_value


def _fmt(value: float, unit: str) -> str:
    if "/" in unit and unit not in ("bytes/s", "s/GB"):
        return _number(value)  # pictures/min, files/s, …: the unit is in the row's header
    return format_value(value, unit)


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _interval(lo: float | None, hi: float | None, unit: str, median: float) -> str:
    """The interval in the median's unit and scale, which the cell shows above it."""
    if lo is None or hi is None:
        return "[no interval]"
    if unit == "bytes/s":  # in MB/s, the unit of the table, whatever the median's size
        return f"[{lo / 1e6:.0f}, {hi / 1e6:.0f}]"
    if unit == "s":
        scale = 1e6 if median < 1e-3 else 1e3 if median < 1 else 1.0
        return f"[{_number(lo * scale)}, {_number(hi * scale)}]"
    if "/" in unit and unit != "s/GB":
        return f"[{_number(lo)}, {_number(hi)}]"
    return f"[{_fmt(lo, unit)}, {_fmt(hi, unit)}]"


def _median_cell(r: dict[str, Any], unit: str) -> Text:
    return Text(f"{_fmt(r['median'], unit)}\n{_interval(r['ci_low'], r['ci_high'], unit, r['median'])}")


def _change(c: dict[str, Any]) -> Text:
    """The change against the baseline, in percent, with its interval."""
    pct, interval, differs = speed_change(c)
    if interval is None:
        return Text(f"{pct:+.0f}%", style="yellow")
    lo, hi = interval
    style = ("red" if pct < 0 else "green") if differs else "dim"
    return Text(f"{pct:+.0f}% [{lo:+.0f}, {hi:+.0f}]", style=style)


def _io_line(t: dict[str, Any]) -> str:
    if t["io_mode"] == "direct":
        return "direct I/O"
    if t["direct_io"] == "honoured":
        return "buffered I/O (O_DIRECT works here; buffered to match the other targets)"
    return f"buffered I/O ({t['direct_io_reason']})"


# With more targets than this, the table turns: a row per target (study 003's
# table of image kind x encryption x state), a column per workload.
WIDE = 5


def _of_plain(c: dict[str, Any]) -> Text:
    """A target's throughput as a percentage of plain's, with its interval."""
    if c["ci_low"] is None:
        return Text(f"{c['ratio']:.0%} of plain", style="yellow")
    return Text(f"{c['ratio']:.0%} [{c['ci_low']:.0%}, {c['ci_high']:.0%}] of plain")


def _metric_for(doc: dict[str, Any], workload: str, metric: str | None) -> str:
    return metric if metric is not None else primary_of(doc["plan"], workload)


def _workload_header(doc: dict[str, Any], workload: str, metric: str | None) -> str:
    """The workload's name, and its metric when that is not throughput."""
    m = _metric_for(doc, workload, metric)
    if m == PRIMARY or metric is not None:
        return workload
    unit = info(m).unit
    return f"{workload}\n({'seconds' if unit == 's' else unit})"


def _by_target(doc: dict[str, Any], title: str, metric: str | None) -> Table:
    table = Table(title=title, title_justify="left", show_lines=True)
    table.add_column("target", style="bold")
    workloads = [w for w in doc["plan"]["workloads"] if any(r["workload"] == w for r in doc["results"])]
    for w in workloads:
        table.add_column(_workload_header(doc, w, metric), justify="right")
    results = results_by_key(doc)
    comps = {(c["workload"], c["target"], c["baseline"]): c for c in doc["comparisons"]}
    for t in doc["targets"]:
        cells: list[Text | str] = [f"{t['name']}\nvs {t['baseline']}" if t["baseline"] else t["name"]]
        for w in workloads:
            m = _metric_for(doc, w, metric)
            r = results.get((w, t["name"], m))
            if r is None:
                cells.append(Text("failed", style="red"))
                continue
            cell = _median_cell(r, r["unit"])
            if m == primary_of(doc["plan"], w):
                base = comps.get((w, t["name"], t["baseline"]))
                if base is not None and t["baseline"] != "plain":
                    cell.append("\n")
                    cell.append_text(_change(base))
                plain = comps.get((w, t["name"], "plain"))
                if plain is not None:
                    cell.append("\n")
                    cell.append_text(_of_plain(plain))
            cells.append(cell)
        table.add_row(*cells)
    return table


def _repeats(plan: dict[str, Any]) -> str:
    rule = plan.get("stopping")
    if rule is None or rule["precision"] is None:
        return f"{plan['repeats']} repeats"
    return f"{rule['min_repeats']} to {rule['max_repeats']} repeats to ±{rule['precision'] * 100:g}%"


def render(
    doc: dict[str, Any], console: Console, metric: str | None = None, *, details: bool = False
) -> None:
    """The answer on one screen (answer_console); with details, or for another metric than each
    workload's own, the answer's header and ranking and then everything: the full table, the
    repetition, each target's I/O, every warning, efficiency, queue depth, diagnosis."""
    if not details and metric is None:
        answer_console.render(doc, console)
        return
    console.print(Text(answer_console.header(doc), style="bold"))
    for line in ranking.sentences(doc):
        console.print(line)
    console.print()
    _full(doc, console, metric)


def _full(doc: dict[str, Any], console: Console, metric: str | None) -> None:
    plan = doc["plan"]
    modes = sorted({t["io_mode"] for t in doc["targets"]})
    fleet = plan.get("fleet")
    kind = f"fleet run of {len(fleet['hosts'])} hosts" if fleet else "run"
    title = (
        f"cryptbench {kind} {doc['run_id']} — {doc['suite']} suite, {format_bytes(plan['size'])} per target, "
        f"{_repeats(plan)}, {'/'.join(modes)} I/O, {plan['data']} data"
    )
    if len(doc["targets"]) > WIDE:
        console.print(_by_target(doc, title, metric))
        _study_summary(doc, console)
        _footer(doc, console, metric, by_target=True)
        fleet_console.render(doc, console)
        return
    table = Table(title=title, title_justify="left", show_lines=True)
    table.add_column("workload", style="bold")
    targets = [t["name"] for t in doc["targets"]]
    baselines = {t["name"]: t["baseline"] for t in doc["targets"]}
    for t in targets:
        header = f"{t}\nvs {baselines[t]}" if baselines[t] and metric is None else t
        table.add_column(header, justify="right")
    results = results_by_key(doc)
    # The table shows each target against its own baseline; the comparisons
    # with plain are in the conclusions and the JSON document.
    comps = {(c["workload"], c["target"]): c for c in doc["comparisons"] if c["kind"] == "baseline"}
    for w in doc["plan"]["workloads"]:
        m = _metric_for(doc, w, metric)
        if not any((w, t, m) in results for t in targets):
            continue
        cells: list[Text | str] = [_workload_header(doc, w, metric)]
        for t in targets:
            r = results.get((w, t, m))
            if r is None:
                cells.append(Text("failed", style="red"))
                continue
            cell = _median_cell(r, r["unit"])
            if m == primary_of(doc["plan"], w) and (w, t) in comps:
                cell.append("\n")
                cell.append_text(_change(comps[(w, t)]))
            cells.append(cell)
        table.add_row(*cells)
    console.print(table)
    _study_summary(doc, console)
    _footer(doc, console, metric, by_target=False)
    fleet_console.render(doc, console)


def _mbps(value: float | None) -> str:
    return "-" if value is None else f"{value / 1e6:,.1f}"


def _study_summary(doc: dict[str, Any], console: Console) -> None:
    """The study's own figures beside ours, and what the page cache made of its commands."""
    summary = doc.get("study_summary")
    if not summary or not summary["rows"]:
        return
    table = Table(title=f"The study's own summary: {summary['description']}", title_justify="left")
    for name in ("workload", "target", "trials used", "mean (s)", "sd (s)", "MB/s"):
        table.add_column(name, justify="left" if name in ("workload", "target") else "right")
    table.add_column("cryptbench: median MB/s\n[95% interval]", justify="right")
    results = {(r["workload"], r["target"]): r for r in doc["results"] if r["metric"] == PRIMARY}
    for row in summary["rows"]:
        r = results.get((row["workload"], row["target"]))
        ours = "-" if r is None else _median_cell(r, r["unit"])
        table.add_row(
            row["workload"],
            row["target"],
            f"{row['used']} of {row['n']}",
            "-" if row["mean_seconds"] is None else f"{row['mean_seconds']:.3f}",
            "-" if row["sd_seconds"] is None else f"{row['sd_seconds']:.3f}",
            _mbps(row["throughput"]),
            ours,
        )
    console.print()
    console.print(table)
    for p in summary["page_cache"]:
        console.print(f"• {study_summary.page_cache_line(p)}")


def _footer(doc: dict[str, Any], console: Console, metric: str | None, *, by_target: bool) -> None:
    shown = {_metric_for(doc, w, metric) for w in doc["plan"]["workloads"]}
    if shown == {PRIMARY}:
        what = "Median throughput in MB/s (10^6 bytes/s)"
    elif len(shown) == 1:
        m = info(next(iter(shown)))
        unit = "in MB/s (10^6 bytes/s)" if m.unit == "bytes/s" else "" if "/" in m.unit else f"in {m.unit}"
        what = f"Median {m.label} {unit}".rstrip()
    else:
        what = "Each workload's median, in the unit named under it (throughput in MB/s, 10^6 bytes/s),"
    where = "row's" if by_target else "column's header"
    plain = "; 'of plain': the target's speed as a share of plain's, with its interval" if by_target else ""
    console.print(
        f"[dim]{what} with its 95% bootstrap interval; "
        f"+/-% is the change in speed against the baseline named in the {where}, with its 95% interval "
        f"(for a time, speed is its inverse; red/green: the interval excludes no change){plain}.[/dim]"
    )
    console.print()
    dw = doc.get("device_writes")
    if dw:
        console.print(
            f"{dw['device']} wrote {format_bytes(int(dw['bytes']))} during the {dw['trials']} trials "
            "(its own counter: what the layers added, and anything else the machine wrote "
            "meanwhile, included)"
        )
    for line in stopping_lines(doc):
        console.print(line)
    for t in doc["targets"]:
        proof = ""
        if t["encrypted"]:
            proof = ", encryption verified" if t["encryption_verified"] else ", ENCRYPTION NOT VERIFIED"
        console.print(f"[bold]{t['name']}[/bold]: {_io_line(t)}{proof}")
    if doc["warnings"]:
        console.print()
        _warnings(doc["warnings"], console)
    cost_console.render(doc, console)
    if doc["conclusions"]:
        console.print()
        for line in doc["conclusions"]:
            console.print(f"• {line}")
    if doc["trials"]["failed"]:
        console.print(f"[red]{doc['trials']['failed']} trial(s) failed[/red]; see the warnings above.")


def _pm(x: float | None) -> str:
    return "no interval" if x is None else f"±{x * 100:.1f}%"


def _span(values: list[int]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo}" if lo == hi else f"{lo} to {hi}"


def stopping_lines(doc: dict[str, Any]) -> list[str]:
    """How the run decided how many trials to run, and what stopped each comparison short."""
    st = doc.get("stopping")
    if not st:
        return []
    rule, answers = st["rule"], st["answers"]
    spent = (
        # The device counter here spans the whole trial phase, so it also holds
        # the resets of stateful targets between trials, which the per-trial
        # counter printed above leaves out.
        f"the trial phase wrote {format_bytes(st['bytes_written'])} "
        + (
            "(the device counter, resets between trials included) "
            if st["bytes_source"] == "device"
            else "(as the workloads counted) "
        )
        + f"in {format_duration(st['seconds'])}"
    )
    budgets = []
    if rule["max_bytes"] is not None:
        budgets.append(f"{format_bytes(rule['max_bytes'])} written")
    if rule["max_time"] is not None:
        budgets.append(format_duration(rule["max_time"]))
    limit = f" (budget: {', '.join(budgets)})" if budgets else ""
    if rule["precision"] is None:
        lines = [f"Repetition: {rule['max_repeats']} trials per workload and target, fixed; {spent}{limit}."]
    else:
        precise = [a for a in answers if a["stopped_by"] == "precision"]
        lines = [
            f"Repetition: adaptive to ±{rule['precision'] * 100:g}% "
            f"({rule['min_repeats']} to {rule['max_repeats']} trials): {len(precise)} of {len(answers)} "
            f"comparisons got there"
            + (f" in {_span([a['rounds'] for a in precise])} trials" if precise else "")
            + f"; {spent}{limit}."
        ]
    short = [a for a in answers if a["stopped_by"] not in ("precision", "fixed-repeats")]
    for a in short:
        against = f" vs {a['baseline']}" if a["baseline"] else ""
        why = a["stopped_by"] or "the run ended"
        lines.append(
            f"  {a['target']}{against}, {a['workload']}: {_pm(a['halfwidth'])} after {a['rounds']} "
            f"trial(s), stopped by {why}"
        )
    return lines


def _warnings(warnings: list[dict[str, Any]], console: Console) -> None:
    """One paragraph per kind: run-wide ones as they are, per-result ones listed by place."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for w in warnings:
        by_kind.setdefault(w["kind"], []).append(w)
    for kind, items in by_kind.items():
        if len(items) == 1 or not any(w["workload"] for w in items):
            for w in items:
                where = "/".join(x for x in (w["target"], w["workload"]) if x)
                console.print(
                    f"[yellow]warning[/yellow] {kind}{' ' + where if where else ''}: {w['message']}"
                )
            continue
        console.print(f"[yellow]warning[/yellow] {kind} ({len(items)}):")
        for w in items:
            console.print(f"  {w['target']}/{w['workload']}: {w['message']}")
