"""The package's layers, as data, and a check that no module imports from a layer
above its own, and that no command imports another (what commands share lives in
pipeline/). Imports inside functions count too: a late import is still a
dependency. A new module must be given a layer here."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO, TESTS

SRC = REPO / "src"
PACKAGE = SRC / "cryptbench"

# Lowest first. A module may import from its own layer and the ones below it.
LAYERS: list[tuple[str, ...]] = [
    ("model", "suites"),  # the result model and its vocabulary, and the shipped suites: facts and types
    ("stats", "machine", "store"),  # arithmetic; what a run owns, journaled and released; the database
    ("backends", "engines", "measure", "cipher", "fleet", "protection"),  # the real components
    ("planning",),  # what to run, checked before anything is provisioned
    ("trial",),  # trials sized, ordered and run
    ("analysis",),  # the document and all computed from stored trials; renders nothing
    ("report", "pipeline"),  # renderers, and the stages commands share: SIBLINGS
    ("commands",),
    ("cli", "__main__"),
]


def _name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(dotted: str) -> bool:
    base = SRC.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _imports(path: Path) -> set[str]:
    """The cryptbench modules a file imports, each resolved to the module itself (a name
    imported from a package counts as its submodule where it is one)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "cryptbench"}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "cryptbench":
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                found.add(sub if _is_module(sub) else node.module)
    return found - {"cryptbench"}


def layer_of(module: str) -> int:
    """The layer of a dotted module name (cryptbench.report.console: report's)."""
    top = module.split(".")[1]
    for i, names in enumerate(LAYERS):
        if top in names:
            return i
    raise AssertionError(f"{module} has no layer: add it to LAYERS in {__file__}")


# Packages of one layer that never import each other: a stage of a run renders nothing
# itself, and a renderer runs no stage.
SIBLINGS = {"report", "pipeline"}
# The pipeline writes a run to the store and returns where; the commands read its
# document back (analysis/document.read), as `show` does: a stage computes no figure.
WRITES_ONLY = ("pipeline", "analysis")

MODULES = sorted(PACKAGE.rglob("*.py"))
SHARED = "cryptbench.commands.common_args"


def test_every_module_has_a_layer() -> None:
    layers = {_name(p): layer_of(_name(p)) for p in MODULES if _name(p) != "cryptbench"}
    assert len(layers) > 100, "the package's modules were not found"
    # the bottom and the top, as docs/architecture.md draws them
    assert layers["cryptbench.model.units"] == 0 and layers["cryptbench.cli"] == len(LAYERS) - 1
    with pytest.raises(AssertionError, match="has no layer"):
        layer_of("cryptbench.nowhere")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_import_runs_up_or_across_commands(path: Path) -> None:
    me = _name(path)
    if me == "cryptbench":
        return
    for dep in sorted(_imports(path)):
        assert layer_of(dep) <= layer_of(me), (
            f"{me} (layer {layer_of(me)}) imports {dep} (layer {layer_of(dep)})"
        )
        mine, theirs = me.split(".")[1], dep.split(".")[1]
        if {mine, theirs} <= SIBLINGS and mine != theirs:
            raise AssertionError(
                f"{me} imports {dep}: {' and '.join(sorted(SIBLINGS))} never import each other"
            )
        if (mine, theirs) == WRITES_ONLY:
            raise AssertionError(f"{me} imports {dep}: the pipeline writes runs, the commands read them")
        # common_args is the options several commands declare, not a command
        if me.startswith("cryptbench.commands.") and dep.startswith("cryptbench.commands.") and dep != SHARED:
            raise AssertionError(f"{me} imports another command, {dep}: move what they share to pipeline/")


def test_the_check_sees_a_violation() -> None:
    """The resolution above finds an upward import when there is one (a positive control)."""
    assert layer_of("cryptbench.report.console") > layer_of("cryptbench.trial.runner")
    assert "cryptbench.analysis.history_model" in _imports(PACKAGE / "report" / "history_table.py")
    assert "cryptbench.pipeline.execute" in _imports(PACKAGE / "commands" / "run.py")


