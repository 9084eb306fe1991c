"""Render fio job files from workload specs. A pure function: golden-file tested.

Choices that matter for honest numbers, each visible in the job file:
- size-based jobs over one pre-laid-out data file: every block is touched once
  per pass (fio's random map), so a read never hits a page it read before;
- a trial too short to mean anything makes several passes (fio's `loops`), but
  only with direct I/O: a buffered second pass would be served from the page
  cache (a read) or overwrite dirty pages before they reach the device (a write);
- writes end with end_fsync=1, which fio counts inside the job's runtime, so
  bw_bytes is durable throughput, not page-cache speed (where a layer's fsync
  does nothing, the runner syncs its backing inside the clock);
- data buffers are filled with random bytes once, before the clock starts
  (refill_buffers=0), and lightly scrambled per I/O to defeat deduplication;
  `zero` data is offered for layers that might compress or skip zeros.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cryptbench.engines.fio_workload import WorkloadSpec

PERCENTILES = (50.0, 99.0, 99.9)
LAYOUT_BLOCK = 1 << 20  # bytes per I/O when writing the data file
LAYOUT_DEPTH = 8


@dataclass(frozen=True)
class JobOptions:
    filename: Path  # the data file, inside the target
    size: int  # bytes of the data file, and bytes moved per trial
    direct: bool  # O_DIRECT, or buffered I/O with caches dropped before the trial
    ioengine: str  # io_uring, libaio or psync
    zero_data: bool  # zero-filled buffers instead of random ones
    seed: int  # fio randseed: the random offsets are the same on every target
    # The write makes a new file: no fallocate first, so the file (and an
    # image under it) grows as it is written, as with a copy.
    new_file: bool = False
    # passes over the data file per trial (fio loops): more than one only with direct I/O
    passes: int = 1
    # bytes a pass moves where fewer than the file (fio io_size): a slow workload over
    # a file grown for a fast one; None: the whole file
    io_size: int | None = None
    # seconds after which fio stops (runtime=, whichever comes first: the passes or this):
    # calibration's, to learn a pass's length without waiting out a long one, and every
    # trial's cap, so that a slow target's lasts no longer than TRIAL_CAP trial times
    # (trial/sizing.py); None: none
    time_limit: float | None = None
    # bytes into `filename` where the job's region of `size` bytes starts: 0 for a data
    # file; on a user's volume (run --existing), the region's place on the mapping or on
    # the device under it, so that both read the same sectors
    offset: int = 0
    # files read whole, where not one data file (run --existing on a FUSE mount: each its
    # /dev/fd/N); fio then takes each file's own size, and `filename` and `size` say none
    files: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.passes < 1 or (self.passes > 1 and not self.direct):
            raise ValueError(f"{self.passes} passes over {self.filename}: more than one needs direct I/O")


def escape_filename(path: Path) -> str:
    # fio splits filename= on ':'; a literal colon must be escaped.
    return str(path).replace("\\", "\\\\").replace(":", "\\:")


def _global(opts: JobOptions) -> list[str]:
    lines = [
        "[global]",
        f"ioengine={opts.ioengine}",
        f"direct={int(opts.direct)}",
        *(
            [f"filename={':'.join(escape_filename(Path(f)) for f in opts.files)}"]
            if opts.files
            else [f"filename={escape_filename(opts.filename)}", f"size={opts.size}"]
        ),
        *([f"offset={opts.offset}"] if opts.offset else []),
        "numjobs=1",
        "thread=0",
        "invalidate=1",
        "randrepeat=1",
        f"randseed={opts.seed}",
        "percentile_list=" + ":".join(f"{p:g}" for p in PERCENTILES),
        "refill_buffers=0",
        "scramble_buffers=1",
    ]
    if opts.zero_data:
        lines.append("zero_buffers=1")
    return lines


def render_job(workload: WorkloadSpec, opts: JobOptions) -> str:
    lines = _global(opts)
    lines += [
        "",
        f"[{workload.name}]",
        f"rw={workload.rw}",
        f"bs={workload.bs}",
        f"iodepth={workload.iodepth}",
    ]
    if opts.io_size is not None and opts.io_size < opts.size:
        lines.append(f"io_size={opts.io_size}")
    if opts.passes > 1:
        lines.append(f"loops={opts.passes}")
    if opts.time_limit is not None:
        lines.append(f"runtime={max(1, round(opts.time_limit * 1e3))}ms")
    if workload.view == "backing":
        # readonly is a command-line option of fio's, not a job option
        lines.append("# the ciphertext is only read: fio runs with --readonly, which refuses any write")
    if workload.is_write:
        lines.append("end_fsync=1")
        if opts.new_file:
            # made by the job's own open, written from its start: no layout, no truncate
            # (rclone's mount refuses both without its cache)
            lines += ["fallocate=none", "create_on_open=1"]
    return "\n".join(lines) + "\n"


def render_layout(opts: JobOptions) -> str:
    """The job that writes the data file once per target, before any trial."""
    lines = _global(opts)
    lines += [
        "",
        "[layout]",
        "rw=write",
        f"bs={LAYOUT_BLOCK}",
        f"iodepth={LAYOUT_DEPTH}",
        "end_fsync=1",
        # a new file, made by the job's open and written from its start (the caller removed
        # any old one): fio's own layout would truncate it first, which rclone refuses
        "create_on_open=1",
    ]
    return "\n".join(lines) + "\n"
