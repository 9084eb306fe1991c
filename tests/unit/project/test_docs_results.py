"""Evidence lives in docs/results/, the rest of the docs say what is true now.

The README may quote a measurement only as a block copied from a file under
docs/results/ (marked `<!-- quoted from docs/results/FILE.md -->` on the line before
it), which holds it with its command, commit and date; nowhere else may it carry a
date, a commit or a measured figure. The docs' prose (docs/*.md) states the method and
the current figures, never a dated one: no date, no commit. Every relative link
resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.paths import REPO

ROOT = REPO
RESULTS = ROOT / "docs" / "results"
# The pages that say what is true now: everything a reader meets before the evidence.
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]
QUOTE = re.compile(r"^<!-- quoted from (docs/results/[\w./-]+\.md) -->$")
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
# A commit as the docs cite one: 7 to 40 hex digits with a letter and a digit among them.
COMMIT = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")
# What a run prints and a setting never is: an interval, a throughput, a trial count
# with its time, a device's bytes written.
FIGURE = re.compile(
    r"\[[+-]?\d+(?:\.\d+)?, ?[+-]?\d+(?:\.\d+)?\]"
    r"|\b\d+(?:[.,]\d+)? ?[KMG]i?B/s\b"
    r"|\b\d+ trials in\b"
    r"|\bwrote \d+(?:\.\d+)? ?[KMGT]i?B\b"
)
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def blocks(text: str) -> list[tuple[str | None, str, int]]:
    """Each fenced block as (the results file it is quoted from, or None; its text with
    the fences; its first line's number)."""
    lines = text.splitlines()
    out: list[tuple[str | None, str, int]] = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            j = next(k for k in range(i + 1, len(lines)) if lines[k].startswith("```"))
            source = QUOTE.match(lines[i - 1]) if i else None
            out.append((source.group(1) if source else None, "\n".join(lines[i : j + 1]), i + 1))
            i = j + 1
        else:
            i += 1
    return out


def unquoted(text: str) -> str:
    """The text without the blocks quoted from a results file."""
    for source, block, _ in blocks(text):
        if source is not None:
            text = text.replace(block, "")
    return text


def offences(text: str, patterns: tuple[re.Pattern[str], ...] = (DATE, COMMIT, FIGURE)) -> list[str]:
    """The dates, commits and measured figures in `text`, each with its line."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for pattern in patterns:
            found += [
                f"line {number}: {m.group(0)!r} in {line.strip()[:60]!r}" for m in pattern.finditer(line)
            ]
    return found


def test_the_readme_carries_no_date_commit_or_figure_but_what_it_quotes() -> None:
    assert offences(unquoted(README.read_text())) == [], "README.md: move it to docs/results/ and quote it"


@pytest.mark.parametrize("page", DOCS, ids=rel)
def test_the_docs_prose_carries_no_date_or_commit(page: Path) -> None:
    found = offences(unquoted(page.read_text()), (DATE, COMMIT))
    assert found == [], f"{rel(page)}: move it to docs/results/ and link it"


@pytest.mark.parametrize("page", PAGES, ids=rel)
def test_a_quoted_block_is_in_its_results_file_word_for_word(page: Path) -> None:
    for source, block, line in blocks(page.read_text()):
        if source is None:
            continue
        held = ROOT / source
        assert held.is_file(), f"{rel(page)}:{line} quotes {source}, which does not exist"
        assert block in held.read_text(), f"{rel(page)}:{line}: a figure no file under docs/results/ holds"


def test_the_readme_quotes_the_newest_default_run() -> None:
    readme = [b for s, b, _ in blocks(README.read_text()) if s == "docs/results/default-run.md"]
    history = (RESULTS / "default-run.md").read_text()
    newest = history[history.index("<!-- newest -->") :]
    assert len(readme) == 1 and newest.index(readme[0]) < newest.index("\n## ", newest.index("```"))


@pytest.mark.parametrize("page", [*PAGES, *sorted(RESULTS.glob("*.md"))], ids=rel)
def test_every_relative_link_resolves(page: Path) -> None:
    broken = [
        target
        for target in LINK.findall(page.read_text())
        if "://" not in target and not (page.parent / target).exists()
    ]
    assert broken == [], rel(page)


def test_every_results_file_is_in_the_index() -> None:
    index = (RESULTS / "README.md").read_text()
    files = [p.name for p in sorted(RESULTS.glob("*.md")) if p.name != "README.md"]
    assert [name for name in files if f"]({name})" not in index] == []


@pytest.mark.parametrize(
    ("text", "caught"),
    [
        ("on 2026-12-02 it took", True),
        ("a fresh clone of 9674db2 ran", True),
        ("-61% [-71, -48] against plain", True),
        ("read 1243 MB/s", True),
        ("144 trials in 5 min 2 s", True),
        ("vda wrote 4.5 GiB", True),
        ("known to ±5 %, within 5 minutes, 3 to 10 trials, a 64 MiB data file", False),
        ("throttled to 40 and 20 MB/s must measure 0.50", True),
    ],
)
def test_what_counts_as_a_measurement(text: str, caught: bool) -> None:
    assert bool(offences(text)) is caught
