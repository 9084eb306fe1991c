"""The responsiveness workload's logic: its job file, what it reads out of fio's
JSON (printed here by tests/fixtures/fio/regenerate.py), and the metrics it
stores. It runs for real in tests/integration/test_apps_real.py."""

from __future__ import annotations

import platform
import tempfile
from pathlib import Path

import pytest

from cryptbench.engines.apps import AppResult, Phase
from cryptbench.engines.apps.responsiveness import (
    MIN_PROBE_READS,
    Responsiveness,
    parse,
    probe_direct,
    render_job,
)
from cryptbench.engines.metric_catalog import info
from cryptbench.measure.cpu import CpuUsage
from cryptbench.model.errors import TrialError
from cryptbench.trial.figures import app_metrics
from tests.support.paths import TESTS

FIXTURE = TESTS / "fixtures" / "fio" / "responsiveness.json"


def _job(tmp_path: Path, direct_bulk: bool = False) -> dict[str, dict[str, str]]:
    probe = tmp_path / "probe.dat"
    probe.write_bytes(bytes(8192))
    text = render_job(tmp_path / "on:target" / "bulk.dat", 64 << 20, direct_bulk, 7, 1 << 30, probe, 8192, 42)
    sections: dict[str, dict[str, str]] = {}
    current = ""
    for line in text.splitlines():
        if line.startswith("["):
            current = line.strip("[]")
            sections[current] = {}
        elif "=" in line and not line.startswith("#"):
            k, _, v = line.partition("=")
            sections[current][k] = v
    return sections


def test_the_bulk_write_and_the_probe_run_together_and_end_together(tmp_path: Path) -> None:
    job = _job(tmp_path)
    assert job["global"]["exitall"] == "1"  # the probe ends with the bulk write
    assert job["global"]["ioengine"] == "psync" and job["global"]["randseed"] == "42"
    bulk, probe = job["bulk"], job["probe"]
    assert bulk["filename"].endswith("on\\:target/bulk.dat")  # fio's ':' escaped
    assert (bulk["rw"], bulk["bs"], bulk["size"]) == ("write", str(1 << 20), str(64 << 20))
    assert (bulk["runtime"], bulk["io_size"]) == ("7", str(1 << 30))  # whichever comes first
    assert "time_based" not in bulk
    assert (bulk["direct"], bulk["fsync"], bulk["end_fsync"]) == ("0", "32", "1")
    assert (probe["rw"], probe["bs"], probe["iodepth"], probe["size"]) == ("randread", "4096", "1", "8192")
    assert probe["direct"] == "1"  # tmp_path is on a filesystem that takes O_DIRECT here
    assert int(probe["runtime"]) > 7  # its own limit is only a backstop
    direct = _job(tmp_path, direct_bulk=True)["bulk"]
    assert direct["direct"] == "1" and "fsync" not in direct


def test_probe_direct_is_false_where_the_filesystem_refuses_o_direct() -> None:
    if not Path("/dev/shm").is_dir():
        pytest.skip("no /dev/shm here, so no tmpfs to try O_DIRECT on")
    major, minor = (int(x) for x in platform.release().split(".")[:2])
    with tempfile.NamedTemporaryFile(dir="/dev/shm") as f:
        # tmpfs takes O_DIRECT from Linux 6.6 on; before, the probe reads buffered
        assert probe_direct(Path(f.name)) is ((major, minor) >= (6, 6))


def test_fio_json_as_printed_here_gives_bulk_and_probe() -> None:
    bulk, probe = parse(FIXTURE.read_text())
    # its 1 GiB cap came before its 2 s
    assert bulk.direction == "write" and bulk.io_bytes == 1 << 30 and 1.0 < bulk.runtime < 2.0
    assert probe.direction == "read" and probe.io_bytes % 4096 == 0
    assert probe.io_bytes // 4096 >= MIN_PROBE_READS
    # fio's nanoseconds in seconds: p50 0.189 ms and p99 13.8 ms in this fixture
    assert probe.lat_p50 == pytest.approx(189440e-9)
    assert probe.lat_p99 == pytest.approx(13828096e-9)
    assert probe.lat_p50 < probe.lat_p99 <= probe.lat_p99_9


def test_fio_json_without_the_probe_is_refused() -> None:
    text = FIXTURE.read_text().replace('"jobname" : "probe"', '"jobname" : "other"')
    assert text != FIXTURE.read_text()
    with pytest.raises(TrialError, match="lacks the probe job"):
        parse(text)
    with pytest.raises(TrialError, match="could not parse"):
        parse(FIXTURE.read_text()[:500])


def test_the_probe_figures_are_stored_with_their_units_and_direction() -> None:
    w = Responsiveness("resp")
    result = AppResult(
        (Phase("bulk", 5.0, 500 << 20, 1),), 1, {}, {"probe.lat_p50": 2e-4, "probe.lat_p99": 0.016}
    )
    cpu = CpuUsage(busy_seconds=2.0, utilization=0.25, helper_seconds={}, wall_seconds=5.1)
    m = {v.name: (v.value, v.unit) for v in app_metrics(w, result, cpu)}
    assert m["probe.lat_p99"] == (0.016, "s") and m["probe.lat_p50"] == (2e-4, "s")
    assert m["bulk.throughput"][0] == pytest.approx((500 << 20) / 5.0)
    assert w.primary == "probe.lat_p99" and info(w.primary).higher_is_better is False
    assert info("probe.lat_p99").label == "the probe's p99 completion latency"
    # figures only where a workload has them: other apps' stored output is unchanged
    assert "figures" not in AppResult((Phase("x", 1.0, 0, 1),), 1).to_json()
    assert result.to_json()["figures"] == {"probe.lat_p50": 2e-4, "probe.lat_p99": 0.016}
