"""Secrets never show in a command line or an environment, and are gone after the run.

A real run (every available backend) is watched from outside: strace records every
program the run and its children start (execve), with its whole command line and
environment, and the record is searched for the passphrase and for every key file's
contents, read from the run's secret directories while it runs. Unlike reading
/proc/PID/cmdline over and over, the record misses no process however briefly it
lives, and costs the machine almost nothing (a seccomp filter stops only execve).
"""

# Over 60 s of make test (112 s in the fresh-clone run of fee2b51, 2026-11-27): two runs
# of every encrypted backend available here (own passphrase; generated keys), each
# recorded by strace.
from __future__ import annotations

import os
import re
import secrets
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cryptbench.machine.keys import SECRET_DIR_PREFIX
from cryptbench.machine.session import scratch_root
from tests.support.leaks import leftovers
from tests.support.reliability import count
from tests.support.targets import available, includes

pytestmark = pytest.mark.integration

WANTED = ("fscrypt", "gocryptfs", "securefs", "cryfs", "encfs", "rclone-crypt")
WANTED += ("image-qcow2-aes256", "luks-aes256")
ENCRYPTED = available(WANTED)
test_includes = includes(WANTED)
# the backends that hand a daemon or a tool its key in a file (session.secret_file)
# (rclone-crypt's is its config file, the password and salt obscured in it)
KEY_FILE_USERS = ("gocryptfs", "securefs", "rclone-crypt", "image-qcow2-aes256", "luks-aes256")
# the helper processes whose command lines the watcher must have read while they ran
HELPERS = {"gocryptfs": "gocryptfs", "securefs": "securefs", "cryfs": "cryfs", "encfs": "encfs"}
HELPERS["rclone-crypt"] = "rclone"


# strace: follow forks, stop only at execve (a seccomp filter), print every string whole
# and as hex escapes (a key file's bytes need not be text), environments included.
STRACE = ["strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=execve", "-e", "signal=none"]
STRACE += ["-v", "-xx", "-s", str(1 << 20)]
HEX = re.compile(rb"((?:\\x[0-9a-f]{2})+)")


def execs(log: Path) -> list[tuple[str, bytes]]:
    """Each program started, from strace's log: (its name, its command line and
    environment as raw bytes)."""
    out = []
    for line in log.read_bytes().splitlines():
        if b"execve(" not in line:
            continue
        raw = HEX.sub(lambda m: bytes.fromhex(m.group(1).replace(b"\\x", b"").decode()), line)
        path = raw.split(b'execve("', 1)[1].split(b'"', 1)[0]  # a program path holds no quote
        out.append((os.path.basename(path).decode(errors="replace"), raw))
    return out


class Watcher:
    """Reads the watched run's key files while it runs; then searches its exec log."""

    def __init__(self, known: set[bytes], scratch: Path | None = None) -> None:
        self.known = known  # secrets to look for; key file contents are added as found
        # Only the watched run's key files: its secret directory is named after its run
        # directory under this scratch root. Another cryptbench on the machine (a unit
        # test's "secret" in its own session) must not become a "secret" searched for here.
        self.scratch = scratch
        self.found: list[tuple[str, bytes]] = []  # (a program started, a secret it was given)
        self.scans = 0
        self.key_files: dict[Path, tuple[int, int]] = {}  # path -> (file mode, directory mode)
        self.programs: set[str] = set()  # the names of the programs started
        self.started = 0  # programs started, as the exec log counts them
        self.stop = threading.Event()

    def _prefixes(self) -> tuple[str, ...]:
        """The names the watched runs' secret directories start with; "" matches all."""
        if self.scratch is None:
            return ("",)
        return tuple(f"{SECRET_DIR_PREFIX}{r.name}-" for r in self.scratch.glob("run-*"))

    def _read_key_files(self) -> None:
        ours = self._prefixes()  # once per scan: the glob is the costly part
        for d in Path("/dev/shm").glob(f"{SECRET_DIR_PREFIX}*"):
            if not d.name.startswith(ours):
                continue
            try:
                for f in d.iterdir():
                    data = f.read_bytes().strip()
                    # Zeros are a key file caught while it was being wiped, not a key.
                    if data.strip(b"\0"):
                        self.known.add(data)
                        self.key_files[f] = (stat.S_IMODE(f.stat().st_mode), stat.S_IMODE(d.stat().st_mode))
            except OSError:
                continue  # removed while we looked

    def run(self) -> None:
        while not self.stop.is_set():
            self._read_key_files()
            self.scans += 1
            time.sleep(0.005)

    def search(self, log: Path) -> None:
        """Every program the run started, searched for every secret known by now."""
        started = execs(log)
        self.started += len(started)
        for name, raw in started:
            self.programs.add(name)
            for s in self.known:
                if s in raw:
                    self.found.append((name, s))


