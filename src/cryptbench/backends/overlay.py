"""What the FUSE overlay filesystems from the distribution (gocryptfs, securefs, CryFS,
EncFS, rclone's crypt) share: a ciphertext directory and a mountpoint in the scratch space,
a daemon in the foreground, and a secret that reaches the tool through a 0600
file in RAM or a pipe to its standard input, never a command line.

Each subclass says how its tool creates a filesystem and mounts it.
"""

from __future__ import annotations

import functools
import os
import subprocess
from abc import abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from cryptbench.backends import daemon as daemon_mod
from cryptbench.backends.base import Availability, Backend, DirectIO, Target, TargetSpec, target_dir
from cryptbench.machine import keys
from cryptbench.machine.resources import Mount, SecretFile
from cryptbench.machine.session import Session
from cryptbench.machine.system import which
from cryptbench.model.errors import UnavailableError

SLACK = 32 << 20  # bytes: headers, per-block tags, metadata files


@dataclass
class Layout:
    cipher: Path  # the ciphertext directory (the backing)
    mountpoint: Path  # the decrypted view
    log: Path
    home: Path  # HOME for the tool: state it keeps per user stays in the scratch
    secret: SecretFile | None = None  # a 0600 key or password file in RAM, while needed


@functools.cache  # asked once a process: the environment and each target record it
def package_version(package: str) -> str:
    """The installed Debian package's version (the tools' own --version output varies)."""
    try:
        out = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", package],
            capture_output=True,
            text=True,
            check=False,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return f"{package} {out.stdout.strip()}" if out.returncode == 0 and out.stdout.strip() else "unknown"


class FuseOverlayBackend(Backend):
    encrypted = True
    baseline = "plain"
    tool: ClassVar[str]  # the program, also the helper's name
    package: ClassVar[str]  # Debian package
    overhead: ClassVar[float]  # ciphertext bytes per plaintext byte
    cipher_label: ClassVar[str]
    write_behind: ClassVar[float] = 0.0  # seconds (Target.write_behind)
    sync_backing: ClassVar[bool] = False  # its fsync does not reach the backing: Target.end_write syncs it
    # Why its trials run buffered whatever O_DIRECT does on the mount (gocryptfs writes its
    # ciphertext through the page cache); None: the provisioning's O_DIRECT probe decides.
    buffered_reason: ClassVar[str | None] = None

    def version(self) -> str:
        return package_version(self.package)

    def __init_subclass__(cls, **kw: object) -> None:
        super().__init_subclass__(**kw)
        if "tool" in cls.__dict__:
            cls.programs = (cls.tool,)  # its FUSE daemon, and the tool's own `create`

    def probe(self) -> Availability:
        if which(self.tool) is None:
            return Availability(False, f"{self.tool} is not installed (apt-get install {self.package})")
        no_fuse = daemon_mod.fuse_available()
        if no_fuse:
            return Availability(False, no_fuse)
        try:
            keys.ram_dir()  # key files must not touch a disk
        except UnavailableError as e:
            return Availability(False, str(e))
        return Availability(True)

    def space_needed(self, spec: TargetSpec, data_bytes: int) -> int:
        return int(data_bytes * self.overhead) + SLACK

    def create(self, session: Session, layout: Layout, password: bytes) -> None:
        """Make a new encrypted filesystem in layout.cipher; by default the
        first mount does (CryFS, EncFS)."""

    @abstractmethod
    def mount_argv(self, layout: Layout) -> list[str]:
        """The foreground daemon's command line."""

    def mount_env(self, layout: Layout) -> dict[str, str]:
        """Environment for the daemon beyond HOME (never a secret: /proc/PID/environ)."""
        return {}

    def mount_stdin(self, password: bytes) -> bytes | None:
        """What the daemon reads on standard input (a password), or None."""
        return None

    def details(self) -> dict[str, str]:
        return {}

    @contextmanager
    def provision(self, session: Session, spec: TargetSpec, data_bytes: int) -> Iterator[Target]:
        base = target_dir(session, spec)
        layout = Layout(base / "cipher", base / "mnt", base / f"{self.tool}.log", base / "home")
        for d in (layout.cipher, layout.mountpoint, layout.home):
            d.mkdir(mode=0o700)
        password = keys.new_password(session.passphrase)
        mount = session.acquire(Mount(layout.mountpoint, fuse=True))
        daemon = None
        try:
            self.create(session, layout, password)
            daemon = daemon_mod.start(
                session,
                self.tool,
                self.mount_argv(layout),
                layout.mountpoint,
                layout.log,
                stdin=self.mount_stdin(password),
                env={"HOME": str(layout.home), **self.mount_env(layout)},
            )
            if layout.secret is not None:
                session.release(layout.secret)  # mounted: the key is in the daemon now
                layout.secret = None
            yield Target(
                name=spec.name,
                backend=self.name,
                encrypted=True,
                baseline=self.baseline,
                path=layout.mountpoint,
                backing=(layout.cipher,),
                helpers=(daemon_mod.helper(daemon),),
                write_behind=self.write_behind,
                end_write=os.sync if self.sync_backing else None,
                writes_from_start=bool(self.writes_from_start),
                direct_io=DirectIO.HONOURED if self.buffered_reason is None else DirectIO.BUFFERED,
                direct_io_reason=self.buffered_reason or "",
                details={
                    "version": self.version(),
                    "cipher": self.cipher_label,
                    "password": keys.describe(session.passphrase),
                    "mount": f"fuse.{self.tool}",
                    **self.details(),
                },
            )
        finally:
            session.release(mount)  # unmount first: the daemon then exits by itself
            if daemon is not None:
                session.release(daemon)
            if layout.secret is not None:
                session.release(layout.secret)
