"""Closing a dm-crypt mapping (resources.DmCrypt): cryptsetup first, and the
device-mapper's own removal where cryptsetup cannot parse the mapping's table (a
high_priority flag reloaded into it, which cryptsetup before 2.7 does not know). This
kernel has no device-mapper: the commands are faked here; the lab closes real mappings
of both kinds (tests/lab/test_luks.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cryptbench.machine import resources
from cryptbench.machine.resources import UNREADABLE_TABLE, DmCrypt
from cryptbench.model.errors import ProvisionError


def _machine(monkeypatch: pytest.MonkeyPatch, cryptsetup_says: str) -> list[list[str]]:
    """A mapping that cryptsetup fails to close with `cryptsetup_says`, and dmsetup removes."""
    ran: list[list[str]] = []
    present = {"up": True}

    def run(argv: list[str], **_kw: object) -> subprocess.CompletedProcess[bytes]:
        ran.append(argv)
        if argv[0] == "dmsetup":
            present["up"] = False
            return subprocess.CompletedProcess(argv, 0, b"", b"")
        return subprocess.CompletedProcess(argv, 1, b"", cryptsetup_says.encode())

    monkeypatch.setattr(resources.subprocess, "run", run)
    monkeypatch.setattr(resources.time, "sleep", lambda _s: None)
    monkeypatch.setattr(
        Path, "exists", lambda p: present["up"] if str(p).startswith("/dev/mapper") else False
    )
    return ran


def test_a_table_cryptsetup_cannot_read_is_removed_by_the_device_mapper(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran = _machine(monkeypatch, f"{UNREADABLE_TABLE}.")
    assert DmCrypt("cryptbench-run-x-luks-1").release() == "closed dm-crypt mapping cryptbench-run-x-luks-1"
    assert ran == [
        ["cryptsetup", "close", "cryptbench-run-x-luks-1"],
        ["dmsetup", "remove", "cryptbench-run-x-luks-1"],
    ]


def test_a_busy_mapping_is_not_removed_behind_cryptsetups_back(monkeypatch: pytest.MonkeyPatch) -> None:
    ran = _machine(monkeypatch, "Device cryptbench-run-x-luks-1 is still in use.")
    with pytest.raises(ProvisionError, match=r"could not close dm-crypt mapping .*still in use"):
        DmCrypt("cryptbench-run-x-luks-1").release()
    assert {argv[0] for argv in ran} == {"cryptsetup"} and len(ran) == 20
