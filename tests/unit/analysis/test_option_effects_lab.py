"""The diagnosis's option rules (analysis/option_effects.py) on runs recorded in the
kernel lab under Debian 12's 6.1 kernel, each `cryptbench run --suite luks-tuning
--size 16M --repeats 2`: luks-tuning-lab.json with the five dm-crypt options, and
luks-integrity-lab.json with `--backends luks-aes256,luks-aes256-hmac,
luks-aes256-hmac-nojournal` (recorded by tests/fixtures/documents/record_in_lab.py).
Under TCG their figures are the lab's, not performance figures; what is tested is what
the rules make of real intervals."""

from __future__ import annotations

import json
import re

import pytest

from cryptbench.analysis import diagnosis, option_effects
from cryptbench.analysis.option_effects import OptionKind
from cryptbench.backends.luks_variants import PLAIN_LUKS, VARIANTS
from cryptbench.model.result import Document, TargetInfo
from tests.support.paths import TESTS

RECORDED = TESTS / "fixtures" / "documents"
DOCS = {
    name: Document.from_json(json.loads((RECORDED / f"{name}.json").read_text()))
    for name in ("luks-tuning-lab", "luks-integrity-lab")
}
# What each recorded run's option targets change, read from what dm-crypt's table showed
KINDS = {
    "luks-tuning-lab": {
        "luks-aes256-noqueue": OptionKind.WORKQUEUES,
        "luks-aes256-noreadq": OptionKind.WORKQUEUES,
        "luks-aes256-nowriteq": OptionKind.WORKQUEUES,
        "luks-aes256-submitcpus": OptionKind.SUBMIT,
        "luks-aes256-sector512": OptionKind.SECTOR,
    },
    "luks-integrity-lab": {
        "luks-aes256-hmac": OptionKind.INTEGRITY,
        "luks-aes256-hmac-nojournal": OptionKind.INTEGRITY_DIRECT,
    },
}
CASES = [(doc, target) for doc, kinds in KINDS.items() for target in kinds]


def _targets(doc: Document) -> dict[str, TargetInfo]:
    return {t.name: t for t in doc.targets}


def _beyond(doc: Document, target: str) -> tuple[dict[str, float], dict[str, float], int]:
    """The workloads where the variant's interval against plain LUKS lies wholly above
    1 (faster) or below it (slower), with their ratios, read from the comparisons; and
    how many it has."""
    cs = [c for c in doc.comparisons if c.target == target and c.kind == "variant"]
    assert cs and all(c.baseline == PLAIN_LUKS and c.ci_low is not None for c in cs)
    faster = {c.workload: c.ratio for c in cs if c.ci_low is not None and c.ci_low > 1}
    slower = {c.workload: c.ratio for c in cs if c.ci_high is not None and c.ci_high < 1}
    return faster, slower, len(cs)


def _named(sentence: str | None) -> list[str]:
    return re.findall(r"([\w-]+) [+-]\d+% \[", sentence or "")


def _told(sentence: str | None, ratios: dict[str, float]) -> bool:
    """Whether a sentence names the largest changes of `ratios`, largest first, up to
    three (methodology.md), and counts the rest."""
    ranked = sorted(ratios, key=lambda w: -abs(ratios[w] - 1))
    rest = f" and {len(ranked) - 3} more:" if len(ranked) > 3 else ":"
    return _named(sentence) == ranked[:3] and (sentence is None or rest in sentence)


@pytest.mark.parametrize("name", list(DOCS))
def test_the_lab_ran_every_option_target_against_plain_luks(name: str) -> None:
    doc = DOCS[name]
    assert (doc.environment.kernel or "").startswith("6.1.")  # Debian 12's, not this host's
    options = [t for t, v in VARIANTS.items() if v.variant_of and t in _targets(doc)]
    assert options == list(KINDS[name])
    assert _targets(doc)[PLAIN_LUKS].baseline == "ext4-loop"


@pytest.mark.parametrize(("name", "target"), CASES)
def test_each_option_names_exactly_the_workloads_its_interval_excludes(name: str, target: str) -> None:
    doc = DOCS[name]
    faster, slower, total = _beyond(doc, target)
    said = option_effects.sentences(doc, _targets(doc)[target])
    up = next((s for s in said if f" is faster than {PLAIN_LUKS} at " in s), None)
    down = next((s for s in said if f" is slower than {PLAIN_LUKS} at " in s), None)
    assert _told(up, faster) and _told(down, slower), said
    rest = total - len(faster) - len(slower)
    if faster or slower:
        assert (
            said[-1]
            == ("At the other workload" if rest == 1 else f"At the other {rest} workloads")
            + (" it changes nothing beyond its interval.")
            or rest == 0
        ), said
    else:
        label = str(_targets(doc)[target].details["option"])
        assert said == [
            f"{label[:1].upper()}{label[1:]} ({target}) changes nothing beyond its "
            f"interval against {PLAIN_LUKS} at any of {rest} workloads on this kernel."
        ]


@pytest.mark.parametrize(("name", "target"), CASES)
def test_each_option_gets_the_explanation_of_its_kind(name: str, target: str) -> None:
    """The kind is read from what dm-crypt's table showed in the lab, not from the name."""
    doc = DOCS[name]
    kind = option_effects.kind_of(_targets(doc)[target])
    assert kind is KINDS[name][target]
    faster, slower, _ = _beyond(doc, target)
    said = " ".join(option_effects.sentences(doc, _targets(doc)[target]))
    assert (kind.why(True) in said) == bool(faster), said
    assert (kind.why(False) in said) == bool(slower), said


@pytest.mark.parametrize("name", list(DOCS))
def test_the_diagnosis_carries_the_option_sentences_after_the_limits(name: str) -> None:
    """Each option target's diagnosis ends with what its option changes; plain LUKS,
    which varies nothing, gets none."""
    doc = DOCS[name]
    by_target = {d.target: d.sentences for d in diagnosis.diagnose(doc)}
    for target in KINDS[name]:
        tail = option_effects.sentences(doc, _targets(doc)[target])
        assert by_target[target][-len(tail) :] == tail
    assert option_effects.sentences(doc, _targets(doc)[PLAIN_LUKS]) == []
    assert not any(f"than {PLAIN_LUKS} at" in s for s in by_target[PLAIN_LUKS])
