"""tests/support/cli.py's in-process command line, which the kernel lab's guest uses for
the commands its tests run to completion: it must answer exactly as the command's own
process does, leave this process's environment and signal handlers as they were, and be
taken only there and only for those commands."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support import cli as support


@pytest.mark.parametrize(
    "args",
    [
        ["suites"],  # a table on stdout, exit 0
        ["--version"],  # argparse's own SystemExit(0)
        ["show", "--no-such-flag"],  # argparse's SystemExit(2), one line on stderr
        ["show", "latest", "--db", "/nonexistent/cryptbench/r.sqlite"],  # the tool's own error
    ],
)
def test_in_process_answers_as_the_process_does(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CRYPTBENCH_LAB", raising=False)
    own = support.cli(*args)  # the command's own process, as cli() starts it off the lab
    here = support.in_process(*args)
    assert (here.returncode, here.stdout, here.stderr) == (own.returncode, own.stdout, own.stderr)
    assert here.stdout or here.stderr  # it said something: a silent pair would pass too


def test_in_process_runs_with_the_environment_given_and_restores_ours(tmp_path: Path) -> None:
    db = tmp_path / "data" / "cryptbench" / "results.sqlite"
    env = {"XDG_DATA_HOME": str(tmp_path / "data"), "PATH": "/usr/bin:/bin"}
    before = dict(support.os.environ)
    done = support.in_process("show", "latest", env=env)
    assert done.returncode == 2
    assert repr(str(db)) in done.stderr  # the default database under the XDG_DATA_HOME given
    assert dict(support.os.environ) == before


def test_in_process_fails_when_the_command_leaves_a_signal_handler_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cryptbench import cli as entry

    def leaves_one(argv: list[str]) -> int:
        support.signal.signal(support.signal.SIGTERM, lambda *_: None)
        return 0

    before = support.signal.getsignal(support.signal.SIGTERM)
    monkeypatch.setattr(entry, "main", leaves_one)
    try:
        with pytest.raises(AssertionError, match="SIGTERM"):
            support.in_process("run")
    finally:
        support.signal.signal(support.signal.SIGTERM, before)


def _recorder(calls: list[tuple[str, ...]]) -> object:
    def run(argv: list[str], **_kw: object) -> subprocess.CompletedProcess[str]:
        calls.append(tuple(argv[3:]))
        return subprocess.CompletedProcess(argv, 0, "", "")

    return run


def test_only_the_guest_and_only_those_commands_skip_the_process(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, ...]] = []
    monkeypatch.setattr(support.subprocess, "run", _recorder(calls))
    monkeypatch.delenv("CRYPTBENCH_LAB", raising=False)
    support.cli("show", "--no-such-flag")
    assert calls == [("show", "--no-such-flag")]  # on the host: a process of its own
    monkeypatch.setenv("CRYPTBENCH_LAB", "guest")
    for name in sorted(support.IN_PROCESS_IN_GUEST):
        assert support.cli(name, "--no-such-flag").returncode == 2  # main() said so, here
    assert calls == [("show", "--no-such-flag")]
    for name in ("selftest", "suites"):  # any command not named is a process of its own
        support.cli(name, "--no-such-flag")
        assert calls[-1] == (name, "--no-such-flag")