def watched(watcher: Watcher, log: Path, argv: list[str], env: dict[bytes, bytes] | None = None) -> bytes:
    """`argv` run under strace, its key files read while it runs, its exec log searched;
    returns its stderr (asserting it succeeded)."""
    thread = threading.Thread(target=watcher.run)
    thread.start()
    try:
        proc = subprocess.run([*STRACE, "-o", str(log), *argv], capture_output=True, check=False, env=env)
    finally:
        watcher.stop.set()
        thread.join()
    assert proc.returncode == 0, proc.stderr.decode()
    watcher.search(log)
    return proc.stdout + proc.stderr


@pytest.mark.skipif(not ENCRYPTED, reason="no encrypted backend is available here")
@pytest.mark.parametrize("own_passphrase", [True, False], ids=["passphrase-file", "generated-keys"])
def test_no_secret_in_any_command_line_or_environment(
    target_dir: Path, tmp_path: Path, own_passphrase: bool
) -> None:
    passphrase = f"cb-test-{secrets.token_hex(12)}".encode()
    # --skip-protection: the probes handle no key and start no process that could show one,
    # and CryFS's wait out its block cache on every look (test_protection_real.py probes it).
    # The selftest suite's two workloads (a read and a write): a key is handled when a target
    # is provisioned and mounted, not per workload, and the quick suite's six cost 3 minutes more.
    # One trial each: a trial handles no key (a second round cost each run 15 s here).
    args = ["run", "--skip-protection", "--backends", ",".join(ENCRYPTED), "--suite", "selftest"]
    args += ["--size", "4M", "--repeats", "1"]
    args += ["--target", str(target_dir), "--db", str(tmp_path / "r.sqlite")]
    known: set[bytes] = set()
    if own_passphrase:
        pf = tmp_path / "pass"
        pf.write_bytes(passphrase + b"\n")
        pf.chmod(0o600)
        args += ["--passphrase-file", str(pf)]
        known.add(passphrase)
    watcher = Watcher(known, scratch_root(target_dir))
    output = watched(watcher, tmp_path / "exec.log", [sys.executable, "-m", "cryptbench", *args])
    assert watcher.found == []
    # the helpers' command lines and environments are in the log, so a secret there was searched for
    for backend, program in HELPERS.items():
        if backend in ENCRYPTED:
            assert program in watcher.programs, f"{program} ran unseen: {sorted(watcher.programs)}"
    if any(n in ENCRYPTED for n in KEY_FILE_USERS):
        # it saw the key files, so it searched for their contents too
        assert watcher.key_files, "no key file was seen during the run"
        assert set(watcher.key_files.values()) == {(0o600, 0o700)}
        if own_passphrase:
            # the keys are derived from the passphrase (scrypt), never the passphrase itself
            assert all(data not in (passphrase, passphrase + b"\n") for data in watcher.known - {passphrase})
    assert not any(p.exists() for p in watcher.key_files)
    assert leftovers(target_dir) == []
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("r.sqlite*"))
    for s in watcher.known:
        assert s not in stored and s not in output
    count("secrets found in command lines or environments", len(watcher.found))
    count("programs started by the runs, searched for secrets", watcher.started)


def test_the_watcher_finds_a_secret_on_a_command_line_or_in_an_environment(tmp_path: Path) -> None:
    """Positive control: the search above finds what it looks for, in a grandchild's
    command line that lives a millisecond, in an environment, and as bytes that are not
    text (a raw key)."""
    on_line, in_env = (f"cb-control-{secrets.token_hex(8)}".encode() for _ in range(2))
    raw = bytes(b % 255 + 1 for b in secrets.token_bytes(32))  # any byte but NUL
    watcher = Watcher({on_line, in_env, raw})
    child = "import subprocess, sys; subprocess.run(['true', sys.argv[1]], check=True)"
    env = {os.fsencode(k): os.fsencode(v) for k, v in os.environ.items()}
    env |= {b"CB_CONTROL": in_env, b"CB_RAW": raw}
    watched(watcher, tmp_path / "exec.log", [sys.executable, "-c", child, on_line.decode()], env)
    assert ("true", on_line) in watcher.found, watcher.found
    assert {n for n, s in watcher.found if s == in_env} == {"true", sys.executable.rsplit("/", 1)[-1]}
    assert {n for n, s in watcher.found if s == raw} == {"true", sys.executable.rsplit("/", 1)[-1]}
