"""luks: dm-crypt with a LUKS2 header (cryptsetup) on a loop device over a
preallocated image, ext4 on top. Its baseline is `ext4-loop`: the same image,
loop device and filesystem without the dm-crypt layer.

Three targets: AES-XTS with a 256-bit key (AES-128-XTS), with a 512-bit key
(AES-256-XTS), and the 512-bit one opened with
`--perf-no_read_workqueue --perf-no_write_workqueue`, which makes dm-crypt
encrypt in the submitting context instead of its kcryptd workqueues (the change
Cloudflare found doubled throughput on their RAM-disk test), so users see
whether it helps on their kernel.

The key is a random key file (or the user's passphrase) in a 0600 file in RAM,
removed once the mapping is open; PBKDF2 with the minimum iteration count,
because the key is random and the benchmark does not time unlocking.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cryptbench import keys
from cryptbench.backends.base import Availability, Backend, CipherUse, Target, TargetSpec, target_dir
from cryptbench.backends.ext4image import preallocate
from cryptbench.backends.filesystem import (
    describe_mount,
    fs_image_size,
    loop_device,
    mkfs_command,
    mounted,
    probe_fs,
    probe_loop,
)
from cryptbench.errors import ProvisionError, UnavailableError
from cryptbench.interrupts import signals_blocked
from cryptbench.resources import DmCrypt
from cryptbench.session import Session
from cryptbench.system import kernel_module, run_cmd

LUKS2_HEADER = 16 << 20  # bytes: cryptsetup's default LUKS2 header and keyslot area
SECTOR_SIZE = 4096  # bytes per encryption data unit, as fscrypt's
NO_WORKQUEUE = ("--perf-no_read_workqueue", "--perf-no_write_workqueue")
VARIANTS = {
    "luks-aes128": (256, False),
    "luks-aes256": (512, False),
    "luks-aes256-noqueue": (512, True),
}


def device_mapper_missing() -> str | None:
    """Why dm-crypt cannot work here, or None."""
    try:
        with open("/proc/misc") as f:
            misc = f.read().split()
    except OSError:
        misc = []
    if "device-mapper" not in misc and not os.path.exists("/dev/mapper/control"):
        if kernel_module("dm-mod") == "module":
            return "the device-mapper is not loaded (no /dev/mapper/control): run `modprobe dm_mod`"
        return "the kernel has no device-mapper (no /dev/mapper/control), which dm-crypt needs"
    if kernel_module("dm-crypt") is None and not _dm_target("crypt"):
        return "the kernel has no dm-crypt (neither loaded nor a dm-crypt module under /lib/modules)"
    return None


def _dm_target(name: str) -> bool:
    """Whether the device-mapper already has target `name` (built in or loaded)."""
    try:
        out = run_cmd(["dmsetup", "targets"], timeout=10).stdout.decode()
    except ProvisionError:
        return False
    return any(line.split()[:1] == [name] for line in out.splitlines())


def format_command(device: str, keyfile: Path, key_bits: int) -> list[str]:
    return [
        "cryptsetup",
        "luksFormat",
        "--batch-mode",
        "--type",
        "luks2",
        "--cipher",
        "aes-xts-plain64",
        "--key-size",
        str(key_bits),
        "--sector-size",
        str(SECTOR_SIZE),
        "--pbkdf",
        "pbkdf2",
        "--pbkdf-force-iterations",
        "1000",
        "--key-file",
        str(keyfile),
        device,
    ]


def open_command(device: str, keyfile: Path, mapping: str, no_workqueue: bool) -> list[str]:
    return [
        "cryptsetup",
        "open",
        "--type",
        "luks2",
        "--key-file",
        str(keyfile),
        *(NO_WORKQUEUE if no_workqueue else ()),
        device,
        mapping,
    ]


def mapping_name(session: Session, spec: TargetSpec, n: str) -> str:
    # Device-mapper names are global: the run directory's name makes ours
    # unique and tells `cleanup` whose they are.
    return f"cryptbench-{session.run_dir.name}-{spec.slug}-{n}"


class LuksBackend(Backend):
    encrypted = True
    baseline = "ext4-loop"

    def __init__(self, name: str) -> None:
        self.name = name
        self.key_bits, self.no_workqueue = VARIANTS[name]
        label = f"AES-{self.key_bits // 2}-XTS"
        extra = ", no dm-crypt workqueues" if self.no_workqueue else ""
        self.cipher_label = f"aes-xts-plain64, {self.key_bits}-bit key, {SECTOR_SIZE}-byte sectors"
        self.summary = f"dm-crypt LUKS2 ({label}{extra}) on a loop device, ext4 on top"
        # dm-crypt's kcryptd workqueue spreads sectors over every core; without
        # workqueues the submitting thread encrypts.
        self.cipher_use = CipherUse("kernel", "xts(aes)", SECTOR_SIZE, parallel=not self.no_workqueue)

    def probe(self) -> Availability:
        base = probe_loop("cryptsetup")
        if not base.ok:
            return base
        missing = device_mapper_missing()
        if missing:
            return Availability(False, missing)
        try:
            keys.ram_dir()
        except UnavailableError as e:
            return Availability(False, str(e))
        return probe_fs("ext4")

    def space_needed(self, spec: TargetSpec, data_bytes: int) -> int:
        return fs_image_size("ext4", data_bytes) + LUKS2_HEADER

    @contextmanager
    def provision(self, session: Session, spec: TargetSpec, data_bytes: int) -> Iterator[Target]:
        base = target_dir(session, spec)
        image = base / "luks.img"
        mountpoint = base / "mnt"
        mountpoint.mkdir()
        size = fs_image_size("ext4", data_bytes) + LUKS2_HEADER
        allocation = preallocate(session.check_inside(image), size)
        mapping = mapping_name(session, spec, base.name)
        secret = session.secret_file(f"luks-{spec.slug}-{base.name}", keys.new_password(session.passphrase))
        try:
            with loop_device(session, image, direct_io=True) as loop:
                run_cmd(format_command(loop.dev, secret.path, self.key_bits), timeout=120)
                crypt = session.acquire(DmCrypt(mapping))
                try:
                    with signals_blocked():  # the mapping must not appear after its release
                        run_cmd(open_command(loop.dev, secret.path, mapping, self.no_workqueue), timeout=120)
                    session.release(secret)  # the key is in the kernel now
                    mapped = f"/dev/mapper/{mapping}"
                    mkfs = mkfs_command("ext4", mapped)
                    run_cmd(mkfs)
                    with mounted(session, "ext4", mapped, mountpoint):
                        path = mountpoint / "data"
                        path.mkdir()
                        yield Target(
                            name=spec.name,
                            backend=self.name,
                            encrypted=True,
                            baseline=self.baseline,
                            path=path,
                            backing=(image,),
                            details={
                                "cipher": self.cipher_label,
                                "workqueues": "bypassed (--perf-no_*_workqueue)"
                                if self.no_workqueue
                                else "kcryptd (default)",
                                "image": f"{size} bytes, {allocation}",
                                "loop_device": loop.dev,
                                "loop_direct_io": loop.direct_io,
                                "mapping": mapped,
                                "mount": describe_mount(mountpoint),
                                "mkfs": " ".join(mkfs[:-1]),
                                "key": keys.describe(session.passphrase),
                            },
                        )
                finally:
                    session.release(crypt)
        finally:
            session.release(secret)


def luks_backends() -> list[LuksBackend]:
    return [LuksBackend(name) for name in VARIANTS]
