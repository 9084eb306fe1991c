"""Holding a program's resident pages across cache drops, on real files and the real
page cache: posix_fadvise(DONTNEED) drops a file's unmapped pages as drop_caches does
every file's, and leaves mapped ones alone. With the host's tests, not the unit tests: the
page cache is the machine's, and the trials of integration tests running beside the unit
tests (make test's lanes, scripts/test_lanes.sh) drop it whole at any moment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cryptbench.measure import resident
from cryptbench.measure.cache import resident_bytes

pytestmark = pytest.mark.integration

PAGES = 64


def _resident_pages(path: Path) -> int:
    return resident_bytes([path]) // resident.PAGE


def _drop(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _file(target_dir: Path) -> Path:
    # On the scratch disk: tmpfs's pages cannot be dropped at all, which would prove nothing.
    path = target_dir / "code"
    path.write_bytes(os.urandom(PAGES * resident.PAGE))
    os.sync()
    _drop(path)
    assert _resident_pages(path) == 0  # the control: this filesystem's pages do drop
    return path


def _read(path: Path, pages: int) -> None:
    with open(path, "rb") as f:
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_RANDOM)  # no read-ahead past what is read
        f.read(pages * resident.PAGE)


def test_held_pages_survive_a_drop_and_go_with_the_hold(target_dir: Path) -> None:
    path = _file(target_dir)
    _read(path, PAGES)
    assert _resident_pages(path) == PAGES
    with resident.hold([path]) as held:
        assert held == resident.Held(files=1, pages=PAGES, bytes=PAGES * resident.PAGE)
        _drop(path)
        assert _resident_pages(path) == PAGES
    _drop(path)
    assert _resident_pages(path) == 0  # unmapped at the end: the cache is the kernel's again


def test_only_pages_already_resident_are_held_and_none_is_read(target_dir: Path) -> None:
    path = _file(target_dir)
    _read(path, PAGES // 4)
    first = _resident_pages(path)
    assert PAGES // 4 <= first < PAGES
    with resident.hold([path]) as held:
        assert held.pages == first and held.files == 1
        assert _resident_pages(path) == first  # the hold read nothing
        _drop(path)
        assert _resident_pages(path) == first


def test_missing_empty_and_unreadable_files_are_passed_over(target_dir: Path) -> None:
    empty = target_dir / "empty"
    empty.touch()
    with resident.hold([target_dir / "absent", empty, target_dir]) as held:
        assert held == resident.Held(0, 0, 0)


def test_fio_and_the_libraries_the_loader_gives_it() -> None:
    files = resident.program_files("fio")
    assert files[0].name == "fio" and all(p.is_absolute() and p.exists() for p in files)
    assert any(p.name.startswith("libc.so") for p in files)
    assert any(p.name.startswith("ld-linux") for p in files)  # the loader itself, named by path alone
    assert not any("vdso" in str(p) for p in files)
    assert resident.program_files("no-such-program-cryptbench") == []
