"""The table of where make test's time went (tests/support/time_budget.py): each phase, the
tests split by kind with the slowest integration modules, the kernel lab's own
accounting, from the files make test and the host's pytest write."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import time_budget
from tests.support.paths import REPO

RECORD = {
    "wall": 2450.0,
    "tests": {
        "tests/unit/test_a.py::t1": 1.0,
        "tests/unit/test_a.py::t2": 2.0,
        **{f"tests/integration/test_m{i:02d}.py::t": float(40 + i) for i in range(12)},  # none over a minute
        "tests/lab/test_luks.py::test_every_luks_variant_end_to_end": 300.0,
    },
    "labs": {
        "6.1": {
            "label": "Debian 12's 6.1",
            "summary": "kernel lab: ...",
            "seconds": 1700.0,
            "waited": 12.0,
            "shared": {"kernel_only_run": 600.0},
            "tests": {
                "tests/lab/test_luks.py::test_every_luks_variant_end_to_end": 610.0,
                "tests/lab/t.py::x": 90.0,
            },
        },
    },
}


def _seconds(text: str, label: str) -> float:
    line = next(line for line in text.splitlines() if line.strip().startswith(label))
    return float(line[72:80])


def test_the_table_splits_the_tests_and_names_the_slowest_modules(tmp_path: Path) -> None:
    phases = [("set-up", 30.4, 0), ("lint and types", 61.0, 0), ("tests", 2460.0, 1)]
    text = time_budget.table(phases, {"tests": RECORD}, 2552.0)
    assert _seconds(text, "set-up") == 30
    assert "exit 1" in next(line for line in text.splitlines() if line.strip().startswith("tests "))
    assert _seconds(text, "unit (2 tests, 1 modules)") == 3
    assert _seconds(text, "integration (12 tests, 12 modules)") == sum(40 + i for i in range(12))
    named = [line.split()[0] for line in text.splitlines() if line.strip().startswith("tests/integration/")]
    assert named == [f"tests/integration/test_m{i:02d}.py" for i in range(11, 1, -1)]  # ten, slowest first
    assert _seconds(text, "the other 2 modules") == 81
    assert _seconds(text, "KVM probe, boot") == 1000  # 1700 less the tests' 700
    assert _seconds(text, "shared run kernel_only_run") == 600
    assert _seconds(text, "tests/lab/t.py::x") == 90
    assert _seconds(text, "the host waiting for the lab") == 12
    assert _seconds(text, "in all") == 2552
    assert text.splitlines()[-1].strip().startswith("in all")


def test_a_lab_that_did_not_run_says_so() -> None:
    text = time_budget.table([("tests", 10.0, 0)], {"tests": {**RECORD, "labs": {}}}, 11.0)
    assert "kernel lab: did not run" in text


def test_each_kernels_guest_has_its_own_rows() -> None:
    six_twelve = {"label": "Debian 13's 6.12", "summary": "", "seconds": 400.0, "waited": 30.0, "shared": {}}
    six_twelve["tests"] = {"tests/lab/test_commands.py::test_backends": 100.0}
    record = {**RECORD, "labs": {**RECORD["labs"], "6.12": six_twelve}}  # type: ignore[dict-item]
    lines = time_budget.table([("tests", 2460.0, 0)], {"tests": record}, 2552.0).splitlines()
    heads = [line.split(",")[0].strip() for line in lines if line.strip().startswith("kernel lab on")]
    assert heads == ["kernel lab on Debian 12's 6.1", "kernel lab on Debian 13's 6.12"]
    second = lines.index(next(line for line in lines if "Debian 13's 6.12" in line))
    assert float(lines[second][72:80]) == 400
    assert float(lines[second + 1][72:80]) == 300  # its boot: 400 less its test's 100
    assert [float(line[72:80]) for line in lines if "waiting for the lab" in line] == [12, 30]


def test_the_command_joins_make_tests_phases_and_pytests_record(tmp_path: Path) -> None:
    (tmp_path / "phases.tsv").write_text("set-up\t30.4\t0\nlint and types\t61.0\t0\ntests\t2460.0\t0\n")
    (tmp_path / "times.json").write_text(json.dumps(RECORD))
    out = tmp_path / "build" / "test-times.txt"
    files = [str(tmp_path / n) for n in ("phases.tsv", "times.json")]
    proc = subprocess.run(
        [sys.executable, "-m", "tests.support.time_budget", *files, "2552", str(out)],
        cwd=REPO, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert proc.stdout == out.read_text()
    assert "lint and types" in proc.stdout and "shared run kernel_only_run" in proc.stdout


LANE1 = {**RECORD, "tests": {n: s for n, s in RECORD["tests"].items() if not n.startswith("tests/unit/")}}  # type: ignore[union-attr]
LANE2 = {
    "wall": 400.0,
    "tests": {"tests/unit/test_a.py::t1": 1.0, "tests/unit/test_b.py::t2": 2.0},
    "labs": {},
}
LANE_PHASES = (
    "set-up\t30.4\t0\nlint and types\t21.0\t0\nunit tests\t401.0\t1\n"
    "integration and kernel lab\t1990.0\t0\ntests\t1991.0\t1\n"
)


def test_two_lanes_are_shown_under_their_whole_each_with_its_own_tests(tmp_path: Path) -> None:
    # What scripts/test_lanes.sh leaves: phases in the order they ended, and a record per lane.
    (tmp_path / "phases.tsv").write_text(LANE_PHASES)
    (tmp_path / "t.json").write_text(json.dumps(LANE1))
    (tmp_path / "t-unit.json").write_text(json.dumps(LANE2))
    out = tmp_path / "table.txt"
    files = [str(tmp_path / n) for n in ("phases.tsv", "t.json")]
    assert time_budget.main([*files, "2022", str(out)]) == 0
    lines = out.read_text().splitlines()

    def at(indent: int) -> list[str]:
        return [line[:72].strip() for line in lines if len(line) - len(line.lstrip()) == indent]

    assert at(2) == ["set-up", "tests, in two lanes side by side", "in all"]
    assert at(4) == [
        "lane 1: integration and the kernel lab",
        "lane 2 (idle priority): lint and types",
        "lane 2 (idle priority): unit tests and those marked beside",
    ]
    text = "\n".join(lines)
    assert _seconds(text, "tests, in two lanes") == 1991 and "exit 1" in lines[2]
    assert "exit 1" in next(line for line in lines if "unit tests" in line)
    # each lane's record under its own phase: lane 1 its integration and lab, lane 2 its unit tests
    start = next(i for i, line in enumerate(lines) if "lane 1:" in line)
    unit_at = next(i for i, line in enumerate(lines) if "lane 2 (idle priority): unit tests" in line)
    lane1 = "\n".join(lines[start:unit_at])
    assert _seconds(lane1, "pytest's own wall clock") == 2450
    assert _seconds(lane1, "integration (12 tests, 12 modules)") == sum(40 + i for i in range(12))
    assert "unit (" not in lane1 and "shared run kernel_only_run" in lane1
    lane2 = "\n".join(lines[unit_at:])
    assert _seconds(lane2, "pytest's own wall clock") == 400
    assert _seconds(lane2, "unit (2 tests, 2 modules)") == 3
    assert "kernel lab" not in lane2 and "integration" not in lane2


def test_a_module_over_a_minute_without_its_reason_is_marked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two modules in a tree of their own: one says why it takes long, one does not.
    said, silent = "tests/integration/test_said.py", "tests/integration/test_silent.py"
    (tmp_path / "tests" / "integration").mkdir(parents=True)
    (tmp_path / said).write_text('"""A module."""\n\n# Over 60 s of make test (61 s): why.\n')
    (tmp_path / silent).write_text('"""A module."""\n\n# It takes 61 s.\n')
    monkeypatch.setattr(time_budget, "REPO", tmp_path)
    few = {"tests/integration/test_m.py::t": 30.0, f"{said}::t": 61.0, f"{silent}::t": 61.0}
    text = time_budget.table(
        [("tests", 200.0, 0)], {"tests": {"wall": 200.0, "tests": few, "labs": {}}}, 201.0
    )
    marked = [line.split()[0] for line in text.splitlines() if "no reason at its top" in line]
    assert marked == [silent]
    brief = {**few, f"{silent}::t": 60.0}  # exactly a minute is not over it
    text = time_budget.table(
        [("tests", 200.0, 0)], {"tests": {"wall": 200.0, "tests": brief, "labs": {}}}, 201.0
    )
    assert "no reason at its top" not in text
    # past the ten slowest, a module over a minute is still named, and marked
    many = {f"{said}::t{i}": 100.0 for i in range(10)} | {
        f"tests/integration/test_x{i}.py::t": 70.0 + i for i in range(10)
    }
    many[f"{silent}::t"] = 61.0
    text = time_budget.table(
        [("tests", 2000.0, 0)], {"tests": {"wall": 2000.0, "tests": many, "labs": {}}}, 2001.0
    )
    assert any(line.split()[0] == silent and "no reason" in line for line in text.splitlines())
