"""The backend and app tables users read (docs/usage.md, docs/backends.md) and what
`cryptbench backends` lists are held to the registries: a backend or app added to the
code without its rows, or a row left behind by one removed, fails here. So does a
userspace cipher a backend names that `cipher/userspace.CASES` cannot time (its
ceiling would otherwise come out unknown without a word)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cryptbench.backends import REGISTRY
from cryptbench.cipher import ceilings, userspace
from cryptbench.commands import backends as backends_cmd
from cryptbench.engines.apps import APPS
from tests.support.paths import REPO

ROOT = REPO
USAGE = ROOT / "docs" / "usage.md"
BACKENDS_DOC = ROOT / "docs" / "backends.md"
# the disk image kinds that `image-KIND-…` stands for in the tables
KINDS = sorted(n.removeprefix("image-") for n in REGISTRY if re.fullmatch(r"image-[a-z0-9]+", n))


def table(path: Path, header: str) -> list[list[str]]:
    """The rows (cells, stripped) of the Markdown table whose header line starts with
    `header`, in `path`."""
    lines = path.read_text().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(header)]
    assert len(starts) == 1, f"{path.name}: {len(starts)} tables start with {header!r}"
    rows = []
    for line in lines[starts[0] + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
    return rows


def names(cell: str) -> list[str]:
    """The backend names a table's first cell stands for: each name, `-suffix` as short
    for the first name's stem with that suffix (`luks-aes256-noqueue`, `-noreadq`), and
    `image-KIND-…` for every image kind. Backticks are optional (the ceiling table has
    none); `/` and `,` separate."""
    found: list[str] = []
    stem = None
    for part in re.split(r"\s*[,/]\s*", cell.replace("`", "")):
        if not part:
            continue
        if part.startswith("-"):
            assert stem is not None, f"{cell!r}: a suffix before any name"
            part = stem + part
        else:
            stem = part.rsplit("-", 1)[0]
        if "KIND" in part:
            found += [part.replace("KIND", k) for k in KINDS]
        else:
            found.append(part)
    return found


def test_the_name_reader_expands_the_tables_shorthands() -> None:
    assert names("`luks-aes256-noqueue`, `-noreadq`, `-hmac-nojournal`") == [
        "luks-aes256-noqueue",
        "luks-aes256-noreadq",
        "luks-aes256-hmac-nojournal",
    ]
    assert names("luks-aes128 / -aes256") == ["luks-aes128", "luks-aes256"]
    assert "image-qcow2-aes256" in names("`image-KIND-aes128`, `image-KIND-aes256`")
    assert KINDS == ["qcow2", "raw", "sparse"]


def _listed(path: Path, header: str) -> list[str]:
    return [n for row in table(path, header) for n in names(row[0])]


def _baselines(path: Path, header: str, column: int) -> dict[str, str | None]:
    """Each backend's baseline as a table writes it: one cell for the row, or one per
    name, in order, separated by commas; — for none."""
    out: dict[str, str | None] = {}
    for row in table(path, header):
        these = names(row[0])
        cells = [c.strip().strip("`") for c in row[column].split(",")]
        if len(cells) == 1:
            cells *= len(these)
        assert len(cells) == len(these), row
        for name, cell in zip(these, cells, strict=True):
            if "KIND" in cell:
                cell = cell.replace("KIND", name.split("-")[1])
            out[name] = None if cell == "—" else cell
    return out


@pytest.mark.parametrize(
    ("path", "header"),
    [(USAGE, "| name | what | baseline |"), (BACKENDS_DOC, "| backend | encrypts | cipher | baseline |")],
    ids=["docs/usage.md", "docs/backends.md"],
)
def test_every_backend_has_its_row_and_every_row_a_backend(path: Path, header: str) -> None:
    listed = _listed(path, header)
    assert sorted(listed) == sorted(set(listed)), f"{path.name}: a backend in two rows"
    assert set(REGISTRY) - set(listed) == set(), f"{path.name}: backends without a row"
    assert set(listed) - set(REGISTRY) == set(), f"{path.name}: rows of no backend"


@pytest.mark.parametrize(
    ("path", "header", "column"),
    [
        (USAGE, "| name | what | baseline |", 2),
        (BACKENDS_DOC, "| backend | encrypts | cipher | baseline |", 3),
    ],
    ids=["docs/usage.md", "docs/backends.md"],
)
def test_each_row_names_the_backends_own_baseline(path: Path, header: str, column: int) -> None:
    written = _baselines(path, header, column)
    assert {n: b.baseline for n, b in REGISTRY.items()} == written


def test_every_encrypted_backend_has_its_ceiling_row() -> None:
    """docs/backends.md's ceiling table: the case each encrypted layer is held to."""
    listed = _listed(BACKENDS_DOC, "| backend | where | case measured |")
    with_cipher = {n for n, b in REGISTRY.items() if b.cipher_use is not None}
    assert set(listed) == with_cipher


def test_every_userspace_cipher_a_backend_names_can_be_timed() -> None:
    cases = {(c.name, c.unit) for c in userspace.CASES}
    for name, b in REGISTRY.items():
        use = b.cipher_use
        if use is not None and use.where == "userspace":
            assert ceilings.openssl_case(use) in cases, (
                f"{name}'s cipher {use.algorithm} at {use.unit} B has no case in cipher/userspace.CASES: "
                "its ceiling would be unknown"
            )


def test_backends_lists_every_backend() -> None:
    listed = [row["name"] for row in backends_cmd.run()]
    assert sorted(listed) == sorted(REGISTRY)


def test_every_app_has_its_row_and_every_row_an_app() -> None:
    listed = [row[0].strip("`") for row in table(USAGE, "| app | what one trial does |")]
    assert sorted(listed) == sorted(APPS)
