"""Caches really are dropped before a trial, and writes are durable when fio stops the clock."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cryptbench.backends.base import iter_files
from cryptbench.backends.known import throttled
from cryptbench.engines.fio import parse_fio_json, run_fio
from cryptbench.engines.jobs import JobOptions, render_job
from cryptbench.machine import throttle
from cryptbench.measure.cache import drop_caches, resident_bytes
from cryptbench.planning.suite import WorkloadSpec
from tests.support.targets import provisioned, requires_root

pytestmark = pytest.mark.integration

SIZE = 8 << 20


@requires_root
@pytest.mark.parametrize("backend", ["plain", "ext4-loop", "fscrypt", "gocryptfs"])
def test_drop_leaves_nothing_resident(target_dir: Path, backend: str) -> None:
    with provisioned(target_dir, backend, SIZE) as (_, t):
        data = t.path / "data"
        data.write_bytes(os.urandom(SIZE))
        assert data.read_bytes()  # now it is in the page cache
        files = [data, *iter_files(t.backing)]
        assert resident_bytes(files) >= SIZE
        drop_caches(files)
        assert resident_bytes(files) == 0


def _sectors_written(dev: str) -> int:
    """The block device's own count of 512-byte sectors written (Documentation/block/stat.rst)."""
    return int(Path(f"/sys/block/{dev}/stat").read_text().split()[6])


@requires_root
def test_write_throughput_includes_the_final_fsync(target_dir: Path) -> None:
    """Known answer: behind a 20 MB/s throttle, a buffered write that ends with
    end_fsync=1 cannot report more than 20 MB/s. If fio left the fsync out of its
    runtime, it would report page-cache speed (GB/s). On cgroup v2 this also
    proves the throttle reaches writeback: the pages fio dirtied are written
    back on its cgroup's account."""
    how = throttle.mode()
    if how.version is None:
        pytest.skip(f"no block I/O throttling here: {how.reason}")
    limit = 20_000_000  # bytes/s
    with provisioned(target_dir, "ext4-loop", 32 << 20) as (session, t):
        dev = Path(t.details["loop_device"]).name
        major_minor = Path(f"/sys/block/{dev}/dev").read_text().strip()
        job = session.path("throttled.fio")
        opts = JobOptions(t.path / "d", 16 << 20, False, "psync", False, 1)
        job.write_text(render_job(WorkloadSpec("seq-write", "write", 1 << 20, 1), opts))
        written = _sectors_written(dev)
        with throttled(session, major_minor, limit, "durability") as cgroup:
            m = parse_fio_json(run_fio(job, session, cgroup=cgroup))
        assert m.throughput <= limit * 1.15
        # And what fio timed went to that device: its own counter took every byte.
        # (No floor on the speed: under TCG or on a busy host it may be far below the limit.)
        assert (_sectors_written(dev) - written) * 512 >= 16 << 20
