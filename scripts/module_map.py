#!/usr/bin/env python3
"""Print every module of the package with its job, in the layers' order (lowest first),
from each module's own docstring: the code map's reference, generated so that it cannot
drift from the code (docs/architecture.md links here instead of keeping a copy).

    python3 scripts/module_map.py            # a Markdown table: module, job
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "cryptbench"
# The layers' order, as tests/unit/project/test_layers.py holds them (it checks this list too).
ORDER = [
    "model",
    "suites",
    "stats",
    "machine",
    "store",
    "backends",
    "engines",
    "measure",
    "cipher",
    "fleet",
    "protection",
    "planning",
    "trial",
    "analysis",
    "report",
    "pipeline",
    "commands",
    "cli",
    "__main__",
]


def job(path: Path) -> str | None:
    """The first sentence of the module's docstring, on one line; None without one."""
    doc = ast.get_docstring(ast.parse(path.read_text()))
    if not doc:
        return None
    first = " ".join(doc.split("\n\n")[0].split())
    return first.split(". ")[0].rstrip(".") + "."


def modules() -> list[Path]:
    """Every module, in the layers' order, then by path."""

    def rank(path: Path) -> tuple[int, str]:
        top = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        return (ORDER.index(top) if top in ORDER else len(ORDER), str(path))

    return sorted(PACKAGE.rglob("*.py"), key=rank)


def main() -> int:
    print("| module | job |\n|---|---|")
    missing = []
    for path in modules():
        said = job(path)
        if said is None:
            missing.append(path)
        cell = (said or "(no docstring)").replace("|", r"\|")
        print(f"| `{path.relative_to(PACKAGE)}` | {cell} |")
    for path in missing:
        print(f"module_map: {path.relative_to(PACKAGE)} has no docstring", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
