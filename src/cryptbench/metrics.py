"""The metrics every trial records: name, unit and which direction is better."""

from __future__ import annotations

from dataclasses import dataclass

from cryptbench.json_types import JsonObject


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
        MetricInfo("device_bytes_written", "bytes", None, "bytes the scratch device wrote (its own counter)"),
        MetricInfo("device_bytes_read", "bytes", None, "bytes the scratch device read (its own counter)"),
    )
}
# Application workloads: the whole task, and each phase as <phase>.<metric>.
_APP_METRICS = (
    MetricInfo("seconds", "s", False, "seconds"),
    MetricInfo("pictures_per_minute", "pictures/min", True, "pictures per minute"),
    MetricInfo("files_per_second", "files/s", True, "files per second"),
    MetricInfo("messages_per_second", "messages/s", True, "messages per second"),
    MetricInfo("transactions_per_second", "transactions/s", True, "transactions per second"),
    MetricInfo("command_cpu_seconds", "s", False, "CPU-seconds of the command's processes"),
)
CATALOG.update({m.name: m for m in _APP_METRICS})
PRIMARY = "throughput"
# A phase's figures, or a probe's beside them (responsiveness: probe.lat_p99).
PHASE_METRICS = ("throughput", "iops", "lat_p50", "lat_p99", "lat_p99_9", *(m.name for m in _APP_METRICS))


def primary_of(plan: JsonObject, workload: str) -> str:
    """The metric a workload is compared on (runs before app workloads stored none: throughput)."""
    return str(plan.get("primary_metrics", {}).get(workload, PRIMARY))


def info(name: str) -> MetricInfo:
    """A metric's unit and direction; a phase metric (copy.seconds) takes its base's."""
    if name in CATALOG:
        return CATALOG[name]
    phase, _, base = name.rpartition(".")
    if phase and base in PHASE_METRICS:
        b = CATALOG[base]
        # a probe is not a phase of the task but runs beside it (responsiveness)
        of = "the probe's" if phase == "probe" else None
        label = f"{of} {b.label}" if of else f"{b.label} of the {phase} phase"
        return MetricInfo(name, b.unit, b.higher_is_better, label)
    return MetricInfo(name, "", None, name)
