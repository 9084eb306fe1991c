"""The terminal's efficiency table, queue-depth table and diagnosis, over a recorded run."""

from __future__ import annotations

import json

from rich.console import Console

from cryptbench.model.result import Document
from cryptbench.report import cost_console
from tests.support.paths import TESTS

DOCS = TESTS / "fixtures" / "documents"


def _printed(name: str, width: int = 120) -> str:
    doc = json.loads((DOCS / name).read_text())
    console = Console(record=True, width=width, color_system=None)
    cost_console.render(Document.from_json(doc), console)
    return console.export_text()


def test_efficiency_sources_and_diagnosis_are_printed() -> None:
    text = _printed("quick-fscrypt-gocryptfs-ram.json")
    assert "Efficiency: achieved over the lower (bold) of plain" in text
    # fscrypt at seq1m-q8-read: 51.3 MB/s, plain 414.3, its kernel cipher 55.3, 93%
    lines = text.splitlines()
    under = lines[next(i for i, line in enumerate(lines) if line.strip() == "fscrypt") :]
    row = next(line for line in under if "seq1m-q8-read" in line)
    assert row.split()[1:6] == ["51.3", "414.3", "55.3", "93%", "40.2"]
    assert "cipher of fscrypt, ram:fscrypt: this run's RAM twins at seq1m-q8-read" in text
    assert "cipher of gocryptfs, ram:gocryptfs: OpenSSL aes-256-gcm on 4096-byte units, 2 cores" in text
    assert "Diagnosis" in text and "• fscrypt: 51.3 MB/s at seq1m-q8-read. The kernel's xts(aes)" in text


def test_the_queue_depth_table_has_a_column_per_depth() -> None:
    text = _printed("qd-sweep-fscrypt.json")
    lines = text.splitlines()
    header = next(line for line in lines if "pattern" in line)
    assert [w for w in header.split() if w.startswith("QD")] == ["QD1", "QD4", "QD16", "QD32"]
    under = lines[next(i for i, line in enumerate(lines) if line.strip() == "randread 4 KiB") :]
    row = next(line for line in under if "fscrypt vs ext4-loop" in line)
    # wide enough for the intervals: each depth's change in speed with its own, negative
    # when slower (an overhead of 65 % is -65%), * where it excludes no change
    assert row.split()[3:] == [
        "-65%", "[-73,", "-48]*",
        "-74%", "[-76,", "-73]*",
        "-82%", "[-84,", "-76]*",
        "-78%", "[-84,", "-72]*",
    ]  # fmt: skip


def test_at_80_columns_the_tables_keep_every_figure_whole() -> None:
    text = _printed("qd-sweep-fscrypt.json", width=80)
    lines = text.splitlines()
    assert max(map(len, lines)) <= 80 and "…" not in text
    # compact cells, each wrapped between its figure and its interval where it must: every
    # figure and every interval whole on its line
    table = text[text.index("Change in speed against the baseline by queue depth") :]
    tokens = table.split()
    for whole in ("-65", "[-73,-48]*", "-74", "[-76,-73]*", "-78±2*", "-78±5*", "+2", "[-19,+11]"):
        assert whole in tokens, whole
    assert "(%, with its 95% interval, compact)" in " ".join(table.split())
    assert "percent slower" not in text


def test_a_kernel_ciphers_source_names_the_driver_its_targets_got() -> None:
    doc = json.loads((DOCS / "quick-fscrypt-gocryptfs-ram.json").read_text())
    for t in doc["targets"]:
        if t["backend"] == "fscrypt":
            t["details"]["kernel_cipher_driver"] = "xts-aes-vaes-avx2"
    console = Console(record=True, width=400, color_system=None)
    cost_console.render(Document.from_json(doc), console)
    text = console.export_text()
    assert (
        "cipher of fscrypt, ram:fscrypt: this run's RAM twins at seq1m-q8-read: 1/cipher = "
        "1/ram:fscrypt - 1/ram:ext4-loop; the kernel's driver: xts-aes-vaes-avx2 "
        "(hardware: VAES instructions)"
    ) in text
    gocryptfs = next(line for line in text.splitlines() if line.startswith("cipher of gocryptfs"))
    assert "driver" not in gocryptfs  # a userspace cipher: no kernel driver
