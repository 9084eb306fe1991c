"""Disk images (study 003's matrix): raw preallocated, sparse raw and qcow2, each
unencrypted or encrypted by qemu's LUKS support with AES-128-XTS or AES-256-XTS.

The stack, for every kind alike, so that image kind and cipher are the only
differences between targets:

    filesystem (ext4, xfs or btrfs) -> loop device -> FUSE export file
      -> qemu-storage-daemon (format driver: raw, luks or qcow2[+luks])
      -> image file in the scratch space (opened with O_DIRECT where the host allows)

The unencrypted image of the same kind is each encrypted image's baseline; the
unencrypted images' baseline is `plain`, the host directory.

State is controlled (`--state`): every write trial gets a newly created image,
either `fresh` (just created) or `rewrite` (written, the files deleted, the
image closed and opened again: unmount, detach, stop the daemon, start it).

An encrypted image is created by qemu-img once per target and run, and copied for
every later trial: qemu-img spends over a second on each creation timing PBKDF2
(it repeats a round until one takes 500 ms of CPU, for the key's digest and again
for the keyslot), whatever `iter-time` asks. The copy is the new image's bytes,
sparse where it was, preallocated where `preallocation=falloc` made it so.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import mmap
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptbench.backends import daemon as daemon_mod
from cryptbench.backends.base import (
    NOTHING_HIDDEN,
    Availability,
    Backend,
    CipherUse,
    DirectIO,
    Target,
    TargetSpec,
    target_dir,
    target_root,
)
from cryptbench.backends.filesystem import (
    describe_mount,
    fs_image_size,
    loop_device,
    mkfs_command,
    mounted,
    probe_fs,
    probe_loop,
    set_autoclear,
)
from cryptbench.backends.qemu import (
    CIPHERS,
    CREATE_TRIES,
    FLAKY_CPU_CLOCK,
    KINDS,
    ImageKind,
    ImageSpec,
    create_command,
    daemon_command,
)
from cryptbench.machine import keys
from cryptbench.machine.resources import Mount, Process
from cryptbench.machine.session import Session
from cryptbench.machine.system import run_cmd, which
from cryptbench.model.errors import ProvisionError, UnavailableError
from cryptbench.model.vocabulary import Property, Verdict

MIB = 1 << 20
# LUKS header and keyslots (2 MiB in qemu's LUKS1), qcow2 tables, slack.
OVERHEAD = 32 * MIB
# The pristine copy of an encrypted image, kept sparse: its header and tables.
PRISTINE_BYTES = 4 * MIB
PRECONDITION_FILE = "cryptbench.precondition"
DAEMON = "qemu-storage-daemon"


@functools.cache  # asked once a process: the environment and each target record it
def qemu_version() -> str:
    try:
        out = subprocess.run(["qemu-img", "--version"], capture_output=True, text=True, check=False)
        return out.stdout.strip().splitlines()[0] if out.stdout else "unknown"
    except OSError:
        return "not installed"


def host_direct_io(directory: Path) -> bool:
    """Can files in `directory` be opened with O_DIRECT (qemu's cache.direct=on)?"""
    probe = directory / ".odirect-probe"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_WRONLY | os.O_DIRECT, 0o600)
    except OSError as e:
        if e.errno == errno.EINVAL:
            return False
        raise
    try:
        buf = mmap.mmap(-1, 4096)
        try:
            os.pwrite(fd, buf, 0)
        except OSError:
            return False
        finally:
            buf.close()
        return True
    finally:
        os.close(fd)
        probe.unlink(missing_ok=True)


@dataclass(frozen=True)
class _Paths:
    image: Path
    export: Path  # the FUSE export: a regular file presenting the guest's disk
    mountpoint: Path
    log: Path


