"""Every command's --help lists its exit statuses, as hyperfine's and fio's users expect."""

from __future__ import annotations

import io
from contextlib import redirect_stdout

import pytest

from cryptbench import cli


def _help(*argv: str) -> str:
    out = io.StringIO()
    with redirect_stdout(out), pytest.raises(SystemExit) as done:
        cli.main([*argv, "--help"])
    assert done.value.code == 0
    return out.getvalue()


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_every_command_lists_its_exit_statuses(command: str) -> None:
    text = _help(command)
    tail = text[text.index("exit status:") :].splitlines()
    assert [line.split()[0] for line in tail[1:]] == ["0", "1", "2", "130,", "141"]
    one = getattr(cli.COMMANDS[command], "EXIT_ONE", cli.EXIT_ONE)
    assert f"  1         {one}" in tail


def test_the_tool_itself_lists_them_and_a_gate_says_what_1_means() -> None:
    assert "exit status:" in _help()
    assert "1         a gate failed" in _help("check")
    assert "1         some trials failed" in _help("run")
