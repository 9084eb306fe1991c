"""responsiveness: how slow the rest of the machine gets while a target takes a
bulk write ("the machine is nearly unusable", study 000; dm-crypt's freezes).

One fio invocation, two jobs that start together:

- `bulk`: sequential 1 MiB writes to a new file of `--size` on the target (over
  it again from the start when it is full) for `seconds` or until `bulk_bytes`
  are written, whichever comes first, through the page cache with an fsync
  every 32 MiB, as a large copy is written back once it passes the kernel's
  dirty thresholds; or with O_DIRECT (`bulk_io = "direct"`). A time rather
  than `--size`: the probe needs the load long enough to take hundreds of
  reads, or its p99 would be its maximum; and a byte cap, so a fast SSD is not
  worn by gigabytes per trial;
- `probe`: 4 KiB random reads at queue depth 1, synchronous (psync), from a file
  outside every target on the scratch filesystem, the filesystem `plain`
  measures: what an editor, a shell or a browser does meanwhile. O_DIRECT where
  the scratch filesystem takes it, so every read goes to the device; elsewhere
  buffered, with caches dropped before the trial and fio's random map, so no
  block is read twice in a pass.

`exitall` ends the probe when the bulk write ends, so every probe read ran
under the load. The probe's own p50 and p99 latency are the figures; p99 is the
one compared, target against baseline (the same probe under the same bulk
write on the same stack without the cipher), with its interval.
"""

from __future__ import annotations

import errno
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from cryptbench.engines.apps.base import (
    AppEnv,
    AppResult,
    AppWorkload,
    Phase,
    inputs_ready,
    mark_inputs_ready,
    remove_tree,
)
from cryptbench.engines.apps.data import write_incompressible
from cryptbench.engines.apps.params import Params
from cryptbench.engines.fio import FioMeasurement, parse_job, run_fio
from cryptbench.engines.jobs import PERCENTILES, escape_filename
from cryptbench.model.errors import TrialError
from cryptbench.model.json_types import JsonObject, TomlTable

BULK_BLOCK = 1 << 20  # bytes per bulk write
PROBE_BLOCK = 4096  # bytes per probe read
PROBE_FILE = "probe.dat"
BULK_FILE = "bulk.dat"
BULK_IO = ("buffered", "direct")
# seconds: the probe's own time limit; exitall ends it when the bulk write ends
PROBE_LIMIT = 3600
MIN_PROBE_READS = 100  # below this the probe's p99 is its maximum, not a tail
FSYNC_EVERY = 32  # buffered bulk writes between fsyncs: 32 MiB
BULK_BYTES = 1 << 30  # bytes: the most one trial's bulk write writes, by default


def probe_direct(path: Path) -> bool:
    """Whether the file's filesystem takes O_DIRECT (tmpfs does not, before Linux 6.6)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError as e:
        if e.errno == errno.EINVAL:
            return False
        raise
    os.close(fd)
    return True


def render_job(
    bulk: Path,
    bulk_size: int,
    bulk_direct: bool,
    seconds: int,
    bulk_bytes: int,
    probe: Path,
    probe_size: int,
    seed: int,
) -> str:
    """The job file (probe_direct aside, a pure function of its inputs: golden-file tested)."""
    lines = [
        "[global]",
        "ioengine=psync",
        "thread=0",
        "randrepeat=1",
        f"randseed={seed}",
        "percentile_list=" + ":".join(f"{p:g}" for p in PERCENTILES),
        "# the probe stops when the bulk write ends: every probe read ran under the load",
        "exitall=1",
        "",
        "[bulk]",
        f"filename={escape_filename(bulk)}",
        "rw=write",
        f"bs={BULK_BLOCK}",
        f"size={bulk_size}",
        "# whichever comes first: `seconds` of load, or this many bytes written over the file",
        f"io_size={bulk_bytes}",
        f"runtime={seconds}",
        f"direct={int(bulk_direct)}",
        *([] if bulk_direct else [f"fsync={FSYNC_EVERY}"]),
        "fallocate=none",
        "end_fsync=1",
        "",
        "[probe]",
        f"filename={escape_filename(probe)}",
        "rw=randread",
        f"bs={PROBE_BLOCK}",
        "iodepth=1",
        f"size={probe_size}",
        f"direct={int(probe_direct(probe))}",
        "time_based=1",
        f"runtime={PROBE_LIMIT}",
    ]
    return "\n".join(lines) + "\n"


def parse(text: str) -> tuple[FioMeasurement, FioMeasurement]:
    """(bulk, probe) from fio's JSON, or a TrialError that says what is missing."""
    i = text.find("{")
    try:
        doc = json.loads(text[i:] if i >= 0 else text)
    except json.JSONDecodeError as e:
        raise TrialError(f"could not parse fio output (truncated?): {e}") from None
    jobs = {j.get("jobname"): j for j in doc.get("jobs", []) if isinstance(j, dict)}
    missing = [n for n in ("bulk", "probe") if n not in jobs]
    if missing:
        raise TrialError(f"fio output lacks the {missing[0]} job")
    return parse_job(jobs["bulk"]), parse_job(jobs["probe"])


