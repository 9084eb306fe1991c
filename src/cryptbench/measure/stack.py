"""Reads the storage stack under a path (model/stack.py) from what the kernel shows: the
mount from /proc/self/mountinfo, a FUSE overlay's cipher directory from its source or its
daemon's arguments, an fscrypt policy by ioctl, a ZFS dataset by `zfs get`, every block
device from /sys/dev/block and /sys/block/*/slaves, a crypt mapping's cipher and flags
from `dmsetup table` (never --showkeys: dmsetup then prints zeros or the keyring's
reference where the key is), a loop device's file and the stack under that file, down
to the disks.

Nothing here writes, and nothing here fails for want of a tool or a right: what cannot
be read becomes a note of the stack, saying why, and the layer stays with what /sys
told (a crypt mapping's uuid says it is one without root).
"""

from __future__ import annotations

import configparser
import errno
import fcntl
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

from cryptbench.backends.dm_table import table_options
from cryptbench.backends.fscrypt import FS_IOC_GET_ENCRYPTION_POLICY_EX
from cryptbench.machine.system import MountInfo, is_root, mount_holding, mountinfo, run_cmd
from cryptbench.model.errors import CryptbenchError, ProvisionError, UsageError
from cryptbench.model.stack import Layer, LayerKind, Stack
from cryptbench.model.units import format_bytes

SYS = Path("/sys")
PROC = Path("/proc")
SECTOR = 512  # bytes: the unit of /sys/block/*/size and a partition's start

# FUSE overlays by their mount's subtype: whether they encrypt. rclone encrypts only
# through a crypt remote, which its mount does not show.
FUSE_ENCRYPTS: dict[str, bool | None] = {
    "gocryptfs": True,
    "cryfs": True,
    "securefs": True,
    "encfs": True,
    "rclone": None,
}
# fscrypt's modes (<linux/fscrypt.h>, FSCRYPT_MODE_*), as the kernel documentation names them
FSCRYPT_MODES = {
    1: "AES-256-XTS",
    4: "AES-256-CTS-CBC",
    5: "AES-128-CBC-ESSIV",
    6: "AES-128-CTS-CBC",
    7: "SM4-XTS",
    8: "SM4-CTS-CBC",
    9: "Adiantum",
    10: "AES-256-HCTR2",
}
FSCRYPT_FLAGS = {0x04: "DIRECT_KEY", 0x08: "IV_INO_LBLK_64", 0x10: "IV_INO_LBLK_32"}
# The performance flags a crypt table may hold (dm-crypt's optional parameters).
CRYPT_FLAGS = (
    "allow_discards",
    "same_cpu_crypt",
    "submit_from_crypt_cpus",
    "no_read_workqueue",
    "no_write_workqueue",
    "high_priority",
)
# Filesystems whose files are in memory or on another machine: no block device under them.
NO_DEVICE = {
    "tmpfs": "none: its files are in memory",
    "ramfs": "none: its files are in memory",
    "nfs": "none here: a network filesystem",
    "nfs4": "none here: a network filesystem",
    "cifs": "none here: a network filesystem",
    "smb3": "none here: a network filesystem",
    "9p": "none here: the host's directory (9p)",
    "virtiofs": "none here: the host's directory (virtiofs)",
}


def fscrypt_policy(path: Path) -> tuple[int, int, int, int] | None:
    """The fscrypt policy on `path` (version, contents mode, names mode, flags), or None
    where it has none or its filesystem takes no fscrypt. Read with the key absent too."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | (os.O_DIRECTORY if path.is_dir() else 0)
    try:
        fd = os.open(path, flags | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        buf = bytearray((24).to_bytes(8, "little") + bytes(24))
        fcntl.ioctl(fd, FS_IOC_GET_ENCRYPTION_POLICY_EX, buf, True)
    except OSError as e:
        if e.errno in (errno.ENODATA, errno.ENOTTY, errno.EOPNOTSUPP, errno.EINVAL, errno.ENOENT):
            return None
        raise
    finally:
        os.close(fd)
    return buf[8], buf[9], buf[10], buf[11]


def dmsetup_table(name: str) -> str:
    """`dmsetup table NAME`: a key field of zeros or the keyring's reference, never the key."""
    return run_cmd(["dmsetup", "table", name], timeout=30).stdout.decode(errors="replace")


