"""One `fio --client` invocation over several hosts, and each host's share of its output.

fio runs the job file given after each `--client=ADDR` on that host's server,
all at once, and prints one JSON document whose `client_stats` holds an entry
per host (`hostname` and `port` say which) plus an "All clients" sum, which is
ignored: every figure is a host's own. A host that fails to connect or drops
mid-job has no entry; fio says why in a line naming it ("client: host=X
disconnected", "fio: failed to connect to X:PORT"), and may still exit 0.
fio drops a host without a word when the job cannot be sent to it: a server
killed just as the invocation connects accepts the connection, then resets
it. Such a host gets a probe job before it is taken for gone (run_clients).
A host that freezes between jobs is found by a probe job (PATIENCE below).
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from cryptbench.engines.child import Stalled, run_child
from cryptbench.engines.fio import FioMeasurement, parse_job
from cryptbench.fleet.address import Address, AddressKind
from cryptbench.machine.system import which
from cryptbench.model.errors import SafetyError, TrialError, UsageError
from cryptbench.model.json_types import JsonObject

AGGREGATE = "All clients"
# fio's client gives up on a server that stops mid-job (~40 s here), but waits
# for ever on one that stopped between jobs: its kernel still accepts the
# connection, nothing answers. So while an invocation runs longer than
# PATIENCE, each of its hosts gets a probe job of its own; a host that cannot
# run it within PROBE_TIMEOUT is taken for gone and the invocation stopped.
PATIENCE = 60.0  # seconds an invocation runs before its hosts are probed, and between probes
PROBE_TIMEOUT = 20.0  # seconds a live fio server needs at most for the probe job (no I/O)
# No file, no I/O: the null engine only proves the server takes and runs a job.
PROBE_JOB = "[cryptbench-probe]\nioengine=null\nrw=read\nbs=4k\nsize=4k\n"
# Job options that make fio run a command or act on a signal from outside:
# never in a job cryptbench sends to a root fio server.
FORBIDDEN = re.compile(
    r"^\s*(exec_prerun|exec_postrun|trigger[a-z_-]*)\s*(=|$)", re.IGNORECASE | re.MULTILINE
)


@dataclass(frozen=True)
class HostResult:
    measurement: FioMeasurement | None  # None when the trial failed on this host
    raw: str | None  # the host's client_stats entry, as fio printed it (JSON)
    error: str | None  # why it failed
    lost: bool = False  # the host stopped answering: its remaining trials cannot run
    # the host answers, but its job was lost with the invocation (stopped for
    # another host's silence, or dropped by fio without a word): it may run again
    innocent: bool = False
    # fio left the host out without a line naming it: only a probe can tell
    # a gone host from one whose job alone was lost
    unexplained: bool = False


def check_job(text: str, scratch: str) -> None:
    """Refuse a job file that could run a command, or touch a file outside the host's scratch."""
    found = FORBIDDEN.search(text)
    if found:
        raise SafetyError(f"refusing to send a job with {found.group(1)} to a fio server")
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "filename":
            path = value.strip().replace("\\:", ":")
            if not path.startswith(scratch.rstrip("/") + "/") or "/../" in path:
                raise SafetyError(
                    f"refusing to send a job for {path[:80]} outside the host's scratch {scratch}"
                )


def command(jobs: dict[str, tuple[Address, Path]]) -> list[str]:
    exe = which("fio")
    if exe is None:
        raise UsageError("fio is not installed on the coordinator (apt-get install fio)")
    argv = [exe, "--output-format=json"]
    for address, jobfile in jobs.values():
        argv += [f"--client={address.fio()}", str(jobfile)]
    return argv


def run_clients(
    jobs: dict[str, tuple[Address, Path]],
    timeout: float,
    patience: float | None = None,
    probe_timeout: float | None = None,
) -> dict[str, HostResult]:
    """Run each host's job file on its server at once; each host's result or failure.
    `patience` and `probe_timeout` (seconds) default to PATIENCE and PROBE_TIMEOUT as
    they are at the call, so that a test of a whole fleet run can shorten the wait."""
    hosts = {h: a for h, (a, _j) in jobs.items()}
    silent: dict[str, str] = {}
    wait = PATIENCE if patience is None else patience
    probe = PROBE_TIMEOUT if probe_timeout is None else probe_timeout

    def still_answering() -> str | None:
        silent.update(silent_hosts(hosts, probe))
        return None if not silent else "no answer from " + ", ".join(sorted(silent))

    try:
        done = run_child(command(jobs), None, timeout, patience=(wait, still_answering))
    except Stalled:
        return {
            h: HostResult(None, None, f"{h} ({hosts[h]}) stopped answering: {silent[h]}", lost=True)
            if h in silent
            else HostResult(
                None,
                None,
                "its invocation was stopped: " + ", ".join(sorted(silent)) + " stopped answering",
                innocent=True,
            )
            for h in hosts
        }
    results = split(done.stdout, done.stderr, hosts)
    dropped = {h: hosts[h] for h, r in results.items() if r.unexplained}
    if dropped:
        results |= _judge_dropped(dropped, silent_hosts(dropped, probe))
    return results


