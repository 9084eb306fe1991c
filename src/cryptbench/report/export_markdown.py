"""`cryptbench report --markdown`: the summary table as Markdown, for an issue or a post.

One row per (workload, target): the median of the workload's own metric with
its 95 % interval, and the change against the target's baseline with its
interval, from the same document `show --json` prints. Long rather than wide:
it stays readable with twenty targets, where a column per target would not.
"""

from __future__ import annotations

from cryptbench.analysis.document import primary_of, results_by_key
from cryptbench.analysis.speed_change import speed_change
from cryptbench.metrics import info
from cryptbench.report.fleet_rows import SPREAD_NOTE, overhead_rows
from cryptbench.result_model import Comparison, Document, Result
from cryptbench.units import format_value


def _value(v: float, unit: str) -> str:
    return format_value(v, unit) if unit else f"{v:.3g}"


def median_text(r: Result) -> str:
    unit = r.unit
    text = _value(r.median, unit)
    if r.ci_low is None or r.ci_high is None:
        return f"{text} (no interval)"
    return f"{text} [{_value(r.ci_low, unit)}, {_value(r.ci_high, unit)}]"


def change_text(c: Comparison) -> str:
    """Speed against the baseline: +12 % is faster, -40 % slower (for any metric's direction)."""
    pct, interval, differs = speed_change(c)
    if interval is None:
        return f"{pct:+.0f} % (no interval)"
    lo, hi = interval
    return f"{pct:+.0f} % [{lo:+.0f}, {hi:+.0f}]" + ("" if differs else " (no clear difference)")


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def summary_rows(doc: Document) -> list[dict[str, str]]:
    """The summary table as text cells, per workload and target: the workload (with its metric
    when not throughput), the median and its interval ("" when the target failed), the
    baseline and the change against it ("" without a comparison). The HTML page shows it too."""
    plan = doc.plan
    results = results_by_key(doc)
    comps = {(c.workload, c.target, c.baseline): c for c in doc.comparisons}
    rows = []
    for w in plan["workloads"]:
        if not any(r.workload == w for r in doc.results):
            continue
        metric = primary_of(plan, w)
        label = w if metric == "throughput" else f"{w} ({info(metric).label})"
        for t in doc.targets:
            r = results.get((w, t.name, metric))
            c = comps.get((w, t.name, t.baseline)) if t.baseline and r else None
            rows.append(
                {
                    "workload": label,
                    "target": t.name,
                    "median": median_text(r) if r else "",
                    "against": t.baseline or "" if c else "",
                    "change": change_text(c) if c else "",
                }
            )
    return rows


def render(doc: Document) -> str:
    found = doc.environment
    env = {
        k: "unknown" if found.get(k) is None else found[k]
        for k in ("hostname", "cpu_model", "cpu_count", "kernel")
    }
    lines = [
        f"**cryptbench run {doc.run_id}** ({doc.suite} suite, {doc.started_at}) on "
        f"{env['hostname']}: {env['cpu_model']}, {env['cpu_count']} cores, "
        f"kernel {env['kernel']}; cryptbench {doc.tool_version}.",
        "",
        "| workload | target | median [95 % CI] | against | change [95 % CI] |",
        "|---|---|---:|---|---:|",
    ]
    for row in summary_rows(doc):
        rest = (
            f"{row['median']} | {_escape(row['against'])} | {row['change']}"
            if row["median"]
            else "failed | |"
        )
        lines.append(f"| {_escape(row['workload'])} | {_escape(row['target'])} | {rest} |")
    lines += [
        "",
        "Change is speed against the baseline: negative is slower (for latency and time, a higher "
        "figure). Intervals: 95 % bootstrap over the trials.",
    ]
    fleet = doc.fleet
    if fleet and fleet.overheads:
        lines += [
            "",
            "Across the fleet's hosts (overhead: the share of each host's own baseline's speed lost):",
            "",
            "| workload | target | hosts | median | p10 | p90 | worst host | stands out |",
            "|---|---|---:|---:|---:|---:|---|---|",
        ]
        for r in overhead_rows(fleet):
            cells = ("workload", "target", "hosts", "median", "p10", "p90", "worst", "stand_out")
            lines.append("| " + " | ".join(_escape(r[k]) for k in cells) + " |")
        lines += ["", SPREAD_NOTE]
    return "\n".join(lines) + "\n"
