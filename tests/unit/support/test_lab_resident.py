"""The kernel lab's keeper of Python's code (tests/support/lab_resident.py) finds what a start
of `cryptbench` reads: the interpreter's mapped libraries and every module's bytecode."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import cryptbench.cli
from tests.support import lab_resident


def test_the_files_are_the_modules_and_the_mapped_libraries() -> None:
    files = lab_resident._files()
    source = Path(cryptbench.cli.__file__)
    assert source in files
    cached = Path(importlib.util.cache_from_source(str(source)))
    assert cached in files or not cached.exists()
    assert Path(sys.executable).resolve() in {f.resolve() for f in files}  # mapped: the interpreter
    assert any(f.suffix == ".so" and "numpy" in f.parts for f in files)  # an extension module
    assert all(f.is_file() for f in files)


def test_a_file_is_mapped_whole_and_every_page_resident(tmp_path: Path) -> None:
    from cryptbench.measure.cache import resident_bytes

    data = tmp_path / "module.so"
    data.write_bytes(b"\x7fELF" * (64 << 10))  # 256 KiB
    fd = os.open(data, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    assert resident_bytes([data]) < data.stat().st_size  # the control: dropped
    mapped = lab_resident._map_whole(data)
    assert mapped is not None and len(mapped) == data.stat().st_size
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # mapped pages are spared
    os.close(fd)
    assert resident_bytes([data]) == data.stat().st_size
    mapped.close()
    (tmp_path / "empty").touch()
    assert lab_resident._map_whole(tmp_path / "empty") is None
    assert lab_resident._map_whole(tmp_path / "missing") is None
