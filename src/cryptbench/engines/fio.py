"""Run fio and turn its JSON into a flat, typed measurement.

Throughput is fio's `bw_bytes` (bytes/s), never `bw` (KiB/s).
"""

from __future__ import annotations

import json
import math
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptbench.engines.child import run_child
from cryptbench.machine.session import Session
from cryptbench.machine.system import which
from cryptbench.machine.throttle import in_cgroup
from cryptbench.model.errors import TrialError, UnavailableError
from cryptbench.model.json_types import JsonObject

FIO_TIMEOUT = 1800.0  # seconds; a trial that takes longer is broken, not slow
PROBE_TIMEOUT = 60.0  # seconds; reading 64 KiB takes milliseconds


@dataclass(frozen=True)
class FioMeasurement:
    direction: str  # "read" or "write"
    throughput: float  # bytes/s (fio bw_bytes; for writes includes the final fsync)
    iops: float  # I/Os per second
    io_bytes: int  # bytes moved
    runtime: float  # seconds, fio's job runtime for this direction
    lat_p50: float  # seconds, completion latency
    lat_p99: float  # seconds
    lat_p99_9: float  # seconds
    fio_usr_cpu: float  # percent of one CPU, fio process, user
    fio_sys_cpu: float  # percent of one CPU, fio process, system


def fio_version() -> str:
    exe = which("fio")
    if exe is None:
        return "not installed"
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.strip()


def _json_start(text: str) -> str:
    # fio prints notes such as "fio: ..." before the JSON document on some errors.
    i = text.find("{")
    if i < 0:
        raise TrialError("fio printed no JSON")
    return text[i:]


def _field(obj: Any, path: str, kind: type[Any]) -> Any:
    """obj[a][b]… for path "a.b…", checked to be of `kind`; a TrialError naming the field if not."""
    cur = obj
    for key in path.split("."):
        if isinstance(cur, list) and key.isdigit() and int(key) < len(cur):
            cur = cur[int(key)]
        elif isinstance(cur, dict) and key in cur:
            cur = cur[key]
        else:
            raise TrialError(f"fio output lacks {path} (truncated, or not fio 3's JSON format)")
    numeric = kind is float and isinstance(cur, int) and not isinstance(cur, bool)
    if not (isinstance(cur, kind) and not isinstance(cur, bool)) and not numeric:
        raise TrialError(f"fio output has {path} = {str(cur)[:40]!r}, expected a {kind.__name__}")
    if kind is float and not math.isfinite(cur):
        raise TrialError(f"fio output has {path} = {cur!r}, expected a finite number")
    return cur


def _percentile(clat: JsonObject, p: str) -> float:
    pct = clat.get("percentile") if isinstance(clat, dict) else None
    if not isinstance(pct, dict):
        return 0.0
    value = pct.get(p, 0.0)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise TrialError(f"fio output has percentile {p} = {str(value)[:40]!r}, expected a number")
    return float(value) / 1e9


def parse_fio_json(text: str) -> FioMeasurement:
    """The measurement in fio's JSON, or a TrialError that says what is wrong with it."""
    try:
        doc = json.loads(_json_start(text))
    except json.JSONDecodeError as e:
        raise TrialError(f"could not parse fio output (truncated?): {e}") from None
    except RecursionError:
        raise TrialError("could not parse fio output: nested too deeply") from None
    return parse_job(_field(doc, "jobs.0", dict))


def parse_job(job: JsonObject) -> FioMeasurement:
    """One job's measurement: an entry of fio's `jobs`, or of `client_stats` in client mode."""
    name = str(job.get("jobname", "?"))[:40]
    if job.get("error"):
        raise TrialError(f"fio reported error {str(job['error'])[:40]} in job {name}")
    # The direction that moved bytes is the measured one.
    moved = {d: _field(job, f"{d}.io_bytes", int) for d in ("read", "write")}
    direction = "write" if moved["write"] > moved["read"] else "read"
    if moved[direction] <= 0:
        raise TrialError(f"fio moved no data in job {name}")
    d = job[direction]
    return FioMeasurement(
        direction=direction,
        throughput=float(_field(d, "bw_bytes", float)),
        iops=float(_field(d, "iops", float)),
        io_bytes=moved[direction],
        runtime=float(_field(d, "runtime", float)) / 1e3,
        lat_p50=_percentile(d.get("clat_ns", {}), "50.000000"),
        lat_p99=_percentile(d.get("clat_ns", {}), "99.000000"),
        lat_p99_9=_percentile(d.get("clat_ns", {}), "99.900000"),
        fio_usr_cpu=float(_field(job, "usr_cpu", float)) if "usr_cpu" in job else 0.0,
        fio_sys_cpu=float(_field(job, "sys_cpu", float)) if "sys_cpu" in job else 0.0,
    )


def run_fio(
    jobfile: Path,
    session: Session | None = None,
    *,
    readonly: bool = False,
    cgroup: Path | None = None,
    pass_fds: tuple[int, ...] = (),
) -> str:
    """Run one job file; return fio's JSON text.

    fio runs as a journaled child of its own session (engines/child.py).
    `readonly`: fio refuses to write or trim anything (--readonly).
    `cgroup`: fio starts inside it (a target's cgroup v2 throttle).
    `pass_fds`: descriptors fio inherits, its job naming them /dev/fd/N (run --existing on
    a FUSE mount: no job file or output of fio's then names a file of the user's).
    """
    exe = which("fio")
    if exe is None:
        raise TrialError("fio is not installed (apt-get install fio)")
    argv = [exe, "--output-format=json", *(["--readonly"] if readonly else []), str(jobfile)]
    done = run_child(
        in_cgroup(argv, cgroup) if cgroup else argv, session, FIO_TIMEOUT, name="fio", pass_fds=pass_fds
    )
    if done.returncode != 0:
        raise TrialError(f"fio exited with status {done.returncode}: {_last_line(done)}")
    return done.stdout


def _last_line(done: subprocess.CompletedProcess[str]) -> str:
    """fio's last word on a failure: the last line it wrote, stderr first."""
    lines = (done.stderr or done.stdout or "").strip().splitlines()
    return lines[-1] if lines else ""


def probe_ioengine(scratch_file: Path, session: Session | None = None, wanted: str | None = None) -> str:
    """The engine asked for (`wanted`, --ioengine), once fio has read with it here; without
    one, io_uring if fio and the kernel support it here, else libaio, else psync.

    Each probe is a child of its own session (engines/child.py), journaled where a
    session is given: interrupted, it is stopped with every job process fio forked."""
    if wanted == "psync":  # plain read(2): every kernel and every fio has it
        return wanted
    why = ""
    for engine in (wanted,) if wanted else ("io_uring", "libaio"):
        argv = [which("fio") or "fio", "--name=probe", f"--filename={scratch_file}", "--size=64k", "--bs=4k"]
        argv += ["--rw=read", f"--ioengine={engine}", "--output-format=json"]
        proc = run_child(argv, session, PROBE_TIMEOUT, name="fio")
        scratch_file.unlink(missing_ok=True)
        why = _last_line(proc) or f"fio exited with status {proc.returncode}"
        if proc.returncode == 0:
            try:
                parse_fio_json(proc.stdout)
                return engine
            except TrialError as e:
                why = str(e)
                continue
    if wanted:
        raise UnavailableError(f"--ioengine {wanted}: fio cannot read with it here ({why})")
    return "psync"
