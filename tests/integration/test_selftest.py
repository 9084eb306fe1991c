"""Known answers, for real: throttled loop devices at 40 and 20 MB/s, and the
throttle rule they need given back after a normal run and after a SIGKILL."""

# Over 60 s of make test (69 s in the fresh-clone run of c2486be, 2026-11-29): the known
# answer is measured twice, by the command's function and by the CLI, each through the
# throttle at 40 and 20 MB/s, whose rates take seconds of I/O to show.
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cryptbench.commands import selftest
from cryptbench.machine.throttle import mode, v1_rules, v2_rules
from tests.support.cli import cli
from tests.support.leaks import leftovers, loop_throttles
from tests.support.reliability import count
from tests.support.targets import need_backend, provisioned

pytestmark = pytest.mark.integration


def _needs_throttling() -> None:
    need_backend(selftest.SLOW)


def test_selftest_finds_the_known_answer(target_dir: Path, tmp_path: Path) -> None:
    _needs_throttling()
    result = selftest.run(selftest.SelftestRequest(target=str(target_dir), db=tmp_path / "r.sqlite", seed=3))
    ratios = [c for c in result.checks if c.unit == "ratio"]
    rates = [c for c in result.checks if c.unit == "bytes/s"]
    assert len(ratios) == 2 and len(rates) == 4
    failed = [
        f"{c.what}: {c.measured:.4g} [{c.ci_low}, {c.ci_high}], known {c.expected:.4g}"
        for c in result.checks
        if not c.passed
    ]
    # every failed check whole (pytest shortens a long list to its ends), and the run's status
    assert result.passed, "\n".join([f"run exit {result.run.exit_code}", *failed])
    for c in ratios:
        assert c.measured == pytest.approx(0.50, rel=selftest.RATIO_BAND)
    assert not loop_throttles()


def test_the_throttle_is_on_while_provisioned_and_lifted_after(target_dir: Path) -> None:
    _needs_throttling()
    how = mode()
    with provisioned(target_dir, "throttle-40", 16 << 20) as (_session, t):
        number = (Path("/sys/block") / Path(t.details["loop_device"]).name / "dev").read_text().strip()
        assert how.label in t.details["throttle"]
        if how.version == 1:
            assert set(v1_rules(number).values()) == {40_000_000}
        else:  # v2: in a cgroup of its own, which fio runs in
            assert t.cgroup is not None and v2_rules(number, t.cgroup) == {
                "rbps": 40_000_000,
                "wbps": 40_000_000,
            }
    if how.version == 1:
        assert v1_rules(number) == {}
    else:
        assert not t.cgroup.exists()
    assert not loop_throttles()


def test_cleanup_lifts_the_throttle_after_a_sigkill(target_dir: Path, tmp_path: Path) -> None:
    _needs_throttling()
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "cryptbench", "selftest"),
            *("--target", str(target_dir), "--db", str(tmp_path / "r.sqlite")),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    journal: list[dict[str, object]] = []
    while not any(e.get("kind") == "throttle" for e in journal):
        assert proc.poll() is None and time.monotonic() < deadline, (
            "selftest ended before its throttle was set"
        )
        time.sleep(0.05)
        for f in target_dir.glob("cryptbench/run-*/journal.jsonl"):
            journal = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    # the journal entry comes before the rule: wait until the kernel has the rule itself,
    # so that the kill leaves a throttle for cleanup to lift
    while not loop_throttles():
        assert proc.poll() is None and time.monotonic() < deadline, "the throttle never reached the kernel"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = cli("cleanup", "--target", str(target_dir))
    assert done.returncode == 0, done.stderr
    assert not loop_throttles(), done.stdout
    assert not leftovers(target_dir)
    count("SIGKILLs with a loop device throttled, the throttle then lifted by cleanup")


def test_selftest_cli(target_dir: Path, tmp_path: Path) -> None:
    _needs_throttling()
    proc = cli("selftest", "--target", str(target_dir), "--db", str(tmp_path / "r.sqlite"))
    assert proc.returncode == 0, proc.stderr
    assert "selftest passed" in proc.stderr
    assert proc.stderr.count("pass throttle-") == 6
