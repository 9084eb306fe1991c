"""The tuning you can paste (analysis/tuning.py), over the luks-tuning run the kernel lab
recorded (tests/fixtures/documents/luks-tuning-lab.json; TCG: behaviour, not speed),
and that run with its comparisons changed to cross each boundary."""

from __future__ import annotations

import copy
import io
import json
from typing import Any

import pytest
from rich.console import Console

from cryptbench.analysis import tuning
from cryptbench.model.result import Document
from cryptbench.report import answer_console
from tests.support.paths import TESTS

DOC_DIR = TESTS / "fixtures" / "documents"
DOC = json.loads((DOC_DIR / "luks-tuning-lab.json").read_text())


def _doc(**changes: tuple[float, float, float]) -> Document:
    """The recorded run with every variant comparison of the named targets (dashes as
    underscores) set to (ratio, ci_low, ci_high) at its first workload, the rest left."""
    raw: dict[str, Any] = copy.deepcopy(DOC)
    for target, (ratio, low, high) in changes.items():
        name = target.replace("_", "-")
        for c in raw["comparisons"]:
            if c["target"] == name and c["kind"] == "variant":
                c.update(ratio=ratio, ci_low=low, ci_high=high)
                break
    return Document.from_json(raw)


def _only(doc: Document, keep: str) -> Document:
    """Every variant but `keep` neutral: no clear change anywhere."""
    raw = doc.to_json()
    for c in raw["comparisons"]:
        if c["kind"] == "variant" and c["target"] != keep:
            c.update(ratio=1.0, ci_low=0.9, ci_high=1.1)
    return Document.from_json(raw)


def test_the_recorded_run_pastes_its_cheapest_open_time_option() -> None:
    advice = tuning.advise(Document.from_json(DOC))
    assert advice is not None and advice.parent == "luks-aes256"
    assert advice.best is not None and advice.best.target == "luks-aes256-noreadq"
    assert advice.best.flags == ("no_read_workqueue",)  # the parent's sector_size is not its option
    said = tuning.lines(advice)
    assert said[0].startswith(
        "Cheapest option here: luks-aes256-noreadq (no_read_workqueue), faster than luks-aes256 at 2 of 7 "
        "workloads with 95% intervals that exclude no change, and clearly slower at none; median change +1%."
    )
    assert "rnd4k-q1-read +40% [+6, +84]*" in said[0]
    assert said[1:] == [
        "To apply it to your LUKS2 volume NAME, once, kept in its header for every later open:",
        "  cryptsetup refresh --perf-no_read_workqueue --persistent NAME",
        "or add to the options (the fourth field) of its /etc/crypttab line:",
        "  no-read-workqueue",
    ]


def test_a_variant_clearly_slower_anywhere_does_not_beat_the_default() -> None:
    slower = _doc(luks_aes256_noreadq=(0.9, 0.8, 0.99))  # its first workload now clearly slower
    advice = tuning.advise(slower)
    assert advice is not None and advice.best is not None
    assert advice.best.target == "luks-aes256-submitcpus"  # the next that beats it
    # an interval that touches no change is not a clear difference either way
    touching = _only(_doc(luks_aes256_noreadq=(0.9, 0.8, 1.0)), "luks-aes256-noreadq")
    assert tuning.advise(touching).best.target == "luks-aes256-noreadq"  # type: ignore[union-attr]
    gaining = _only(_doc(luks_aes256_noreadq=(1.1, 1.0, 1.2)), "none")
    assert tuning.advise(gaining).best is None  # type: ignore[union-attr]


def test_of_two_that_beat_it_the_larger_median_change_wins() -> None:
    both = Document.from_json(DOC)
    ranked = sorted((v for v in tuning.variants(both) if v.beats), key=lambda v: -v.median)
    assert [v.target for v in ranked] == ["luks-aes256-noreadq", "luks-aes256-submitcpus"]
    assert ranked[0].median > ranked[1].median
    raw = both.to_json()
    for c in raw["comparisons"]:  # submitcpus 50 % faster wherever it ran
        if c["target"] == "luks-aes256-submitcpus" and c["kind"] == "variant":
            c.update(ratio=1.5, ci_low=1.4, ci_high=1.6)
    assert tuning.advise(Document.from_json(raw)).best.target == "luks-aes256-submitcpus"  # type: ignore[union-attr]


def test_when_none_beats_the_default_nothing_is_pasted() -> None:
    none = _only(Document.from_json(DOC), "none")
    advice = tuning.advise(none)
    assert advice is not None and advice.best is None and advice.beaten_by_format == ()
    said = tuning.lines(advice)
    assert said == [
        "No option a volume can take when opened beat luks-aes256 in this run: keep the default; "
        "nothing to paste."
    ]
    # a format-time option that did beat it is named, never pasted
    sector = _only(Document.from_json(DOC), "luks-aes256-sector512").to_json()
    for c in sector["comparisons"]:
        if c["target"] == "luks-aes256-sector512" and c["kind"] == "variant":
            c.update(ratio=1.3, ci_low=1.2, ci_high=1.4)
    advice = tuning.advise(Document.from_json(sector))
    assert (
        advice is not None and advice.best is None and advice.beaten_by_format == ("luks-aes256-sector512",)
    )
    said = tuning.lines(advice)
    assert "nothing to paste" in said[0] and "luks-aes256-sector512 did" in said[1]
    assert not any("cryptsetup refresh" in line for line in said)


def test_high_priority_has_no_crypttab_option_and_says_what_it_needs() -> None:
    advice = tuning.Advice(
        "luks-aes256",
        tuning.Variant(
            "luks-aes256-highpri", "luks-aes256", ("high_priority",), (("w", 20.0, (10.0, 30.0)),)
        ),
        (),
    )
    said = tuning.lines(advice)
    assert "  cryptsetup refresh --perf-high_priority --persistent NAME" in said
    assert "  (--perf-high_priority needs cryptsetup 2.7 and Linux 6.10 or later.)" in said
    assert said[-1] == "/etc/crypttab has no option for high_priority: the header keeps it, --persistent"
    assert not any("fourth field" in line for line in said)


def test_a_run_of_format_time_variants_only_gets_no_tuning() -> None:
    integrity = json.loads((DOC_DIR / "luks-integrity-lab.json").read_text())
    assert any(c["kind"] == "variant" for c in integrity["comparisons"])  # -hmac against luks-aes256
    assert tuning.advise(Document.from_json(integrity)) is None


def test_a_run_without_variants_gets_no_tuning_and_the_answer_ends_with_it_otherwise() -> None:
    raw = copy.deepcopy(DOC)
    raw["comparisons"] = [c for c in raw["comparisons"] if c["kind"] != "variant"]
    assert tuning.advise(Document.from_json(raw)) is None
    printed = io.StringIO()
    answer_console.render(Document.from_json(DOC), Console(file=printed, width=200, color_system=None))
    text = printed.getvalue()
    paste = text.index("  cryptsetup refresh --perf-no_read_workqueue --persistent NAME")
    assert text.index("What limits each") < paste < text.index("Every figure, warning and the diagnosis")
    printed = io.StringIO()
    answer_console.render(Document.from_json(raw), Console(file=printed, width=200, color_system=None))
    assert "cryptsetup refresh" not in printed.getvalue() and "nothing to paste" not in printed.getvalue()


@pytest.mark.parametrize("flag", sorted(tuning.FLAGS))
def test_each_flag_names_cryptsetups_option_after_dm_crypts(flag: str) -> None:
    option, crypttab = tuning.FLAGS[flag]
    assert option == f"--perf-{flag}"
    assert crypttab is None or crypttab == flag.replace("_", "-")
