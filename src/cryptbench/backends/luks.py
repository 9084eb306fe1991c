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

import functools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

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
from cryptbench.machine import keys
from cryptbench.machine.interrupts import signals_blocked
from cryptbench.machine.resources import DmCrypt
from cryptbench.machine.session import Session
from cryptbench.machine.system import crypto_missing, kernel_module, run_cmd
from cryptbench.model.errors import ProvisionError, UnavailableError
from cryptbench.model.vocabulary import Property, Verdict

LUKS2_HEADER = 16 << 20  # bytes: cryptsetup's default LUKS2 header and keyslot area
SECTOR_SIZE = 4096  # bytes per encryption data unit, as fscrypt's
NO_READ_QUEUE, NO_WRITE_QUEUE = "no_read_workqueue", "no_write_workqueue"
SUBMIT_FROM_CRYPT_CPUS = "submit_from_crypt_cpus"
HIGH_PRIORITY = "high_priority"


AES_XTS = "aes-xts-plain64"
ADIANTUM = "xchacha12,aes-adiantum-plain64"
# cryptsetup's cipher spec -> (the kernel crypto algorithm, what a reader calls it,
# the kernel option that builds it, its module)
CIPHERS = {
    AES_XTS: ("xts(aes)", "AES-XTS", "CONFIG_CRYPTO_XTS", "xts"),
    ADIANTUM: ("adiantum(xchacha12,aes)", "Adiantum", "CONFIG_CRYPTO_ADIANTUM", "adiantum"),
}


# cryptsetup's --integrity -> (the kernel's algorithm, what a reader calls it, the
# kernel option that builds it, its module, its tag in bytes per sector)
INTEGRITY = {"hmac-sha256": ("hmac(sha256)", "HMAC-SHA256", "CONFIG_CRYPTO_HMAC", "hmac", 32)}
# dm-integrity's own space beside the data, with room to spare: the tags (32 bytes
# per 4096-byte sector, 0.8 %), the journal (the kernel's default, 1/128 of the
# device, 0.8 %) and a superblock and padding per interleaved area.
INTEGRITY_SHARE = 32  # at most 1/32 of the data (3.1 %) ...
INTEGRITY_SPARE = 8 << 20  # ... plus 8 MiB, bytes
WIPE_RATE = 5e6  # bytes/s: the slowest wipe we wait for (a TCG guest's), before giving up


class OptionKind(StrEnum):
    """What a variant's one option changes, each kind with the usual reason it helps or
    hurts (the diagnosis's sentences, analysis/option_effects.py)."""

    WORKQUEUES = "workqueues"  # no_read_workqueue / no_write_workqueue
    SUBMIT = "submit"  # submit_from_crypt_cpus
    PRIORITY = "priority"  # high_priority
    SECTOR = "sector"  # the encryption sector size
    INTEGRITY = "integrity"  # an authentication tag per sector (dm-integrity), journaled
    INTEGRITY_DIRECT = "integrity-direct"  # the same without dm-integrity's journal
    OTHER = "other"

    def why(self, faster: bool) -> str:
        """The usual reason for an option of this kind to help (faster) or hurt."""
        return _WHY[(self, faster)]


