"""Every `cryptbench …` line the README and docs/usage.md show in their command blocks
parses as the command line parser takes it: a renamed flag or command left in the docs
fails here, before a reader copies it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from cryptbench import cli
from tests.support.paths import REPO

ROOT = REPO
PAGES = [ROOT / "README.md", ROOT / "docs" / "usage.md"]
FENCE = re.compile(r"^```\n(.*?)^```", re.M | re.S)


def commands(page: Path) -> list[str]:
    """The page's command lines (a comment after `#` dropped)."""
    lines = [line for block in FENCE.findall(page.read_text()) for line in block.splitlines()]
    return [line.split(" # ")[0].strip() for line in lines if line.startswith("cryptbench ")]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_page_shows_commands(page: Path) -> None:
    assert len(commands(page)) >= 10


@pytest.mark.parametrize("line", [line for page in PAGES for line in commands(page)], ids=lambda s: s[:60])
def test_each_shown_command_parses(line: str) -> None:
    args = cli._parser().parse_args(shlex.split(line)[1:])
    assert args.command == shlex.split(line)[1]


def test_a_flag_that_does_not_exist_is_caught() -> None:
    with pytest.raises(SystemExit) as refused:
        cli._parser().parse_args(["run", "--no-such-flag"])
    assert refused.value.code == 2
