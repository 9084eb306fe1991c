"""`cryptbench report --csv`: tidy data, one row per trial; `--summary-csv`: one row per
comparison (the figures every renderer prints, with their intervals).

Every row carries the run's identifying columns (run, host, kernel, CPU,
tool version, suite) and the trial's (workload, target, its backend, medium
and baseline, position in the interleaved order), then one column per metric
the run recorded, its unit in its name (`throughput_bytes_per_s`), so the file
reads as it is into pandas' `read_csv` or R's `read.csv`. A metric a trial did
not record (a failed trial, an app's phase on a fio workload) is empty: NA to
both. Numbers are written as Python's repr of the stored float: nothing is
rounded.
"""

from __future__ import annotations

import csv
from typing import TextIO

from cryptbench.analysis.speed_change import speed_change
from cryptbench.engines.metric_catalog import CATALOG
from cryptbench.model.result import Document
from cryptbench.model.vocabulary import Medium
from cryptbench.store.database import Store

RUN_COLUMNS = ("run_id", "run_started_at", "hostname", "kernel", "cpu_model", "tool_version", "suite")
TRIAL_COLUMNS = (
    "trial_seq",
    "block",
    "repeat",
    "workload",
    "target",
    "host",  # a fleet run's host label (hosts.toml); empty for a run on one machine
    "backend",
    "medium",
    "baseline",
    "encrypted",
    "io_mode",
    "trial_started_at",
    "status",
    "error",
)


Cell = str | int | float | bool | None
CsvRow = dict[str, Cell]  # column name to value, before _cell writes it


# Names that already say their unit keep it once: wall_seconds, io_bytes, cpu_seconds_per_gb.
SAID_BY_NAME = {"s": ("seconds",), "bytes": ("bytes",), "threads": ("threads",), "s/GB": ("per_gb",)}


def column(metric: str, unit: str) -> str:
    """A metric's column name with its unit: throughput_bytes_per_s, lat_p99_s, iops_per_s."""
    if metric.replace(".", "_").endswith(SAID_BY_NAME.get(unit, ())):
        return metric
    if unit.startswith("1/"):  # a count per unit of time: iops_per_s
        suffix = "per_" + unit[2:]
    else:
        suffix = unit.replace("%", "percent").replace(" ", "_").replace("/", "_per_")
    return f"{metric}_{suffix}" if suffix else metric


def rows(store: Store, run_id: int) -> tuple[list[str], list[CsvRow]]:
    """The header and one dict per trial, in trial order."""
    run = store.run_row(run_id)
    env = run.environment
    targets = {t.name: t for t in store.target_rows(run_id)}
    metrics = store.trial_metrics(run_id)
    units: dict[str, str] = {}
    for by_name in metrics.values():
        for name, (_value, unit) in by_name.items():
            units.setdefault(name, unit)
    # The catalog's order first (throughput, iops, latencies, CPU, …), then app phases as recorded.
    order = [m for m in CATALOG if m in units] + [m for m in units if m not in CATALOG]
    names = {m: column(m, units[m]) for m in order}
    ident = {
        "run_id": run_id,
        "run_started_at": run.started_at,
        "hostname": env.get("hostname"),
        "kernel": env.get("kernel"),
        "cpu_model": env.get("cpu_model"),
        "tool_version": run.tool_version,
        "suite": run.suite,
    }
    out = []
    for t in store.trial_rows(run_id):
        target = targets.get(t.target)
        row: CsvRow = {
            **ident,
            "trial_seq": t.seq,
            "block": t.block,
            "repeat": t.repeat,
            "workload": t.workload,
            "target": t.target,
            "host": None if target is None else target.host,
            "backend": None if target is None else target.backend,
            "medium": Medium.DEVICE if target is None else target.medium,
            "baseline": None if target is None else target.baseline,
            "encrypted": target is not None and target.encrypted,
            "io_mode": None if target is None else target.io_mode,
            "trial_started_at": t.started_at,
            "status": t.status,
            "error": t.error,
        }
        recorded = metrics.get(t.id, {})
        for m in order:
            row[names[m]] = recorded[m][0] if m in recorded else None
        out.append(row)
    return [*RUN_COLUMNS, *TRIAL_COLUMNS, *names.values()], out


def write(store: Store, run_id: int, out: TextIO) -> int:
    """Write the CSV; returns the number of trial rows."""
    header, data = rows(store, run_id)
    w = csv.DictWriter(out, fieldnames=header, lineterminator="\n")
    w.writeheader()
    for r in data:
        w.writerow({k: _cell(v) for k, v in r.items()})
    return len(data)


def _cell(v: Cell) -> str | int:
    if v is None:
        return ""  # NA to pandas and to R
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"  # R's logicals; pandas reads them as booleans too
    if isinstance(v, float):
        return repr(v)
    return v


SUMMARY_COLUMNS = (
    "schema_version",
    "run_id",
    "workload",
    "target",
    "baseline",
    "kind",  # baseline (the same stack without the cipher), plain, or variant (one option changed)
    "metric",
    "ratio",  # the target's speed over the baseline's (a time inverted)
    "ratio_low",
    "ratio_high",
    "change_percent",  # the tool's one convention: change in speed, negative when slower
    "change_low",
    "change_high",
    "significant",  # the 95 % interval excludes no change
    "method",  # paired (by round) or unpaired
    "target_trials",
    "baseline_trials",
    "stopped_by",  # what ended the comparison's repetition (adaptive runs; baseline kind)
)


def summary_rows(doc: Document) -> list[CsvRow]:
    """One row per comparison of the document: the figure every renderer prints, with its
    interval, its trials on each side and what stopped it."""
    n = {(r.workload, r.target): r.n for r in doc.results if r.metric == doc.plan.primary(r.workload)}
    out: list[CsvRow] = []
    for c in doc.comparisons:
        pct, interval, significant = speed_change(c)
        out.append(
            {
                "schema_version": doc.schema_version,
                "run_id": doc.run_id,
                "workload": c.workload,
                "target": c.target,
                "baseline": c.baseline,
                "kind": str(c.kind),
                "metric": c.metric,
                "ratio": c.ratio,
                "ratio_low": c.ci_low,
                "ratio_high": c.ci_high,
                "change_percent": pct,
                "change_low": None if interval is None else interval[0],
                "change_high": None if interval is None else interval[1],
                "significant": significant,
                "method": c.method or "unpaired",
                "target_trials": n.get((c.workload, c.target)),
                "baseline_trials": n.get((c.workload, c.baseline)),
                "stopped_by": c.stopped_by,
            }
        )
    return out


def write_summary(doc: Document, out: TextIO) -> int:
    """Write the summary CSV (SUMMARY_COLUMNS); returns the number of comparison rows."""
    w = csv.DictWriter(out, fieldnames=SUMMARY_COLUMNS, lineterminator="\n")
    w.writeheader()
    data = summary_rows(doc)
    for r in data:
        w.writerow({k: _cell(v) for k, v in r.items()})
    return len(data)
