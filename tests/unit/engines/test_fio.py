"""Parsing JSON that fio 3.33 printed on this machine (tests/fixtures/fio/regenerate.py)."""

import json

import pytest

from cryptbench.engines.fio import parse_fio_json
from cryptbench.model.errors import TrialError
from tests.support.paths import TESTS

FIXTURES = TESTS / "fixtures" / "fio"


def _load(name: str) -> tuple[str, dict]:
    text = (FIXTURES / f"{name}.json").read_text()
    return text, json.loads(text)["jobs"][0]


def test_random_read_direct() -> None:
    text, job = _load("rnd4k-q32-read-direct")
    m = parse_fio_json(text)
    assert m.direction == "read"
    assert m.throughput == job["read"]["bw_bytes"]  # bytes/s, not fio's KiB/s `bw`
    assert m.throughput != job["read"]["bw"]
    assert m.iops == job["read"]["iops"]
    assert m.io_bytes == 16 << 20
    assert m.lat_p50 == job["read"]["clat_ns"]["percentile"]["50.000000"] / 1e9
    assert m.lat_p99_9 == job["read"]["clat_ns"]["percentile"]["99.900000"] / 1e9
    assert 0 < m.lat_p50 <= m.lat_p99 <= m.lat_p99_9 < 1
    assert m.runtime == job["read"]["runtime"] / 1e3


@pytest.mark.parametrize("name", ["seq1m-q8-write-buffered", "rnd4k-q1-write-direct"])
def test_writes(name: str) -> None:
    text, job = _load(name)
    m = parse_fio_json(text)
    assert m.direction == "write"
    assert m.throughput == job["write"]["bw_bytes"]
    assert m.fio_sys_cpu == job["sys_cpu"]


def test_leading_noise_is_skipped() -> None:
    text, _ = _load("rnd4k-q32-read-direct")
    assert parse_fio_json("fio: some note\n" + text).direction == "read"


@pytest.mark.parametrize("bad", ["", "not json", '{"jobs": []}'])
def test_garbage_is_a_trial_error(bad: str) -> None:
    with pytest.raises(TrialError):
        parse_fio_json(bad)


def test_job_error_is_reported() -> None:
    text, _ = _load("rnd4k-q32-read-direct")
    doc = json.loads(text)
    doc["jobs"][0]["error"] = 5
    with pytest.raises(TrialError, match="error 5"):
        parse_fio_json(json.dumps(doc))
