"""docs/usage.md's table of backends and docs/backends.md's agree with the registry that
`cryptbench backends` lists: every backend named once in each, none that does not exist,
and each one's baseline as the registry has it. A new backend left out of either table,
or a renamed one left in, fails here.

A table's first column names backends in backticks: a name; `-suffix` for the first
name's stem with another suffix (`luks-aes256-noqueue`, `-noreadq`); `KIND` for each
image kind. Its last column gives one baseline for the row, or one per name, `—` for
none."""

from __future__ import annotations

import re

import pytest

from cryptbench.backends import REGISTRY
from cryptbench.backends.images import KINDS
from tests.support.paths import REPO

ROOT = REPO
TABLES = {
    "docs/usage.md": "| name | what | baseline |",
    "docs/backends.md": "| backend | encrypts | cipher | baseline |",
}
NONE = "—"


def rows(text: str, header: str) -> list[list[str]]:
    """The table's rows under `header`, as cells."""
    lines = text[text.index(header) :].splitlines()
    out = []
    for line in lines[2:]:  # past the header and its rule
        if not line.startswith("|"):
            break
        out.append([c.strip() for c in line.strip().strip("|").split("|")])
    return out


def expand(token: str, stem: str) -> list[str]:
    """A backticked token as the backend names it stands for."""
    name = stem + token if token.startswith("-") else token
    return [name.replace("KIND", k) for k in KINDS] if "KIND" in name else [name]


def table(path: str) -> dict[str, str | None]:
    """Each backend the table names, with the baseline it gives (None: none)."""
    found: dict[str, str | None] = {}
    for row in rows((ROOT / path).read_text(), TABLES[path]):
        tokens = re.findall(r"`([^`]+)`", row[0])
        assert tokens, f"{path}: a row names no backend in backticks: {row}"
        given = [None if g.strip() == NONE else g.strip().strip("`") for g in row[-1].split(",")]
        if len(given) == 1:
            given *= len(tokens)
        assert len(given) == len(tokens), f"{path}: a baseline for each name, or one for all: {row}"
        stem = tokens[0].rsplit("-", 1)[0]
        for token, base in zip(tokens, given, strict=True):
            for name in expand(token, stem):
                kind = next((k for k in KINDS if name.startswith(f"image-{k}")), "")
                assert name not in found, f"{path} names {name} twice"
                found[name] = base.replace("KIND", kind) if base else None
    return found


@pytest.mark.parametrize("path", sorted(TABLES))
def test_every_backend_is_in_the_table_with_its_baseline(path: str) -> None:
    listed = table(path)
    assert sorted(set(REGISTRY) - set(listed)) == [], f"missing from {path}"
    assert sorted(set(listed) - set(REGISTRY)) == [], f"in {path} but no backend has that name"
    wrong = {n: (b, REGISTRY[n].baseline) for n, b in listed.items() if b != REGISTRY[n].baseline}
    assert wrong == {}, f"{path}: (the table's baseline, the registry's)"


def test_the_parser_reads_each_convention() -> None:
    stem = "luks-aes256"
    assert expand("-noreadq", stem) + expand("-hmac-nojournal", stem) == [
        "luks-aes256-noreadq",
        "luks-aes256-hmac-nojournal",
    ]
    assert expand("image-KIND-aes128", "image-KIND") == [f"image-{k}-aes128" for k in KINDS]
    text = "| a | b |\n|---|---|\n| `x`, `y` | —, `x` |\n| `z` | `x` |\n\nafter"
    assert rows(text, "| a | b |") == [["`x`, `y`", "—, `x`"], ["`z`", "`x`"]]