class ImageBackend(Backend):
    programs = ("qemu-img", DAEMON)
    encrypted: bool
    stateful = True

    def declared(self) -> dict[Property, tuple[Verdict, str]]:
        if not self.encrypted:
            return NOTHING_HIDDEN
        src = "qemu docs, qcow2/LUKS encryption: the guest's sectors are encrypted"
        said = {
            p: (Verdict.HIDDEN, src)
            for p in (Property.CONTENTS, Property.NAMES, Property.SIZES, Property.TREE)
        }
        return {
            **said,
            Property.TAMPER: (Verdict.SILENT, "qemu docs, LUKS: AES-XTS sectors, no authentication tag"),
        }

    def __init__(self, kind: ImageKind, cipher: str | None) -> None:
        self.kind = kind
        self.cipher = cipher
        self.name = f"image-{kind}" + (f"-{cipher}" if cipher else "")
        self.encrypted = cipher is not None
        self.baseline = f"image-{kind}" if cipher else "plain"
        label = CIPHERS[cipher][1] if cipher else "no encryption"
        self.summary = f"{KINDS[kind]}, {label}, via qemu-storage-daemon and a loop device"
        if cipher:
            # qemu's LUKS encrypts 512-byte sectors in its one I/O thread, with
            # its own crypto library (gnutls or nettle), measured here with OpenSSL.
            self.cipher_use = CipherUse("userspace", f"{CIPHERS[cipher][0]}-xts", 512, parallel=False)

    def version(self) -> str:
        return qemu_version()

    def probe(self) -> Availability:
        base = probe_loop()
        if not base.ok:
            return base
        for tool in ("qemu-img", DAEMON):
            if which(tool) is None:
                pkg = "qemu-utils" if tool == "qemu-img" else "qemu-system-common"
                return Availability(False, f"{tool} is not installed (apt-get install {pkg})")
        no_fuse = daemon_mod.fuse_available()
        if no_fuse:
            return Availability(False, f"{no_fuse} (qemu-storage-daemon exports images through FUSE)")
        if self.cipher:
            try:
                keys.ram_dir()  # qemu's secret file must not touch a disk
            except UnavailableError as e:
                return Availability(False, str(e))
        return probe_fs("ext4")

    def image_spec(self, fs: str, data_bytes: int) -> ImageSpec:
        return ImageSpec(self.kind, self.cipher, fs_image_size(fs, data_bytes))

    def space_needed(self, spec: TargetSpec, data_bytes: int) -> int:
        pristine = PRISTINE_BYTES if self.cipher else 0
        return self.image_spec(spec.fs, data_bytes).size + OVERHEAD + pristine

    @contextmanager
    def provision(self, session: Session, spec: TargetSpec, data_bytes: int) -> Iterator[Target]:
        base = target_dir(session, spec)
        image = self.image_spec(spec.fs, data_bytes)
        paths = _Paths(base / f"disk.{image.suffix}", base / "export", base / "mnt", base / "qsd.log")
        paths.mountpoint.mkdir()
        paths.export.touch(mode=0o600)
        direct = host_direct_io(base)
        try:
            pristine = target_root(session, spec) / "pristine" / f"{spec.slug}.{image.suffix}"
            password = self._made(session, image, paths, pristine)
            details = {
                "image": f"{paths.image.name}, {image.size} bytes virtual, {KINDS[self.kind]}",
                "cipher": CIPHERS[self.cipher][1] + " (qemu LUKS1, plain64 IVs)" if self.cipher else "none",
                "filesystem": spec.fs,
                "state": spec.state or "",
                "qemu": qemu_version(),
                "image_cache": "O_DIRECT (cache.direct=on)"
                if direct
                else "host page cache (no O_DIRECT here)",
                "mkfs": " ".join(mkfs_command(spec.fs, "DEV")[:-1]),
            }
            if self.cipher:
                details["password"] = keys.describe(session.passphrase)
            if spec.state == "rewrite":
                with self._opened(session, spec, image, paths, password, direct, first=True):
                    _precondition(paths.mountpoint / "data", data_bytes)
                details["precondition"] = (
                    f"{data_bytes} bytes written, deleted, image closed and opened again"
                )
            with self._opened(
                session, spec, image, paths, password, direct, first=spec.state != "rewrite"
            ) as daemon:
                details["mount"] = describe_mount(paths.mountpoint)
                yield Target(
                    name=spec.name,
                    backend=self.name,
                    encrypted=self.encrypted,
                    baseline=self.baseline,
                    path=paths.mountpoint / "data",
                    backing=(paths.image,),
                    helpers=(daemon_mod.helper(daemon),),
                    details=details,
                    state=spec.state,
                    cached=(paths.export,),
                    direct_io=DirectIO.HONOURED,
                )
        finally:
            # Images are the biggest files a run makes: the next reset needs the room.
            with contextlib.suppress(OSError):
                paths.image.unlink()

    def _made(self, session: Session, image: ImageSpec, paths: _Paths, pristine: Path) -> bytes | None:
        """The image file, new, and its password (None when unencrypted). An encrypted
        one is a copy of `pristine` where an earlier provisioning in this run left it."""
        if not self.cipher:
            self._create(session, image, paths, None)
            return None
        session.check_inside(pristine)
        password = session.passwords.get(pristine)
        if password is not None:
            copy_sparse(pristine, session.check_inside(paths.image))
            if image.kind == ImageKind.RAW:  # as qemu-img's preallocation=falloc left it
                preallocate(paths.image, image.size)
            return password
        password = keys.new_password(session.passphrase)
        self._create(session, image, paths, password)
        pristine.parent.mkdir(parents=True, exist_ok=True)
        copy_sparse(paths.image, pristine)
        session.passwords[pristine] = password
        return password

    def _create(self, session: Session, image: ImageSpec, paths: _Paths, password: bytes | None) -> None:
        session.check_inside(paths.image)
        with _secret_file(session, password, "create") as secret:
            cmd = create_command(image, paths.image, secret)
            for attempt in range(CREATE_TRIES):
                try:
                    run_cmd(cmd, timeout=120)
                    return
                except ProvisionError as e:
                    if FLAKY_CPU_CLOCK not in str(e) or attempt == CREATE_TRIES - 1:
                        raise
                    paths.image.unlink(missing_ok=True)

    @contextmanager
    def _opened(
        self,
        session: Session,
        spec: TargetSpec,
        image: ImageSpec,
        paths: _Paths,
        password: bytes | None,
        direct: bool,
        *,
        first: bool,
    ) -> Iterator[Process]:
        """Daemon, export, loop device and filesystem up; all down again on exit."""
        export = session.acquire(Mount(session.check_inside(paths.export), fuse=True))
        daemon: Process | None = None
        try:
            with _secret_file(session, password, "open") as secret:
                cmd = daemon_command(image, paths.image, paths.export, secret, direct)
                daemon = daemon_mod.start(session, DAEMON, cmd, paths.export, paths.log)
            # Not --direct-io=on: loop's direct I/O onto a FUSE export corrupted
            # the filesystem here (mkfs then fsck). The export is not page-cached
            # (qemu opens it direct_io), so buffered loop I/O caches nothing twice.
            with loop_device(session, paths.export, direct_io=False) as loop:
                if first:
                    run_cmd(mkfs_command(spec.fs, loop.dev))
                with mounted(session, spec.fs, loop.dev, paths.mountpoint):
                    set_autoclear(loop.dev)
                    if first:
                        (paths.mountpoint / "data").mkdir()
                    yield daemon
        finally:
            session.release(export)  # the daemon keeps running after this; stop it too
            if daemon is not None:
                session.release(daemon)


