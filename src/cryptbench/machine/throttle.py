"""Where the kernel can throttle a block device's bytes/s, and how.

Two interfaces, one per cgroup version:
- cgroup v1 (`blkio.throttle.{read,write}_bps_device` in the root blkio
  group): every process's I/O to the device obeys it, writeback included.
- cgroup v2 (`io.max`): no rule can be set on the root cgroup, so cryptbench
  makes a child cgroup of its own per throttled target, sets the rule there
  and starts fio (and only fio) in it; the cgroup is removed at teardown and by
  `cleanup`. With the memory controller enabled beside io, writeback of the
  pages fio dirtied is charged to that cgroup too (cgroup writeback), so a
  buffered write's final fsync is throttled as on v1.

Debian 12, Ubuntu, Fedora and RHEL mount cgroup v2 only; v1's blkio survives
on older systems and on hybrid set-ups (like this project's development VM).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")
BLKIO = CGROUP / "blkio"  # cgroup v1's block I/O controller
THROTTLE_FILES = ("blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device")
V2_CONTROLLERS = ("io", "memory")  # memory too: without it writeback is not charged to the cgroup


@dataclass(frozen=True)
class Mode:
    """How this machine throttles, or why it cannot."""

    version: int | None  # 1 or 2; None when neither can
    root: Path  # v1: the blkio group; v2: the unified hierarchy's root
    reason: str = ""  # why not, when version is None

    @property
    def label(self) -> str:
        return {1: "cgroup v1 blkio", 2: "cgroup v2 io.max"}.get(self.version or 0, "none")


def mode(v1: Path = BLKIO, v2: Path = CGROUP) -> Mode:
    """v1 where its blkio throttle files are mounted (the io controller is then
    bound to v1 and unusable on v2), else v2 where the unified hierarchy offers io."""
    if all((v1 / name).exists() for name in THROTTLE_FILES):
        return Mode(1, v1)
    controllers = v2 / "cgroup.controllers"
    if controllers.exists():
        offered = controllers.read_text().split()
        if "io" in offered:
            return Mode(2, v2)
        return Mode(
            None,
            v2,
            f"cgroup v2 is mounted at {v2} but offers no io controller ({' '.join(offered) or 'none'}); "
            "a kernel with CONFIG_BLK_DEV_THROTTLING and the io controller is needed",
        )
    return Mode(
        None,
        v2,
        f"no block I/O throttling here: neither cgroup v1's {v1}/{THROTTLE_FILES[0]} "
        f"nor cgroup v2's {v2}/cgroup.controllers",
    )


def v1_rules(device: str, root: Path = BLKIO) -> dict[str, int]:
    """The root blkio group's bytes/s limits on `device` (major:minor), by file."""
    found = {}
    for name in THROTTLE_FILES:
        for line in (root / name).read_text().splitlines():
            dev, _, rate = line.partition(" ")
            if dev == device:
                found[name] = int(rate)
    return found


def v2_rules(device: str, cgroup: Path) -> dict[str, int]:
    """`cgroup`'s io.max limits on `device`: {"rbps": …, "wbps": …} where set (not "max")."""
    found: dict[str, int] = {}
    io_max = cgroup / "io.max"
    if not io_max.exists():
        return found
    for line in io_max.read_text().splitlines():
        dev, *pairs = line.split()
        if dev != device:
            continue
        for pair in pairs:
            key, _, value = pair.partition("=")
            if value != "max":
                found[key] = int(value)
    return found


def enable_v2_controllers(root: Path = CGROUP) -> None:
    """Let children of `root` have io and memory (a no-op where they already may)."""
    enabled = (root / "cgroup.subtree_control").read_text().split()
    offered = (root / "cgroup.controllers").read_text().split()
    missing = [c for c in V2_CONTROLLERS if c in offered and c not in enabled]
    if missing:
        (root / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in missing))


def in_cgroup(argv: list[str], cgroup: Path) -> list[str]:
    """`argv` started inside `cgroup`: a shell moves itself there, then execs
    it, so the program is in the cgroup before its first instruction and its
    pid (the one journaled) stays the same."""
    return ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(cgroup), *argv]
