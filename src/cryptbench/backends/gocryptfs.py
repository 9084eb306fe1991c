"""gocryptfs: an encrypted overlay (FUSE) whose ciphertext lives in the scratch space.

The password (generated per run, or the user's --passphrase-file) goes to
gocryptfs through a 0600 file on a RAM filesystem (`-passfile`), never a
command line or an environment variable, and the file is wiped as soon as the
mount is up.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from cryptbench import keys
from cryptbench.backends.base import Availability, Backend, DirectIO, Helper, Target
from cryptbench.errors import ProvisionError, UnavailableError
from cryptbench.resources import Mount, Process
from cryptbench.session import Session
from cryptbench.system import is_mountpoint, run_cmd, which

MOUNT_TIMEOUT = 20.0  # seconds
# Per 4 KiB block gocryptfs stores a 16-byte nonce and a 16-byte tag, plus an
# 18-byte file header: about 0.8 % more than the plaintext.
OVERHEAD = 1.02
SLACK = 16 << 20  # bytes
BUFFERED_REASON = (
    "gocryptfs accepts O_DIRECT on the mount but writes its ciphertext files through the page cache"
)


def gocryptfs_version() -> str:
    try:
        out = subprocess.run(["gocryptfs", "-version"], capture_output=True, text=True, check=False)
        return out.stdout.strip().splitlines()[0] if out.stdout else "unknown"
    except OSError:
        return "not installed"


class GocryptfsBackend(Backend):
    name = "gocryptfs"
    encrypted = True
    baseline = "plain"
    summary = "gocryptfs FUSE overlay (AES-256-GCM) over a directory on the target filesystem"

    def probe(self) -> Availability:
        if which("gocryptfs") is None:
            return Availability(False, "gocryptfs is not installed (apt-get install gocryptfs)")
        if which("fusermount3") is None and which("fusermount") is None:
            return Availability(False, "fusermount3 is not installed (apt-get install fuse3)")
        if not os.path.exists("/dev/fuse"):
            return Availability(False, "kernel has no FUSE support (/dev/fuse missing)")
        if not os.access("/dev/fuse", os.R_OK | os.W_OK):
            return Availability(False, "this user cannot open /dev/fuse")
        try:
            keys.ram_dir()  # its password file must not touch a disk
        except UnavailableError as e:
            return Availability(False, str(e))
        return Availability(True)

    def space_needed(self, data_bytes: int) -> int:
        return int(data_bytes * OVERHEAD) + SLACK

    @contextmanager
    def provision(self, session: Session, data_bytes: int) -> Iterator[Target]:
        base = session.path("targets", self.name)
        base.mkdir(parents=True)
        cipher = session.path("targets", self.name, "cipher")
        mountpoint = session.path("targets", self.name, "mnt")
        log = session.path("targets", self.name, "gocryptfs.log")
        cipher.mkdir()
        mountpoint.mkdir()
        secret = session.secret_file("gocryptfs-password", keys.new_password(session.passphrase) + b"\n")
        passfile = secret.path
        try:
            # -init prints the master key unless -q; its output is discarded either way.
            run_cmd(["gocryptfs", "-init", "-q", "-passfile", str(passfile), str(cipher)], timeout=60)
            mount = session.acquire(Mount(mountpoint, fuse=True))
            daemon = None
            try:
                daemon = self._start(session, cipher, mountpoint, passfile, log)
                session.release(secret)  # the password is not needed once mounted
                yield Target(
                    name=self.name,
                    backend=self.name,
                    encrypted=True,
                    baseline=self.baseline,
                    path=mountpoint,
                    backing=(cipher,),
                    helpers=(Helper("gocryptfs", daemon.pid, daemon.create_time),),
                    details={
                        "gocryptfs": gocryptfs_version(),
                        "cipher": "AES-256-GCM (gocryptfs default), names EME",
                        "password": keys.describe(session.passphrase),
                        "mount": "fuse.gocryptfs",
                    },
                    direct_io=DirectIO.BUFFERED,
                    direct_io_reason=BUFFERED_REASON,
                )
            finally:
                session.release(mount)  # unmount first: gocryptfs then exits by itself
                if daemon is not None:
                    session.release(daemon)
        finally:
            session.release(secret)

    def _start(self, session: Session, cipher: Path, mountpoint: Path, passfile: Path, log: Path) -> Process:
        with open(log, "wb") as logf:
            proc = subprocess.Popen(
                [
                    "gocryptfs",
                    "-fg",
                    "-q",
                    "-nosyslog",
                    "-passfile",
                    str(passfile),
                    str(cipher),
                    str(mountpoint),
                ],
                stdin=subprocess.DEVNULL,
                stdout=logf,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C at the terminal is ours to handle, not its
            )
        daemon = session.acquire(Process(proc.pid, psutil.Process(proc.pid).create_time(), "gocryptfs"))
        deadline = time.monotonic() + MOUNT_TIMEOUT
        while not is_mountpoint(mountpoint):
            if proc.poll() is not None:
                session.release(daemon)
                tail = log.read_text(errors="replace").strip().splitlines()
                raise ProvisionError(f"gocryptfs failed to mount: {tail[-1] if tail else proc.returncode}")
            if time.monotonic() > deadline:
                session.release(daemon)
                raise ProvisionError(f"gocryptfs did not mount within {MOUNT_TIMEOUT:.0f} s")
            time.sleep(0.02)
        return daemon
