"""A machine's /sys and /proc/self/mountinfo laid out under a test's directory, as the
kernel lays them out, and the crypt tables dm-crypt printed in the kernel lab
(tests/fixtures/dmsetup): what the stack reader (measure/stack.py) and the volume
resolver (measure/volume.py) read in unit tests."""

from __future__ import annotations

from pathlib import Path

from cryptbench.measure.stack import Reader
from tests.support.paths import TESTS

TABLES = TESTS / "fixtures" / "dmsetup"


def recorded_table(kernel: str, flags: str) -> str:
    """A crypt table line as dm-crypt printed it in the lab, for a flag set ("[]": none)."""
    for line in (TABLES / f"luks2-tables-{kernel}.txt").read_text().splitlines():
        head, _, table = line.partition(": ")
        if head == f"TABLE sector=4096 flags={flags}":
            return table
    raise AssertionError(f"no table for {flags} in the {kernel} fixture")


class Machine:
    """A /sys and a /proc/self/mountinfo of a machine, laid out under a test's directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.sys = root / "sys"
        self.proc = root / "proc"
        (self.proc / "self").mkdir(parents=True)
        (self.sys / "dev" / "block").mkdir(parents=True)
        (self.sys / "block").mkdir(parents=True)
        self.lines: list[str] = []
        self.tables: dict[str, str] = {}

    def _device(self, parent: Path, name: str, number: str, sectors: int) -> Path:
        node = parent / name
        node.mkdir(parents=True)
        (node / "dev").write_text(f"{number}\n")
        (node / "size").write_text(f"{sectors}\n")
        (node / "stat").write_text("10 0 80 5 3 0 2048 7 0 12 12 0 0 0 0 0 0\n")
        (self.sys / "dev" / "block" / number).symlink_to(node)
        return node

    def disk(self, name: str, number: str, model: str | None = None, rotational: str = "0") -> Path:
        node = self._device(self.sys / "devices" / "pci0", name, number, 2 << 30)
        (node / "queue").mkdir()
        (node / "queue" / "rotational").write_text(f"{rotational}\n")
        (node / "queue" / "scheduler").write_text("[none] mq-deadline\n")
        (node / "queue" / "logical_block_size").write_text("512\n")
        if model:
            (node / "device").mkdir()
            (node / "device" / "model").write_text(f"{model}\n")
            (node / "device" / "vendor").write_text("ATA\n")
        (self.sys / "block" / name).symlink_to(node)
        return node

    def partition(self, disk: Path, name: str, number: str, start: int) -> Path:
        node = self._device(disk, name, number, 1 << 20)
        (node / "partition").write_text(f"{name[-1]}\n")
        (node / "start").write_text(f"{start}\n")
        return node

    def _virtual(self, name: str, number: str, slaves: tuple[Path, ...]) -> Path:
        node = self._device(self.sys / "devices" / "virtual" / "block", name, number, 1 << 20)
        (node / "slaves").mkdir()
        for s in slaves:
            (node / "slaves" / s.name).symlink_to(s)
        (self.sys / "block" / name).symlink_to(node)
        return node

    def mapping(self, name: str, number: str, dm_name: str, uuid: str, table: str, *slaves: Path) -> Path:
        node = self._virtual(name, number, slaves)
        (node / "dm").mkdir()
        (node / "dm" / "name").write_text(f"{dm_name}\n")
        (node / "dm" / "uuid").write_text(f"{uuid}\n")
        self.tables[dm_name] = table
        return node

    def md(self, name: str, number: str, level: str, *slaves: Path) -> Path:
        node = self._virtual(name, number, slaves)
        (node / "md").mkdir()
        (node / "md" / "level").write_text(f"{level}\n")
        return node

    def loop(self, name: str, number: str, backing: Path) -> Path:
        node = self._virtual(name, number, ())
        (node / "loop").mkdir()
        (node / "loop" / "backing_file").write_text(f"{backing}\n")
        (node / "loop" / "offset").write_text("0\n")
        return node

    def mount(
        self, device: str, where: str, fstype: str, source: str, super_options: str = "rw", root: str = "/"
    ) -> Path:
        point = self.root / where
        point.mkdir(parents=True, exist_ok=True)
        fields = f"{device} {root} {point} rw,relatime shared:1 - {fstype} {source} {super_options}"
        self.lines.append(f"{30 + len(self.lines)} 1 {fields}")
        (self.proc / "self" / "mountinfo").write_text("\n".join(self.lines) + "\n")
        return point

    def reader(self, **kw: object) -> Reader:
        defaults: dict[str, object] = {
            "sys": self.sys,
            "proc": self.proc,
            "table": self.tables.__getitem__,
            "policy": lambda _p: None,
            "daemons": lambda _m: [],
            "root": lambda: True,
        }
        return Reader(**{**defaults, **kw})  # type: ignore[arg-type]
