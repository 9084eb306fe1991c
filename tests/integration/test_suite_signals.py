"""The test suite itself stopped by SIGTERM, as a CI job's time limit or a session's end
stops it: a test holding a FUSE target up, and the kernel lab with its qemu running,
must each leave nothing behind (conftest.py turns SIGTERM into Ctrl-C's unwinding)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.harness.held_up import SAYS
from tests.support import kernel_lab
from tests.support.cli import wait_for
from tests.support.leaks import leftovers
from tests.support.targets import need_backend, requires_root

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parent.parent.parent
VICTIMS = "tests/harness/held_up.py"
LAB_DIRS = Path("/var/tmp")  # where tests/support/kernel_lab.py makes its working directory
INTERRUPTED = 2  # pytest's exit status when stopped (KeyboardInterrupt)


def _pytest(*nodeids: str, env: dict[str, str], flags: tuple[str, ...] = ()) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=", "-q", *flags, *nodeids],
        cwd=REPO,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@requires_root
def test_sigterm_unwinds_a_test_holding_a_target(tmp_path: Path) -> None:
    need_backend("gocryptfs")
    says = tmp_path / "says"
    proc = _pytest(f"{VICTIMS}::test_holds_a_fuse_target_up", env={SAYS: str(says)})
    wait_for(says.exists, proc, "the victim's target", timeout=120)
    held = Path(says.read_text())
    up = leftovers(held)
    assert any(m.startswith("mount ") for m in up) and any("gocryptfs" in m for m in up), up
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == INTERRUPTED, out[-3000:]
    assert leftovers(held) == [], out[-3000:]
    assert not held.exists()  # the leak check found it clean and removed it


@requires_root
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_a_run_in_the_suites_process_stops_the_suite(tmp_path: Path, sig: signal.Signals) -> None:
    """Tests run cryptbench in pytest's own process, and its handler takes SIGINT and
    SIGTERM there: the run tears down and returns 128+sig. The suite must stop after that
    test too (its next test never runs), not go on as if only the run was meant."""
    says = tmp_path / "says"
    victims = (f"{VICTIMS}::test_runs_cryptbench_in_this_process", f"{VICTIMS}::test_comes_after_the_run")
    # -s: the run's phases reach the output, so a run that never provisions says where it stood
    proc = _pytest(*victims, env={SAYS: str(says)}, flags=("-s",))
    wait_for(says.exists, proc, "the victim's run", timeout=120)
    held = Path(says.read_text())

    def provisioned() -> bool:
        return any((held / "cryptbench").glob("run-*/targets"))

    # A second alone, but CI once saw over 120 s with the lab and lane 2 beside it; the wait
    # ends as soon as the targets are there, so a long limit costs only a failing run.
    wait_for(provisioned, proc, "the run's targets", timeout=600)
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == INTERRUPTED, out[-3000:]
    assert says.with_suffix(".code").read_text() == str(128 + sig), out[-3000:]  # the run was stopped
    assert not says.with_suffix(".after").exists(), out[-3000:]  # and the suite after it
    assert f"{sig.name} arrived while a test ran cryptbench in this process" in out
    assert leftovers(held) == [], out[-3000:]


def _lab_qemus() -> dict[int, str]:
    """qemu processes of a kernel lab, by pid: their command line names its directory."""
    found = {}
    for p in psutil.process_iter(["name", "cmdline", "status"]):
        cmd = " ".join(p.info["cmdline"] or [])
        lab = "qemu-system" in (p.info["name"] or "") + cmd and "cryptbench-lab-" in cmd
        if lab and p.info["status"] != psutil.STATUS_ZOMBIE:
            found[p.pid] = cmd
    return found


def test_sigterm_takes_the_kernel_lab_down() -> None:
    kernel_lab.need_lab()
    before, dirs = set(_lab_qemus()), set(LAB_DIRS.glob("cryptbench-lab-*"))
    # TCG at once: the KVM probe would only delay the boot this test stops
    proc = _pytest(f"{VICTIMS}::test_holds_the_kernel_lab_up", env={"CRYPTBENCH_LAB_ACCEL": "tcg"})
    wait_for(lambda: set(_lab_qemus()) - before, proc, "the lab's qemu", timeout=120)
    qemus = _lab_qemus()
    mine = set(qemus) - before
    # its own directory, named on its qemu's command line: the suite's own lab may make
    # one of its kernels' meanwhile, which is not this victim's to remove
    named = re.compile(re.escape(str(LAB_DIRS / "cryptbench-lab-")) + r"[^\s,/]+")
    scratch = {Path(d) for p in mine for d in named.findall(qemus[p])} - dirs
    time.sleep(2)  # booting
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == INTERRUPTED, out[-3000:]
    assert not set(_lab_qemus()) & mine, out[-3000:]
    assert scratch and not [p for p in scratch if p.exists()], (scratch, out[-3000:])
