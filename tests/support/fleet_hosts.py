"""Hosts for fleet tests and benchmarks: network namespaces here, each with its own `cryptbench serve`.

Each host is a network namespace joined to this one by a veth pair, with a
/30 from 198.18.0.0/15 (the range RFC 2544 sets aside for benchmarking
networks) on both ends: 198.18.N.1 here, 198.18.N.2 inside. Only the
namespace's network is entered (`nsenter --net`), so a serve's mounts, loop
devices and processes stay visible to the leak checks. Whoever creates the
namespaces deletes them, links included, even when a test fails; their names
carry the session's pid, so those of a session that was SIGKILLed are deleted by
the next one (sweep_dead) and no session touches another's.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil

PORT = 8765
MANIFEST_WAIT = 180.0  # seconds for a serve to provision and publish its manifest
STOP_WAIT = 120.0  # seconds for a serve to tear down after SIGTERM


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=False)


def unavailable() -> str | None:
    """Why namespace hosts cannot be made here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "nsenter"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install iproute2 util-linux)"
    probe = f"cbtprobe{os.getpid()}"
    made = _ip("netns", "add", probe)
    if made.returncode != 0:
        return f"ip netns add failed: {made.stderr.strip()}"
    _ip("netns", "del", probe)
    return None


@dataclass
class Host:
    name: str  # the label in hosts.toml: h1, h2, …
    netns: str  # the namespace's name
    address: str  # its fio server's IP, inside the namespace
    target: Path  # the directory its serve puts its scratch space in
    log: Path  # the serve's stderr
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def listen(self) -> str:
        return f"{self.address}:{PORT}"

    def fio_server(self) -> list[psutil.Process]:
        """The host's fio server and its workers, found by the address they serve."""
        arg = f"--server=ip:{self.address},{PORT}"
        found = []
        for p in psutil.process_iter(["cmdline"]):
            if arg in (p.info["cmdline"] or []):
                found.append(p)
        return found

    def stderr(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


NETNS_LOCK = Path("/run/cryptbench-tests-netns.lock")  # held while a session picks its subnets


def _ours(name: str) -> str:
    """The pid of the test session a namespace or link name belongs to ('' if none).
    Names carry it (cbt<pid>h<i>, link cbt<pid>h<i>a), so a session SIGKILLed before
    its own cleanup is recognised by the next one, and no session touches another's."""
    m = re.fullmatch(r"cbt(\d+)h\d+a?", name)
    return m.group(1) if m else ""


def sweep_dead() -> list[str]:
    """Delete the namespaces and links of test sessions no longer alive; what it deleted.
    A namespace's veth pair goes with it; a link never moved into one is deleted here."""
    swept = []
    netns = Path("/run/netns")
    names = [p.name for p in netns.iterdir()] if netns.is_dir() else []
    links = re.findall(r"^\d+: ([^:@\s]+)", _ip("-o", "link", "show").stdout, re.MULTILINE)
    for name in names + links:
        pid = _ours(name)
        if pid and not psutil.pid_exists(int(pid)):
            _ip(*(("netns", "del", name) if name in names else ("link", "del", name)))
            swept.append(name)
    return swept


def free_subnets() -> list[int]:
    """Each N of 198.18.N.0/24 with no address on any link here, lowest first: a live
    session's subnets are never reused (picked by pid, two sessions could share one)."""
    used = {int(n) for n in re.findall(r"inet 198\.18\.(\d+)\.", _ip("-o", "addr", "show").stdout)}
    return [n for n in range(1, 255) if n not in used]


@contextmanager
def namespaces(count: int) -> Iterator[list[tuple[str, str]]]:
    """`count` namespaces with a veth link each: (namespace, address inside) pairs."""
    made: list[tuple[str, str]] = []
    try:
        with open(NETNS_LOCK, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # two sessions picking at once would pick alike
            sweep_dead()
            free = free_subnets()
            if len(free) < count:
                raise RuntimeError(f"only {len(free)} free subnets in 198.18.0.0/16 for {count} hosts")
            for i, net in enumerate(free[:count], start=1):
                ns = f"cbt{os.getpid()}h{i}"
                here, there = f"{ns}a", f"{ns}b"
                steps = [
                    ("netns", "add", ns),
                    ("link", "add", here, "type", "veth", "peer", "name", there),
                    ("link", "set", there, "netns", ns),
                    ("addr", "add", f"198.18.{net}.1/30", "dev", here),
                    ("link", "set", here, "up"),
                    ("-n", ns, "addr", "add", f"198.18.{net}.2/30", "dev", there),
                    ("-n", ns, "link", "set", there, "up"),
                    ("-n", ns, "link", "set", "lo", "up"),
                ]
                made.append((ns, f"198.18.{net}.2"))
                for step in steps:
                    done = _ip(*step)
                    if done.returncode != 0:
                        raise RuntimeError(f"ip {' '.join(step)}: {done.stderr.strip()}")
        yield made
    finally:
        for ns, _address in made:  # every name is this session's own
            _ip("netns", "del", ns)
            _ip("link", "del", f"{ns}a")  # gone with the namespace, unless a process held it


def start(host: Host, backends: str, size: str) -> None:
    host.target.mkdir(parents=True, exist_ok=True)
    with open(host.log, "wb") as log:
        host.proc = subprocess.Popen(
            [
                "nsenter",
                f"--net=/run/netns/{host.netns}",
                sys.executable,
                "-m",
                "cryptbench",
                "serve",
                "--listen",
                host.listen,
                "--allow-remote",  # 198.18.N.2 is not loopback, though only this machine reaches it
                "--backends",
                backends,
                "--size",
                size,
                "--target",
                str(host.target),
            ],
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=os.environ.copy(),
        )


def manifest_command(host: Host) -> list[str]:
    return [sys.executable, "-m", "cryptbench", "serve", "--print-manifest", "--target", str(host.target)]


def wait_served(host: Host) -> None:
    """Until the host's manifest can be read; a serve that exits first fails with its words."""
    deadline = time.monotonic() + MANIFEST_WAIT
    while True:
        assert host.proc is not None
        if host.proc.poll() is not None:
            raise RuntimeError(
                f"serve on {host.name} exited with {host.proc.returncode}: {host.stderr()[-600:]}"
            )
        done = subprocess.run(manifest_command(host), capture_output=True, text=True, check=False)
        if done.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"serve on {host.name} published no manifest in {MANIFEST_WAIT:.0f} s")
        time.sleep(0.5)


def hosts_toml(hosts: list[Host], path: Path) -> Path:
    lines = []
    for h in hosts:
        command = ", ".join(f'"{a}"' for a in manifest_command(h))
        lines += [
            "[[host]]",
            f'name = "{h.name}"',
            f'address = "{h.listen}"',
            f"manifest_command = [{command}]",
            "",
        ]
    path.write_text("\n".join(lines))
    return path


def stop(host: Host) -> int | None:
    """SIGTERM the host's serve and wait for its teardown; its exit status (None if it was gone)."""
    if host.proc is None:
        return None
    if host.proc.poll() is None:
        host.proc.send_signal(signal.SIGTERM)
    try:
        return host.proc.wait(timeout=STOP_WAIT)
    except subprocess.TimeoutExpired:
        host.proc.kill()
        host.proc.wait()
        raise


@contextmanager
def fleet(count: int, root: Path, backends: str, size: str) -> Iterator[list[Host]]:
    """`count` namespace hosts, each serving `backends`; every serve stopped at the end."""
    with namespaces(count) as spaces:
        hosts = [
            Host(f"h{i + 1}", ns, address, root / f"h{i + 1}", root / f"h{i + 1}.serve.log")
            for i, (ns, address) in enumerate(spaces)
        ]
        try:
            for h in hosts:
                start(h, backends, size)
            for h in hosts:
                wait_served(h)
            yield hosts
        finally:
            for h in hosts:
                if h.proc is not None and h.proc.poll() is None:
                    stop(h)
