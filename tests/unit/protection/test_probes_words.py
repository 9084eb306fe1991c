"""The names and sizes probes' verdicts with their evidence, word for word: the evidence
is what the protection table prints beside each verdict. The mutation check found the
words of both unguarded (and which of several names or images they quote)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cryptbench.backends.base import Target
from cryptbench.model.vocabulary import Verdict
from cryptbench.protection import probes
from cryptbench.protection.findings import PropertyFinding
from cryptbench.protection.sight import Entry, Sight

S = probes.SIZES  # 1, 4095, 4096, 4097, 100000 bytes


def _mapping(*added: list[int]) -> dict[int, list[int]]:
    return dict(zip(S, added, strict=True))


SIZES_CASES = {
    "exact": (
        {p: [p] for p in S},
        Verdict.SHOWN,
        "a backing file per file, its size a function of it: 1→1, 4095→4095, 4096→4096, 4097→4097, "
        "100000→100000",
        {},
    ),
    "one size": (
        {p: [4096] for p in S},
        Verdict.HIDDEN,
        "every file's backing file has 4096 bytes: 1→4096, 4095→4096, 4096→4096, 4097→4096, 100000→4096",
        {},
    ),
    "blocks": (
        _mapping([4096], [4096], [4096], [8192], [102400]),
        Verdict.BLOCK,
        "a backing file per file, its size rounded to 4096-byte blocks: 1→4096, 4095→4096, 4096→4096, "
        "4097→8192, 100000→102400",
        {"block": 4096},
    ),
    "out of order": (
        _mapping([8192], [4096], [4096], [8192], [102400]),
        Verdict.HIDDEN,
        "backing sizes do not follow the files' sizes: 1→8192, 4095→4096, 4096→4096, 4097→8192, "
        "100000→102400",
        {},
    ),
    "its size plus a header, beside another": (
        {p: [p + 16, 4096] for p in S},
        Verdict.SHOWN,
        "one of each file's backing files is its size plus 16 bytes: 1→17+4096, 4095→4111+4096, "
        "4096→4112+4096, 4097→4113+4096, 100000→100016+4096",
        {"offset": 16},
    ),
    "fixed-size blocks": (
        _mapping([32816, 32816], [32816], [32816, 32816], [32816, 32816], []),
        Verdict.HIDDEN,
        "no backing file of each file's own: all 32816 bytes (fixed-size blocks); 1→32816+32816, "
        "4095→32816, 4096→32816+32816, 4097→32816+32816, 100000→none",
        {},
    ),
    "no one file per file": (
        _mapping([100, 200], [300], [400, 500], [600], [700]),
        Verdict.HIDDEN,
        "no backing file of each file's own: no one file per file; 1→100+200, 4095→300, 4096→400+500, "
        "4097→600, 100000→700",
        {},
    ),
}


@pytest.mark.parametrize("case", list(SIZES_CASES))
def test_each_sizes_verdict_with_its_evidence_and_detail(case: str) -> None:
    mapping, verdict, evidence, extra = SIZES_CASES[case]
    mapping_json = {str(p): v for p, v in mapping.items()}
    assert probes.decide_sizes(mapping) == PropertyFinding(
        verdict, evidence, {"mapping": mapping_json, **extra}
    )


TOKEN = "cbnamea1b2c3"


def _target(tmp_path: Path, *images: bytes) -> Target:
    """A target whose backing is its directory, or image files with these bytes."""
    tmp_path.mkdir(exist_ok=True)
    backing = []
    for i, data in enumerate(images):
        (tmp_path / f"img{i}").write_bytes(data)
        backing.append(tmp_path / f"img{i}")
    return Target("t", "t", True, None, tmp_path, tuple(backing) or (tmp_path,))


def _sight(*names: str, how: str = "directory") -> Sight:
    return Sight(how, {n: Entry(False, 1) for n in names})


def test_a_luks_container_hides_the_names_with_the_contents(tmp_path: Path) -> None:
    found = probes._named(Sight("LUKS container", None, "no filesystem in sight"), _target(tmp_path), TOKEN)
    assert found == PropertyFinding(
        Verdict.HIDDEN, "LUKS container: the names are in its ciphertext, with the contents"
    )


def test_a_name_in_the_backings_names_is_quoted_the_first_in_order(tmp_path: Path) -> None:
    sight = _sight(f"z/{TOKEN}", "other", f"a/{TOKEN}.x")
    assert probes._named(sight, _target(tmp_path), TOKEN) == PropertyFinding(
        Verdict.SHOWN, f"the name appears in the backing's names: a/{TOKEN}.x"
    )


def test_a_name_in_an_images_bytes_names_that_image(tmp_path: Path) -> None:
    target = _target(tmp_path, b"nothing here", b"xx" + TOKEN.encode() + b"yy", TOKEN.encode())
    assert probes._named(_sight("lost+found", how="ext4 image"), target, TOKEN) == PropertyFinding(
        Verdict.SHOWN, "the name appears in the bytes of img1"
    )


def test_a_hidden_name_says_where_it_was_looked_for(tmp_path: Path) -> None:
    unread = Sight("unreadable image", None, "no filesystem it knows")
    assert probes._named(unread, _target(tmp_path / "unread", b"noise"), TOKEN) == PropertyFinding(
        Verdict.HIDDEN, "unreadable image: the name is nowhere in its bytes (no filesystem it knows)"
    )
    assert probes._named(_sight("a", "b"), _target(tmp_path / "image", b"noise"), TOKEN) == PropertyFinding(
        Verdict.HIDDEN, "the name is in none of the backing's names or bytes (2 entries)"
    )
    assert probes._named(_sight("a", "b", "c"), _target(tmp_path), TOKEN) == PropertyFinding(
        Verdict.HIDDEN, "the name is in none of the backing's names (3 entries)"
    )
