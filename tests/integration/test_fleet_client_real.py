"""One `fio --client` invocation against real fio servers on loopback, with a host that
resets the connection as fio sends it the job (tests/support/dropping_server.py): fio
drops that host without a word, and the fleet client's probe decides what it was."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cryptbench.engines.jobs import JobOptions, render_job
from cryptbench.fleet import client
from cryptbench.fleet.address import Address
from cryptbench.planning.suite import WorkloadSpec
from tests.support.dropping_server import dropping, padded

pytestmark = [pytest.mark.integration, pytest.mark.beside]

LIVE, DROPPING = "127.0.0.1", "127.0.0.3"
WRITE = WorkloadSpec("seq1m-q8-write", "write", 1 << 20, 8)


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@contextmanager
def _fio_server(host: str, port: int) -> Iterator[None]:
    proc = subprocess.Popen(
        ["fio", f"--server=ip:{host},{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 10
        while True:  # listening once a connection is taken
            try:
                socket.create_connection((host, port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, f"fio --server on {host}:{port} did not listen"
                time.sleep(0.1)
        yield
    finally:
        proc.kill()
        proc.wait(timeout=10)


def _jobs(tmp: Path, live: Address, dropped: Address, rate: str | None) -> dict[str, tuple[Address, Path]]:
    jobs = {}
    for name, address in (("live", live), ("dropped", dropped)):
        text = render_job(WRITE, JobOptions(tmp / f"{name}.data", 8 << 20, False, "psync", False, 42))
        if rate is not None:  # a job long enough for the dropped address to be served again
            text += f"rate={rate}\n"
        path = tmp / f"{name}.fio"
        path.write_text(padded(text) if name == "dropped" else text)
        jobs[name] = (address, path)
    return jobs


def test_a_host_dropped_without_a_word_that_fails_a_probe_is_lost(tmp_path: Path) -> None:
    live = Address("ip", LIVE, _free_port(LIVE))
    with _fio_server(LIVE, live.port), dropping(DROPPING, 0) as port:
        dropped = Address("ip", DROPPING, port)
        results = client.run_clients(_jobs(tmp_path, live, dropped, None), 120, probe_timeout=10)
    assert results["live"].measurement is not None, results["live"].error
    gone = results["dropped"]
    assert gone.lost and not gone.innocent and gone.measurement is None
    # nothing listens there any more: the probe's own connection is refused
    assert f"stopped answering: a probe job failed: dropped ({dropped}) did not answer" in (gone.error or "")
    assert f"failed to connect to {DROPPING}:{port}" in (gone.error or "")
    assert "(fio had dropped it without a word)" in (gone.error or "")


def test_a_host_dropped_without_a_word_that_runs_a_probe_may_run_again(tmp_path: Path) -> None:
    live = Address("ip", LIVE, _free_port(LIVE))
    port = _free_port(DROPPING)
    dropped = Address("ip", DROPPING, port)
    with _fio_server(LIVE, live.port):
        with dropping(DROPPING, port) as same:
            assert same == port
            outcome: dict[str, dict[str, client.HostResult]] = {}
            # the live host's job lasts ~2 s (8 MiB at 4 MiB/s): the dropped address is served
            # again by a real fio server before the invocation ends and the probe runs
            invocation = threading.Thread(
                target=lambda: outcome.setdefault(
                    "r", client.run_clients(_jobs(tmp_path, live, dropped, "4m"), 120, probe_timeout=10)
                )
            )
            invocation.start()
        with _fio_server(DROPPING, port):
            invocation.join(timeout=120)
    results = outcome["r"]
    assert results["live"].measurement is not None, results["live"].error
    answered = results["dropped"]
    assert answered.innocent and not answered.lost and answered.measurement is None
    assert f"fio dropped dropped ({dropped}) from its invocation without a word" in (answered.error or "")