_WHY = {
    (OptionKind.WORKQUEUES, True): (
        "on this kernel dm-crypt's workqueues cost more than they give: each request waits for a "
        "kcryptd thread instead of being encrypted where it was issued"
    ),
    (OptionKind.WORKQUEUES, False): (
        "the workqueues pay for themselves here: they move encryption off the issuing CPU and spread "
        "it over the others"
    ),
    (OptionKind.SUBMIT, True): (
        "submitting writes from the CPUs that encrypted them saves dm-crypt's sorting thread"
    ),
    (OptionKind.SUBMIT, False): (
        "dm-crypt's sorting of encrypted writes before it submits them (the default) helps this device"
    ),
    (OptionKind.PRIORITY, True): (
        "dm-crypt's workqueues at high priority, and its writer thread at nice -20, were run "
        "ahead of the other work on this machine instead of waiting behind it"
    ),
    (OptionKind.PRIORITY, False): (
        "at high priority dm-crypt's threads took CPU time from the threads that issue the I/O, "
        "which the default shares more evenly"
    ),
    (OptionKind.SECTOR, True): (
        "this workload's requests do not fill 4096-byte sectors, which the larger sector must widen"
    ),
    (OptionKind.SECTOR, False): (
        "512-byte sectors take eight cipher calls and IVs for every 4 KiB that 4096-byte sectors "
        "encrypt in one"
    ),
    (OptionKind.INTEGRITY, True): (
        "dm-integrity's journal gathered this workload's small writes into larger ones, which "
        "more than paid for the tags"
    ),
    (OptionKind.INTEGRITY, False): (
        "every sector also gets an HMAC-SHA256 tag, computed and stored by dm-integrity beside it, "
        "and every write goes to dm-integrity's journal first, then in place"
    ),
    (OptionKind.INTEGRITY_DIRECT, True): (
        "dm-integrity's buffering of tags absorbed this workload; the tags themselves cost nothing "
        "measurable here"
    ),
    (OptionKind.INTEGRITY_DIRECT, False): (
        "every sector also gets an HMAC-SHA256 tag, computed and stored by dm-integrity beside it "
        "(without a journal: data and tag are written in place, and a crash between them leaves the "
        "sector unreadable)"
    ),
    (OptionKind.OTHER, True): "the option helps here",
    (OptionKind.OTHER, False): "the option costs here",
}


@dataclass(frozen=True)
class Variant:
    key_bits: int  # 256 for AES-128-XTS and Adiantum, 512 for AES-256-XTS
    sector: int  # bytes per encryption data unit (--sector-size)
    flags: tuple[str, ...] = ()  # dm-crypt performance flags, as the table names them
    label: str = ""  # what sets it apart, for the summary
    # the target it differs from in that one choice; a run holding both compares them
    variant_of: str | None = None
    cipher: str = AES_XTS  # cryptsetup's --cipher
    integrity: str | None = None  # cryptsetup's --integrity (a key of INTEGRITY), or None
    journal: bool = True  # with integrity: dm-integrity's journal (False: --integrity-no-journal)
    option: OptionKind | None = None  # for a variant: what kind of option it changes

    @property
    def algorithm(self) -> str:
        """The kernel crypto algorithm dm-crypt asks for."""
        return CIPHERS[self.cipher][0]

    @property
    def cipher_name(self) -> str:
        """AES-128-XTS, AES-256-XTS or Adiantum."""
        name = CIPHERS[self.cipher][1]
        return f"AES-{self.key_bits // 2}-XTS" if name == "AES-XTS" else name

    @property
    def table_options(self) -> tuple[str, ...]:
        """What `dmsetup table` must show for it: its flags, its tags (the AEAD's, in
        bytes per sector) and a sector size other than 512."""
        sector = (f"sector_size:{self.sector}",) if self.sector != 512 else ()
        tags = (f"integrity:{INTEGRITY[self.integrity][4]}:aead",) if self.integrity else ()
        return (*self.flags, *tags, *sector)

    @property
    def table_cipher(self) -> str:
        """The cipher dm-crypt's table shows: cryptsetup's spec, or with integrity the
        kernel's AEAD that pairs the cipher with the tag's MAC."""
        if self.integrity is None:
            return self.cipher
        mode, iv = self.cipher.split("-", 1)[1].split("-", 1)  # aes-xts-plain64 -> xts, plain64
        return f"capi:authenc({INTEGRITY[self.integrity][0]},{mode}({self.cipher.split('-', 1)[0]}))-{iv}"

    @property
    def integrity_mode(self) -> str | None:
        """dm-integrity's mode as its table shows it: J journaled, D direct; None without it."""
        if self.integrity is None:
            return None
        return "J" if self.journal else "D"


