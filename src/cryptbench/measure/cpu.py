"""CPU accounting: system-wide from /proc/stat, per helper process with psutil.

Encryption work often runs outside fio: in kernel workers (fscrypt's read
decryption, writeback) or in a FUSE daemon (gocryptfs). fio's own usr/sys
figures miss it; these do not.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import psutil

from cryptbench.backends.base import Helper

_TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class CpuSnapshot:
    busy: float  # CPU-seconds, all cores: user+nice+system+irq+softirq+steal
    total: float  # CPU-seconds, all cores, including idle and iowait
    helpers: dict[str, float]  # CPU-seconds (user+system) per helper name
    wall: float  # seconds, monotonic clock
    threads: dict[str, int]  # threads per helper name, count


@dataclass(frozen=True)
class CpuUsage:
    busy_seconds: float  # CPU-seconds used system-wide during the interval
    utilization: float  # fraction of all cores' time that was busy, 0..1
    helper_seconds: dict[str, float]  # CPU-seconds per helper during the interval
    wall_seconds: float  # seconds
    # Threads of the helpers, the larger count of start and end (study 003
    # saw a disk-image helper's three threads limit its throughput).
    helper_threads: int = 0  # count


def _proc_stat() -> tuple[float, float]:
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal guest guest_nice;
    # guest time is already counted inside user and nice.
    user, nice, system, idle, iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    busy = user + nice + system + irq + softirq + steal
    return busy / _TICK, (busy + idle + iowait) / _TICK


def _helpers(helpers: tuple[Helper, ...]) -> tuple[dict[str, float], dict[str, int]]:
    """CPU-seconds and threads per helper name, each process read once."""
    times: dict[str, float] = {}
    threads: dict[str, int] = {}
    for h in helpers:
        t, n = 0.0, 0
        try:
            p = psutil.Process(h.pid)
            with p.oneshot():
                c = p.cpu_times()
                t, n = c.user + c.system, p.num_threads()
        except psutil.Error:
            pass  # gone: it adds nothing (the runner reports the lost target)
        times[h.name] = times.get(h.name, 0.0) + t
        threads[h.name] = threads.get(h.name, 0) + n
    return times, threads


def snapshot(helpers: tuple[Helper, ...] = ()) -> CpuSnapshot:
    busy, total = _proc_stat()
    times, threads = _helpers(helpers)
    return CpuSnapshot(busy, total, times, time.monotonic(), threads)


def usage(start: CpuSnapshot, end: CpuSnapshot) -> CpuUsage:
    total = end.total - start.total
    busy = end.busy - start.busy
    return CpuUsage(
        busy_seconds=busy,
        utilization=busy / total if total > 0 else 0.0,
        helper_seconds={k: end.helpers.get(k, 0.0) - v for k, v in start.helpers.items()},
        wall_seconds=end.wall - start.wall,
        helper_threads=max(sum(start.threads.values()), sum(end.threads.values())),
    )
