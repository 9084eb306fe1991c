"""The lab's ZFS is found where scripts/fetch-zfs.sh leaves it: the newest version built
for the running kernel, a build still filling (a dot directory) or one without its
programs never taken, and where none is there, a reason that names the script."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import zfs_lab


def _build(cache: Path, version: str, release: str, programs: bool = True) -> None:
    modules = cache / version / "modules" / release
    modules.mkdir(parents=True)
    (modules / "zfs.ko").write_bytes(b"")
    if programs:
        (cache / version / "root/sbin").mkdir(parents=True)
        (cache / version / "root/sbin/zpool").write_bytes(b"")


def test_the_newest_whole_build_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zfs_lab, "CACHE", tmp_path)
    _build(tmp_path, "2.3.2-2~bpo12+2", "6.1.0-57-amd64")
    _build(tmp_path, "2.3.10-1~bpo12+1", "6.1.0-57-amd64")  # newer: 10 > 2, not as text
    _build(tmp_path, "2.4.0-1", "6.1.0-57-amd64", programs=False)  # no zpool: not whole
    _build(tmp_path, ".fetch-abc", "6.1.0-57-amd64")  # still filling
    _build(tmp_path, "2.5.0-1", "6.12.117+deb13-amd64")  # another kernel's
    found = zfs_lab.find("6.1.0-57-amd64")
    assert found is not None and found.version == "2.3.10-1~bpo12+1"
    assert found.modules == tmp_path / "2.3.10-1~bpo12+1/modules/6.1.0-57-amd64"
    env = found.environ()
    assert env["PATH"].startswith(f"{found.root / 'sbin'}:")
    assert env["LD_LIBRARY_PATH"].split(":")[0] == str(found.root / "lib/x86_64-linux-gnu")
    assert zfs_lab.why_missing("6.1.0-57-amd64") is None


def test_no_build_says_what_builds_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zfs_lab, "CACHE", tmp_path)
    _build(tmp_path, "2.3.2-2~bpo12+2", "6.1.0-57-amd64")
    assert zfs_lab.find("6.1.0-58-amd64") is None
    why = zfs_lab.why_missing("6.1.0-58-amd64")
    assert why is not None and "6.1.0-58-amd64" in why and zfs_lab.FETCH in why
    monkeypatch.setattr(zfs_lab, "CACHE", tmp_path / "absent")
    assert zfs_lab.find("6.1.0-57-amd64") is None
