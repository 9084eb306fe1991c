"""zfs, zfs-native, zfs-on-luks: OpenZFS's own encryption against ZFS on dm-crypt.

Each is a pool of one vdev, a loop device over a preallocated image in the run's
scratch space (direct I/O, as ext4-loop's), imported under a name of its own
(cryptbench-RUN-TARGET-N: `cleanup` finds a SIGKILLed run's pools by it) with an
altroot inside the target's directory and no cache file, so nothing outside the
scratch space learns of it. The workloads run in one dataset, `POOL/data`:

- `zfs`: no encryption, the baseline of the other two (its own baseline is plain);
- `zfs-native`: the dataset encrypted by ZFS (`encryption=aes-256-gcm`), its raw
  32-byte key read from a 0600 file in the run's RAM directory (`keylocation=file://`),
  never a command line;
- `zfs-on-luks`: the pool on a LUKS2 mapping (AES-256-XTS, 4096-byte sectors, as
  `luks-aes256`) of the same loop device.

All three are made alike: `ashift=12`, `recordsize=128K`, `compression=off` (data that
compresses would flatter ZFS; the run's data file is random, `--data random`),
`atime=off` (the other targets mount with noatime), `sync=standard`. The target's
details say so.

ZFS caches file data in its ARC, not the page cache, and `drop_caches` does not empty
it (openzfs/zfs#12810). So before every cold trial and probe the pool is exported and
imported again (`Target.empty_cache`): export drops its blocks from the ARC, and the
next read comes from the device. Each write trial ends, inside its clock, with `zpool sync`
(`Target.end_write`): fio's final fsync commits ZFS's intent log, `zpool sync` the
transaction group that puts the writes and their metadata in place, as ext4's fsync
commits its journal. The module is loaded (`modprobe zfs`) where it is not,
and never unloaded: a run unloads nothing, so it cannot unload what it did not load.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from cryptbench.backends.base import (
    NOTHING_HIDDEN,
    Availability,
    Backend,
    CipherUse,
    Target,
    TargetSpec,
    target_dir,
)
from cryptbench.backends.dm_kernel import device_mapper_missing
from cryptbench.backends.ext4image import preallocate
from cryptbench.backends.filesystem import loop_device, probe_loop
from cryptbench.backends.luks import LUKS2_HEADER, opened
from cryptbench.backends.luks_variants import AES_XTS, PLAIN_LUKS, SECTOR_SIZE, VARIANTS
from cryptbench.machine import keys
from cryptbench.machine.interrupts import signals_blocked
from cryptbench.machine.resources import ZfsPool
from cryptbench.machine.session import Session
from cryptbench.machine.system import kernel_module, run_cmd, which
from cryptbench.model.errors import ProvisionError, UnavailableError
from cryptbench.model.vocabulary import Property, Verdict

MODULE = Path("/sys/module/zfs")
RECORDSIZE = "128K"
ASHIFT = 12  # 4 KiB blocks, as the other stacks' filesystems
POOL_SPARE = 256 << 20  # bytes beyond the data: ZFS's slop space (up to 128 MiB) and metadata
DATA_SHARE = 8  # and an eighth of the data again, for metadata and the slop of larger pools
POOL_TIMEOUT = 300.0  # seconds for one zpool or zfs command (under emulation, importing is slow)
# What a pool is made with, the same for all three; the dataset's own settings follow.
POOL_PROPERTIES = ("-o", "cachefile=none", "-o", f"ashift={ASHIFT}")
DATASET_PROPERTIES = {
    "recordsize": RECORDSIZE,
    "compression": "off",
    "atime": "off",
    "sync": "standard",
}
SETTINGS = ", ".join(f"{k}={v}" for k, v in DATASET_PROPERTIES.items())  # as the details say them
ENCRYPTION = "aes-256-gcm"
KEY_BYTES = 32  # keyformat=raw takes exactly a 256-bit key
DOCS = "OpenZFS documentation, Basic Concepts, Data Storage: Native Encryption"
INSTALL = "apt-get install zfsutils-linux zfs-dkms (Debian's contrib)"
# What the O_DIRECT probe's aligned 1 MiB write cannot show (zfsprops(7), direct=standard)
DIRECT_IO = (
    f"ZFS 2.3 bypasses the ARC for O_DIRECT, but the part of a write not aligned to a record "
    f"({RECORDSIZE}) goes through it (zfsprops(7), direct): smaller direct writes are buffered there"
)


class Encryption(StrEnum):
    NONE = "none"
    NATIVE = "native"  # ZFS's own, per dataset
    LUKS = "luks"  # the pool on a dm-crypt mapping


@dataclass(frozen=True)
class Layout:
    name: str
    encryption: Encryption
    baseline: str
    summary: str


# What `backends` says before a run of the dataset's settings: compression above all (data
# that compresses would flatter ZFS; the run's data is random besides)
DATASET = ", ".join(f"{k}={DATASET_PROPERTIES[k]}" for k in ("recordsize", "compression"))
LAYOUTS = (
    Layout(
        "zfs",
        Encryption.NONE,
        "plain",
        f"a ZFS pool on a loop device, no encryption, {DATASET} (the ZFS targets' baseline)",
    ),
    Layout(
        "zfs-native",
        Encryption.NATIVE,
        "zfs",
        f"ZFS native encryption ({ENCRYPTION}) of a dataset, {DATASET}, in a pool on a loop device",
    ),
    Layout(
        "zfs-on-luks",
        Encryption.LUKS,
        "zfs",
        f"a ZFS pool on dm-crypt LUKS2 (AES-256-XTS) on a loop device, {DATASET}",
    ),
)


def zfs_missing(modules: Path = Path("/proc/modules")) -> str | None:
    """Why ZFS cannot work here, or None: the kernel first (no package helps a kernel
    that cannot load modules), then the programs."""
    if not MODULE.is_dir():
        if not modules.exists():
            return "no ZFS: this kernel cannot load modules (built without them), and ZFS is one (zfs-dkms)"
        if kernel_module("zfs") is None:
            return f"no zfs module for this kernel ({os.uname().release[:40]}): {INSTALL} builds one"
    for program in ("zpool", "zfs"):
        if which(program) is None:
            return f"{program} is not installed ({INSTALL})"
    return None


def pool_name(session: Session, spec: TargetSpec, n: str) -> str:
    # Pool names are global, as device-mapper names: the run directory's name makes ours
    # unique and tells `cleanup` whose they are (recovery.sweep).
    return f"cryptbench-{session.run_dir.name}-{spec.slug}-{n}"


def pool_size(encryption: Encryption, data_bytes: int) -> int:
    """The image: the data, ZFS's slop space and metadata, and a LUKS2 header under it."""
    size = data_bytes + data_bytes // DATA_SHARE + POOL_SPARE
    return size + (LUKS2_HEADER if encryption is Encryption.LUKS else 0)