def zfs_get(dataset: str) -> dict[str, str]:
    """The dataset's encryption properties (`zfs get`), as property -> value."""
    props = "encryption,keystatus,keyformat,encryptionroot"
    out = run_cmd(["zfs", "get", "-H", "-o", "property,value", props, dataset], timeout=30).stdout
    return dict(line.split("\t", 1) for line in out.decode(errors="replace").splitlines() if "\t" in line)


def zpool_vdevs(pool: str) -> list[str]:
    """The paths of a pool's leaf devices or files (`zpool list -vHP`)."""
    out = run_cmd(["zpool", "list", "-v", "-H", "-P", pool], timeout=30).stdout.decode(errors="replace")
    return [line.split("\t")[1] for line in out.splitlines() if line.startswith("\t/")]


def daemon_arguments(mountpoint: Path) -> list[list[str]]:
    """The arguments of every process whose command line names `mountpoint`: a FUSE
    daemon's, whose cipher directory stands before it. Only directories are taken from
    them, never stored as they are (an argument may be a password command)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        args = proc.info.get("cmdline") or []
        if str(mountpoint) in args:
            found.append(list(args))
    return found


@dataclass
class Reader:
    """Where the stack is read from: the kernel's own tables by default, a test's tree
    and recorded outputs otherwise."""

    sys: Path = SYS
    proc: Path = PROC
    table: Callable[[str], str] = dmsetup_table
    policy: Callable[[Path], tuple[int, int, int, int] | None] = fscrypt_policy
    zfs: Callable[[str], dict[str, str]] = zfs_get
    vdevs: Callable[[str], list[str]] = zpool_vdevs
    daemons: Callable[[Path], list[list[str]]] = daemon_arguments
    root: Callable[[], bool] = is_root

    def stack(self, path: Path) -> Stack:
        """The stack under `path`, which must exist."""
        try:
            path.stat()
        except FileNotFoundError:
            raise UsageError(f"{path}: no such file or directory") from None
        except PermissionError:
            raise UsageError(f"{path}: this user may not reach it (permission denied)") from None
        resolved = path.resolve()
        self._begin()
        layers = self._under_path(resolved, 0)
        return Stack(str(resolved), tuple(layers), tuple(dict.fromkeys(self.notes)))

    def device(self, number: str, path: str) -> Stack:
        """The stack under block device `number` (major:minor), its top the device itself,
        said as `path` (/dev/mapper/NAME): no mount is asked about."""
        self._begin()
        layers = self._block(number, 0)
        return Stack(path, tuple(layers), tuple(dict.fromkeys(self.notes)))

    def _begin(self) -> None:
        self.notes: list[str] = []  # what this reading could not read, and why
        self._mounts = mountinfo(self.proc)
        self._seen: set[str] = set()

    def _note(self, text: str) -> None:
        self.notes.append(text)

    def _under_path(self, path: Path, depth: int) -> list[Layer]:
        if f"path:{path}" in self._seen:
            return []
        self._seen.add(f"path:{path}")
        mount = mount_holding(path, self._mounts)
        if mount is None:
            self._note(f"no mount holds {path}")
            return []
        # fuseblk (ntfs-3g, exfat-fuse) is a filesystem on a block device, read as any other
        if mount.fstype == "fuse" or mount.fstype.startswith("fuse."):
            return self._fuse(mount, depth)
        if mount.fstype in ("ecryptfs", "overlay"):
            return self._stacked(mount, depth)
        layers = []
        policy = self.policy(path)
        if policy is not None:
            layers.append(_fscrypt_layer(policy, depth, mount))
            depth += 1
        if mount.fstype == "zfs":
            return [*layers, *self._zfs(mount, depth)]
        layers.append(_filesystem_layer(mount, depth))
        if mount.fstype in NO_DEVICE:
            return layers
        device = self._device_number(mount)
        if device is None:
            self._note(f"{mount.fstype} at {mount.mountpoint}: no block device found under it")
            return layers
        return [*layers, *self._block(device, depth + 1)]

    def _device_number(self, mount: MountInfo) -> str | None:
        if not mount.device.startswith("0:"):
            return mount.device
        # btrfs and others show an anonymous number; their source may name the device
        if mount.source.startswith("/dev/"):
            try:
                st = os.stat(mount.source)
            except OSError:
                return None
            if stat.S_ISBLK(st.st_mode):
                return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
        return None

    def _fuse(self, mount: MountInfo, depth: int) -> list[Layer]:
        subtype = mount.fstype.split(".", 1)[1] if "." in mount.fstype else mount.source
        encrypts = FUSE_ENCRYPTS.get(subtype, False)
        details = [("mountpoint", str(mount.mountpoint))]
        if subtype == "rclone":
            encrypts, cipher_dir, said = self._rclone(mount)
            details += said
        else:
            cipher_dir = self._cipher_dir(mount)
        if cipher_dir is not None:
            details.append(("cipher directory", str(cipher_dir)))
        layer = Layer(LayerKind.FUSE, subtype, encrypts, depth, tuple(details))
        if cipher_dir is None:
            self._note(
                f"{subtype} at {mount.mountpoint}: its backing directory was not found (neither "
                "its mount's source nor its daemon's arguments name one): the layers under it are unknown"
            )
            return [layer]
        return [layer, *self._under_path(cipher_dir, depth + 1)]

    def _cipher_dir(self, mount: MountInfo) -> Path | None:
        """A FUSE overlay's backing directory: the mount's source where it is one (gocryptfs,
        CryFS's cryfs@DIR), else the directory that stands before the mountpoint among its
        daemon's arguments (securefs, EncFS)."""

        def backing(candidate: str) -> Path | None:
            # a directory inside the mount itself is what the overlay shows, not its backing
            path = Path(candidate)
            if not candidate.startswith("/") or not path.is_dir():
                return None
            path = path.resolve()
            return None if path.is_relative_to(mount.mountpoint) else path

        found = backing(mount.source.removeprefix("cryfs@"))
        for args in [] if found else self.daemons(mount.mountpoint):
            i = args.index(str(mount.mountpoint))
            found = next((p for p in map(backing, reversed(args[1:i])) if p), None)
            if found:
                break
        return found

    def _rclone(self, mount: MountInfo) -> tuple[bool | None, Path | None, list[tuple[str, str]]]:
        """Whether an rclone mount's remote is a crypt remote, and the local directory it
        keeps its ciphertext in: the remote's `type` and `remote` in the config file its
        daemon names (--config). Nothing else of the file is read: it holds passwords."""
        remote = mount.source.split(":", 1)[0]
        for args in self.daemons(mount.mountpoint):
            config = _flag_value(args, "--config")
            if config is None:
                continue
            section = _rclone_section(Path(config), remote)
            if isinstance(section, str):
                return None, None, [("encrypts", f"unknown: its config file {config} {section}")]
            kind = section.get("type", "?")
            said = [("remote", f"{remote} (type {kind})")]
            if kind != "crypt":
                return False, None, said
            under = section.get("remote", "")
            local = Path(under) if under.startswith("/") and Path(under).is_dir() else None
            return True, local, said
        return (
            None,
            None,
            [("encrypts", "only through a crypt remote; its daemon names no config file to tell")],
        )

    def _stacked(self, mount: MountInfo, depth: int) -> list[Layer]:
        options = {k: v for k, _, v in (o.partition("=") for o in mount.super_options.split(",") if o)}
        if mount.fstype == "ecryptfs":
            lower = Path(mount.source)
            key = options.get("ecryptfs_key_bytes")
            details = [
                ("mountpoint", str(mount.mountpoint)),
                ("lower directory", str(lower)),
                ("cipher", options.get("ecryptfs_cipher", "?")),
                *([("key", f"{int(key) * 8}-bit")] if key and key.isdigit() else []),
            ]
            layer = Layer(LayerKind.STACKED, "ecryptfs", True, depth, tuple(details))
        else:
            lower = Path(options.get("upperdir", ""))
            layer = Layer(
                LayerKind.STACKED,
                "overlay",
                False,
                depth,
                (("mountpoint", str(mount.mountpoint)), ("upper directory", str(lower))),
            )
        # a directory inside the mount itself is what it shows, not what it is on
        if not lower.is_absolute() or not lower.exists() or lower.resolve().is_relative_to(mount.mountpoint):
            self._note(f"{mount.fstype} at {mount.mountpoint}: the directory under it is not reachable")
            return [layer]
        return [layer, *self._under_path(lower, depth + 1)]

    def _zfs(self, mount: MountInfo, depth: int) -> list[Layer]:
        dataset = mount.source
        try:
            props = self.zfs(dataset)
        except CryptbenchError as e:
            self._note(f"ZFS dataset {dataset}: {e}")
            props = {}
        enc = props.get("encryption")
        details = [("mountpoint", str(mount.mountpoint))]
        details += [(k, v) for k, v in props.items() if v not in ("-", "")]
        layer = Layer(LayerKind.ZFS, dataset, None if enc is None else enc != "off", depth, tuple(details))
        layers = [layer]
        pool = dataset.split("/", 1)[0]
        try:
            vdevs = self.vdevs(pool)
        except CryptbenchError as e:
            self._note(f"ZFS pool {pool}: {e}")
            return layers
        for vdev in vdevs:
            p = Path(vdev)
            try:
                st = os.stat(p)
            except OSError:
                self._note(f"ZFS pool {pool}: its device {vdev} cannot be read")
                continue
            if stat.S_ISBLK(st.st_mode):
                layers += self._block(f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}", depth + 1)
            else:
                layers += self._under_path(p.resolve(), depth + 1)
        return layers

    def _block(self, number: str, depth: int) -> list[Layer]:
        node = self.sys / "dev" / "block" / number
        if not node.exists():
            self._note(f"block device {number}: not in {self.sys}/dev/block")
            return []
        real = node.resolve()
        if f"block:{real}" in self._seen:
            return []
        self._seen.add(f"block:{real}")
        name = real.name
        if (real / "partition").exists():
            start = _read(real / "start")
            details = [("number", _read(real / "partition") or "?")]
            if start and start.isdigit():
                details.append(("starts at", f"byte {int(start) * SECTOR:,}"))
            details += _size(real)
            layer = Layer(LayerKind.PARTITION, name, False, depth, tuple(details))
            return [layer, self._disk(real.parent, depth + 1)]
        if (real / "dm").is_dir():
            return self._mapping(real, depth)
        if (real / "loop").is_dir():
            return self._loop(real, depth)
        if (real / "md").is_dir():
            level = _read(real / "md" / "level") or "?"
            layer = Layer(LayerKind.MD, name, False, depth, (("level", level), *_size(real)))
            return [layer, *self._slaves(real, depth + 1)]
        return [self._disk(real, depth)]

    def _slaves(self, real: Path, depth: int) -> list[Layer]:
        layers: list[Layer] = []
        slaves = real / "slaves"
        for slave in sorted(slaves.iterdir()) if slaves.is_dir() else []:
            number = _read(slave / "dev")
            if number:
                layers += self._block(number, depth)
        return layers

    def _mapping(self, real: Path, depth: int) -> list[Layer]:
        dm_name = _read(real / "dm" / "name") or real.name
        uuid = _read(real / "dm" / "uuid") or ""
        label = f"{real.name} ({dm_name})"
        lines = self._table(dm_name, uuid)
        targets = [line.split()[2] for line in lines if len(line.split()) > 2]
        crypt = "crypt" in targets or (not lines and uuid.startswith("CRYPT-"))
        if crypt:
            line = next((x for x in lines if x.split()[2:3] == ["crypt"]), None)
            layer = _crypt_layer(label, uuid, line, depth)
        else:
            what = "LVM logical volume" if uuid.startswith("LVM-") else "mapping"
            details = [("is", what), ("targets", ", ".join(dict.fromkeys(targets)) or "?"), *_size(real)]
            layer = Layer(LayerKind.DEVICE_MAPPER, label, False, depth, tuple(details))
        return [layer, *self._slaves(real, depth + 1)]

    def _table(self, dm_name: str, uuid: str) -> list[str]:
        if not self.root():
            self._note(f"{dm_name}: its table needs root (dmsetup table); its cipher and flags are not shown")
            return []
        try:
            return [line for line in self.table(dm_name).splitlines() if line.strip()]
        except CryptbenchError as e:
            self._note(f"{dm_name}: {e}")
            return []

    def _loop(self, real: Path, depth: int) -> list[Layer]:
        backing = _read(real / "loop" / "backing_file") or ""
        details = [("file", backing or "?")]
        offset = _read(real / "loop" / "offset")
        if offset and offset != "0":
            details.append(("offset", f"byte {int(offset):,}"))
        if _read(real / "loop" / "dio") == "1":
            details.append(("direct I/O", "yes"))
        details += _size(real)
        layer = Layer(LayerKind.LOOP, real.name, False, depth, tuple(details))
        file = Path(backing.removesuffix(" (deleted)"))
        if not backing or not file.exists():
            missing = backing or "?"
            self._note(f"{real.name}: its file {missing} cannot be found: the layers under it are unknown")
            return [layer]
        return [layer, *self._under_path(file.resolve(), depth + 1)]

    def _disk(self, real: Path, depth: int) -> Layer:
        details: list[tuple[str, str]] = []
        queue = real / "queue"
        model = _read(real / "device" / "model")
        if model:  # a vendor beside it (ATA, SCSI); virtio's vendor is a PCI number, and no model
            vendor = _read(real / "device" / "vendor")
            model = f"{vendor} {model}" if vendor and not vendor.startswith("0x") else model
            details.append(("model", model))
        driver = real / "device" / "driver"
        if not model and driver.exists():
            details.append(("driver", driver.resolve().name))
        rotational = _read(queue / "rotational")
        if rotational is not None:
            details.append(("rotational", "yes" if rotational == "1" else "no"))
        details += _size(real)
        scheduler = _read(queue / "scheduler")
        if scheduler:
            chosen = next((w[1:-1] for w in scheduler.split() if w.startswith("[")), scheduler)
            details.append(("scheduler", chosen))
        for label, name, unit in (
            ("logical block", "logical_block_size", " bytes"),
            ("physical block", "physical_block_size", " bytes"),
            ("queue depth", "nr_requests", ""),
            ("read-ahead", "read_ahead_kb", " KiB"),
            ("largest request", "max_sectors_kb", " KiB"),
            ("write cache", "write_cache", ""),
        ):
            value = _read(queue / name)
            if value:
                details.append((label, f"{value}{unit}"))
        modes = queue / "crypto" / "modes"
        if modes.is_dir():  # blk-crypto: the device encrypts inline (fscrypt's inlinecrypt)
            details.append(("inline encryption", ", ".join(sorted(m.name for m in modes.iterdir())) or "yes"))
        return Layer(LayerKind.DISK, real.name, False, depth, tuple(details))


def _flag_value(args: list[str], flag: str) -> str | None:
    """The value of `flag` among a command's arguments: `--flag VALUE` or `--flag=VALUE`."""
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(f"{flag}="):
            return arg.split("=", 1)[1]
    return None


def _rclone_section(config: Path, remote: str) -> dict[str, str] | str:
    """The `type` and `remote` keys of one remote's section of an rclone config file, or
    in a few words why they cannot be read."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(config.read_text())
    except FileNotFoundError:
        return "is gone"
    except (OSError, UnicodeDecodeError, configparser.Error):
        return "cannot be read (an encrypted config?)"
    if not parser.has_section(remote):
        return f"has no remote {remote}"
    return {k: parser.get(remote, k) for k in ("type", "remote") if parser.has_option(remote, k)}


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _size(real: Path) -> list[tuple[str, str]]:
    sectors = _read(real / "size")
    return [("size", format_bytes(int(sectors) * SECTOR))] if sectors and sectors.isdigit() else []


def _filesystem_layer(mount: MountInfo, depth: int) -> Layer:
    details = [("mountpoint", str(mount.mountpoint)), ("source", mount.source), ("options", mount.options)]
    if mount.root != "/":
        details.append(("directory mounted", mount.root))
    if mount.fstype in NO_DEVICE:
        details.append(("device", NO_DEVICE[mount.fstype]))
    return Layer(LayerKind.FILESYSTEM, mount.fstype, False, depth, tuple(details))


def _fscrypt_layer(policy: tuple[int, int, int, int], depth: int, mount: MountInfo) -> Layer:
    version, contents, names, flags = policy
    pad = 4 << (flags & 0x03)
    said = [name for bit, name in FSCRYPT_FLAGS.items() if flags & bit]
    details = [
        ("policy", f"v{version}"),
        ("contents", FSCRYPT_MODES.get(contents, f"mode {contents}")),
        ("filenames", FSCRYPT_MODES.get(names, f"mode {names}")),
        ("filename padding", f"{pad} bytes"),
        ("flags", ", ".join(said) or "none"),
    ]
    if "inlinecrypt" in mount.options.split(","):
        details.append(("inline encryption", "asked (inlinecrypt)"))
    return Layer(LayerKind.FSCRYPT, "fscrypt", True, depth, tuple(details))


def _crypt_layer(label: str, uuid: str, line: str | None, depth: int) -> Layer:
    """A crypt mapping from its table line (start length crypt cipher key iv_offset device
    offset [count option…]): the key field gives its size, never itself."""
    details: list[tuple[str, str]] = []
    kind = uuid.split("-")[1] if uuid.startswith("CRYPT-") and uuid.count("-") >= 2 else None
    if kind:
        details.append(("format", kind))  # LUKS1, LUKS2, PLAIN, TCRYPT, BITLK
    encrypted: bool | None = True
    if line is not None:
        parts = line.split()
        cipher, key = parts[3], parts[4] if len(parts) > 4 else ""
        details.append(("cipher", cipher))
        bits = _key_bits(key)
        if bits:
            details.append(("key", f"{bits}-bit key"))
        details.append(("key held", "in the kernel keyring" if key.startswith(":") else "in the table"))
        offset = parts[7] if len(parts) > 7 else ""
        if offset.isdigit():
            details.append(("data starts at", f"byte {int(offset) * SECTOR:,} of its device"))
        options = _table_options(line)
        sector = next((o.split(":", 1)[1] for o in options if o.startswith("sector_size:")), "512")
        details.append(("sector size", f"{sector} bytes"))
        details.append(("flags", ", ".join(o for o in options if o in CRYPT_FLAGS) or "none"))
        integrity = next((o.split(":", 2) for o in options if o.startswith("integrity:")), None)
        if integrity:
            how = integrity[2] if len(integrity) > 2 else "?"
            details.append(("integrity", f"{how}, {integrity[1]}-byte tags"))
        if cipher.startswith("cipher_null"):
            encrypted = False  # a crypt mapping that copies: cryptsetup's LUKS2 with no cipher
    return Layer(LayerKind.DM_CRYPT, label, encrypted, depth, tuple(details))


def _table_options(line: str) -> tuple[str, ...]:
    """The table's optional parameters as backends/luks.py reads them; none where the line
    is cut short or has no count where one belongs (read as far as it goes, not refused)."""
    try:
        return table_options(line)
    except ProvisionError:
        return ()


def _key_bits(field: str) -> int | None:
    """A key field's size in bits: `:BYTES:TYPE:DESCRIPTION` (the keyring), or hex digits
    (zeros from dmsetup without --showkeys), four bits each; "-" where there is none."""
    if field.startswith(":"):
        size = field.split(":")[1]
        return int(size) * 8 if size.isdigit() else None
    return len(field) * 4 if field and all(c in "0123456789abcdefABCDEF" for c in field) else None


def stack_of(path: Path) -> Stack:
    """The stack under `path` on this machine."""
    return Reader().stack(path)