# report/'s modules that render nothing (words: the answer's and a flag trial's; rows,
# cells, a table's width, the pages' Jinja2 environment, the files a command writes): any
# renderer may use them, and they import no renderer. Every other module of report/ is a
# renderer, and imports no other renderer but through a composer: screens.py puts them
# together on the terminal, exports.py in the files `run --export-*` writes.
NEUTRAL = {
    "compare_cells",
    "flag_sentences",
    "fleet_rows",
    "narrow",
    "output_files",
    "pages",
    "protection_rows",
    "sentences",
}
COMPOSER = "screens"
COMPOSERS = {COMPOSER, "exports"}
REPORT = sorted((PACKAGE / "report").glob("*.py"))


def _renderers_imported(path: Path) -> set[str]:
    return {
        d.split(".")[2]
        for d in _imports(path)
        if d.startswith("cryptbench.report.") and d.split(".")[2] not in NEUTRAL
    }


@pytest.mark.parametrize("path", REPORT, ids=lambda p: p.stem)
def test_no_renderer_imports_another(path: Path) -> None:
    if path.stem in COMPOSERS | {"__init__"}:
        return
    borrowed = _renderers_imported(path) - {path.stem}
    assert not borrowed, (
        f"report/{path.name} imports the renderer(s) {sorted(borrowed)}: move what they share "
        "to a neutral module (sentences.py and its kind), or put them together in screens.py"
    )


def test_the_renderer_rule_sees_a_renderer() -> None:
    """A positive control: the composer's imports are renderers by this rule."""
    assert _renderers_imported(PACKAGE / "report" / "screens.py") == {
        "answer_console",
        "console",
        "cost_console",
        "fleet_console",
    }


def test_the_command_line_starts_without_scipy_or_matplotlib() -> None:
    # Each is imported where it is used: SciPy was most of every command's start-up time
    # (`python -X importtime -c "import cryptbench.cli"`), and `backends` needs neither.
    code = (
        "import sys, cryptbench.cli; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'scipy', 'matplotlib'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def _heavy_imports(*argv: str) -> set[str]:
    """SciPy or Matplotlib among what a process imported, from -X importtime's report."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *argv], capture_output=True, text=True, check=True
    )
    names = {
        line.rsplit("|", 1)[-1].strip().split(".")[0] for line in done.stderr.splitlines() if "|" in line
    }
    return names & {"scipy", "matplotlib"}


def test_backends_and_help_run_without_scipy_or_matplotlib() -> None:
    # The commands themselves, run whole: what they import at run time counts too.
    assert _heavy_imports("-m", "cryptbench", "--help") == set()
    assert _heavy_imports("-m", "cryptbench", "backends") == set()
    assert _heavy_imports("-c", "import scipy.stats, matplotlib") == {
        "scipy",
        "matplotlib",
    }  # the check sees them


def test_terminal_output_never_loads_matplotlib() -> None:
    """`show`, `compare` without --html, `history` and `backends` print tables: the
    renderers they use, and the answer and details of a stored run rendered in full,
    load no Matplotlib (seconds of start-up on a small machine)."""
    docs = TESTS / "fixtures" / "documents"
    script = f"""
import json, sys
from pathlib import Path
from rich.console import Console
from cryptbench import cli
from cryptbench.report import (
    answer_console, backends_console, compare_console, console, cost_console,
    fleet_console, history_table, screens,
)
from cryptbench.model.result import Document
out = Console(file=open("/dev/null", "w"), width=120)
for name in ("default-run.json", "fleet-three-hosts.json", "quick-fscrypt-gocryptfs-ram.json"):
    doc = Document.from_json(json.loads((Path({str(docs)!r}) / name).read_text()))
    answer_console.render(doc, out)
    screens.render(doc, out, details=True)
print(sorted(m for m in sys.modules if m.split(".")[0] == "matplotlib")[:3])
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]", proc.stdout