class ZfsBackend(Backend):
    programs = ("zpool", "zfs")

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.name = layout.name
        self.encrypted = layout.encryption is not Encryption.NONE
        self.baseline = layout.baseline
        self.summary = layout.summary
        if layout.encryption is Encryption.NATIVE:
            # ZFS encrypts a record at a time with its own AES-GCM (the ICP, in the module), in
            # its I/O pipeline's taskqs over every core; held to OpenSSL's AES-256-GCM on the
            # 4 KiB units cipher/userspace.CASES times (ceilings.KERNEL_EQUIVALENT).
            self.cipher_use = CipherUse("kernel", "gcm(aes)", 4096, parallel=True)
        elif layout.encryption is Encryption.LUKS:
            self.cipher_use = CipherUse("kernel", "xts(aes)", SECTOR_SIZE, parallel=True)

    def version(self) -> str | None:
        try:
            return (MODULE / "version").read_text().strip() or None
        except OSError:
            return None

    def declared(self) -> dict[Property, tuple[Verdict, str]]:
        checksums = (
            "ZFS checksums every block (fletcher4, kept in the pointer to it): a changed byte fails its read"
        )
        if self.layout.encryption is Encryption.NONE:
            return {**NOTHING_HIDDEN, Property.TAMPER: (Verdict.CHECKED, f"{checksums}; not authenticated")}
        if self.layout.encryption is Encryption.LUKS:
            src = "cryptsetup(8), dm-crypt: the whole block device is encrypted"
            return {
                **{p: (Verdict.HIDDEN, src) for p in (Property.CONTENTS, Property.NAMES, Property.SIZES)},
                Property.TREE: (Verdict.HIDDEN, src),
                Property.TAMPER: (
                    Verdict.CHECKED,
                    f"{checksums} under dm-crypt; no MAC authenticates it (cryptsetup-luksFormat(8))",
                ),
            }
        return {
            Property.CONTENTS: (Verdict.HIDDEN, f"{DOCS}: file and volume data are encrypted"),
            Property.NAMES: (Verdict.HIDDEN, f"{DOCS}: directory listings encrypted; dataset names not"),
            Property.SIZES: (Verdict.SHOWN, f"{DOCS}: file sizes and the location of holes not encrypted"),
            Property.TREE: (
                Verdict.HIDDEN,
                f"{DOCS}: directory listings are encrypted, so which directory holds which file "
                "is hidden; the dataset hierarchy is not, nor each object's type and blocks "
                "(how many files and directories a dataset holds shows)",
            ),
            Property.TAMPER: (
                Verdict.DETECTED,
                f"{DOCS}: each leaf block has a MAC, and each indirect block a MAC over those below",
            ),
        }

    def probe(self) -> Availability:
        base = probe_loop()
        if not base.ok:
            return base
        why = zfs_missing()
        if why is None and self.layout.encryption is Encryption.LUKS:
            why = device_mapper_missing() or (None if which("cryptsetup") else "cryptsetup is not installed")
        if why:
            return Availability(False, why)
        if self.layout.encryption is not Encryption.NONE:
            try:
                keys.ram_dir()
            except UnavailableError as e:
                return Availability(False, str(e))
        return Availability(True)

    def space_needed(self, spec: TargetSpec, data_bytes: int) -> int:
        return pool_size(self.layout.encryption, data_bytes)

    @contextmanager
    def provision(self, session: Session, spec: TargetSpec, data_bytes: int) -> Iterator[Target]:
        if not MODULE.is_dir():
            run_cmd(["modprobe", "zfs"], timeout=POOL_TIMEOUT)
        base = target_dir(session, spec)
        image = base / "zfs.img"
        size = pool_size(self.layout.encryption, data_bytes)
        allocation = preallocate(session.check_inside(image), size)
        altroot = session.check_inside(base / "root")
        altroot.mkdir()
        with (
            loop_device(session, image, direct_io=True) as loop,
            self._device(session, spec, base, loop.dev, size) as dev,
        ):
            pool = pool_name(session, spec, base.name)
            held = session.acquire(ZfsPool(pool))
            try:
                with signals_blocked():  # the pool must not appear after its release
                    run_cmd(
                        [
                            *("zpool", "create", *POOL_PROPERTIES, "-R", str(altroot)),
                            *("-O", "canmount=off", pool, dev),
                        ],
                        timeout=POOL_TIMEOUT,
                    )
                with self._key(session, spec, base) as key:
                    dataset = f"{pool}/data"
                    run_cmd(["zfs", "create", *self._dataset_options(key), dataset], timeout=POOL_TIMEOUT)
                    path = altroot / "data"
                    check_encryption(dataset, ENCRYPTION if key is not None else "off")

                    def cycle() -> str:
                        return export_import(pool, dev, altroot, key is not None)

                    def commit() -> None:
                        run_cmd(["zpool", "sync", pool], timeout=POOL_TIMEOUT)

                    yield Target(
                        name=spec.name,
                        backend=self.name,
                        encrypted=self.encrypted,
                        baseline=self.baseline,
                        path=path,
                        backing=(image,),
                        details={
                            "pool": f"{pool}: one vdev, {dev}",
                            "dataset": f"{dataset}, {SETTINGS}",
                            "ashift": str(ASHIFT),
                            "encryption": self._encryption_detail(),
                            "arc": "exported and imported before every cold trial: its blocks leave the ARC",
                            "writes": "each write trial ends with zpool sync, inside its clock",
                            "o_direct": DIRECT_IO,
                            "image": f"{size} bytes, {allocation}",
                            "loop_device": loop.dev,
                            "loop_direct_io": loop.direct_io,
                            **({"key": keys.describe(session.passphrase)} if self.encrypted else {}),
                        },
                        empty_cache=cycle,
                        end_write=commit,
                    )
            finally:
                session.release(held)

    def _dataset_options(self, key: Path | None) -> list[str]:
        options = [f"{k}={v}" for k, v in {**DATASET_PROPERTIES, "mountpoint": "/data"}.items()]
        if key is not None:
            options += [f"encryption={ENCRYPTION}", "keyformat=raw", f"keylocation=file://{key}"]
        return [part for o in options for part in ("-o", o)]

    def _encryption_detail(self) -> str:
        if self.layout.encryption is Encryption.NATIVE:
            return f"ZFS native, {ENCRYPTION}, a raw 256-bit key read from a file (keylocation=file://)"
        if self.layout.encryption is Encryption.LUKS:
            return f"dm-crypt LUKS2 under the pool: {AES_XTS}, 512-bit key, {SECTOR_SIZE}-byte sectors"
        return "none"

    @contextmanager
    def _key(self, session: Session, spec: TargetSpec, base: Path) -> Iterator[Path | None]:
        """ZFS's raw key in a secret file, for as long as the pool may be imported again."""
        if self.layout.encryption is not Encryption.NATIVE:
            yield None
            return
        key = bytes(keys.new_raw_key(session.passphrase, KEY_BYTES))
        secret = session.secret_file(f"zfs-{spec.slug}-{base.name}", key)
        try:
            yield secret.path
        finally:
            session.release(secret)

    @contextmanager
    def _device(self, session: Session, spec: TargetSpec, base: Path, loop: str, size: int) -> Iterator[str]:
        """The pool's vdev: the loop device, or for zfs-on-luks a LUKS2 mapping of it made as
        luks-aes256's."""
        if self.layout.encryption is not Encryption.LUKS:
            yield loop
            return
        with opened(session, spec, base, loop, VARIANTS[PLAIN_LUKS], size) as mapping:
            yield mapping.device


def check_encryption(dataset: str, wanted: str) -> None:
    """The dataset must be encrypted as asked: a target is measured under its name only."""
    got = run_cmd(["zfs", "get", "-H", "-o", "value", "encryption", dataset], timeout=POOL_TIMEOUT)
    encryption = got.stdout.decode().strip()
    if encryption != wanted:
        raise ProvisionError(f"ZFS made {dataset} with encryption={encryption[:40]}, not {wanted}")


def export_import(pool: str, device: str, altroot: Path, load_key: bool) -> str:
    """Export `pool` and import it again from `device`: its blocks leave the ARC. Returns
    what was done, for the trial's record."""
    with signals_blocked():  # exported and not imported again would lose the target
        run_cmd(["zpool", "export", pool], timeout=POOL_TIMEOUT)
        run_cmd(
            [
                *("zpool", "import", "-d", device, "-o", "cachefile=none", "-R", str(altroot)),
                *(("-l",) if load_key else ()),
                pool,
            ],
            timeout=POOL_TIMEOUT,
        )
    return "zpool export and import (the ARC)"


def zfs_backends() -> list[Backend]:
    return [ZfsBackend(layout) for layout in LAYOUTS]
