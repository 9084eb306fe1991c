"""`cryptbench report --markdown`: the summary table as Markdown, for an issue or a post.

One row per (workload, target): the median of the workload's own metric with
its 95 % interval, and the change against the target's baseline with its
interval, from the same document `show --json` prints. Long rather than wide:
it stays readable with twenty targets, where a column per target would not.
"""

from __future__ import annotations

from cryptbench.model.result import Document
from cryptbench.report.fleet_rows import SPREAD_NOTE, cost_rows
from cryptbench.report.sentences import existing_answer, scratch_encrypted, stack_line, summary_rows


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("*", "\\*")


def render(doc: Document) -> str:
    found = doc.environment
    env = {
        k: "unknown" if v is None else v
        for k, v in (
            ("hostname", found.hostname),
            ("cpu_model", found.cpu_model),
            ("cpu_count", found.cpu_count),
            ("kernel", found.kernel),
        )
    }
    lines = [
        f"**cryptbench run {doc.run_id}** ({doc.suite} suite, {doc.started_at}) on "
        f"{env['hostname']}: {env['cpu_model']}, {env['cpu_count']} cores, "
        f"kernel {env['kernel']}; cryptbench {doc.tool_version}.",
        *([f"{line}." for line in [stack_line(doc)] if line]),
        *([f"**{said}**" for said in [scratch_encrypted(doc)] if said]),
        *existing_answer(doc),
        "",
        "| workload | target | median [95 % CI] | against | change [95 % CI] |",
        "|---|---|---:|---|---:|",
    ]
    for row in summary_rows(doc):
        rest = (
            f"{row['median']} | {_escape(row['against'])} | {_escape(row['change'])}"
            if row["median"]
            else "failed | |"
        )
        lines.append(f"| {_escape(row['workload'])} | {_escape(row['target'])} | {rest} |")
    lines += [
        "",
        "Change is speed against the baseline: negative is slower (for latency and time, a higher "
        "figure). Intervals: 95 % bootstrap over the trials, or Student's t over rounds where the "
        "trials pair; \\* where the interval excludes no change, ±? where there is none (a side ran "
        "one trial, or its trials all read one figure).",
    ]
    fleet = doc.fleet
    if fleet and fleet.costs:
        lines += [
            "",
            "Across the fleet's hosts (change in speed against each host's own baseline, "
            "negative when slower):",
            "",
            "| workload | target | hosts | median | p10 | p90 | worst host | stands out |",
            "|---|---|---:|---:|---:|---:|---|---|",
        ]
        for r in cost_rows(fleet):
            cells = ("workload", "target", "hosts", "median", "p10", "p90", "worst", "stand_out")
            lines.append("| " + " | ".join(_escape(r[k]) for k in cells) + " |")
        lines += ["", SPREAD_NOTE]
    return "\n".join(lines) + "\n"
