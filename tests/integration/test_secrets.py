"""Secrets never show in a command line or an environment, and are gone after the run.

A real run (every available backend) is watched from outside: every process's
/proc/PID/cmdline and /proc/PID/environ is read again and again while it runs,
and searched for the passphrase and for every key file's contents.
"""

from __future__ import annotations

import os
import secrets
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cryptbench.keys import SECRET_DIR_PREFIX
from cryptbench.session import scratch_root
from tests.support.leaks import leftovers
from tests.support.reliability import count
from tests.support.targets import available, includes

pytestmark = pytest.mark.integration

WANTED = ("fscrypt", "gocryptfs", "securefs", "cryfs", "encfs", "image-qcow2-aes256", "luks-aes256")
ENCRYPTED = available(WANTED)
test_includes = includes(WANTED)
# the backends that hand a daemon or a tool its key in a file (session.secret_file)
KEY_FILE_USERS = ("gocryptfs", "securefs", "image-qcow2-aes256", "luks-aes256")
# the helper processes whose command lines the watcher must have read while they ran
HELPERS = {"gocryptfs": "gocryptfs", "securefs": "securefs", "cryfs": "cryfs", "encfs": "encfs"}


class Watcher:
    """Reads every process's command line and environment until stopped."""

    def __init__(self, known: set[bytes], scratch: Path | None = None) -> None:
        self.known = known  # secrets to look for; key file contents are added as found
        # Only the watched run's key files: its secret directory is named after its run
        # directory under this scratch root. Another cryptbench on the machine (a unit
        # test's "secret" in its own session) must not become a "secret" searched for here.
        self.scratch = scratch
        self.found: list[str] = []
        self.scans = 0
        self.key_files: dict[Path, tuple[int, int]] = {}  # path -> (file mode, directory mode)
        self.programs: set[str] = set()  # the program names of the command lines read
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
        me = str(os.getpid())
        while not self.stop.is_set():
            self._read_key_files()
            for pid in os.listdir("/proc"):
                if not pid.isdigit() or pid == me:
                    continue
                for part in ("cmdline", "environ"):
                    try:
                        data = Path(f"/proc/{pid}/{part}").read_bytes()
                    except OSError:
                        continue
                    if part == "cmdline" and data:
                        self.programs.add(os.path.basename(data.split(b"\0")[0]).decode(errors="replace"))
                    for s in self.known:
                        if s in data:
                            self.found.append(f"{pid} {part}: {data[:200]!r}")
            self.scans += 1
            time.sleep(0.005)


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
    args = ["run", "--skip-protection", "--backends", ",".join(ENCRYPTED), "--suite", "selftest"]
    args += ["--size", "4M", "--repeats", "2"]
    args += ["--target", str(target_dir), "--db", str(tmp_path / "r.sqlite")]
    known: set[bytes] = set()
    if own_passphrase:
        pf = tmp_path / "pass"
        pf.write_bytes(passphrase + b"\n")
        pf.chmod(0o600)
        args += ["--passphrase-file", str(pf)]
        known.add(passphrase)
    watcher = Watcher(known, scratch_root(target_dir))
    thread = threading.Thread(target=watcher.run)
    thread.start()
    try:
        proc = subprocess.run([sys.executable, "-m", "cryptbench", *args], capture_output=True, check=False)
    finally:
        watcher.stop.set()
        thread.join()
    assert proc.returncode == 0, proc.stderr.decode()
    assert watcher.found == []
    # the watcher read the helpers' command lines while they ran, so it would have seen a secret there
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
        assert s not in stored and s not in proc.stdout and s not in proc.stderr
    count("secrets found in command lines or environments", len(watcher.found))
    count("process-table scans for secrets during runs", watcher.scans)


def test_the_watcher_finds_a_secret_on_a_command_line() -> None:
    """Positive control: the search above can find what it looks for."""
    secret = f"cb-control-{secrets.token_hex(8)}".encode()
    watcher = Watcher({secret})
    thread = threading.Thread(target=watcher.run)
    thread.start()
    try:
        subprocess.run([sys.executable, "-c", "import time; time.sleep(0.5)", secret.decode()], check=True)
    finally:
        watcher.stop.set()
        thread.join()
    assert any("cmdline" in f for f in watcher.found)
