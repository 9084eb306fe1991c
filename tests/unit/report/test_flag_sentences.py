"""The flag trial's answer (report/flag_sentences.py): the set that read fastest against
the volume's own flags, with its interval, and the lines to set it only where it is
faster beyond doubt; the volume's own set where every other is slower; else that the run
cannot tell them apart. Each set is held to the volume's own flags directly (held_to,
stood in for here with the ratios it would give)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cryptbench.model.ranking_section import NotRanked, RankEntry, RankingSection
from cryptbench.model.vocabulary import Medium
from cryptbench.report import flag_sentences
from cryptbench.report.flag_sentences import flag_answer
from cryptbench.stats.estimates import Ratio

SETS = [
    {"target": "flags+no_read_workqueue", "toggled": "no_read_workqueue", "added": True,
     "flags": ["no_read_workqueue"]},
    {"target": "flags+same_cpu_crypt", "toggled": "same_cpu_crypt", "added": True,
     "flags": ["same_cpu_crypt"]},
]  # fmt: skip
EXISTING = {
    "targets": {"mapping": "home", "raw": "raw-nvme0n1p3"},
    "flags": {
        "own": [], "options": ["allow_discards"], "luks2": True, "sets": SETS, "not_tried": [],
        "crypttab": "home UUID=4f9c none luks,discard",
    },
}  # fmt: skip


def _answer(
    monkeypatch: pytest.MonkeyPatch, ratios: dict[str, Ratio], not_ranked: tuple[NotRanked, ...] = ()
) -> str:
    names = ["home", *ratios]
    entries = [RankEntry(t, 0.5, 0.4, 0.6, 2) for t in names if t not in {x.target for x in not_ranked}]
    section = RankingSection(
        None, Medium.DEVICE, "raw-nvme0n1p3", ["a", "b"], entries, [], [], list(not_ranked)
    )
    monkeypatch.setattr(flag_sentences, "held_to", lambda doc, workloads, t, other: ratios[t])
    return "\n".join(flag_answer(SimpleNamespace(ranking=[section]), EXISTING))  # type: ignore[arg-type]


def test_a_set_faster_beyond_doubt_is_named_with_its_interval_and_the_lines_to_set_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = _answer(
        monkeypatch,
        {"flags+no_read_workqueue": Ratio(1.25, 1.1, 1.4), "flags+same_cpu_crypt": Ratio(0.97, 0.9, 1.05)},
    )
    assert text.splitlines() == [
        "With no_read_workqueue added, your volume home read fastest: +25% [+10, +40] against its own flags "
        "(none), over 2 read workloads (no_read_workqueue added +25% [+10, +40]; same_cpu_crypt added "
        "-3% [-10, +5]).",
        "To set it (cryptbench runs none of these):",
        "  now: cryptsetup refresh --allow-discards --perf-no_read_workqueue home",
        "  for good (kept in the LUKS2 header): cryptsetup refresh --persistent --allow-discards "
        "--perf-no_read_workqueue home",
        "  in /etc/crypttab: home UUID=4f9c none luks,discard,no-read-workqueue",
    ]


def test_the_volumes_own_flags_are_named_where_every_other_set_is_slower(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = _answer(
        monkeypatch,
        {"flags+no_read_workqueue": Ratio(0.8, 0.7, 0.9), "flags+same_cpu_crypt": Ratio(0.9, 0.85, 0.99)},
    )
    assert text == (
        "Your volume home's own flags (none) read fastest: every other set read slower, over 2 read "
        "workloads (no_read_workqueue added -20% [-30, -10]; same_cpu_crypt added -10% [-15, -1])."
    )


@pytest.mark.parametrize("interval", [(0.9, 1.4), (None, None), (1.0, 1.3)], ids=["across", "none", "from-1"])
def test_an_interval_that_holds_no_change_tells_no_set_apart_and_prints_no_lines(
    monkeypatch: pytest.MonkeyPatch, interval: tuple[float | None, float | None]
) -> None:
    text = _answer(
        monkeypatch,
        {"flags+no_read_workqueue": Ratio(1.2, *interval), "flags+same_cpu_crypt": Ratio(0.9, 0.8, 0.95)},
    )
    assert text.startswith(
        "No set of flags read your volume home faster beyond doubt than its own (none), over 2 read "
        "workloads: no_read_workqueue added +20% "
    )
    assert "cryptsetup" not in text


def test_a_set_not_ranked_is_said_with_why(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _answer(
        monkeypatch,
        {"flags+no_read_workqueue": Ratio(0.8, 0.7, 0.9)},
        (NotRanked("flags+same_cpu_crypt", "trials failed at a"),),
    )
    assert text.endswith("With same_cpu_crypt added, home was not ranked: trials failed at a.")
    assert "own flags (none) read fastest" in text


def test_no_answer_without_a_flag_trial() -> None:
    assert flag_answer(SimpleNamespace(ranking=[]), {"targets": {"mapping": "home"}}) == []  # type: ignore[arg-type]
