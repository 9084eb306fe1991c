"""The terminal's efficiency table, queue-depth table and diagnosis, over a recorded run."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from cryptbench.report import cost_console

DOCS = Path(__file__).parent.parent / "fixtures" / "documents"


def _printed(name: str) -> str:
    doc = json.loads((DOCS / name).read_text())
    console = Console(record=True, width=120, color_system=None)
    cost_console.render(doc, console)
    return console.export_text()


def test_efficiency_sources_and_diagnosis_are_printed() -> None:
    text = _printed("quick-fscrypt-gocryptfs-ram.json")
    assert "Efficiency: achieved over the lower (bold) of plain" in text
    # fscrypt at seq1m-q8-read: 51.3 MB/s, plain 414.3, its kernel cipher 55.3, 93%
    row = next(line for line in text.splitlines() if "seq1m-q8-read" in line and "fscrypt" in line)
    assert row.split()[2:7] == ["51.3", "414.3", "55.3", "93%", "40.2"]
    assert "cipher of fscrypt, ram:fscrypt: this run's RAM twins at seq1m-q8-read" in text
    assert "cipher of gocryptfs, ram:gocryptfs: OpenSSL aes-256-gcm on 4096-byte units, 2 cores" in text
    assert "Diagnosis" in text and "• fscrypt: 51.3 MB/s at seq1m-q8-read. The kernel's xts(aes)" in text


def test_the_queue_depth_table_has_a_column_per_depth() -> None:
    text = _printed("qd-sweep-fscrypt.json")
    header = next(line for line in text.splitlines() if "pattern" in line)
    assert [w for w in header.split() if w.startswith("QD")] == ["QD1", "QD4", "QD16", "QD32"]
    rows = [line for line in text.splitlines() if "randread 4 KiB" in line and "fscrypt vs" in line]
    assert len(rows) == 1 and rows[0].count("%") == 4
