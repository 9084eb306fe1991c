"""What every renderer prints for the documents recorded by real runs
(tests/fixtures/documents), kept byte for byte in tests/golden/outputs/ and checked by
tests/unit/project/test_golden_outputs.py, and the fio job files cryptbench writes, kept in
tests/golden/ and checked by tests/unit/engines/test_jobs.py. The tests only read the files.
After a change of output that is meant, write them again with this module, which
prints the diff (nothing else writes them):
    .venv/bin/python -m tests.support.golden

The JSON kinds are held to their figures to 12 significant digits, not to their last
bits, which depend on the CPU: on an AMD EPYC without AVX-512 (2026-11-27), seven
ranking.json files written on the CPU before differed only in a figure's 16th digit, as
in 0.22426134558292235 against 0.22426134558292238 (likely NumPy's log and exp over
arrays, whose loops NumPy picks by CPU feature; not shown on both CPUs).
"""

from __future__ import annotations

import dataclasses
import difflib
import io
import json
import sys
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from cryptbench.analysis import diagnosis, document, ranking, warning_rules
from cryptbench.engines.jobs import JobOptions, render_job, render_layout
from cryptbench.model.result import Document
from cryptbench.planning.suite import load_suite
from cryptbench.report import charts, export_html, export_markdown, screens
from tests.support.paths import REPO, TESTS

DOCS = TESTS / "fixtures" / "documents"
GOLDEN = TESTS / "golden" / "outputs"
NAMES = sorted(p.stem for p in DOCS.glob("*.json"))


def _console_text(doc: Document, width: int, details: bool) -> str:
    out = io.StringIO()
    screens.render(doc, Console(file=out, width=width, color_system=None), details=details)
    return out.getvalue()


def _json(value: object) -> str:
    return json.dumps(value, indent=2) + "\n"


def _derived(doc: Document) -> str:
    """The sections document.build derives from the core (targets, results,
    comparisons), recomputed from the recorded core: trials are not in a document,
    so the rules that read them see none."""
    return _json(
        {
            "qd_curves": [c.to_json() for c in document.qd_curves(doc)],
            "conclusions": document.conclusions(doc),
            "warnings": [w.to_json() for w in warning_rules.find(doc, [])],
            "diagnosis": [d.to_json() for d in diagnosis.diagnose(doc)],
        }
    )


def _charts(doc: Document) -> str:
    """Which charts the page draws, with their titles and captions (the SVG itself is
    Matplotlib's, not ours)."""
    return _json([[c.kind, c.name, c.title, c.caption] for c in charts.build(doc, [])])


RENDERERS: dict[str, Callable[[Document], str]] = {
    "answer-80.txt": lambda d: _console_text(d, 80, details=False),
    "answer-120.txt": lambda d: _console_text(d, 120, details=False),
    "details-80.txt": lambda d: _console_text(d, 80, details=True),
    "details-120.txt": lambda d: _console_text(d, 120, details=True),
    "report.md": export_markdown.render,
    "ranking.json": lambda d: _json([s.to_json() for s in ranking.build(d)]),
    "derived.json": _derived,
    "charts.json": _charts,
    "page.html": lambda d: export_html.render(d, []),
}


def _quick_jobs(direct: bool) -> str:
    opts = JobOptions(
        Path("/var/tmp/cryptbench/run-x/targets/plain/cryptbench.dat"), 64 << 20, direct, "io_uring", False, 7
    )
    return "".join(render_job(w, opts) + "\n" for w in load_suite("quick").workloads)


# The fio job files (tests/golden/NAME): the quick suite's, direct and buffered, and a
# layout with zeroed data.
JOBS: dict[str, Callable[[], str]] = {
    "quick-direct.fio": lambda: _quick_jobs(True),
    "quick-buffered.fio": lambda: _quick_jobs(False),
    "layout-zero.fio": lambda: render_layout(
        JobOptions(Path("/scratch/a:b/cryptbench.dat"), 16 << 20, False, "libaio", True, 1)
    ),
}


def recorded(name: str) -> Document:
    """The recorded document with what `show` derives from its core built anew (a fixture
    keeps the ranking, sentences and diagnosis of the day it was recorded): the ranking,
    the queue-depth curves, the conclusions and the diagnosis. Its warnings stay as
    recorded: their rules read the trials, which a document does not hold."""
    doc = Document.from_json(json.loads((DOCS / f"{name}.json").read_text()))
    doc = dataclasses.replace(doc, ranking=ranking.build(doc), qd_curves=document.qd_curves(doc))
    found = [] if doc.fleet else diagnosis.diagnose(doc)  # as document.build: none on a fleet run
    return dataclasses.replace(doc, conclusions=document.conclusions(doc), diagnosis=found)


SIGNIFICANT = 12  # digits of a JSON figure that are the code's, not the CPU's


def _figures(value: object) -> object:
    """`value` with every float to SIGNIFICANT digits."""
    if isinstance(value, float):
        return float(f"{value:.{SIGNIFICANT}g}")
    if isinstance(value, list):
        return [_figures(v) for v in value]
    if isinstance(value, dict):
        return {k: _figures(v) for k, v in value.items()}
    return value


def same(kind: str, text: str, golden: str) -> bool:
    """Whether a renderer's `text` is its golden file's: byte for byte, or for JSON the
    same values with each figure to SIGNIFICANT digits."""
    if text == golden:
        return True
    if not kind.endswith(".json") or not golden:
        return False
    return _figures(json.loads(text)) == _figures(json.loads(golden))


def _outputs() -> list[tuple[Path, str, str]]:
    """(golden file, its kind, what the code writes now) for every golden file."""
    out = [(GOLDEN.parent / name, name, make()) for name, make in sorted(JOBS.items())]
    for name in NAMES:
        doc = recorded(name)
        out += [(GOLDEN / f"{name}.{kind}", kind, render(doc)) for kind, render in sorted(RENDERERS.items())]
    return out


def write() -> int:
    """Write every golden file anew and print the unified diff of each that changed;
    the number of files changed."""
    changed = 0
    for path, kind, text in _outputs():
        old = path.read_text() if path.exists() else ""
        if same(kind, text, old):
            continue
        changed += 1
        rel = path.relative_to(REPO)
        sys.stdout.writelines(
            difflib.unified_diff(old.splitlines(True), text.splitlines(True), f"a/{rel}", f"b/{rel}")
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    print(f"{changed} golden file(s) written anew", file=sys.stderr)
    return changed


if __name__ == "__main__":
    write()