PLAIN_LUKS = "luks-aes256"  # what each option variant is held to: LUKS2 as cryptsetup makes it
VARIANTS = {
    "luks-aes128": Variant(256, SECTOR_SIZE),
    PLAIN_LUKS: Variant(512, SECTOR_SIZE),
    "luks-aes256-noqueue": Variant(
        512,
        SECTOR_SIZE,
        (NO_READ_QUEUE, NO_WRITE_QUEUE),
        "no dm-crypt workqueues",
        PLAIN_LUKS,
        option=OptionKind.WORKQUEUES,
    ),
    "luks-aes256-noreadq": Variant(
        512, SECTOR_SIZE, (NO_READ_QUEUE,), "no read workqueue", PLAIN_LUKS, option=OptionKind.WORKQUEUES
    ),
    "luks-aes256-nowriteq": Variant(
        512, SECTOR_SIZE, (NO_WRITE_QUEUE,), "no write workqueue", PLAIN_LUKS, option=OptionKind.WORKQUEUES
    ),
    "luks-aes256-submitcpus": Variant(
        512,
        SECTOR_SIZE,
        (SUBMIT_FROM_CRYPT_CPUS,),
        "writes submitted from the crypt CPUs",
        PLAIN_LUKS,
        option=OptionKind.SUBMIT,
    ),
    "luks-aes256-highpri": Variant(
        512,
        SECTOR_SIZE,
        (HIGH_PRIORITY,),
        "high-priority workqueues",
        PLAIN_LUKS,
        option=OptionKind.PRIORITY,
    ),
    "luks-aes256-sector512": Variant(512, 512, (), "512-byte sectors", PLAIN_LUKS, option=OptionKind.SECTOR),
    # Authenticated encryption: the same cipher, each sector with an HMAC-SHA256 tag.
    "luks-aes256-hmac": Variant(
        512,
        SECTOR_SIZE,
        label="HMAC-SHA256 integrity, journaled",
        variant_of=PLAIN_LUKS,
        integrity="hmac-sha256",
        option=OptionKind.INTEGRITY,
    ),
    "luks-aes256-hmac-nojournal": Variant(
        512,
        SECTOR_SIZE,
        label="HMAC-SHA256 integrity, no journal",
        variant_of=PLAIN_LUKS,
        integrity="hmac-sha256",
        journal=False,
        option=OptionKind.INTEGRITY_DIRECT,
    ),
    # For CPUs without AES instructions: another cipher, not an option of luks-aes256's.
    "luks-adiantum": Variant(256, SECTOR_SIZE, cipher=ADIANTUM),
}


def device_mapper_missing() -> str | None:
    """Why dm-crypt cannot work here, or None."""
    # /proc/misc lists the drivers the kernel has; /dev/mapper/control alone proves none:
    # libdevmapper makes that node itself when it is missing (any `dmsetup` run leaves one
    # behind on a kernel without the driver). The node stands in only where /proc/misc
    # cannot be read.
    try:
        with open("/proc/misc") as f:
            driver = "device-mapper" in f.read().split()
        seen = "not in /proc/misc"
    except OSError:
        driver, seen = os.path.exists("/dev/mapper/control"), "no /dev/mapper/control"
    if not driver:
        if kernel_module("dm-mod") == "module":
            return f"the device-mapper is not loaded ({seen}): run `modprobe dm_mod`"
        return f"the kernel has no device-mapper ({seen}), which dm-crypt needs"
    if kernel_module("dm-crypt") is None and not _dm_target("crypt"):
        return "the kernel has no dm-crypt (neither loaded nor a dm-crypt module under /lib/modules)"
    return None


def integrity_missing(integrity: str) -> str | None:
    """Why LUKS2 with `--integrity integrity` cannot work here (dm-crypt aside), or None."""
    if kernel_module("dm-integrity") is None and not _dm_target("integrity"):
        return "the kernel has no dm-integrity (neither loaded nor a module), which LUKS2 --integrity needs"
    algorithm, _name, config, module, _tag = INTEGRITY[integrity]
    return crypto_missing(algorithm, config, module) or crypto_missing(
        "authenc", "CONFIG_CRYPTO_AUTHENC", "authenc"
    )


def _dm_target(name: str) -> bool:
    """Whether the device-mapper already has target `name` (built in or loaded)."""
    return name in dm_targets()


def dm_target_version(name: str) -> tuple[int, ...] | None:
    """The version of device-mapper target `name` (`dmsetup targets`: "crypt v1.24.0"),
    or None when it is not loaded yet, there is no device-mapper or the version is unreadable."""
    return dm_targets().get(name)


@functools.cache
def dm_targets() -> dict[str, tuple[int, ...] | None]:
    """`dmsetup targets`, read once per process: every LUKS target's probe asks, and a
    target loaded later (opening loads dm-crypt) only makes the answer more permissive,
    which opening checks against the mapping's table anyway."""
    try:
        out = run_cmd(["dmsetup", "targets"], timeout=10).stdout.decode()
    except ProvisionError:
        return {}
    return parse_targets(out)


