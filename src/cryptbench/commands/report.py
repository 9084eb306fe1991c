"""`cryptbench report ID|latest`: a stored run exported, without re-running anything.

One function per exporter (`report/export_*.py`); this module resolves the
run, checks where the files go, and writes each one whole or not at all.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from cryptbench.analysis import document
from cryptbench.commands.common_args import add_db, add_json
from cryptbench.errors import UsageError
from cryptbench.json_types import JsonObject
from cryptbench.report import export_csv, export_markdown
from cryptbench.report.json_output import print_json
from cryptbench.report.output_files import output_dir, output_file, page_file, write_new
from cryptbench.store import Store, default_db_path

if TYPE_CHECKING:
    from cryptbench.report import charts


def timelines(store: Store, run_id: int) -> list[charts.TrialTimeline]:
    """The run's sampled CPU, trial by trial (none for runs stored before schema 4)."""
    from cryptbench.measure.cpu_timeline import CpuTimeline
    from cryptbench.report import charts

    stored = store.cpu_timelines(run_id)
    return [
        charts.TrialTimeline(t.target, t.workload, CpuTimeline.from_json(stored[t.id]))
        for t in store.trial_rows(run_id)
        if t.id in stored
    ]


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


def run(
    *,
    ref: str = "latest",
    db: Path | None = None,
    csv: str | None = None,
    markdown: bool = False,
    json: bool = False,
    html: str | None = None,
    png: str | None = None,
    svg: str | None = None,
) -> JsonObject:
    """What was asked for: "csv" ({"path", "rows"}, or "text" for stdout), "markdown" (text),
    "json" (the document), "html" ({"path", "charts"}), "png" and "svg" (the files written)."""
    if csv is None and html is None and png is None and svg is None and not markdown and not json:
        raise UsageError(
            "say what to write: --html FILE, --csv FILE (or - for stdout), --png DIR, --svg DIR, "
            "--markdown or --json"
        )
    if [csv == "-", markdown, json].count(True) > 1:
        raise UsageError("--csv -, --markdown and --json each print to stdout: ask for one of them at a time")
    csv_path = output_file(csv, "--csv") if csv is not None else None
    html_path = page_file(html, "--html") if html is not None else None
    dirs = {fmt: output_dir(d, f"--{fmt}") for fmt, d in (("png", png), ("svg", svg)) if d is not None}
    store = Store.open(db or default_db_path(), create=False)
    try:
        run_id = store.resolve_run(ref)
        out: JsonObject = {"run_id": run_id}
        if csv is not None:
            buf = io.StringIO()
            rows = export_csv.write(store, run_id, buf)
            if csv_path is None:
                out["csv"] = {"text": buf.getvalue(), "rows": rows}
            else:
                write_new(csv_path, buf.getvalue())
                out["csv"] = {"path": str(csv_path), "rows": rows}
        if markdown or json or html_path or dirs:
            doc = document.build(store, run_id)
            if markdown:
                out["markdown"] = export_markdown.render(doc)
            if json:
                out["json"] = doc.to_json()
            if html_path or dirs:
                # Matplotlib loads here, not with the command line: most commands draw nothing
                from cryptbench.report import charts, export_html

                made = charts.build(doc, timelines(store, run_id))
                # every name checked before anything is written: a refusal leaves no half-done export
                images = {fmt: image_paths(made, directory, fmt) for fmt, directory in dirs.items()}
                if html_path:
                    write_new(html_path, export_html.render(doc, made, charts.space_chart(doc)))
                    out["html"] = {"path": str(html_path), "charts": [c.name for c in made]}
                for fmt, paths in images.items():
                    out[fmt] = write_images(made, paths, fmt)
    finally:
        store.close()
    return out


HELP = "export a stored run: an HTML page with charts, chart images, CSV, Markdown, JSON"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("ref", nargs="?", default="latest", help="run id, or latest (default)")
    p.add_argument("--html", metavar="FILE", help="one self-contained page with every chart, to a new FILE")
    p.add_argument("--png", metavar="DIR", help="each chart as DIR/<chart>.png (DIR is made if missing)")
    p.add_argument("--svg", metavar="DIR", help="each chart as DIR/<chart>.svg (DIR is made if missing)")
    p.add_argument("--csv", metavar="FILE", help="one row per trial, to a new FILE (- for stdout)")
    p.add_argument("--markdown", action="store_true", help="print the summary table as Markdown")
    add_json(p, "the run's document (as show --json)")
    add_db(p)


def main(args: argparse.Namespace, out: Console, err: Console) -> int:
    done = run(
        ref=args.ref,
        db=args.db,
        csv=args.csv,
        markdown=args.markdown,
        json=args.json,
        html=args.html,
        png=args.png,
        svg=args.svg,
    )
    if "html" in done:
        err.print(f"wrote {done['html']['path']}: run {done['run_id']}, {len(done['html']['charts'])} charts")
    for fmt in ("png", "svg"):
        if fmt in done:
            err.print(f"wrote {len(done[fmt])} {fmt.upper()} charts: {', '.join(done[fmt])}")
    csv = done.get("csv")
    if csv is not None and "text" in csv:
        sys.stdout.write(csv["text"])
    elif csv is not None:
        err.print(f"wrote {csv['path']}: {csv['rows']} trials of run {done['run_id']}")
    if "markdown" in done:
        sys.stdout.write(done["markdown"])
    if "json" in done:
        print_json(done["json"])
    return 0
