"""Starting `fio --server` for `cryptbench serve`: journaled, private, and known to listen.

The server runs in a session of its own (a Ctrl-C at the terminal is serve's
to handle), from the run directory, with umask 077, its output in a log in
the run directory. A unix socket must lie in a directory only this user can
enter: fio 3.33 makes it mode 0777 whatever the umask (seen here), and anyone
who can connect has fio run jobs as root. It is journaled
as a process tree before its first worker can exist, so teardown and
`cryptbench cleanup` stop its workers too.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import time
from pathlib import Path

from cryptbench.backends.daemon import log_tail, spawn
from cryptbench.fleet.address import Address, AddressKind
from cryptbench.machine.resources import ProcessTree, SocketFile
from cryptbench.machine.session import Session
from cryptbench.machine.system import which
from cryptbench.model.errors import ProvisionError, SafetyError, UsageError

START_TIMEOUT = 10.0  # seconds for fio to bind its address


def _listening(address: Address) -> bool:
    family = (
        socket.AF_UNIX
        if address.kind == AddressKind.SOCK
        else (socket.AF_INET6 if address.kind == AddressKind.IP6 else socket.AF_INET)
    )
    sock = address.kind == AddressKind.SOCK
    where: str | tuple[str, int] = address.host if sock else (address.host, address.port)
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        try:
            s.connect(where)
        except OSError:
            return False
    return True


def _check_socket_dir(directory: Path, address: Address) -> None:
    """Only we may reach the socket: fio makes it mode 0777 whatever the umask, and connecting
    needs search permission on its directory, so that directory must be ours and closed to others."""
    try:
        st = directory.stat()
    except OSError as e:
        raise UsageError(f"--listen {address}: {directory}: {e.strerror}") from None
    if st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise SafetyError(
            f"--listen {address}: other users can enter {directory} (mode {stat.S_IMODE(st.st_mode):04o}, "
            f"uid {st.st_uid}), and whoever reaches fio's socket runs jobs as this user; put it in a "
            "directory of your own with mode 0700"
        )


def check(address: Address) -> None:
    """Refuse an address fio's server cannot, or must not, listen on; before anything is made."""
    if address.kind == AddressKind.SOCK:
        _check_socket_dir(Path(address.host).parent, address)
        if os.path.lexists(address.host):
            raise SafetyError(
                f"--listen {address}: {address.host} exists, "
                "and cryptbench never replaces a file it did not make"
            )
    elif _listening(address):
        raise UsageError(f"--listen {address}: something already listens there")


def start(session: Session, address: Address) -> ProcessTree:
    """Start fio's server on `address`; return it once it accepts connections."""
    exe = which("fio")
    if exe is None:
        raise UsageError("fio is not installed (apt-get install fio)")
    check(address)
    if address.kind == AddressKind.SOCK:
        session.acquire(SocketFile(Path(address.host)))
    log = session.path("fio-server.log")
    proc, server = spawn(
        session,
        [exe, f"--server={address.fio()}"],
        log,
        "fio server",
        ProcessTree,
        stdin=subprocess.DEVNULL,
        cwd=session.run_dir,
        umask=0o077,
    )
    assert isinstance(server, ProcessTree)
    deadline = time.monotonic() + START_TIMEOUT
    while not _listening(address):
        if proc.poll() is not None:
            session.release(server)
            raise ProvisionError(
                f"fio's server did not start on {address}: "
                + (log_tail(log) or f"exit status {proc.returncode}")
            )
        if time.monotonic() > deadline:
            session.release(server)
            raise ProvisionError(f"fio's server did not listen on {address} within {START_TIMEOUT:.0f} s")
        time.sleep(0.05)
    if address.kind == AddressKind.SOCK:
        os.chmod(address.host, 0o600)  # its directory already keeps others out; this too
    return server
