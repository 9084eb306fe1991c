"""gocryptfs: an encrypted overlay (FUSE) whose ciphertext lives in the scratch space.

The password (generated per run, or the user's --passphrase-file) goes to
gocryptfs through a 0600 file on a RAM filesystem (`-passfile`), never a
command line or an environment variable, and the file is wiped as soon as the
mount is up.
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from cryptbench.backends import daemon as daemon_mod
from cryptbench.backends.base import (
    Availability,
    Backend,
    CipherUse,
    DirectIO,
    Target,
    TargetSpec,
    target_dir,
)
from cryptbench.machine import keys
from cryptbench.machine.resources import Mount
from cryptbench.machine.session import Session
from cryptbench.machine.system import run_cmd, which
from cryptbench.model.errors import UnavailableError

# Per 4 KiB block gocryptfs stores a 16-byte nonce and a 16-byte tag, plus an
# 18-byte file header: about 0.8 % more than the plaintext.
OVERHEAD = 1.02
SLACK = 16 << 20  # bytes
BUFFERED_REASON = (
    "gocryptfs accepts O_DIRECT on the mount but writes its ciphertext files through the page cache"
)


@functools.cache  # asked once a process: the environment and each target record it
def gocryptfs_version() -> str:
    try:
        out = subprocess.run(["gocryptfs", "-version"], capture_output=True, text=True, check=False)
        return out.stdout.strip().splitlines()[0] if out.stdout else "unknown"
    except OSError:
        return "not installed"


class GocryptfsBackend(Backend):
    name = "gocryptfs"
    programs = ("gocryptfs",)
    encrypted = True
    baseline = "plain"
    summary = "gocryptfs FUSE overlay (AES-256-GCM) over a directory on the target filesystem"
    # gocryptfs seals a request's 4 KiB blocks in parallel goroutines; it uses
    # Go's AES-GCM (or OpenSSL's, chosen at mount), measured here with OpenSSL.
    cipher_use = CipherUse("userspace", "aes-256-gcm", 4096, parallel=True)

    def declared(self) -> dict[str, tuple[str, str]]:
        src = "gocryptfs-website docs/comparison.md"
        return {
            "contents": ("hidden", f"{src}: File Contents, GCM"),
            "names": ("hidden", f"{src}: File Names, EME with a per-directory IV"),
            "sizes": ("shown", f"{src}: File size obfuscation: no"),
            "tree": ("shown", f"{src}: Directory flattening: no"),
            "tamper": ("detected", f"{src}: File Contents, Integrity: GCM"),
        }

    def version(self) -> str:
        return gocryptfs_version()

    def probe(self) -> Availability:
        if which("gocryptfs") is None:
            return Availability(False, "gocryptfs is not installed (apt-get install gocryptfs)")
        no_fuse = daemon_mod.fuse_available()
        if no_fuse:
            return Availability(False, no_fuse)
        try:
            keys.ram_dir()  # its password file must not touch a disk
        except UnavailableError as e:
            return Availability(False, str(e))
        return Availability(True)

    def space_needed(self, spec: TargetSpec, data_bytes: int) -> int:
        return int(data_bytes * OVERHEAD) + SLACK

    @contextmanager
    def provision(self, session: Session, spec: TargetSpec, data_bytes: int) -> Iterator[Target]:
        base = target_dir(session, spec)
        cipher = base / "cipher"
        mountpoint = base / "mnt"
        log = base / "gocryptfs.log"
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
                daemon = daemon_mod.start(
                    session,
                    "gocryptfs",
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
                    mountpoint,
                    log,
                )
                session.release(secret)  # the password is not needed once mounted
                yield Target(
                    name=spec.name,
                    backend=self.name,
                    encrypted=True,
                    baseline=self.baseline,
                    path=mountpoint,
                    backing=(cipher,),
                    helpers=(daemon_mod.helper(daemon),),
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
