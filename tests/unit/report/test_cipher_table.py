"""`cryptbench cipher`'s table says how its userspace figures were taken, and
calls them lower bounds only when they were timed from Python."""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console

from cryptbench.cipher import userspace
from cryptbench.cipher.cipher_document import AfAlg, AfAlgFigure, CipherDocument, DriverInfo
from cryptbench.commands import cipher
from cryptbench.report import cipher_table


def _printed(doc: CipherDocument) -> str:
    buf = io.StringIO()
    cipher_table.render(doc, Console(file=buf, width=200, color_system=None))
    return buf.getvalue()


def test_the_table_names_the_engine_and_marks_only_python_figures() -> None:
    cells = [(userspace.case("aes-256-xts", 512), 1)]
    doc = cipher.measure(seconds=0.01, repeats=1, kernel_stack=False, cells=cells)
    assert (doc.engine, doc.lower_bounds) == ("libcrypto", False)
    assert CipherDocument.from_json(doc.to_json()) == doc  # the JSON holds all of it
    text = _printed(doc)
    assert "system libcrypto, timed in C" in text and "lower bounds" not in text
    python = {"engine": "cryptography", "lower_bounds": True, "library": userspace.library("cryptography")}
    as_json = {**doc.to_json(), **python}
    from_python = CipherDocument.from_json(as_json)
    assert "timed from Python" in _printed(from_python)
    assert "so those figures are lower bounds" in _printed(from_python)
    schema_1 = {k: v for k, v in as_json.items() if k not in ("schema", "engine", "lower_bounds")}
    assert "lower bounds" in _printed(CipherDocument.from_json(schema_1))


def test_each_af_alg_figure_names_the_driver_that_served_it() -> None:
    doc = cipher.measure(seconds=0.01, repeats=1, kernel_stack=False, cells=[])
    xts = DriverInfo("xts(aes)", "xts-aes-vaes-avx2", "aesni_intel", 600, "skcipher", "hardware: VAES", "")
    figures = [
        AfAlgFigure("xts(aes)", 512, 4096, 1, 3e9, [3e9]),
        AfAlgFigure("cbc(aes)", 256, 4096, 1, 1e9, [1e9]),  # an algorithm /proc/crypto did not list
    ]
    af_alg = AfAlg(True, "", "C", figures)
    doc = replace(doc, kernel=replace(doc.kernel, drivers=[xts], af_alg=af_alg))
    text = _printed(doc)
    assert "kernel xts(aes) (driver xts-aes-vaes-avx2) through AF_ALG, 4.0 KiB per request, one core" in text
    assert "kernel cbc(aes) through AF_ALG, 4.0 KiB per request" in text
