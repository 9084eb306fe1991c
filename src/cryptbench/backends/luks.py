"""luks: dm-crypt with a LUKS2 header (cryptsetup) on a loop device over a
preallocated image, ext4 on top. Its baseline is `ext4-loop`: the same image,
loop device and filesystem without the dm-crypt layer.

The targets are the choices operators argue about, each its own target so that
a run sets each against the same baseline (and `luks-aes256` beside it):
AES-XTS with a 256-bit key (AES-128-XTS) and a 512-bit key (AES-256-XTS), the
512-bit one formatted with 512-byte sectors instead of 4096, and opened with
dm-crypt's performance flags: `--perf-no_read_workqueue` and
`--perf-no_write_workqueue` alone and together (dm-crypt then encrypts in the
submitting context instead of its kcryptd workqueues: the change Cloudflare
found doubled throughput on their RAM-disk test), and
`--perf-submit_from_crypt_cpus` (writes submitted from the CPU that encrypted
them, which Ceph's 2023 study measured), and `--perf-high_priority` (dm-crypt 1.26,
Linux 6.10: its workqueues at high priority and its writer thread at nice -20).
After opening, the mapping's table
(`dmsetup table`) must show every option asked for: a kernel that ignores one
does not get its target measured under that name.

Authenticated encryption is two more: LUKS2 with `--integrity hmac-sha256`, which
stacks dm-crypt (AES-256-XTS with an HMAC-SHA256 tag per sector) on dm-integrity,
journaled as cryptsetup makes it and opened with `--integrity-no-journal`. Both
are held to `luks-aes256`, the same cipher without integrity. Formatting wipes
the whole device to initialise the tags: that happens while provisioning,
outside every clock, and the tags and journal are counted in the image's size
(and so in the free-space check).

The key is a random key file (or the user's passphrase) in a 0600 file in RAM,
removed once the mapping is open; PBKDF2 with the minimum iteration count,
because the key is random and the benchmark does not time unlocking.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptbench.backends.base import Availability, Backend, CipherUse, Target, TargetSpec, target_dir
from cryptbench.backends.dm_kernel import (
    NO_QUEUE_SINCE,
    cryptsetup_takes,
    device_mapper_missing,
    dm_target_version,
    high_priority_missing,
    integrity_missing,
)
from cryptbench.backends.dm_table import (
    check_cipher,
    check_integrity_mode,
    check_table,
    format_command,
    integrity_detail,
    integrity_table_mode,
    open_command,
    reload_with,
    table_cipher,
    table_options,
    table_without_key,
)
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
from cryptbench.backends.luks_variants import (
    AES_XTS,
    CIPHERS,
    HIGH_PRIORITY,
    NO_READ_QUEUE,
    NO_WRITE_QUEUE,
    VARIANTS,
    Variant,
)
from cryptbench.machine import keys
from cryptbench.machine.interrupts import signals_blocked
from cryptbench.machine.resources import DmCrypt
from cryptbench.machine.session import Session
from cryptbench.machine.system import crypto_missing, run_cmd
from cryptbench.model.errors import UnavailableError
from cryptbench.model.option_kinds import OptionKind
from cryptbench.model.vocabulary import Property, Verdict

LUKS2_HEADER = 16 << 20  # bytes: cryptsetup's default LUKS2 header and keyslot area

# dm-integrity's own space beside the data, with room to spare: the tags (32 bytes
# per 4096-byte sector, 0.8 %), the journal (the kernel's default, 1/128 of the
# device, 0.8 %) and a superblock and padding per interleaved area.
INTEGRITY_SHARE = 32  # at most 1/32 of the data (3.1 %) ...

INTEGRITY_SPARE = 8 << 20  # ... plus 8 MiB, bytes

WIPE_RATE = 5e6  # bytes/s: the slowest wipe we wait for (a TCG guest's), before giving up


def mapping_name(session: Session, spec: TargetSpec, n: str) -> str:
    # Device-mapper names are global: the run directory's name makes ours
    # unique and tells `cleanup` whose they are.
    return f"cryptbench-{session.run_dir.name}-{spec.slug}-{n}"


class LuksBackend(Backend):
    programs = ("cryptsetup", "dmsetup")
    encrypted = True
    baseline = "ext4-loop"

    def same_format_as(self) -> str | None:
        # dm-crypt's performance flags are given to `cryptsetup open` (open_command), not
        # written to the header: the container is the one its variant_of makes.
        v = self.variant
        return (
            v.variant_of
            if v.option in (OptionKind.WORKQUEUES, OptionKind.SUBMIT, OptionKind.PRIORITY)
            else None
        )

    def declared(self) -> dict[Property, tuple[Verdict, str]]:
        src = "cryptsetup(8), dm-crypt: the whole block device is encrypted"
        said = {
            p: (Verdict.HIDDEN, src)
            for p in (Property.CONTENTS, Property.NAMES, Property.SIZES, Property.TREE)
        }
        if self.variant.integrity:
            said[Property.TAMPER] = (
                Verdict.DETECTED,
                "integritysetup(8): dm-integrity's tags, for authenticated encryption",
            )
        else:
            said[Property.TAMPER] = (
                Verdict.SILENT,
                "cryptsetup-luksFormat(8): authenticated only with --integrity",
            )
        return said

    def __init__(self, name: str, variant: Variant | None = None) -> None:
        self.name = name
        # `variant`: a twin's (backends/luks_twin.py), which VARIANTS does not list
        self.variant = v = variant or VARIANTS[name]
        label = v.cipher_name + (f", {v.label}" if v.label else "")
        self.cipher_label = f"{v.cipher}, {v.key_bits}-bit key, {v.sector}-byte sectors"
        self.summary = f"dm-crypt LUKS2 ({label}) on a loop device, ext4 on top"
        # dm-crypt's kcryptd workqueue spreads sectors over every core; with a
        # workqueue bypassed the submitting thread encrypts that direction, and
        # the ceiling is held to one core (conservative for the other direction).
        queued = not {NO_READ_QUEUE, NO_WRITE_QUEUE} & set(v.flags)
        self.cipher_use = CipherUse("kernel", v.algorithm, v.sector, parallel=queued)

    def probe(self) -> Availability:
        base = probe_loop("cryptsetup")
        if not base.ok:
            return base
        missing = device_mapper_missing()
        if missing:
            return Availability(False, missing)
        if {NO_READ_QUEUE, NO_WRITE_QUEUE} & set(self.variant.flags):
            # Known only once dm-crypt is loaded; opening checks the table in any case.
            version = dm_target_version("crypt")
            if version is not None and version < NO_QUEUE_SINCE:
                shown = ".".join(map(str, version))
                return Availability(False, f"dm-crypt {shown} has no no_*_workqueue flags (1.22, Linux 5.9)")
        if HIGH_PRIORITY in self.variant.flags:
            why = high_priority_missing(dm_target_version("crypt"), os.uname().release)
            if why:
                return Availability(False, why)
        if self.variant.cipher != AES_XTS:
            algorithm, _name, config, module = CIPHERS[self.variant.cipher]
            why = crypto_missing(algorithm, config, module)
            if why:
                return Availability(False, why)
        if self.variant.integrity:
            why = integrity_missing(self.variant.integrity)
            if why:
                return Availability(False, why)
        try:
            keys.ram_dir()
        except UnavailableError as e:
            return Availability(False, str(e))
        return probe_fs("ext4")

    def space_needed(self, spec: TargetSpec, data_bytes: int) -> int:
        return image_size(self.variant, data_bytes)

    @contextmanager
    def provision(self, session: Session, spec: TargetSpec, data_bytes: int) -> Iterator[Target]:
        base = target_dir(session, spec)
        image = base / "luks.img"
        mountpoint = base / "mnt"
        mountpoint.mkdir()
        size = image_size(self.variant, data_bytes)
        allocation = preallocate(session.check_inside(image), size)
        with (
            loop_device(session, image, direct_io=True) as loop,
            opened(session, spec, base, loop.dev, self.variant, size) as mapping,
        ):
            integrity = _integrity_details(mapping.name, self.variant)
            mkfs = mkfs_command("ext4", mapping.device)
            run_cmd(mkfs)
            with mounted(session, "ext4", mapping.device, mountpoint):
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
                        "workqueues": _workqueues(self.variant.flags),
                        **(
                            {"high_priority": _how_set(mapping.reloaded)}
                            if HIGH_PRIORITY in self.variant.flags
                            else {}
                        ),
                        **(
                            {"variant_of": self.variant.variant_of, "option": self.variant.label}
                            if self.variant.variant_of
                            else {}
                        ),
                        "dm_table_options": " ".join(mapping.options) or "none",
                        "dm_table_cipher": table_cipher(mapping.table),
                        "dm_table": table_without_key(mapping.table),
                        **integrity,
                        "image": f"{size} bytes, {allocation}",
                        "loop_device": loop.dev,
                        "loop_direct_io": loop.direct_io,
                        "mapping": mapping.device,
                        "mount": describe_mount(mountpoint),
                        "mkfs": " ".join(mkfs[:-1]),
                        "key": keys.describe(session.passphrase),
                    },
                )


@dataclass(frozen=True)
class Mapping:
    """A device opened through dm-crypt as a variant asked, its table checked."""

    name: str  # the mapping's name (mapping_name)
    device: str  # /dev/mapper/NAME
    table: str  # dmsetup's table line, the key in it: only table_without_key(table) is kept
    options: tuple[str, ...]  # the table's optional parameters (table_options)
    reloaded: tuple[str, ...]  # flags set by reloading the table, not by cryptsetup (reload_with)


@contextmanager
def opened(
    session: Session, spec: TargetSpec, base: Path, device: str, variant: Variant, size: int
) -> Iterator[Mapping]:
    """`device` (of `size` bytes) formatted as LUKS2 with `variant` and opened as a mapping
    the session holds, its table checked against what the variant asked: every target on
    LUKS is made so (the luks targets, zfs-on-luks). The password lives in a RAM file only
    until the key is in the kernel; the mapping is closed on the way out."""
    mapping = mapping_name(session, spec, base.name)
    secret = session.secret_file(f"luks-{spec.slug}-{base.name}", keys.new_password(session.passphrase))
    try:
        v = variant
        run_cmd(
            format_command(device, secret.path, v.key_bits, v.sector, v.cipher, v.integrity),
            timeout=120 + (size / WIPE_RATE if v.integrity else 0),
        )
        crypt = session.acquire(DmCrypt(mapping))
        # Flags this cryptsetup cannot set are set by reloading the table (reload_with).
        later = tuple(f for f in v.flags if f == HIGH_PRIORITY and not cryptsetup_takes(f))
        now = tuple(f for f in v.flags if f not in later)
        try:
            with signals_blocked():  # the mapping must not appear after its release
                run_cmd(
                    open_command(device, secret.path, mapping, now, v.journal, keyring=not later), timeout=120
                )
            session.release(secret)  # the key is in the kernel now
            if later:
                reload_with(mapping, later)
            table = run_cmd(["dmsetup", "table", mapping], timeout=30).stdout.decode()
            options = table_options(table)
            check_table(options, v)
            check_cipher(table_cipher(table), v)
            yield Mapping(mapping, f"/dev/mapper/{mapping}", table, options, later)
        finally:
            session.release(crypt)
    finally:
        session.release(secret)


def image_size(variant: Variant, data_bytes: int) -> int:
    """The image: ext4 for the data, the LUKS2 header and, with integrity, dm-integrity's tags and journal."""
    fs = fs_image_size("ext4", data_bytes)
    spare = fs // INTEGRITY_SHARE + INTEGRITY_SPARE if variant.integrity else 0
    return fs + LUKS2_HEADER + spare