@contextmanager
def _secret_file(session: Session, password: bytes | None, use: str) -> Iterator[Path | None]:
    """The password as a 0600 file in RAM for one qemu command; wiped when it has read it."""
    if password is None:
        yield None
        return
    secret = session.secret_file(f"qemu-{use}-{os.urandom(4).hex()}", password)
    try:
        yield secret.path
    finally:
        session.release(secret)


def copy_sparse(src: Path, dst: Path) -> None:
    """`src`'s bytes into the new file `dst`, leaving a hole wherever they are zero."""
    run_cmd(["cp", "--sparse=always", "--reflink=never", "--", str(src), str(dst)])


def preallocate(path: Path, size: int) -> None:
    """Every block of `path` up to `size` allocated, its bytes unchanged (fallocate(2))."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.posix_fallocate(fd, 0, size)
    finally:
        os.close(fd)


def _precondition(directory: Path, data_bytes: int) -> None:
    """Study 003's rewrite state: write the data, make it durable, delete it."""
    path = directory / PRECONDITION_FILE
    block = os.urandom(MIB)
    with open(path, "wb") as f:
        for _ in range(max(1, data_bytes // MIB)):
            f.write(block)
        f.flush()
        os.fsync(f.fileno())
    path.unlink()
    os.sync()


def image_backends() -> list[ImageBackend]:
    return [ImageBackend(kind, cipher) for kind in KINDS for cipher in (None, *CIPHERS)]
