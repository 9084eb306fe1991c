"""Known-answer targets: what a machine without cgroup v1 throttling is told."""

import os
from pathlib import Path

from cryptbench.backends.known import probe_throttling


def test_without_cgroup_v1_throttling_the_reason_says_so(tmp_path: Path) -> None:
    avail = probe_throttling(tmp_path)
    assert not avail.ok
    if os.geteuid() == 0:
        assert "cgroup v1 block I/O throttling is not mounted here" in avail.reason
        assert "io.max" in avail.reason
