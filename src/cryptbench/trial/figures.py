"""A trial's figures as the store keeps them: what fio or an application task
measured, with the CPU and device counters taken around it, turned into the
catalog's metrics (model/metrics.py) with their units."""

from __future__ import annotations

from cryptbench.engines.apps import AppResult, AppWorkload
from cryptbench.engines.fio import FioMeasurement
from cryptbench.engines.metric_catalog import CATALOG, info
from cryptbench.measure.cpu import CpuUsage
from cryptbench.store.database import MetricValue


def _rate(items: int, seconds: float, unit: str) -> float:
    return items / seconds * (60.0 if unit == "pictures/min" else 1.0)


def _device(values: dict[str, float], written: int | None, read: int | None = None) -> None:
    # Only where the scratch space has a block device with a counter (not tmpfs).
    if written is not None:
        values["device_bytes_written"] = float(written)
    if read is not None:
        values["device_bytes_read"] = float(read)


def _fio_values(fio: FioMeasurement) -> dict[str, float]:
    """What fio itself measured in a trial."""
    return {
        "throughput": fio.throughput,
        "iops": fio.iops,
        "lat_p50": fio.lat_p50,
        "lat_p99": fio.lat_p99,
        "lat_p99_9": fio.lat_p99_9,
        "fio_usr_cpu": fio.fio_usr_cpu,
        "fio_sys_cpu": fio.fio_sys_cpu,
        "io_bytes": float(fio.io_bytes),
    }


def fleet_trial_metrics(fio: FioMeasurement) -> list[MetricValue]:
    """A fleet trial's metrics: what fio measured on the host, nothing else.

    The coordinator sees no host's /proc: system-wide CPU, helper daemons and
    the device's write counter are not measured in a fleet run, so they are
    absent rather than zero.
    """
    return [MetricValue(name, CATALOG[name].unit, float(v)) for name, v in _fio_values(fio).items()]


def app_metrics(
    workload: AppWorkload,
    result: AppResult,
    cpu: CpuUsage,
    device_written: int | None = None,
    device_read: int | None = None,
) -> list[MetricValue]:
    """The task's time, its bytes/s and its natural rate, whole and per phase, and CPU."""
    seconds = max(result.seconds, 1e-9)
    values: dict[str, float] = {"seconds": result.seconds}
    if result.bytes:
        values["throughput"] = result.bytes / seconds
    rate = workload.rate_metric
    if rate is not None:
        values[rate] = _rate(result.items, seconds, CATALOG[rate].unit)
    for p in result.phases:
        values[f"{p.name}.seconds"] = p.seconds
        if p.bytes:
            values[f"{p.name}.throughput"] = p.bytes / max(p.seconds, 1e-9)
        if rate is not None and p.items:
            values[f"{p.name}.{rate}"] = _rate(p.items, max(p.seconds, 1e-9), CATALOG[rate].unit)
    values.update(result.figures)
    values.update(
        {
            "cpu_utilization": cpu.utilization,
            "helper_cpu_seconds": sum(cpu.helper_seconds.values()),
            "helper_threads": cpu.helper_threads,
            "wall_seconds": cpu.wall_seconds,
        }
    )
    if not workload.runs_commands:  # a user's command's bytes are unknown, not zero: the device's say
        values["io_bytes"] = float(result.bytes)
    if result.bytes:
        values["cpu_seconds_per_gb"] = cpu.busy_seconds / (result.bytes / 1e9)
    _device(values, device_written, device_read)
    return [MetricValue(name, info(name).unit, float(v)) for name, v in values.items()]


def trial_metrics(
    fio: FioMeasurement,
    cpu: CpuUsage,
    device_written: int | None = None,
    synced: float | None = None,
    device_read: int | None = None,
) -> list[MetricValue]:
    """A fio trial's metrics; `synced`: the seconds the backing's sync took inside its clock
    (Target.end_write), None where the trial made none. `device_read`: what the scratch
    device read meanwhile, the evidence that a cold read came from it and not a cache."""
    values = {
        **_fio_values(fio),
        "cpu_seconds_per_gb": cpu.busy_seconds / (fio.io_bytes / 1e9),
        "cpu_utilization": cpu.utilization,
        "helper_cpu_seconds": sum(cpu.helper_seconds.values()),
        "helper_threads": cpu.helper_threads,
        "wall_seconds": cpu.wall_seconds,
    }
    _device(values, device_written, device_read)
    if synced is not None:
        values["backing_sync_seconds"] = synced
    return [MetricValue(name, CATALOG[name].unit, float(v)) for name, v in values.items()]