def parse_targets(text: str) -> dict[str, tuple[int, ...] | None]:
    """Each target's version in `dmsetup targets` output ("crypt            v1.24.0");
    None where the version cannot be read."""
    found: dict[str, tuple[int, ...] | None] = {}
    for line in text.splitlines():
        fields = line.split()
        if not fields:
            continue
        digits = fields[1].lstrip("v").split(".") if len(fields) > 1 else []
        version = tuple(int(d) for d in digits if d.isdigit())
        found[fields[0]] = version if version and len(version) == len(digits) else None
    return found


NO_QUEUE_SINCE = (1, 22)  # dm-crypt's version with no_read_workqueue and no_write_workqueue (Linux 5.9)
HIGH_PRIORITY_SINCE = (1, 26)  # dm-crypt's version with high_priority ...
HIGH_PRIORITY_KERNEL = (6, 10)  # ... which came with Linux 6.10


def high_priority_missing(crypt: tuple[int, ...] | None, release: str) -> str | None:
    """Why dm-crypt cannot take high_priority here, or None: by dm-crypt's own version
    where it is loaded (`crypt`), else by the kernel's `release` (6.1.0-57-amd64)."""
    if crypt is not None:
        if crypt >= HIGH_PRIORITY_SINCE:
            return None
        shown = ".".join(map(str, crypt))
        return f"needs Linux 6.10: dm-crypt {shown} has no high_priority flag (dm-crypt 1.26 added it)"
    digits = release.split("-", 1)[0].split(".")[:2]
    kernel = tuple(int(d) for d in digits if d.isdigit())
    if len(kernel) == 2 and kernel < HIGH_PRIORITY_KERNEL:
        return f"needs Linux 6.10: this kernel is {release[:40]}, whose dm-crypt has no high_priority flag"
    return None


@functools.cache
def cryptsetup_takes(flag: str) -> bool:
    """Whether this cryptsetup takes `--perf-FLAG` (its --help lists every option it
    has): cryptsetup 2.7 added --perf-high_priority, and Debian 12 ships 2.6.1."""
    try:
        out = run_cmd(["cryptsetup", "--help"], timeout=30).stdout.decode(errors="replace")
    except ProvisionError:
        return False
    return f"--perf-{flag}" in out


def with_table_options(line: str, added: tuple[str, ...]) -> str:
    """A crypt mapping's table line with optional parameters `added` after its own, the
    count before them raised to match (the form `dmsetup reload` reads)."""
    parts = line.split()
    own = table_options(line)
    head = parts[:8]
    fresh = [o for o in added if o not in own]
    return " ".join([*head, str(len(own) + len(fresh)), *own, *fresh]) + "\n"


def format_command(
    device: str,
    keyfile: Path,
    key_bits: int,
    sector: int = SECTOR_SIZE,
    cipher: str = AES_XTS,
    integrity: str | None = None,
) -> list[str]:
    # With --integrity, cryptsetup adds the MAC's key to --key-size (512 + 256 bits for
    # AES-256-XTS with HMAC-SHA256) and wipes the device to initialise every tag.
    return [
        "cryptsetup",
        "luksFormat",
        "--batch-mode",
        "--type",
        "luks2",
        "--cipher",
        cipher,
        "--key-size",
        str(key_bits),
        "--sector-size",
        str(sector),
        *(("--integrity", integrity) if integrity else ()),
        "--pbkdf",
        "pbkdf2",
        "--pbkdf-force-iterations",
        "1000",
        "--key-file",
        str(keyfile),
        device,
    ]


def open_command(
    device: str,
    keyfile: Path,
    mapping: str,
    flags: tuple[str, ...] = (),
    journal: bool = True,
    keyring: bool = True,
) -> list[str]:
    # Without the keyring (`keyring` False) dm-crypt's table holds the key itself, which
    # a reload of the table (reload_with) needs: with it, the table names a key that
    # cryptsetup removes from the keyring once the mapping is up.
    return [
        "cryptsetup",
        "open",
        "--type",
        "luks2",
        "--key-file",
        str(keyfile),
        *(f"--perf-{f}" for f in flags),
        *(() if journal else ("--integrity-no-journal",)),
        *(() if keyring else ("--disable-keyring",)),
        device,
        mapping,
    ]