@dataclass(frozen=True)
class Responsiveness(AppWorkload):
    app: ClassVar[str] = "responsiveness"
    writes: ClassVar[bool] = True
    primary: ClassVar[str] = "probe.lat_p99"
    beside: ClassVar[dict[str, str]] = {"probe": "the probe's"}  # it reads while the bulk writes
    summary: ClassVar[str] = (
        "a bulk write of --size on the target while a 4 KiB QD1 read probe runs on the scratch "
        "filesystem; the probe's p50 and p99 latency under that load"
    )

    name: str
    seconds: int = 5  # seconds the bulk write (and so the probe) runs at most
    bulk_bytes: int = BULK_BYTES  # bytes the bulk write writes at most
    probe_size: int = 64 << 20  # bytes: the probe's file, outside the targets
    bulk_io: str = "buffered"  # buffered with an fsync every 32 MiB, or direct

    @classmethod
    def from_table(cls, name: str, params: TomlTable, where: str) -> Responsiveness:
        p = Params(params, where)
        seconds = p.integer("seconds", 5, 1, 3600)
        bulk_bytes = p.size("bulk_bytes", BULK_BYTES, 1 << 20, 1 << 40)
        probe_size = p.size("probe_size", 64 << 20, 1 << 20, 16 << 30)
        bulk_io = p.choice("bulk_io", "buffered", BULK_IO)
        p.done()
        return cls(name, seconds, bulk_bytes, probe_size, bulk_io)

    def target_bytes(self, size: int) -> int:
        return size + BULK_BLOCK

    def input_bytes(self, size: int) -> int:
        return self.probe_size

    def describe(self, size: int) -> JsonObject:
        return {
            **super().describe(size),
            "seconds": self.seconds,
            "bulk_bytes": self.bulk_bytes,
            "bulk": {"rw": "write", "bs": BULK_BLOCK, "io": self.bulk_io, "fsync_every": FSYNC_EVERY},
            "probe": {"rw": "randread", "bs": PROBE_BLOCK, "iodepth": 1, "size": self.probe_size},
        }

    def make_inputs(self, env: AppEnv) -> None:
        if inputs_ready(env.inputs):
            return
        env.inputs.mkdir(parents=True, exist_ok=True)
        write_incompressible(env.inputs / PROBE_FILE, env.seed, self.probe_size, "probe")
        mark_inputs_ready(env.inputs)

    def run(self, env: AppEnv) -> AppResult:
        env.root.mkdir(parents=True, exist_ok=True)
        probe = env.inputs / PROBE_FILE
        job = render_job(
            env.root / BULK_FILE,
            env.size,
            self.bulk_io == "direct",
            self.seconds,
            self.bulk_bytes,
            probe,
            self.probe_size,
            env.seed,
        )
        jobfile = env.staging / "responsiveness.fio"
        jobfile.write_text(job)
        bulk, read = parse(run_fio(jobfile, env.session))
        if read.direction != "read" or bulk.direction != "write":
            raise TrialError("fio's probe did not read, or its bulk job did not write")
        figures = {
            "probe.lat_p50": read.lat_p50,
            "probe.lat_p99": read.lat_p99,
            "probe.lat_p99_9": read.lat_p99_9,
            "probe.iops": read.iops,
        }
        reads = read.io_bytes // PROBE_BLOCK
        details = {
            "probe_reads": reads,
            "probe_direct": "direct=1" in job.split("[probe]")[1],
            "probe_seconds": read.runtime,
            "bulk_io": self.bulk_io,
            "enough_reads_for_p99": reads >= MIN_PROBE_READS,
        }
        return AppResult((Phase("bulk", bulk.runtime, bulk.io_bytes, 1),), 1, details, figures)

    def clean(self, env: AppEnv) -> None:
        remove_tree(env.root)
