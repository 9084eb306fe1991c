"""make's set-up steps print one line each; apt's and pip's output goes to a log,
shown (its last lines and its path) only when a step fails."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.paths import REPO

QUIETLY = REPO / "scripts" / "quietly.sh"


def _step(log: Path, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(QUIETLY), str(log), "installing things", *command], capture_output=True, text=True
    )


def test_a_step_that_succeeds_prints_one_line_and_logs_the_rest(tmp_path: Path) -> None:
    log = tmp_path / "build" / "setup.log"
    done = _step(log, "sh", "-c", "echo apt says a lot; echo pip warns >&2")
    assert done.returncode == 0
    assert done.stdout == f"installing things (log: {log})\n" and done.stderr == ""
    assert "apt says a lot\npip warns\n" in log.read_text()


def test_a_step_that_fails_shows_the_logs_last_lines_and_its_path(tmp_path: Path) -> None:
    log = tmp_path / "setup.log"
    lines = "; ".join(f"echo line {i}" for i in range(40))
    failed = _step(log, "sh", "-c", f"{lines}; echo E: Unable to locate package nope >&2; exit 100")
    assert failed.returncode == 100
    assert "installing things failed (exit 100)" in failed.stderr
    assert "E: Unable to locate package nope" in failed.stderr and "line 39" in failed.stderr
    assert "line 0\n" not in failed.stderr  # the last lines, not the whole log
    assert failed.stderr.rstrip().endswith(f"the whole log: {log}")


def test_a_notice_on_fd_3_reaches_the_user(tmp_path: Path) -> None:
    # install-system-deps' "not root; missing packages" must not vanish into the log
    done = _step(tmp_path / "setup.log", "sh", "-c", "echo for the log; echo missing: fio >&3")
    assert done.returncode == 0 and done.stderr == "missing: fio\n"


def test_the_makefile_runs_every_install_through_it() -> None:
    makefile = (REPO / "Makefile").read_text()
    for line in makefile.splitlines():
        if line.startswith("#"):
            continue
        if "install-system-deps.sh" in line or "pip install" in line or "-m venv" in line:
            assert "$(QUIETLY)" in line or line.strip().startswith("$(VENV)/bin/pip"), line
    assert '"installing Python packages into $(VENV)" \\' in makefile
