"""Encrypted directories as a user makes them, outside any cryptbench session: what
`stack` reads and `run --existing` measures. Each is unmounted, its daemon gone, however
the test ends."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil


@contextmanager
def users_gocryptfs(where: Path) -> Iterator[Path]:
    """A gocryptfs directory as a user makes one (gocryptfs -init, then a mount), outside
    any cryptbench session; unmounted however the test ends."""
    cipher, plain, password = where / "cipher", where / "plain", where / "password"
    cipher.mkdir()
    plain.mkdir()
    password.write_text("the user's own\n")
    password.chmod(0o600)
    quiet = {"capture_output": True, "check": True}
    subprocess.run(["gocryptfs", "-q", "-init", "-passfile", str(password), str(cipher)], **quiet)  # type: ignore[call-overload]
    subprocess.run(["gocryptfs", "-q", "-passfile", str(password), str(cipher), str(plain)], **quiet)  # type: ignore[call-overload]
    daemons = [
        p
        for p in psutil.process_iter(["name", "cmdline"])
        if p.info["name"] == "gocryptfs" and str(cipher) in (p.info["cmdline"] or [])
    ]
    try:
        yield plain
    finally:
        subprocess.run(["fusermount", "-u", str(plain)], check=True)
        # gocryptfs exits some moments after its unmount (CI's leak check once found it
        # still running): the fixture is done only when its daemon is gone.
        _gone, alive = psutil.wait_procs(daemons, timeout=10)
        assert not alive, f"gocryptfs still running 10 s after its unmount: {alive}"
