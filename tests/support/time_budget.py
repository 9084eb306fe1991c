"""Where `make test`'s time went: one table at its end, kept in build/test-times.txt.

make test times its phases (set-up, then the two lanes of scripts/test_lanes.sh: the
integration tests with the kernel lab, and beside them lint and types, then the unit
tests) with scripts/timed.sh into a tab-separated file. Each lane's pytest writes each
test's seconds, and lane 1's the kernel lab's own accounting (its boot, each shared
run, each test, and how long the host waited for it), as JSON to the file
CRYPTBENCH_TEST_TIMES names. Only the outermost pytest writes: configure() takes the
name out of the environment, so a pytest that a test starts does not overwrite it.
`python -m tests.support.time_budget` joins them into the table (docs/kernel-lab.md, "Two
lanes").
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from tests.support import kernel_lab
from tests.support.paths import REPO

ENV = "CRYPTBENCH_TEST_TIMES"
SLOWEST_MODULES = 10  # integration modules named in the table (and any over LONG); the rest are summed
# An integration module that takes longer says why in a comment at its top, which begins
# with REASON; the table marks one that does not.
LONG = 60.0  # seconds
REASON = "# Over 60 s of make test"
PATH = pytest.StashKey[Path]()
STARTED = pytest.StashKey[float]()  # time.monotonic() at configure, seconds
_SECONDS: dict[str, float] = defaultdict(float)  # node id -> seconds over its phases


def configure(config: pytest.Config) -> None:
    path = os.environ.pop(ENV, None)
    if path:
        config.stash[PATH] = Path(path)
        config.stash[STARTED] = time.monotonic()


def add(report: pytest.TestReport) -> None:
    _SECONDS[report.nodeid] += report.duration


def write(config: pytest.Config) -> None:
    path = config.stash.get(PATH, None)
    if path is None:
        return
    record = {
        "wall": time.monotonic() - config.stash[STARTED],
        "tests": dict(_SECONDS),
        "labs": {
            series: {
                "label": kernel_lab.KERNELS[series].label,
                "summary": lab.summary(),
                "seconds": lab.seconds,
                "waited": lab.waited,
                "shared": lab.shared,
                "tests": {n: o.seconds for n, o in lab.outcomes.items()},
            }
            for series, lab in config.stash.get(kernel_lab.LAB_RUNS, {}).items()
            if not lab.unavailable
        },
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1))


def read_phases(path: Path) -> list[tuple[str, float, int]]:
    """make test's phases as scripts/timed.sh wrote them: (what, seconds, exit status)."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        what, seconds, rc = line.split("\t")
        rows.append((what, float(seconds), int(rc)))
    return rows


def _row(indent: int, what: str, seconds: float, note: str = "") -> str:
    label = " " * indent + what
    return f"{label:<72} {seconds:7.0f}" + (f"  {note}" if note else "")


# make test's phases when its tests run in two lanes (scripts/test_lanes.sh), as the
# table names them; "tests" is the two lanes' wall clock.
LANE1 = "integration and kernel lab"
LINT, UNIT = "lint and types", "unit tests"  # lane 2's phases, in their order
LANE2 = (LINT, UNIT)
LABELS = {
    "tests": "tests, in two lanes side by side",
    LANE1: "lane 1: integration and the kernel lab",
    LINT: f"lane 2 (idle priority): {LINT}",
    UNIT: f"lane 2 (idle priority): {UNIT} and those marked beside",
}


def table(
    phases: list[tuple[str, float, int]], records: dict[str, dict[str, object] | None], total: float
) -> str:
    """The table: each phase, the tests split into unit, integration (its slowest
    modules) and the kernel lab (boot, shared runs, each test), and the whole.
    `records`: each pytest's record by the phase that ran it ("tests" when one pytest
    ran them all)."""
    lines = ["Where make test's time went, in seconds (kept in build/test-times.txt)"]
    by_name = {what: (seconds, rc) for what, seconds, rc in phases}
    if LANE1 in by_name:  # two lanes: the whole, then each lane's phases under it
        order = [w for w in ("set-up", "tests", LANE1, *LANE2) if w in by_name]
        order += [w for w, _s, _rc in phases if w not in order]
    else:
        order = [w for w, _s, _rc in phases]
    for what in order:
        seconds, rc = by_name[what]
        indent = 4 if what in (LANE1, *LANE2) else 2
        label = LABELS.get(what, what) if LANE1 in by_name else what
        lines.append(_row(indent, label, seconds, "" if rc == 0 else f"exit {rc}"))
        record = records.get(what)
        if record is not None:
            lines.extend(_test_rows(indent + 2, record, lab=what != UNIT))
    lines.append(_row(2, "in all", total))
    return "\n".join(lines) + "\n"


