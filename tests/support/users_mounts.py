"""Encrypted directories as a user makes them, outside any cryptbench session: what
`stack` reads and `run --existing` measures. Each is unmounted, its daemon gone, however
the test ends."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

QUIET = {"capture_output": True, "check": True}


@contextmanager
def users_gocryptfs(where: Path) -> Iterator[Path]:
    """A gocryptfs directory as a user makes one (gocryptfs -init, then a mount)."""
    cipher, plain, password = _dirs(where, "")
    subprocess.run(["gocryptfs", "-q", "-init", "-passfile", str(password), str(cipher)], **QUIET)  # type: ignore[call-overload]
    subprocess.run(["gocryptfs", "-q", "-passfile", str(password), str(cipher), str(plain)], **QUIET)  # type: ignore[call-overload]
    with _unmounted(plain, "gocryptfs", str(cipher)):
        yield plain


@contextmanager
def users_securefs(where: Path) -> Iterator[Path]:
    """A securefs directory as a user makes one (securefs create, then mount -b)."""
    cipher, plain, password = _dirs(where, "s")
    subprocess.run(["securefs", "create", "--keyfile", str(password), str(cipher)], **QUIET)  # type: ignore[call-overload]
    mount = ["securefs", "mount", "-b", "--keyfile", str(password), str(cipher), str(plain)]
    subprocess.run(mount, **QUIET)  # type: ignore[call-overload]
    with _unmounted(plain, "securefs", str(plain)):
        yield plain


def _dirs(where: Path, prefix: str) -> tuple[Path, Path, Path]:
    """The cipher directory, the mountpoint and the password file (0600) of one mount."""
    cipher, plain, password = (where / f"{prefix}{n}" for n in ("cipher", "plain", "password"))
    cipher.mkdir()
    plain.mkdir()
    password.write_text("the user's own\n")
    password.chmod(0o600)
    return cipher, plain, password


@contextmanager
def _unmounted(plain: Path, name: str, named: str) -> Iterator[None]:
    """Unmounts `plain` on leaving and waits for its daemon (the `name` process whose
    arguments hold `named`) to be gone."""
    daemons = [
        p
        for p in psutil.process_iter(["name", "cmdline"])
        if p.info["name"] == name and named in (p.info["cmdline"] or [])
    ]
    try:
        yield
    finally:
        subprocess.run(["fusermount", "-u", str(plain)], check=True)
        # a daemon exits some moments after its unmount (CI's leak check once found
        # gocryptfs still running): the fixture is done only when its daemon is gone
        _gone, alive = psutil.wait_procs(daemons, timeout=10)
        assert not alive, f"{name} still running 10 s after its unmount: {alive}"
