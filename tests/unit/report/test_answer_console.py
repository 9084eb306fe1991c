"""The default terminal output, on documents recorded by real runs: one screen, the
answer first, nothing wrapped or cut at 80 columns."""

import io
import json
import re

import pytest
from rich.console import Console

from cryptbench.analysis import ranking
from cryptbench.model.result import Document
from cryptbench.report import screens
from tests.support.paths import TESTS

DOCS = TESTS / "fixtures" / "documents"
NAMES = [
    "default-run",
    "quick-fscrypt-gocryptfs-ram",
    "qd-sweep-fscrypt",
    "fleet-three-hosts",
    "write-series-images",
]
# a change with its interval as ±h or [lo,hi], marked * where significant; ±? without one
CHANGE = r"[+-]\d+(±\d+|\s\[[+-]\d+,[+-]\d+\])\*?|[+-]\d+\s±\?"
CELL = re.compile(rf"^({CHANGE}|\d+(\.\d)?|failed|-)$")
CELLS = re.compile(rf"{CHANGE}|\d+(\.\d)?|failed|-")


def _doc(name: str) -> dict:
    return json.loads((DOCS / f"{name}.json").read_text())


def _shown(doc: dict, width: int, details: bool = False) -> list[str]:
    out = io.StringIO()
    screens.render(
        Document.from_json(doc), Console(file=out, width=width, color_system=None), details=details
    )
    return out.getvalue().splitlines()


@pytest.mark.parametrize("width", [80, 120])
def test_the_default_run_fits_one_screen(width: int) -> None:
    doc = _doc("default-run")
    lines = _shown(doc, width)
    # 42: at 80 columns this run's lopsided intervals ([lo,hi], never a ± they lack) split
    # its matrix into two tables
    assert len(lines) <= 42 and max(map(len, lines)) <= width
    assert lines[0].startswith("Run 5 (quick suite): 7 targets, 132 trials in 5 min 2 s; vda wrote 4.9 GiB")
    assert lines[1].startswith("Cheapest here: gocryptfs, -58% [-66, -50]")
    assert any(line.startswith("Warnings: 26 imprecise, 17 high-variation") for line in lines)
    assert lines[-1] == "Every figure, warning and the diagnosis: cryptbench show 5 --details"
    # one line naming the limit of each encrypted target
    for t in ("fscrypt", "gocryptfs", "securefs", "cryfs", "encfs"):
        assert sum(line.startswith(f"{t}: ") for line in lines) == 1, t


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("width", [80, 120])
def test_every_matrix_cell_is_whole_on_its_row(name: str, width: int) -> None:
    doc = _doc(name)
    lines = _shown(doc, width)
    assert max(map(len, lines)) <= width and not any("…" in line for line in lines)
    workloads = [w for w in doc["plan"]["workloads"] if any(r["workload"] == w for r in doc["results"])]
    cells = 0
    for t in doc["targets"]:
        rows = [line for line in lines if line.startswith(t["name"] + " ")]
        rows = [r for r in rows if re.match(rf"^{re.escape(t['name'])}\s+(vs \S+|MB/s|median)\s", r)]
        assert rows, (t["name"], lines)
        for row in rows:
            against = "vs " + t["baseline"] if t["baseline"] else None
            rest = row[len(t["name"]) :].strip()
            rest = rest[len(against) :] if against else rest.split(None, 1)[1]
            values = [m.group(0) for m in CELLS.finditer(rest)]
            assert re.sub(CELLS, "", rest).strip() == "", row  # nothing but whole cells
            assert all(CELL.match(v) or t["baseline"] is None for v in values), row
            cells += len(values)
    assert cells >= len(workloads) * len(doc["targets"])


def test_many_workloads_split_into_tables_that_fit() -> None:
    lines = _shown(_doc("qd-sweep-fscrypt"), 80)
    assert sum(line.startswith("fscrypt ") for line in lines) >= 3  # 16 workloads over several tables
    assert max(map(len, lines)) <= 80


def test_details_keep_everything_printed_before() -> None:
    lines = "\n".join(_shown(_doc("default-run"), 100, details=True))
    for text in (
        "Repetition: adaptive to ±5%",
        "warning high-variation",
        "Cheapest here: gocryptfs",
        "of plain",
    ):
        assert text in lines
    # and the answer comes first
    assert lines.index("Cheapest here") < lines.index("Repetition")


def test_a_failed_cell_and_an_unverified_target_show() -> None:
    doc = json.loads((DOCS / "default-run.json").read_text())
    doc["results"] = [
        r for r in doc["results"] if not (r["target"] == "cryfs" and r["workload"] == "rnd4k-q1-read")
    ]
    doc["warnings"].append(
        {
            "kind": "failed-trials",
            "message": "2 trial(s) failed",
            "workload": "rnd4k-q1-read",
            "target": "cryfs",
        }
    )
    doc["trials"]["failed"] = 2
    doc["ranking"] = [s.to_json() for s in ranking.build(Document.from_json(doc))]
    lines = _shown(doc, 80)
    assert any(line.startswith("cryfs ") and "failed" in line for line in lines)
    text = " ".join(" ".join(lines).split())
    assert "Not ranked: cryfs (trials failed at rnd4k-q1-read)" in text
    assert "Warnings: 1 failed-trials," in text  # serious kinds come first


def test_a_warning_names_only_the_places_it_has() -> None:
    # a warning about a whole workload has no target: never "None/seq1m-q8-read"
    doc = _doc("default-run")
    doc["warnings"] = [
        {"kind": "short-trial", "message": "short", "workload": "seq1m-q8-read", "target": None},
        {"kind": "short-trial", "message": "short", "workload": "rnd4k-q1-read", "target": "plain"},
    ]
    lines = _shown(doc, 100, details=True)
    assert "  seq1m-q8-read: short" in lines and "  plain/rnd4k-q1-read: short" in lines
    assert not any("None" in line for line in lines)
