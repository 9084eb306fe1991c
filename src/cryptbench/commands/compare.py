"""`cryptbench compare A B`: run B against run A, from the store, without re-running.

A and B may live in different databases (`--db-b`, e.g. a copy from another
machine). The comparison itself is analysis/run_comparison.py; this module reads
the two runs, checks the request, and writes the HTML page when asked.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from cryptbench.analysis import document, run_comparison
from cryptbench.commands.common_args import add_db, add_json
from cryptbench.model.errors import UsageError
from cryptbench.planning.request import request_from_args
from cryptbench.report.json_output import print_json
from cryptbench.report.output_files import page_file, write_new
from cryptbench.store.database import default_db_path


@dataclass(frozen=True)
class CompareRequest:
    """What `compare` was asked, as given (request.request_from_args builds it)."""

    a: str  # run id, or latest
    b: str  # run id, or latest
    db: Path | None = None  # A's database; None: the default one
    db_b: Path | None = None  # B's, when it is another; None: A's
    metric: str | None = None  # None: each workload's own
    force: bool = False  # compare runs that did not measure the same things
    html: str | None = None  # a new file for the page; None: no page


@dataclass(frozen=True)
class CompareOutcome:
    comparison: run_comparison.Comparison
    html: Path | None  # the page written, if one was asked for


def run(request: CompareRequest) -> CompareOutcome:
    r = request
    html_path = page_file(r.html, "--html") if r.html is not None else None
    path_a = r.db or default_db_path()
    path_b = r.db_b or path_a
    doc_a = document.read(path_a, r.a)
    doc_b = document.read(path_b, r.b)
    metric = r.metric
    if doc_a.run_id == doc_b.run_id and path_a.resolve() == path_b.resolve():
        raise UsageError(f"A and B are the same run ({doc_a.run_id}): give two runs to compare")
    if metric is not None:
        for doc in (doc_a, doc_b):
            document.require_metric(doc, metric)
    comp = run_comparison.compare(
        doc_a, doc_b, db_a=str(path_a), db_b=str(path_b), metric=metric, force=r.force
    )
    if html_path is not None:
        # Matplotlib loads here, not with the command line: most commands draw nothing
        from cryptbench.report import charts, export_compare_html

        chart = charts.comparison_chart(comp.rows, charts.colours(doc_a), comp.a.run_id, comp.b.run_id)
        write_new(html_path, export_compare_html.render(comp, doc_a, doc_b, chart))
    return CompareOutcome(comp, html_path)


HELP = "run B against run A: per workload and target, B's speed over A's, and whether it differs"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("a", metavar="A", help="run id, or latest")
    p.add_argument("b", metavar="B", help="run id, or latest")
    add_db(p)
    p.add_argument("--db-b", type=Path, help="B's database, when it is another (e.g. another machine's)")
    p.add_argument(
        "--metric", help="compare on this metric instead of each workload's own (as for show --metric)"
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="compare even when the runs did not measure the same things (size, workloads, stacks)",
    )
    p.add_argument("--html", metavar="FILE", help="the comparison as one self-contained page, to a new FILE")
    add_json(p, "the comparison")


def main(args: argparse.Namespace, out: Console, err: Console) -> int:
    from cryptbench.report import compare_console

    done = run(request_from_args(CompareRequest, args))
    comp = done.comparison
    if args.json:
        print_json(comp.to_json())
    else:
        compare_console.render(comp, out)
    if done.html:
        err.print(f"wrote {done.html}: B (run {comp.b.run_id}) against A (run {comp.a.run_id})")
    return 0
