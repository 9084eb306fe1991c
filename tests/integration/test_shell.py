"""Shell completion for bash, zsh and fish and the man page, generated from the parser by
scripts/shell_integration.py (which `make setup` runs), loaded by the real shells and
read by the real man: each offers what the command line has, and nothing it lacks."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cryptbench.cli import COMMANDS

# Nothing of the machine but its shells and man: it runs in make test's lane 2, beside lane 1.
pytestmark = [pytest.mark.integration, pytest.mark.beside]

SCRIPT = Path(__file__).parent.parent.parent / "scripts" / "shell_integration.py"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("shell")
    done = subprocess.run([sys.executable, str(SCRIPT), str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "_cryptbench",
        "cryptbench.1",
        "cryptbench.bash",
        "cryptbench.fish",
    ]
    return out


def _need(program: str) -> str:
    found = shutil.which(program)
    if found is None:
        # make test installs it (scripts/install-system-deps.sh --test): missing is a broken install
        pytest.fail(f"{program} is not installed: make test installs it")
    return found


def _bash(made: Path, *words: str) -> list[str]:
    line = " ".join(words)
    script = (
        f"source {made / 'cryptbench.bash'}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; "
        f'COMP_LINE="{line}"; COMP_POINT=${{#COMP_LINE}}; _shtab_cryptbench; '
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run([_need("bash"), "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_bash_completes_commands_and_their_flags(made: Path) -> None:
    assert _bash(made, "cryptbench", "") == list(COMMANDS)
    assert _bash(made, "cryptbench", "ru") == ["run"]
    assert "--backends" in _bash(made, "cryptbench", "run", "--back")
    assert _bash(made, "cryptbench", "run", "--io-mode", "") == ["auto", "direct", "buffered"]
    assert _bash(made, "cryptbench", "run", "--nope") == []  # nothing the parser lacks


def test_zsh_loads_its_completion(made: Path) -> None:
    zsh = _need("zsh")
    # compinit with the generated file on fpath: the function is defined and names every command
    script = (
        f"fpath=({made} $fpath); autoload -Uz compinit; compinit -u; autoload -Uz _cryptbench; "
        "whence -w _cryptbench"
    )
    done = subprocess.run([zsh, "-f", "-c", script], capture_output=True, text=True)
    assert done.returncode == 0 and "_cryptbench: function" in done.stdout, done.stdout + done.stderr
    text = (made / "_cryptbench").read_text()
    assert all(f"{name}" in text for name in COMMANDS) and "--backends" in text


def test_fish_completes_commands_and_their_flags(made: Path) -> None:
    fish = _need("fish")
    env = {**os.environ, "HOME": str(made), "XDG_CONFIG_HOME": str(made / "config")}

    def complete(line: str) -> list[str]:
        script = f"source {made / 'cryptbench.fish'}; complete -C '{line}'"
        done = subprocess.run([fish, "--no-config", "-c", script], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        return [row.split("\t")[0] for row in done.stdout.splitlines()]

    assert set(COMMANDS) <= set(complete("cryptbench "))
    assert "--backends" in complete("cryptbench run --back")
    assert "--summary-csv" in complete("cryptbench report --sum")
    assert "--backends" not in complete("cryptbench show --back")  # each command its own flags


def test_the_man_page_reads_in_man(made: Path) -> None:
    man = _need("man")
    env = {**os.environ, "MANWIDTH": "100", "MAN_KEEP_FORMATTING": "0"}
    done = subprocess.run([man, "-l", str(made / "cryptbench.1")], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    for name in COMMANDS:
        assert name in text
    assert "--backends" in text and "exit status" in text.lower()