def _judge_dropped(dropped: dict[str, Address], silent: dict[str, str]) -> dict[str, HostResult]:
    """Hosts fio dropped without a word: gone if they fail a probe job too; otherwise
    answering, their trial lost with the invocation alone and free to run again."""
    return {
        h: HostResult(
            None,
            None,
            f"{h} ({a}) stopped answering: {silent[h]} (fio had dropped it without a word)",
            lost=True,
        )
        if h in silent
        else HostResult(
            None,
            None,
            f"fio dropped {h} ({a}) from its invocation without a word, yet it then ran a probe job",
            innocent=True,
        )
        for h, a in dropped.items()
    }


def silent_hosts(hosts: dict[str, Address], timeout: float) -> dict[str, str]:
    """The hosts whose fio server does not run a probe job within `timeout`, each with what happened."""
    exe = which("fio")
    if exe is None:
        raise TrialError("fio is not installed")
    found: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="cryptbench-probe-") as tmp:
        job = Path(tmp) / "probe.fio"
        job.write_text(PROBE_JOB)
        check_job(PROBE_JOB, tmp)
        procs = {
            h: subprocess.Popen(
                [exe, "--output-format=json", f"--client={a.fio()}", str(job)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
            for h, a in hosts.items()
        }
        deadline = time.monotonic() + timeout
        try:
            for h, proc in procs.items():
                try:
                    out, err = proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    found[h] = f"a probe job did not finish within {timeout:.0f} s"
                    continue
                result = split(out, err, {h: hosts[h]})[h]
                if result.lost:
                    found[h] = f"a probe job failed: {result.error}"
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    return found


def _document(stdout: str) -> JsonObject | None:
    # Before the JSON, fio prints the servers' text output, each line prefixed
    # with "<hostname> ", and its own notes; the document starts at a lone "{".
    lines = stdout.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.rstrip("\n") == "{":
            try:
                doc = json.loads("".join(lines[i:]))
            except (json.JSONDecodeError, RecursionError):
                return None
            return doc if isinstance(doc, dict) else None
    return None


def _matches(entry: JsonObject, address: Address) -> bool:
    if entry.get("hostname") != address.host:
        return False
    return address.kind == AddressKind.SOCK or entry.get("port") == address.port


def _why_missing(address: Address, messages: list[str], doc: JsonObject | None) -> str | None:
    """What fio said of a host it returned no result for; None when it said nothing."""
    names = {address.host, f"{address.host}:{address.port}", f"host={address.host}"}
    said = [m.strip() for m in messages if any(n in m for n in names) and not m.startswith("<")]
    if not said and doc is None:
        # no document at all: fio failed as a whole, and its own lines say why
        said = [m.strip() for m in messages if m.strip() and not m.startswith("<")][-2:]
    # fio repeats a timeout once per command it waited for: say each thing once
    said = list(dict.fromkeys(said))
    return "; ".join(said[:2]) if said else None


def split(stdout: str, stderr: str, hosts: dict[str, Address]) -> dict[str, HostResult]:
    """Each host's result from one client invocation's output."""
    doc = _document(stdout)
    # stderr first: fio's own verdicts (a host timed out, a connection refused)
    # are there, its running commentary on stdout
    messages = [*stderr.splitlines(), *stdout.splitlines()]
    stats = doc.get("client_stats") if doc is not None else None
    entries = [e for e in stats if isinstance(e, dict)] if isinstance(stats, list) else []
    results: dict[str, HostResult] = {}
    for host, address in hosts.items():
        mine = [e for e in entries if e.get("jobname") != AGGREGATE and _matches(e, address)]
        if not mine:
            why = _why_missing(address, messages, doc)
            results[host] = HostResult(
                None,
                None,
                f"{host} ({address}) did not answer: {why or 'fio returned no result for it'}",
                lost=True,
                unexplained=why is None,
            )
            continue
        entry = mine[0]
        raw = json.dumps(entry, indent=1)
        if len(mine) > 1:
            results[host] = HostResult(
                None, raw, f"fio returned {len(mine)} results for {host}; expected one"
            )
            continue
        try:
            results[host] = HostResult(parse_job(entry), raw, None)
        except TrialError as e:
            results[host] = HostResult(None, raw, f"on {host}: {e}")
    return results
