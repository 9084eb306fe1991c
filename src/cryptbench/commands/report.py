"""`cryptbench report ID|latest`: a stored run exported, without re-running anything.

One function per exporter (`report/export_*.py`); this module resolves the
run, checks where the files go, and writes each one whole or not at all.
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path
from typing import Any

from cryptbench.errors import UsageError
from cryptbench.report import document, export_csv, export_markdown
from cryptbench.store import Store, default_db_path


def output_file(text: str, what: str) -> Path | None:
    """Where an export goes: a new file in an existing directory, or None for stdout ("-").
    An existing file is never overwritten: cryptbench writes only what it created."""
    if text == "-":
        return None
    path = Path(text)
    if path.exists() or path.is_symlink():
        raise UsageError(f"{what} {text[:200]} exists: cryptbench does not overwrite files it did not create")
    if not path.parent.is_dir():
        raise UsageError(f"{what} {text[:200]}: no directory {str(path.parent)[:200]}")
    return path


def _write_new(path: Path, text: str) -> None:
    """All of it or nothing: a temporary file beside it, then a link that fails if the name was taken."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.link(tmp, path)  # unlike rename, refuses to replace a file that appeared meanwhile
    except FileExistsError:
        raise UsageError(f"{path} exists: cryptbench does not overwrite files it did not create") from None
    finally:
        os.unlink(tmp)


def run(
    *,
    ref: str = "latest",
    db: Path | None = None,
    csv: str | None = None,
    markdown: bool = False,
    json: bool = False,
) -> dict[str, Any]:
    """What was asked for: "csv" ({"path", "rows"}, or "text" for stdout), "markdown" (text),
    "json" (the document)."""
    if csv is None and not markdown and not json:
        raise UsageError("say what to write: --csv FILE (or - for stdout), --markdown or --json")
    csv_path = output_file(csv, "--csv") if csv is not None else None
    store = Store.open(db or default_db_path(), create=False)
    try:
        run_id = store.resolve_run(ref)
        out: dict[str, Any] = {"run_id": run_id}
        if csv is not None:
            buf = io.StringIO()
            rows = export_csv.write(store, run_id, buf)
            if csv_path is None:
                out["csv"] = {"text": buf.getvalue(), "rows": rows}
            else:
                _write_new(csv_path, buf.getvalue())
                out["csv"] = {"path": str(csv_path), "rows": rows}
        if markdown or json:
            doc = document.build(store, run_id)
            if markdown:
                out["markdown"] = export_markdown.render(doc)
            if json:
                out["json"] = doc
    finally:
        store.close()
    return out
