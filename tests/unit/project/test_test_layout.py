"""Tests a newcomer can find: tests/unit mirrors src/cryptbench, so the tests of
`stats/stopping.py` are in `tests/unit/stats/test_stopping.py` (or
`test_stopping_ASPECT.py` beside it), and what is not a module's test has a folder of
its own: `project/` (the docs, the layers, the layout) and `support/` (the test
infrastructure: the kernel lab, the lanes, tests/support)."""

from __future__ import annotations

from pathlib import Path

from tests.support.paths import REPO, TESTS

UNIT = TESTS / "unit"
PACKAGE = REPO / "src" / "cryptbench"
OWN = {"project", "support"}  # folders for what is no module's test
HELPERS = {"__init__.py", "conftest.py", "lanes_inner.py"}  # not tests themselves


def subject(test: Path) -> str | None:
    """Why `test` (a tests/unit file) sits where no module of its name is; None when it
    mirrors one: `DIR/test_STEM[_ASPECT].py` for src/cryptbench/DIR/STEM.py, a package
    STEM/ there, or DIR itself."""
    if test.name in HELPERS:
        return None
    if not test.name.startswith("test_"):
        return "not a test_*.py file"
    where = test.parent.relative_to(UNIT)
    if where.parts and where.parts[0] in OWN:
        return None
    home = PACKAGE / where
    if not home.is_dir():
        return f"src/cryptbench/{where} does not exist"
    words = test.stem.removeprefix("test_").split("_")
    stems = ["_".join(words[:n]) for n in range(len(words), 0, -1)]
    if any((home / f"{s}.py").is_file() or (home / s).is_dir() for s in stems):
        return None
    if where.parts and stems[-1] == where.parts[-1]:
        return None  # the package's own tests: fleet/test_fleet.py
    return f"no module {stems[-1]}* in src/cryptbench/{where}"


def test_every_unit_test_mirrors_a_module_or_says_it_is_none() -> None:
    misplaced = [f"{t.relative_to(UNIT)}: {why}" for t in sorted(UNIT.rglob("*.py")) if (why := subject(t))]
    assert misplaced == []


def test_every_folder_is_a_package() -> None:
    assert [
        str(d)
        for d in UNIT.rglob("*")
        if d.is_dir() and d.name != "__pycache__" and not (d / "__init__.py").exists()
    ] == []


def test_a_test_named_after_no_module_is_caught() -> None:
    assert subject(UNIT / "stats" / "test_stopping.py") is None
    assert subject(UNIT / "stats" / "test_stopping_race.py") is None
    assert subject(UNIT / "stats" / "test_adaptive.py") is not None
    assert subject(UNIT / "test_adaptive.py") is not None
    assert subject(UNIT / "nowhere" / "test_x.py") is not None
    assert subject(UNIT / "project" / "test_anything.py") is None


ROOT_FILES = {"__init__.py", "conftest.py"}  # what tests/ itself holds: the rest is in a folder


def test_test_infrastructure_is_under_tests_support_not_at_the_root() -> None:
    assert sorted(p.name for p in TESTS.glob("*.py") if p.name not in ROOT_FILES) == []
