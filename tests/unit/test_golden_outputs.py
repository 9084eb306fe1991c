"""Every renderer's output for the documents recorded by real runs, byte for byte
against tests/golden/outputs/ (tests/support/golden.py renders them): a change of output
shows here as a diff, and a refactoring that means to change nothing must leave every
file as it is. The test only reads the files; after a change of output that is meant,
write them again and read the diff:
    .venv/bin/python -m tests.support.golden
"""

from __future__ import annotations

import pytest

from tests.support.golden import GOLDEN, NAMES, RENDERERS, recorded


def test_every_recorded_document_is_covered() -> None:
    assert len(NAMES) >= 5


@pytest.mark.parametrize("kind", sorted(RENDERERS))
@pytest.mark.parametrize("name", NAMES)
def test_output_is_byte_identical(name: str, kind: str) -> None:
    text = RENDERERS[kind](recorded(name))
    path = GOLDEN / f"{name}.{kind}"
    assert path.exists(), f"no golden file {path}: write them (this module's docstring says how)"
    assert text == path.read_text(), f"{path} differs: diff it against this output"
