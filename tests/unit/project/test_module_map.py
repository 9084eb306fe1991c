"""scripts/module_map.py, the code map's module reference (docs/architecture.md links
to it instead of keeping a copy that drifts): every module has a docstring whose first
sentence says its job, and the script lists every module, in the layers' order that
tests/unit/project/test_layers.py holds."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from tests.support.paths import REPO
from tests.unit.project.test_layers import LAYERS

ROOT = REPO
SCRIPT = ROOT / "scripts" / "module_map.py"
spec = importlib.util.spec_from_file_location("module_map", SCRIPT)
assert spec and spec.loader
module_map = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module_map)


def test_every_module_says_its_job() -> None:
    assert [str(p) for p in module_map.modules() if module_map.job(p) is None] == []


def test_the_order_is_the_layers() -> None:
    assert [name for layer in LAYERS for name in layer] == module_map.ORDER


def test_the_table_lists_every_module_once() -> None:
    out = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, check=True).stdout
    rows = [line.split("`")[1] for line in out.splitlines()[2:]]
    package = ROOT / "src" / "cryptbench"
    assert sorted(rows) == sorted(str(p.relative_to(package)) for p in package.rglob("*.py"))
    assert rows.index("model/result.py") < rows.index("stats/estimates.py") < rows.index("cli.py")


def test_a_module_without_a_docstring_is_named(tmp_path: Path) -> None:
    bare = tmp_path / "bare.py"
    bare.write_text("x = 1\n")
    assert module_map.job(bare) is None
    said = tmp_path / "said.py"
    said.write_text('"""Does one thing. Then more.\n\nDetails."""\n')
    assert module_map.job(said) == "Does one thing."