def reload_with(mapping: str, added: tuple[str, ...]) -> None:
    """Give an open crypt mapping optional parameters cryptsetup cannot set (high_priority
    before cryptsetup 2.7): its table, key included, read from dmsetup and written back
    through stdin with them, then the mapping resumed on it. The key passes through
    pipes only, never a command line."""
    line = run_cmd(["dmsetup", "table", "--showkeys", mapping], timeout=30).stdout.decode()
    run_cmd(["dmsetup", "reload", mapping], timeout=30, input_bytes=with_table_options(line, added).encode())
    run_cmd(["dmsetup", "resume", mapping], timeout=30)


def table_options(line: str) -> tuple[str, ...]:
    """The optional parameters of a crypt mapping's table line (`dmsetup table NAME`):
    start length crypt cipher key iv_offset device offset [count option...]. The key
    field is never read (dmsetup prints zeros in its place unless --showkeys)."""
    parts = line.split()
    if len(parts) < 8 or parts[2] != "crypt":
        raise ProvisionError(f"dmsetup table does not show a crypt mapping: {' '.join(parts[:4])[:80]}")
    if len(parts) == 8:
        return ()
    if not parts[8].isdigit():
        raise ProvisionError(f"dmsetup table: {parts[8][:20]!r} where the count of options belongs")
    return tuple(parts[9 : 9 + int(parts[8])])


def table_without_key(line: str) -> str:
    """A crypt mapping's table line as evidence a reader (or a test) parses on its own:
    as dm-crypt holds it, but its key field (zeros from dmsetup, or the keyring's
    reference) replaced by "-", so that nothing of a key's is ever stored."""
    parts = line.split()
    return " ".join([*parts[:4], "-", *parts[5:]]) if len(parts) > 4 else " ".join(parts)


def table_cipher(line: str) -> str:
    """The cipher field of a crypt mapping's table line, as dm-crypt holds it."""
    parts = line.split()
    return parts[3] if len(parts) > 3 and parts[2] == "crypt" else "?"


def check_cipher(cipher: str, variant: Variant) -> None:
    """The mapping must run the cipher it was formatted with (dm-crypt shows cryptsetup's
    spec, or with integrity the kernel's AEAD)."""
    if cipher != variant.table_cipher:
        raise ProvisionError(f"dm-crypt's table shows cipher {cipher[:60]!r}, not {variant.table_cipher}")


def integrity_table_mode(line: str) -> str:
    """dm-integrity's mode in its mapping's table line (`dmsetup table NAME_dif`):
    start length integrity device reserved tag_size mode ..."""
    parts = line.split()
    if len(parts) < 7 or parts[2] != "integrity":
        raise ProvisionError(f"dmsetup table does not show an integrity mapping: {' '.join(parts[:4])[:80]}")
    return parts[6]


def check_integrity_mode(mode: str, variant: Variant) -> None:
    """A journal asked for, or declined, must be what dm-integrity runs."""
    if mode != variant.integrity_mode:
        raise ProvisionError(f"dm-integrity runs in mode {mode[:8]!r}, not {variant.integrity_mode}")


def check_table(options: tuple[str, ...], variant: Variant) -> None:
    """The mapping must have every option asked for: a kernel that dropped one would
    be measured under a name that says otherwise."""
    missing = [o for o in variant.table_options if o not in options]
    if missing:
        raise ProvisionError(
            f"dm-crypt did not take {', '.join(missing)} "
            f"(its table shows: {' '.join(options) or 'no options'}); "
            "the kernel's dm-crypt may be too old for it (no_*_workqueue needs dm-crypt 1.22, Linux 5.9; "
            "high_priority 1.26, Linux 6.10)"
        )


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


def integrity_detail(integrity: str, mode: str) -> str:
    """The target's `integrity` detail: the tag and dm-integrity's mode, in words."""
    journal = "journaled (J)" if mode == "J" else "no journal (D: data and tags written in place)"
    return f"{INTEGRITY[integrity][1]} tags via dm-integrity, {journal}"


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
