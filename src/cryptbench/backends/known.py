"""Known-answer targets: cryptbench checks itself against answers it knows.

`throttle-40` and `throttle-20` are ext4 on a loop device whose block I/O the
kernel limits to 40 and 20 MB/s (machine/throttle.py: cgroup v1's blkio on the root
group, or cgroup v2's io.max on a cgroup of cryptbench's that fio runs in). Whatever else is true
of the machine, the second is half as fast as the first on sequential work:
a run must report 0.50 with an interval that contains it
(`cryptbench selftest`). `throttle-none` is the same stack with no throttle:
what the device itself adds to a throttled job (a write's final flush) is
measured on it, beside the throttles, in the same rounds. `plain-twin` is a second plain directory beside
`plain`: two identical targets, whose ratio's interval should contain 1.00
about 95 % of the time (`benchmarks/calibration.py`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cryptbench.backends.base import Availability, Backend, Target, TargetSpec
from cryptbench.backends.ext4image import probe_ext4_loop
from cryptbench.backends.ext4loop import Ext4LoopBackend
from cryptbench.backends.plain import PlainBackend
from cryptbench.machine.resources import Throttle
from cryptbench.machine.session import Session
from cryptbench.machine.throttle import Mode, enable_v2_controllers, mode, v1_rules
from cryptbench.model.errors import ProvisionError

MB = 1_000_000  # the decimal megabyte disk rates are quoted in


def probe_throttling(how: Mode | None = None) -> Availability:
    if os.geteuid() != 0:
        return Availability(False, "throttling a block device needs root")
    how = how or mode()
    if how.version is None:
        return Availability(False, how.reason)
    return probe_ext4_loop()


class ThrottledBackend(Ext4LoopBackend):
    """ext4-loop's stack (and its space needs) with a throttled loop device."""

    ram = False  # a known answer for the device; its RAM twin would only repeat it

    def __init__(self, rate_mb: int, baseline: str | None) -> None:
        self.name = f"throttle-{rate_mb}"
        self.rate = rate_mb * MB  # bytes/s, read and write
        self.baseline = baseline
        self.summary = (
            f"known answer: ext4 on a loop device the kernel throttles to {rate_mb} MB/s "
            f"({mode().label}; cryptbench selftest)"
        )

    def probe(self) -> Availability:
        return probe_throttling()

    @contextmanager
    def provision(self, session: Session, spec: TargetSpec, data_bytes: int) -> Iterator[Target]:
        with super().provision(session, spec, data_bytes) as t:
            number = (Path("/sys/block") / Path(t.details["loop_device"]).name / "dev").read_text().strip()
            # The provisioning's number tells a reset target's cgroup from the last one's.
            with throttled(session, number, self.rate, f"{spec.slug}-{t.backing[0].parent.name}") as cgroup:
                t.cgroup = cgroup
                where = f", fio runs in {cgroup}" if cgroup else ""
                t.details["throttle"] = (
                    f"{self.rate} bytes/s read and write on {number} ({mode().label}{where})"
                )
                yield t


@contextmanager
def throttled(session: Session, device: str, rate: int, name: str) -> Iterator[Path | None]:
    """Limit block device `device` (major:minor) to `rate` bytes/s, read and
    write, until exit; yield the cgroup fio must run in (cgroup v2), or None
    (v1: the rule binds every process). A v2 cgroup is named after the run
    directory and `name`, as dm-crypt mappings are, so that `cleanup` finds it
    after a SIGKILL."""
    how = mode()
    if how.version is None:
        raise ProvisionError(how.reason)
    if how.version == 1:
        if v1_rules(device, how.root):
            raise ProvisionError(
                f"block device {device} already has a block I/O throttle that cryptbench did not set; "
                "refusing to change it"
            )
        rule, cgroup = Throttle(device, rate, how.root), None
    else:
        enable_v2_controllers(how.root)
        cgroup = how.root / f"cryptbench-{session.run_dir.name}-{name}"
        rule = Throttle(device, rate, cgroup=str(cgroup))
    session.acquire(rule)
    try:
        rule.set()
        yield cgroup
    finally:
        session.release(rule)


class UnthrottledBackend(Ext4LoopBackend):
    """The throttles' stack with no throttle: what the device adds to a throttled job."""

    name = "throttle-none"
    baseline = None
    ram = False  # the throttles' control, on the same device as they are
    summary = (
        "known answer's control: ext4 on a loop device, not throttled; what the device itself "
        "adds to a throttled job (cryptbench selftest)"
    )

    def probe(self) -> Availability:
        # needs no throttle itself, but is only of use beside the throttles
        return probe_throttling()


class PlainTwinBackend(PlainBackend):
    name = "plain-twin"
    baseline = "plain"
    summary = "known answer: a second plain directory, identical to plain (its ratio should be 1.00)"

    @contextmanager
    def provision(self, session: Session, spec: TargetSpec, data_bytes: int) -> Iterator[Target]:
        with super().provision(session, spec, data_bytes) as t:
            t.baseline = self.baseline
            yield t


def known_answer_backends() -> list[Backend]:
    return [
        ThrottledBackend(40, None),
        ThrottledBackend(20, "throttle-40"),
        UnthrottledBackend(),
        PlainTwinBackend(),
    ]
