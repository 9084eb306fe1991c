"""`cryptbench cipher`'s table says how its userspace figures were taken, and
calls them lower bounds only when they were timed from Python."""

from __future__ import annotations

import io

from rich.console import Console

from cryptbench.cipher import userspace
from cryptbench.commands import cipher
from cryptbench.report import cipher_table


def _printed(doc: dict[str, object]) -> str:
    buf = io.StringIO()
    cipher_table.render(doc, Console(file=buf, width=200, color_system=None))
    return buf.getvalue()


def test_the_table_names_the_engine_and_marks_only_python_figures() -> None:
    cells = [(userspace.case("aes-256-xts", 512), 1)]
    doc = cipher.measure(seconds=0.01, repeats=1, kernel_stack=False, cells=cells)
    assert (doc["engine"], doc["lower_bounds"]) == ("libcrypto", False)
    text = _printed(doc)
    assert "system libcrypto, timed in C" in text and "lower bounds" not in text
    python = {"engine": "cryptography", "lower_bounds": True, "library": userspace.library("cryptography")}
    doc = {**doc, **python}
    assert "timed from Python" in _printed(doc) and "so those figures are lower bounds" in _printed(doc)
    schema_1 = {k: v for k, v in doc.items() if k not in ("engine", "lower_bounds")}
    assert "lower bounds" in _printed(schema_1)
