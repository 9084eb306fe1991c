"""run --existing's answer sentence (report/sentences._decryption): what decryption costs
reads on the user's volume, said as its interval lets it be said, in the tool's one
convention (a change in speed, negative where the mapping reads slower)."""

from __future__ import annotations

import pytest

from cryptbench.model.ranking_section import RankEntry
from cryptbench.report.sentences import _decryption

WHAT = "your volume luks-home (aes-xts-plain64, 512-bit key)"
BASE = "its raw device nvme0n1p3"
AGAINST = "against its raw device nvme0n1p3, the same sectors read through each, over 2 read workloads"


def said(ratio: float, low: float | None, high: float | None, margin: float | None = 0.03) -> str:
    return _decryption(f"on {WHAT}", RankEntry("luks-home", ratio, low, high, 2), AGAINST, BASE, margin)


def test_a_cost_whose_interval_excludes_no_change_is_said_as_the_cost() -> None:
    assert said(0.56, 0.38, 0.83) == f"Decryption's cost to reads on {WHAT}: -44% [-62, -17] {AGAINST}."


def test_an_interval_within_the_margin_is_nothing_measurable() -> None:
    assert said(0.99, 0.98, 1.02) == (
        f"Decryption costs reads on {WHAT} nothing measurable: -1% [-2, +2], within ±3%, {AGAINST}."
    )
    # the same interval with no margin asked for is only unclear
    assert said(0.99, 0.98, 1.02, margin=None).startswith(
        f"What decryption costs reads on {WHAT} is not clear"
    )


def test_reads_faster_through_the_mapping_are_said_so_with_the_diagnosis() -> None:
    assert said(1.2, 1.1, 1.3) == (
        f"Reads on {WHAT} ran faster than {BASE}: +20% [+10, +30] {AGAINST}; the diagnosis says why."
    )


@pytest.mark.parametrize(
    ("low", "high"),
    [(0.5, 1.1), (None, None), (0.5, 1.0), (1.0, 1.5)],
    ids=["across", "n=1", "to-1", "from-1"],
)
def test_an_interval_that_holds_no_change_or_none_is_not_clear_yet(
    low: float | None, high: float | None
) -> None:
    text = said(0.9, low, high)
    assert text.startswith(f"What decryption costs reads on {WHAT} is not clear yet: -10% ")
    assert text.endswith(
        f"{AGAINST}, an interval that holds no change "
        "(more trials narrow it: --repeats, or adaptive repetition)."
    )
