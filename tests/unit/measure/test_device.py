"""The scratch device's own write counter (/sys/block/DEV/stat)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cryptbench.measure.device import bytes_written, device_of


def test_a_partition_counts_as_its_whole_disk(tmp_path: Path) -> None:
    st = os.stat(tmp_path)
    sys = tmp_path / "sys"
    part = sys / "devices" / "pci0" / "sda" / "sda1"
    part.mkdir(parents=True)
    (part / "partition").write_text("1\n")
    (sys / "block" / "sda").mkdir(parents=True)
    # read I/Os, merges, sectors, ticks, then write I/Os, merges, sectors written (field 6), …
    (sys / "block" / "sda" / "stat").write_text("10 0 80 5 3 0 2048 7 0 12 12 0 0 0 0 0 0\n")
    (sys / "dev" / "block").mkdir(parents=True)
    (sys / "dev" / "block" / f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}").symlink_to(part)
    if os.major(st.st_dev) == 0:
        pytest.skip("the tests' temporary directory is on a filesystem without a block device")
    assert device_of(tmp_path, sys) == "sda"
    assert bytes_written("sda", sys) == 2048 * 512


def test_no_device_no_counter(tmp_path: Path) -> None:
    assert bytes_written(None) is None
    assert bytes_written("no-such-disk", tmp_path) is None
    assert device_of(Path("/proc")) is None


def test_the_real_counter_sees_a_durable_write(tmp_path: Path) -> None:
    device = device_of(tmp_path)
    if device is None:
        pytest.skip("the tests' temporary directory is on a filesystem without a block device")
    before = bytes_written(device)
    assert before is not None
    with open(tmp_path / "f", "wb") as f:
        f.write(os.urandom(4 << 20))
        f.flush()
        os.fsync(f.fileno())
    after = bytes_written(device)
    assert after is not None and after - before >= 4 << 20
