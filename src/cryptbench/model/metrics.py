"""The metrics every trial records: name, unit and which direction is better.

Here: fio's and the system's figures, and an application task's seconds. The catalog
with every workload's own figures, and `info()` for any metric name, are
engines/metric_catalog.py's."""

from __future__ import annotations

from dataclasses import dataclass

from cryptbench.model.json_types import JsonObject


@dataclass(frozen=True)
class MetricInfo:
    name: str
    unit: str
    higher_is_better: bool | None  # None: neither (context, not a score)
    label: str


BASE = {
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
        # rclone's fsync does nothing: its write trials sync the backing inside the clock
        MetricInfo("backing_sync_seconds", "s", None, "seconds the backing's sync took, inside the clock"),
        MetricInfo("device_bytes_written", "bytes", None, "bytes the scratch device wrote (its own counter)"),
        MetricInfo("device_bytes_read", "bytes", None, "bytes the scratch device read (its own counter)"),
    )
}
# Every application workload's whole task, and each phase as <phase>.seconds; a workload's
# own figures (its rate, its commands' CPU) are its own to declare (AppWorkload.metrics),
# and engines/metric_catalog.py puts them all together.
SECONDS = MetricInfo("seconds", "s", False, "seconds")
BASE[SECONDS.name] = SECONDS
PRIMARY = "throughput"


def primary_of(plan: JsonObject, workload: str) -> str:
    """The metric a workload is compared on (runs before app workloads stored none: throughput)."""
    return str(plan.get("primary_metrics", {}).get(workload, PRIMARY))
