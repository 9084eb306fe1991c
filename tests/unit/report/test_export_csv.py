"""`report --csv`'s column names and cells (a real run's file is read back by
pandas in tests/integration/test_report_real.py)."""

from __future__ import annotations

import pytest

from cryptbench.report.export_csv import _cell, column


@pytest.mark.parametrize(
    ("metric", "unit", "name"),
    [
        ("throughput", "bytes/s", "throughput_bytes_per_s"),
        ("iops", "1/s", "iops_per_s"),
        ("lat_p99", "s", "lat_p99_s"),
        ("fio_usr_cpu", "%", "fio_usr_cpu_percent"),
        ("cpu_utilization", "fraction", "cpu_utilization_fraction"),
        ("wall_seconds", "s", "wall_seconds"),  # the name says its unit: not wall_seconds_s
        ("copy.seconds", "s", "copy.seconds"),
        ("io_bytes", "bytes", "io_bytes"),
        ("cpu_seconds_per_gb", "s/GB", "cpu_seconds_per_gb"),
        ("pictures", "pictures/min", "pictures_pictures_per_min"),
        ("something", "", "something"),
    ],
)
def test_column_names_carry_their_unit(metric: str, unit: str, name: str) -> None:
    assert column(metric, unit) == name


def test_cells_read_the_same_in_pandas_and_r() -> None:
    assert _cell(None) == ""
    assert (_cell(True), _cell(False)) == ("TRUE", "FALSE")
    assert _cell(0.1 + 0.2) == "0.30000000000000004"  # nothing rounded
    assert _cell("x") == "x"