def _integrity_details(mapping: str, variant: Variant) -> dict[str, str]:
    """With integrity: dm-integrity's mode as its table shows it (cryptsetup names that
    mapping NAME_dif), checked against the journal asked for."""
    if variant.integrity is None:
        return {}
    line = run_cmd(["dmsetup", "table", f"{mapping}_dif"], timeout=30).stdout.decode()
    mode = integrity_table_mode(line)
    check_integrity_mode(mode, variant)
    return {"integrity": integrity_detail(variant.integrity, mode), "dm_integrity_table": line.strip()}


def _how_set(later: tuple[str, ...]) -> str:
    """The target's `high_priority` detail: how the flag reached dm-crypt."""
    if HIGH_PRIORITY in later:
        return (
            "set by reloading the mapping's table (dmsetup reload): this cryptsetup has no "
            "--perf-high_priority, which cryptsetup 2.7 added"
        )
    return "set by cryptsetup open --perf-high_priority"


def _workqueues(flags: tuple[str, ...]) -> str:
    bypassed = [d for d, f in (("read", NO_READ_QUEUE), ("write", NO_WRITE_QUEUE)) if f in flags]
    if not bypassed:
        return (
            "kcryptd at high priority (--perf-high_priority)"
            if HIGH_PRIORITY in flags
            else "kcryptd (default)"
        )
    return " and ".join(bypassed) + " bypassed (--perf-no_*_workqueue)"


def luks_backends() -> list[LuksBackend]:
    return [LuksBackend(name) for name in VARIANTS]
