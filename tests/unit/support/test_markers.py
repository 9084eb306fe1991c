"""Every test that touches the real system carries the `integration` marker, so that
`pytest -m "not integration"` is the quick, machine-independent selection it claims to be."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.paths import TESTS

REAL = sorted([*TESTS.glob("integration/test_*.py"), *TESTS.glob("lab/test_*.py")])


def _module_marks(path: Path) -> set[str]:
    """The names in the module's `pytestmark` (one mark or a list of them)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            return {n.attr for n in ast.walk(node.value) if isinstance(n, ast.Attribute)}
    return set()


def test_the_real_test_files_were_found() -> None:
    assert len(REAL) >= 20


@pytest.mark.parametrize("path", REAL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_real_test_module_is_marked_integration(path: Path) -> None:
    assert "integration" in _module_marks(path)