def _test_rows(indent: int, record: dict[str, object], lab: bool) -> list[str]:
    """One pytest's record: its wall clock, its tests by kind (the slowest integration
    modules by name), and the kernel lab it ran beside them."""
    tests: dict[str, float] = record["tests"]  # type: ignore[assignment]
    lines = [_row(indent, "pytest's own wall clock", float(record["wall"]))]  # type: ignore[arg-type]
    modules: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for nodeid, s in tests.items():
        module = nodeid.split("::", 1)[0]
        kind = module.split("/")[1] if module.count("/") >= 2 else "kernel lab"
        modules[kind][module] += s
    for kind in ("unit", "integration"):
        got = modules.get(kind, {})
        count = sum(1 for n in tests if n.startswith(f"tests/{kind}/"))
        if not count:
            continue
        lines.append(_row(indent, f"{kind} ({count} tests, {len(got)} modules)", sum(got.values())))
        if kind == "integration":
            slowest = sorted(got.items(), key=lambda m: -m[1])
            named = max(SLOWEST_MODULES, sum(1 for _m, s in slowest if s > LONG))
            for module, s in slowest[:named]:
                unsaid = s > LONG and _unexplained(module)
                note = f"over {LONG:.0f} s, and no reason at its top" if unsaid else ""
                lines.append(_row(indent + 2, module, s, note))
            if len(slowest) > named:
                rest = slowest[named:]
                lines.append(_row(indent + 2, f"the other {len(rest)} modules", sum(s for _m, s in rest)))
    if lab:
        labs: dict[str, dict[str, object]] = record.get("labs") or {}  # type: ignore[assignment]
        if not labs:
            lines.append(_row(indent, "kernel lab: did not run", 0))
        for one in labs.values():
            lines.extend(_lab_rows(indent, one))
    return lines


def _unexplained(module: str) -> bool:
    """Whether a test module (its path from the repository's root) lacks the comment that
    says why it takes over LONG. A module not in this tree (a record from elsewhere) is
    not judged."""
    path = REPO / module
    return path.is_file() and not any(line.startswith(REASON) for line in path.read_text().splitlines())


def _lab_rows(indent: int, lab: dict[str, object]) -> list[str]:
    """One kernel's guest: its wall clock, boot, shared runs and tests."""
    tests: dict[str, float] = lab["tests"]  # type: ignore[assignment]
    shared: dict[str, float] = lab["shared"]  # type: ignore[assignment]
    seconds = float(lab["seconds"])  # type: ignore[arg-type]
    rows = [
        _row(
            indent,
            f"kernel lab on {lab.get('label', 'its kernel')}, beside the host's tests ({len(tests)} tests)",
            seconds,
            "its wall clock",
        ),
        _row(indent + 2, "KVM probe, boot and the guest's set-up", seconds - sum(tests.values())),
    ]
    first = "inside the first setup that reads it"
    rows += [_row(indent + 2, f"shared run {name}", s, first) for name, s in shared.items()]
    rows += [_row(indent + 2, nodeid, s) for nodeid, s in tests.items()]
    rows.append(_row(indent, "the host waiting for the lab after its own tests", float(lab["waited"])))  # type: ignore[arg-type]
    return rows


def main(argv: list[str]) -> int:
    """PHASES TIMES TOTAL OUT: TIMES is the record of the pytest that ran the "tests"
    phase, or lane 1's; lane 2's is beside it, "-unit" before its ".json"."""
    phases_path, record_path, total, out = Path(argv[0]), Path(argv[1]), float(argv[2]), Path(argv[3])
    phases = read_phases(phases_path)
    unit_path = record_path.with_name(f"{record_path.stem}-unit{record_path.suffix}")
    records = {
        LANE1 if any(w == LANE1 for w, _s, _rc in phases) else "tests": _read(record_path),
        UNIT: _read(unit_path),
    }
    text = table(phases, records, total)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    sys.stdout.write(text)
    return 0


def _read(path: Path) -> dict[str, object] | None:
    return json.loads(path.read_text()) if path.exists() else None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
