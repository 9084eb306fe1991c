"""`cryptsetup benchmark` beside the kernel's own figures: its output as cryptsetup printed
it (tests/fixtures/cryptsetup, recorded on this host and in the kernel lab), and the lines
`cryptbench cipher` prints, each naming the path its figure took (through AF_ALG or not)."""

from __future__ import annotations

import io
import json
import re
from dataclasses import replace

import pytest
from rich.console import Console

from cryptbench.cipher import cryptsetup_bench
from cryptbench.cipher.cipher_document import (
    AfAlg,
    AfAlgFigure,
    CipherDocument,
    Cryptsetup,
    CryptsetupFigure,
    KernelCiphers,
    RamStack,
    StackCipher,
    StackFigure,
    Unmeasured,
)
from cryptbench.report import cipher_table
from tests.support.paths import TESTS

FIXTURES = sorted((TESTS / "fixtures" / "cryptsetup").glob("*.json"))
LOAD = "Ensure you have algif_skcipher kernel module loaded."
CASES = [(f.stem, c) for f in FIXTURES for c in json.loads(f.read_text())["cases"]]


def test_the_fixtures_hold_a_refusal_and_a_figure_of_each_case() -> None:
    printed = {(c["cipher"], c["key_bits"]) for _where, c in CASES if c["code"] == 0}
    assert printed == {(c, k) for c, k, _a in cryptsetup_bench.CASES}  # the lab's kernels time each
    assert any(c["code"] != 0 for _where, c in CASES)  # this host has no AF_ALG


@pytest.mark.parametrize(
    ("where", "case"), CASES, ids=[f"{w}-{c['cipher']}-{c['key_bits']}" for w, c in CASES]
)
def test_what_cryptsetup_printed_is_read(where: str, case: dict) -> None:  # type: ignore[type-arg]
    algorithm = {c: a for c, _k, a in cryptsetup_bench.CASES}[case["cipher"]]
    o = cryptsetup_bench.parse(
        case["cipher"], case["key_bits"], algorithm, case["stdout"], case["stderr"], case["code"]
    )
    if case["code"] != 0:
        assert o.figure is None
        assert o.reason == f"Required kernel crypto interface not available. {LOAD}"
        return
    assert o.figure is not None and o.reason == ""
    # the printed MiB/s, as bytes/s
    enc, dec = re.findall(r"([\d.]+) MiB/s", case["stdout"])[-2:]
    assert o.figure.encrypt == float(enc) * 2**20 and o.figure.decrypt == float(dec) * 2**20
    assert (o.figure.cipher, o.figure.key_bits, o.figure.algorithm) == (
        case["cipher"],
        case["key_bits"],
        algorithm,
    )


def test_a_figure_cryptsetup_could_not_take_is_no_figure() -> None:
    out = "#     Algorithm |       Key |      Encryption |      Decryption\n    aes-xts   512b   N/A   N/A\n"
    o = cryptsetup_bench.parse("aes-xts-plain64", 512, "xts(aes)", out, "", 0)
    assert o.figure is None and "exit status 0" in o.reason


def _doc(setup: Cryptsetup | None, ram_write: float | None = None) -> CipherDocument:
    af = AfAlg(
        True,
        "",
        "C",
        [
            AfAlgFigure("xts(aes)", 512, 4096, 1, 2.0e9, [2.0e9]),
            AfAlgFigure("xts(aes)", 512, 4096, 2, 4.0e9, [4.0e9]),
            AfAlgFigure("xts(aes)", 512, 512, 2, 1.0e9, [1.0e9]),  # not dm-crypt's LUKS2 sector
        ],
    )
    ram = RamStack(False, "not asked")
    if ram_write is not None:
        cipher = [StackCipher("xts(aes)", "write", 1e9, 2e9, ram_write, "1/cipher = …")]
        rows = [
            StackFigure("ram:fscrypt", "write", 1e9, [1e9]),
            StackFigure("ram:ext4-loop", "write", 2e9, [2e9]),
        ]
        ram = RamStack(True, "", 64 << 20, 1 << 20, 8, rows, cipher)
    kernel = KernelCiphers([], [], af, ram, setup)
    return CipherDocument(2, "OpenSSL", "libcrypto", False, 2, 0.3, 3, [], [], kernel)


def _printed(doc: CipherDocument) -> str:
    buf = io.StringIO()
    cipher_table.render(doc, Console(file=buf, width=300, color_system=None))
    return buf.getvalue()


def test_each_figure_says_which_went_through_af_alg() -> None:
    figure = CryptsetupFigure("aes-xts-plain64", 512, "xts(aes)", 3.0e9, 3.2e9)
    refused = Unmeasured("xchacha12,aes-adiantum-plain64 256b", 65536, "not built")
    text = _printed(_doc(Cryptsetup(True, "", [figure], [refused]), ram_write=6.0e9))
    assert "cryptsetup benchmark: through AF_ALG, one 64.0 KiB request at a time on one core" in text
    line = next(x for x in text.splitlines() if x.startswith("  aes-xts-plain64 512b"))
    # against the kernel's 4 KiB figure on every core (not the 512-byte one), and the cipher on RAM
    assert "3.00 GB/s encryption, 3.20 GB/s decryption" in line
    assert (
        "2 requests in flight on 2 cores, also through AF_ALG: 4.00 GB/s (cryptsetup's encryption -25%)"
        in line
    )
    assert (
        "the cipher alone on RAM, not through AF_ALG: 6.00 GB/s writing (cryptsetup's encryption -50%)"
        in line
    )
    assert "  xchacha12,aes-adiantum-plain64 256b: no figure: not built" in text


def test_without_af_alg_it_says_why_and_a_run_asks_nothing() -> None:
    text = _printed(_doc(Cryptsetup(False, "Required kernel crypto interface not available.")))
    assert "cryptsetup benchmark: no figure: Required kernel crypto interface not available." in text
    assert "cryptsetup" not in _printed(_doc(None))  # a run's own cipher figures take none


def test_the_document_keeps_it_and_older_ones_read_without_it() -> None:
    doc = _doc(Cryptsetup(True, "", [CryptsetupFigure("aes-xts-plain64", 256, "xts(aes)", 1e9, 1e9)]))
    assert CipherDocument.from_json(doc.to_json()) == doc
    older = doc.to_json()
    del older["kernel"]["cryptsetup"]
    assert CipherDocument.from_json(older) == replace(doc, kernel=replace(doc.kernel, cryptsetup=None))
