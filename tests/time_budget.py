"""Where `make test`'s time went: one table at its end, kept in build/test-times.txt.

make test times its phases (set-up, lint and types, tests) with scripts/timed.sh into
a tab-separated file. The host's pytest writes each test's seconds, and the kernel
lab's own accounting (its boot, each shared run, each test, and how long the host
waited for it), as JSON to the file CRYPTBENCH_TEST_TIMES names. Only the outermost
pytest writes: configure() takes the name out of the environment, so a pytest that a
test starts does not overwrite it. `python -m tests.time_budget` joins both into the
table (docs/kernel-lab.md, "Beside the host's tests").
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from tests import kernel_lab

ENV = "CRYPTBENCH_TEST_TIMES"
SLOWEST_MODULES = 10  # integration modules named in the table; the rest are summed
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
    lab = config.stash.get(kernel_lab.LAB_RUN, None)
    record = {
        "wall": time.monotonic() - config.stash[STARTED],
        "tests": dict(_SECONDS),
        "lab": None
        if lab is None or lab.unavailable
        else {
            "summary": lab.summary(),
            "seconds": lab.seconds,
            "waited": lab.waited,
            "shared": lab.shared,
            "tests": {n: o.seconds for n, o in lab.outcomes.items()},
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


def table(phases: list[tuple[str, float, int]], record: dict[str, object] | None, total: float) -> str:
    """The table: each phase, the tests split into unit, integration (its slowest
    modules) and the kernel lab (boot, shared runs, each test), and the whole."""
    lines = ["Where make test's time went, in seconds (kept in build/test-times.txt)"]
    for what, seconds, rc in phases:
        lines.append(_row(2, what, seconds, "" if rc == 0 else f"exit {rc}"))
        if what != "tests" or record is None:
            continue
        tests: dict[str, float] = record["tests"]  # type: ignore[assignment]
        lines.append(_row(4, "pytest's own wall clock", float(record["wall"])))  # type: ignore[arg-type]
        modules: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        for nodeid, s in tests.items():
            module = nodeid.split("::", 1)[0]
            kind = module.split("/")[1] if module.count("/") >= 2 else "kernel lab"
            modules[kind][module] += s
        for kind in ("unit", "integration"):
            got = modules.get(kind, {})
            count = sum(1 for n in tests if n.startswith(f"tests/{kind}/"))
            lines.append(_row(4, f"{kind} ({count} tests, {len(got)} modules)", sum(got.values())))
            if kind == "integration":
                slowest = sorted(got.items(), key=lambda m: -m[1])
                for module, s in slowest[:SLOWEST_MODULES]:
                    lines.append(_row(6, module, s))
                if len(slowest) > SLOWEST_MODULES:
                    rest = slowest[SLOWEST_MODULES:]
                    lines.append(_row(6, f"the other {len(rest)} modules", sum(s for _m, s in rest)))
        lines.extend(_lab_rows(record.get("lab")))  # type: ignore[arg-type]
    lines.append(_row(2, "in all", total))
    return "\n".join(lines) + "\n"


def _lab_rows(lab: dict[str, object] | None) -> list[str]:
    if lab is None:
        return [_row(4, "kernel lab: did not run", 0)]
    tests: dict[str, float] = lab["tests"]  # type: ignore[assignment]
    shared: dict[str, float] = lab["shared"]  # type: ignore[assignment]
    seconds = float(lab["seconds"])  # type: ignore[arg-type]
    rows = [
        _row(4, f"kernel lab, beside the host's tests ({len(tests)} tests)", seconds, "its own wall clock"),
        _row(6, "KVM probe, boot and the guest's set-up", seconds - sum(tests.values())),
    ]
    rows += [
        _row(6, f"shared run {name}", s, "inside the first setup that reads it") for name, s in shared.items()
    ]
    rows += [_row(6, nodeid, s) for nodeid, s in tests.items()]
    rows.append(_row(4, "the host waiting for the lab after its own tests", float(lab["waited"])))  # type: ignore[arg-type]
    return rows


def main(argv: list[str]) -> int:
    phases_path, record_path, total, out = Path(argv[0]), Path(argv[1]), float(argv[2]), Path(argv[3])
    record = json.loads(record_path.read_text()) if record_path.exists() else None
    text = table(read_phases(phases_path), record, total)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
