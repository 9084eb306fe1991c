"""`cryptbench report ID|latest`: a stored run exported, without re-running anything.

One function per exporter (`report/export_*.py`); this module resolves the
run, checks where the files go, and writes each one whole or not at all.
"""

from __future__ import annotations

import argparse
import io
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from cryptbench.analysis import document
from cryptbench.commands.common_args import add_db, add_json
from cryptbench.model.errors import UsageError
from cryptbench.model.json_types import JsonObject
from cryptbench.planning.request import request_from_args
from cryptbench.report import export_csv, export_markdown
from cryptbench.report.exports import timelines
from cryptbench.report.json_output import print_json
from cryptbench.report.output_files import output_dir, output_file, page_file, write_new
from cryptbench.store.database import Store, default_db_path

if TYPE_CHECKING:
    from cryptbench.report import charts


def image_paths(made: list[charts.Chart], directory: Path, fmt: str) -> list[Path]:
    """DIR/<chart>.<fmt> for each chart; refused if one of the names exists."""
    paths = [directory / f"{c.name}.{fmt}" for c in made]
    taken = [p for p in paths if p.exists() or p.is_symlink()]
    if taken:
        raise UsageError(f"{taken[0]} exists: cryptbench does not overwrite files it did not create")
    return paths


def write_images(made: list[charts.Chart], paths: list[Path], fmt: str) -> list[str]:
    if paths:
        paths[0].parent.mkdir(exist_ok=True)
    for c, p in zip(made, paths, strict=True):
        write_new(p, c.image(fmt))
    return [str(p) for p in paths]


@dataclass(frozen=True)
class ReportRequest:
    """What `report` was asked, as given (request.request_from_args builds it)."""

    ref: str = "latest"  # run id, or latest
    db: Path | None = None  # None: the default database
    csv: str | None = None  # a new file, or - for stdout
    summary_csv: str | None = None  # a new file, or - for stdout: a row per comparison
    markdown: bool = False  # the summary table as Markdown, on stdout
    json: bool = False  # the document, on stdout
    html: str | None = None  # a new file for the page
    png: str | None = None  # a directory for the charts as PNG
    svg: str | None = None  # a directory for the charts as SVG


@dataclass
class ReportOutcome:
    """What was written: each field None (or empty) where it was not asked for."""

    run_id: int
    csv_rows: int = 0  # trials in the CSV
    csv_path: Path | None = None  # None with csv_text: it goes to stdout
    csv_text: str | None = None
    summary_rows: int = 0  # comparisons in the summary CSV
    summary_path: Path | None = None  # None with summary_text: it goes to stdout
    summary_text: str | None = None
    markdown: str | None = None
    json: JsonObject | None = None
    html: Path | None = None
    charts: list[str] = field(default_factory=list)  # the charts' names, as the page holds them
    images: dict[str, list[str]] = field(default_factory=dict)  # png or svg -> the files written


def _stdout_or_file(text: str, path: Path | None) -> str | None:
    """The text for stdout where `path` is None (-), else None once it is written there."""
    if path is None:
        return text
    write_new(path, text)
    return None


def run(request: ReportRequest) -> ReportOutcome:
    """Every export asked for, each file checked before anything is written."""
    r = request
    csv, markdown, json, html, png, svg = r.csv, r.markdown, r.json, r.html, r.png, r.svg
    summary = r.summary_csv
    if (csv, summary, html, png, svg) == (None,) * 5 and not markdown and not json:
        raise UsageError(
            "say what to write: --html FILE, --csv FILE, --summary-csv FILE (either CSV - for stdout), "
            "--png DIR, --svg DIR, --markdown or --json"
        )
    if [csv == "-", summary == "-", markdown, json].count(True) > 1:
        raise UsageError(
            "--csv -, --summary-csv -, --markdown and --json each print to stdout: "
            "ask for one of them at a time"
        )
    csv_path = output_file(csv, "--csv") if csv is not None else None
    summary_path = output_file(summary, "--summary-csv") if summary is not None else None
    html_path = page_file(html, "--html") if html is not None else None
    dirs = {fmt: output_dir(d, f"--{fmt}") for fmt, d in (("png", png), ("svg", svg)) if d is not None}
    store = Store.open(request.db or default_db_path(), create=False)
    try:
        run_id = store.resolve_run(request.ref)
        out = ReportOutcome(run_id)
        if csv is not None:
            buf = io.StringIO()
            out.csv_rows = export_csv.write(store, run_id, buf)
            out.csv_text = _stdout_or_file(buf.getvalue(), csv_path)
            out.csv_path = csv_path
        if markdown or json or html_path or dirs or summary is not None:
            doc = document.build(store, run_id)
            if summary is not None:
                buf = io.StringIO()
                out.summary_rows = export_csv.write_summary(doc, buf)
                out.summary_text = _stdout_or_file(buf.getvalue(), summary_path)
                out.summary_path = summary_path
            if markdown:
                out.markdown = export_markdown.render(doc)
            if json:
                out.json = doc.to_json()
            if html_path or dirs:
                # Matplotlib loads here, not with the command line: most commands draw nothing
                from cryptbench.report import charts, export_html

                made = charts.build(doc, timelines(store, run_id))
                # every name checked before anything is written: a refusal leaves no half-done export
                images = {fmt: image_paths(made, directory, fmt) for fmt, directory in dirs.items()}
                if html_path:
                    write_new(html_path, export_html.render(doc, made, charts.space_chart(doc)))
                    out.html, out.charts = html_path, [c.name for c in made]
                for fmt, paths in images.items():
                    out.images[fmt] = write_images(made, paths, fmt)
    finally:
        store.close()
    return out


HELP = (
    "export a stored run: an HTML page with charts, chart images, CSV (per trial or per comparison), "
    "Markdown, JSON"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("ref", nargs="?", default="latest", help="run id, or latest (default)")
    p.add_argument("--html", metavar="FILE", help="one self-contained page with every chart, to a new FILE")
    p.add_argument("--png", metavar="DIR", help="each chart as DIR/<chart>.png (DIR is made if missing)")
    p.add_argument("--svg", metavar="DIR", help="each chart as DIR/<chart>.svg (DIR is made if missing)")
    p.add_argument("--csv", metavar="FILE", help="one row per trial, to a new FILE (- for stdout)")
    p.add_argument(
        "--summary-csv",
        metavar="FILE",
        help="one row per comparison (ratio, change and interval, trials, what stopped it), to a new FILE "
        "(- for stdout)",
    )
    p.add_argument("--markdown", action="store_true", help="print the summary table as Markdown")
    add_json(p, "the run's document (as show --json)")
    add_db(p)


def main(args: argparse.Namespace, out: Console, err: Console) -> int:
    done = run(request_from_args(ReportRequest, args))
    if done.html is not None:
        err.print(f"wrote {done.html}: run {done.run_id}, {len(done.charts)} charts")
    for fmt, files in done.images.items():
        err.print(f"wrote {len(files)} {fmt.upper()} charts: {', '.join(files)}")
    if done.csv_text is not None:
        sys.stdout.write(done.csv_text)
    elif done.csv_path is not None:
        err.print(f"wrote {done.csv_path}: {done.csv_rows} trials of run {done.run_id}")
    if done.summary_text is not None:
        sys.stdout.write(done.summary_text)
    elif done.summary_path is not None:
        err.print(f"wrote {done.summary_path}: {done.summary_rows} comparisons of run {done.run_id}")
    if done.markdown is not None:
        sys.stdout.write(done.markdown)
    if done.json is not None:
        print_json(done.json)
    return 0
