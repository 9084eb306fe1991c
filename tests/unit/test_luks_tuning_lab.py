"""The diagnosis's option rules (report/option_effects.py) on a run recorded in the
kernel lab: `cryptbench run --suite luks-tuning --size 16M --repeats 2` under Debian
12's 6.1 kernel with every LUKS option target, kept as
tests/fixtures/documents/luks-tuning-lab.json. Under TCG its figures are the lab's,
not performance figures; what is tested is what the rules make of real intervals."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cryptbench.backends.luks import PLAIN_LUKS, VARIANTS
from cryptbench.report import diagnosis, option_effects
from cryptbench.report.option_effects import OptionKind
from cryptbench.result_model import Document

RECORDED = Path(__file__).parent.parent / "fixtures" / "documents" / "luks-tuning-lab.json"
DOC = Document.from_json(json.loads(RECORDED.read_text()))
TARGETS = {t.name: t for t in DOC.targets}
OPTIONS = [name for name, v in VARIANTS.items() if v.variant_of and name in TARGETS]


def _beyond(target: str) -> tuple[set[str], set[str], int]:
    """The workloads where the variant's interval against plain LUKS lies wholly above
    1 (faster) or below it (slower), read from the comparisons; and how many it has."""
    cs = [c for c in DOC.comparisons if c.target == target and c.kind == "variant"]
    assert cs and all(c.baseline == PLAIN_LUKS and c.ci_low is not None for c in cs)
    faster = {c.workload for c in cs if c.ci_low is not None and c.ci_low > 1}
    slower = {c.workload for c in cs if c.ci_high is not None and c.ci_high < 1}
    return faster, slower, len(cs)


def _named(sentence: str | None) -> set[str]:
    return set(re.findall(r"([\w-]+) [+-]\d+% \[", sentence or ""))


def test_the_lab_ran_every_option_target_against_plain_luks() -> None:
    assert DOC.environment["kernel"].startswith("6.1.")  # Debian 12's, not this host's
    # the five of luks-tuning when it was recorded (before the integrity targets)
    assert OPTIONS == ["luks-aes256-noqueue", "luks-aes256-noreadq", "luks-aes256-nowriteq",
                       "luks-aes256-submitcpus", "luks-aes256-sector512"]  # fmt: skip
    assert TARGETS[PLAIN_LUKS].baseline == "ext4-loop"


@pytest.mark.parametrize("target", OPTIONS)
def test_each_option_names_exactly_the_workloads_its_interval_excludes(target: str) -> None:
    faster, slower, total = _beyond(target)
    said = option_effects.sentences(DOC, TARGETS[target])
    up = next((s for s in said if f" is faster than {PLAIN_LUKS} at " in s), None)
    down = next((s for s in said if f" is slower than {PLAIN_LUKS} at " in s), None)
    assert _named(up) == faster and _named(down) == slower, said
    rest = total - len(faster) - len(slower)
    if faster or slower:
        assert (
            said[-1]
            == ("At the other workload" if rest == 1 else f"At the other {rest} workloads")
            + (" it changes nothing beyond its interval.")
            or rest == 0
        ), said
    else:
        label = str(TARGETS[target].details["option"])
        assert said == [
            f"{label[:1].upper()}{label[1:]} ({target}) changes nothing beyond its "
            f"interval against {PLAIN_LUKS} at any of {rest} workloads on this kernel."
        ]


def test_each_option_gets_the_explanation_of_its_kind() -> None:
    """The kind is read from what dm-crypt's table showed in the lab, not from the name."""
    kinds = {name: option_effects.kind_of(TARGETS[name]) for name in OPTIONS}
    assert kinds == {
        "luks-aes256-noqueue": OptionKind.WORKQUEUES,
        "luks-aes256-noreadq": OptionKind.WORKQUEUES,
        "luks-aes256-nowriteq": OptionKind.WORKQUEUES,
        "luks-aes256-submitcpus": OptionKind.SUBMIT,
        "luks-aes256-sector512": OptionKind.SECTOR,
    }
    for name in OPTIONS:
        faster, slower, _ = _beyond(name)
        said = " ".join(option_effects.sentences(DOC, TARGETS[name]))
        assert (kinds[name].why(True) in said) == bool(faster), said
        assert (kinds[name].why(False) in said) == bool(slower), said


def test_the_diagnosis_carries_the_option_sentences_after_the_limits() -> None:
    """Each option target's diagnosis ends with what its option changes; plain LUKS,
    which varies nothing, gets none."""
    by_target = {d.target: d.sentences for d in diagnosis.diagnose(DOC)}
    for name in OPTIONS:
        tail = option_effects.sentences(DOC, TARGETS[name])
        assert by_target[name][-len(tail) :] == tail
    assert option_effects.sentences(DOC, TARGETS[PLAIN_LUKS]) == []
    assert not any(f"than {PLAIN_LUKS} at" in s for s in by_target[PLAIN_LUKS])
