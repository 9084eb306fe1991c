"""Every renderer's output for the documents recorded by real runs, byte for byte
against tests/golden/outputs/ (tests/support/golden.py renders them): a change of output
shows here as a diff, and a refactoring that means to change nothing must leave every
file as it is. The test only reads the files; after a change of output that is meant,
write them again and read the diff:
    .venv/bin/python -m tests.support.golden
A JSON file is held to its values, each figure to 12 significant digits: the digits
past those are the CPU's (tests/support/golden.py says why).
"""

from __future__ import annotations

import pytest

from tests.support.golden import GOLDEN, NAMES, RENDERERS, recorded, same


def test_every_recorded_document_is_covered() -> None:
    assert len(NAMES) >= 5


@pytest.mark.parametrize("kind", sorted(RENDERERS))
@pytest.mark.parametrize("name", NAMES)
def test_output_is_its_golden_file(name: str, kind: str) -> None:
    text = RENDERERS[kind](recorded(name))
    path = GOLDEN / f"{name}.{kind}"
    assert path.exists(), f"no golden file {path}: write them (this module's docstring says how)"
    golden = path.read_text()
    if not same(kind, text, golden):  # then the texts differ: pytest prints their diff
        assert text == golden, f"{path} differs: diff it against this output"


def test_a_json_figure_is_held_to_its_twelfth_digit_not_its_last_bits() -> None:
    ranking = '[{"vs_ci_low": 0.22426134558292235, "workloads": 2}]\n'
    assert same("ranking.json", ranking.replace("235", "238"), ranking)
    assert not same("ranking.json", ranking.replace("0.224261345", "0.224261346"), ranking)
    assert not same("ranking.json", ranking.replace('"workloads": 2', '"workloads": 3'), ranking)
    assert not same("answer-80.txt", "0.22426134558292238", "0.22426134558292235")
    assert not same("ranking.json", ranking, "")
