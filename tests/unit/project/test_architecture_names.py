"""docs/architecture.md's recipes and maps cite the tree: every path, module, function,
class and constant they name in backticks exists where they say. A file moved or a
name renamed without the page fails here, so a newcomer following a recipe never
meets a path that is not there."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from tests.support.paths import REPO

ROOT = REPO
PACKAGE = ROOT / "src" / "cryptbench"
PAGE = ROOT / "docs" / "architecture.md"
TICKED = re.compile(r"`([^`\s]+)`")
PATHLIKE = re.compile(r"^[\w.*/-]+\.(?:py|toml|md|sh|json|c|txt|jsonl)$|^[\w*-]+(?:/[\w*-]+)*/$")
DOTTED = re.compile(r"^([A-Za-z_]\w*)(?:\.[A-Za-z_]\w*)+$")
CONSTANT = re.compile(r"^_?[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$|^_?[A-Z]{4,}$")
CLASS = re.compile(r"^[A-Z][a-z]+(?:[A-Z][a-z]+)+$")
# Words a recipe writes for the reader to fill in, and files a run makes, not the tree.
PLACEHOLDER = re.compile(r"NAME|KIND|FILE|DIR|ASPECT|\bX\b|<|journal\.jsonl|test-output|build/")


@cache
def defined(imported: bool = True) -> dict[str, set[Path]]:
    """Every name a module of the package defines (functions, classes, assignments,
    annotated fields and methods, at any depth; with `imported`, the names it imports
    too), to the files that define it."""
    names: dict[str, set[Path]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            found: list[str] = []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found = [node.name]
            elif isinstance(node, ast.Assign):
                found = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                found = [node.target.id]
            elif imported and isinstance(node, ast.ImportFrom):  # `ExitStack`: a name the package uses
                found = [a.asname or a.name for a in node.names]
            for name in found:
                names.setdefault(name, set()).add(path)
    return names


def modules(stem: str) -> list[Path]:
    """The package's modules (or packages) a dotted reference's first part can mean."""
    return [p for p in PACKAGE.rglob("*.py") if p.stem == stem] + [
        p / "__init__.py" for p in PACKAGE.rglob(stem) if p.is_dir()
    ]


def path_exists(token: str) -> bool:
    """`token` relative to the checkout, the package or tests/, or, a bare file name
    (`screens.py`, `test_layers.py`), anywhere in the package or the tests."""
    token = token.rstrip("/")
    if "/" not in token and "." in token:
        return any(p for base in (PACKAGE, ROOT / "tests") for p in base.rglob(token))
    for base in (ROOT, PACKAGE, ROOT / "tests"):
        if "*" in token:
            if any(base.glob(token)):
                return True
        elif (base / token).exists():
            return True
    return False


def holds(token: str) -> str | None:
    """Why the page's `token` names nothing in the tree; None when it does, or when it
    is not a reference to the tree (a flag, a key, a value)."""
    if PLACEHOLDER.search(token):
        return None
    if PATHLIKE.match(token) or ("/" in token and path_exists(token)):
        return None if path_exists(token) else "no such path"
    if "/" in token and "." not in token:
        # `pipeline/lifecycle`: a module or a package, by its path
        return None if path_exists(token + ".py") or path_exists(token + "/") else "no such module"
    if "/" in token:
        # `pipeline/execute.run`: a module's path, then a name in it
        module, _, name = token.rpartition(".")
        if not path_exists(module + ".py"):
            return "no such module"
        home = (PACKAGE / (module + ".py")).resolve()
        files = {p.resolve() for p in defined().get(name, set())}
        return None if home in files else f"{module}.py defines no {name}"
    if DOTTED.match(token):
        parts = token.split(".")
        last = parts[-1]
        # `backends.base.target_dir`: the longest leading run of parts that is a module
        for cut in range(len(parts) - 1, 1, -1):
            if path_exists("/".join(parts[:cut]) + ".py"):
                return holds("/".join(parts[:cut]) + "." + ".".join(parts[cut:]))
        first = parts[0]
        homes = modules(first) or sorted(defined().get(first, set()))
        if not homes:
            return f"no module or class {first}"
        if not any(last in defined() and home in defined()[last] for home in homes):
            return f"{first} has no {last}"
        return None
    if CONSTANT.match(token) or CLASS.match(token):
        return None if token in defined() else "defined nowhere in the package"
    return None


def references() -> list[tuple[int, str]]:
    out = []
    for number, line in enumerate(PAGE.read_text().splitlines(), 1):
        out += [(number, m.group(1).rstrip(".,:;")) for m in TICKED.finditer(line)]
    return out


def test_every_name_the_page_cites_is_in_the_tree() -> None:
    broken = [f"line {n}: `{t}`: {why}" for n, t in references() if (why := holds(t))]
    assert broken == []


# "one row of `VARIANTS` in `backends/luks_variants.py`": the name must be that module's
PLACED = re.compile(r"`([A-Za-z_]\w*)`\s+in\s+`([\w/]+\.py)`")


def test_a_name_said_to_be_in_a_module_is_defined_there() -> None:
    misplaced = []
    for name, module in PLACED.findall(PAGE.read_text()):
        files = {p.resolve() for p in defined(imported=False).get(name, set())}
        if (PACKAGE / module).resolve() not in files:
            misplaced.append(f"`{name}` in `{module}`")
    assert misplaced == []


@pytest.mark.parametrize(
    ("token", "broken"),
    [
        ("tests/integration/test_recipe_workloads.py", False),
        ("tests/unit/test_recipe_workloads.py", True),
        ("warning_rules.find", False),
        ("warning_rules.lost", True),
        ("pipeline/execute.run", False),
        ("pipeline/execute.nowhere", True),
        ("RUN_RULES", False),
        ("NO_SUCH_RULES", True),
        ("FuseOverlayBackend", False),
        ("--json", False),
    ],
)
def test_what_the_check_catches(token: str, broken: bool) -> None:
    assert (holds(token) is not None) is broken, holds(token)
