"""The metrics every trial records: name, unit and which direction is better."""

from __future__ import annotations

from dataclasses import dataclass

from cryptbench.engines.fio import FioMeasurement
from cryptbench.measure.cpu import CpuUsage
from cryptbench.store import MetricValue


@dataclass(frozen=True)
class MetricInfo:
    name: str
    unit: str
    higher_is_better: bool | None  # None: neither (context, not a score)
    label: str


CATALOG = {
    m.name: m
    for m in (
        MetricInfo("throughput", "bytes/s", True, "throughput"),
        MetricInfo("iops", "1/s", True, "IOPS"),
        MetricInfo("lat_p50", "s", False, "p50 completion latency"),
        MetricInfo("lat_p99", "s", False, "p99 completion latency"),
        MetricInfo("lat_p99_9", "s", False, "p99.9 completion latency"),
        MetricInfo("cpu_seconds_per_gb", "s/GB", False, "CPU-seconds per GB moved, system-wide"),
        MetricInfo("cpu_utilization", "fraction", None, "system-wide CPU busy, all cores"),
        MetricInfo("helper_cpu_seconds", "s", None, "CPU-seconds of helper processes"),
        MetricInfo("helper_threads", "threads", None, "threads of helper processes"),
        MetricInfo("fio_usr_cpu", "%", None, "fio user CPU, percent of one core"),
        MetricInfo("fio_sys_cpu", "%", None, "fio system CPU, percent of one core"),
        MetricInfo("wall_seconds", "s", None, "wall time of the fio invocation"),
        MetricInfo("io_bytes", "bytes", None, "bytes moved"),
    )
}
PRIMARY = "throughput"


def trial_metrics(fio: FioMeasurement, cpu: CpuUsage) -> list[MetricValue]:
    values = {
        "throughput": fio.throughput,
        "iops": fio.iops,
        "lat_p50": fio.lat_p50,
        "lat_p99": fio.lat_p99,
        "lat_p99_9": fio.lat_p99_9,
        "cpu_seconds_per_gb": cpu.busy_seconds / (fio.io_bytes / 1e9),
        "cpu_utilization": cpu.utilization,
        "helper_cpu_seconds": sum(cpu.helper_seconds.values()),
        "helper_threads": cpu.helper_threads,
        "fio_usr_cpu": fio.fio_usr_cpu,
        "fio_sys_cpu": fio.fio_sys_cpu,
        "wall_seconds": cpu.wall_seconds,
        "io_bytes": float(fio.io_bytes),
    }
    return [MetricValue(name, CATALOG[name].unit, float(v)) for name, v in values.items()]
