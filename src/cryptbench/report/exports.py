"""A stored run written to files as `report` writes them, for `run --export-html FILE`,
`--export-csv FILE` and `--export-md FILE` (as hyperfine's --export-* do): each file
checked before the run starts, so that a long run never ends in a refusal, and written
whole or not at all once it ends.

A file that exists is refused, as `report` refuses it, unless --force and it is one
cryptbench made (its first bytes are what this module writes first: the page's
generator tag, the CSV's header, the Markdown's title): --force replaces a report of
an earlier run, never a file of the user's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cryptbench.model.errors import UsageError
from cryptbench.report.export_csv import RUN_COLUMNS
from cryptbench.report.output_files import output_file, replace_file, write_new
from cryptbench.store.database import Store

if TYPE_CHECKING:
    from cryptbench.report import charts

# What a file cryptbench wrote of each kind holds in its first 2 KiB.
MADE_BY_US = {
    "html": '<meta name="generator" content="cryptbench ',
    "csv": ",".join(RUN_COLUMNS[:3]) + ",",
    "md": "**cryptbench run ",
}
FLAGS = {"html": "--export-html", "csv": "--export-csv", "md": "--export-md"}


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


def made_by_us(path: Path, kind: str) -> bool:
    try:
        with path.open("rb") as f:
            head = f.read(2048).decode("utf-8", "replace")
    except OSError:
        return False
    return path.is_file() and not path.is_symlink() and MADE_BY_US[kind] in head


@dataclass(frozen=True)
class Export:
    kind: str  # html, csv or md
    path: Path
    replace: bool  # it exists, cryptbench made it, and --force was given


def checked(asked: dict[str, str | None], force: bool) -> list[Export]:
    """Each file asked for, refused now if it cannot be written then."""
    out = []
    for kind, text in asked.items():
        if text is None:
            continue
        flag = FLAGS[kind]
        if text == "-":
            raise UsageError(f"{flag} needs a file name: the answer is already on stdout")
        path = Path(text)
        if (path.exists() or path.is_symlink()) and force and made_by_us(path, kind):
            out.append(Export(kind, path, True))
            continue
        if (path.exists() or path.is_symlink()) and force:
            raise UsageError(
                f"{flag} {text[:200]} exists and is not a {kind} cryptbench wrote: "
                "--force replaces only those"
            )
        found = output_file(text, flag)
        assert found is not None
        out.append(Export(kind, found, False))
    return out


def write(exports: list[Export], db: Path, run_id: int) -> list[Path]:
    """Each export of the stored run; returns the paths written."""
    if not exports:
        return []
    import io

    from cryptbench.analysis import document
    from cryptbench.report import export_csv, export_markdown

    store = Store.open(db, create=False)
    written = []
    try:
        doc = document.build(store, run_id)
        for e in exports:
            if e.kind == "csv":
                buf = io.StringIO()
                export_csv.write(store, run_id, buf)
                text = buf.getvalue()
            elif e.kind == "md":
                text = export_markdown.render(doc)
            else:
                from cryptbench.report import charts, export_html

                made = charts.build(doc, timelines(store, run_id))
                text = export_html.render(doc, made, charts.space_chart(doc))
            if e.replace:
                replace_file(e.path, text)
            else:
                write_new(e.path, text)
            written.append(e.path)
    finally:
        store.close()
    return written
