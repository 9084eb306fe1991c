"""A user's own dm-crypt volume, as `run --existing` reads it: the mapping (plaintext),
the device under it (ciphertext) and where on that device the data starts, so that one
offset read through each is the same sectors, decrypted and not. Found from the path the
user gives (a block device, or any path on a filesystem above a crypt mapping) through
the stack (measure/stack.py), and checked before anything is read: every refusal is a
UsageError in one line, and nothing is opened for writing, here or later."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from cryptbench.backends.dm_table import table_options
from cryptbench.machine.system import is_root
from cryptbench.measure.fuse_volume import FuseVolume, fuse_volume
from cryptbench.measure.stack import SECTOR, Reader
from cryptbench.model.errors import CryptbenchError, ProvisionError, UsageError
from cryptbench.model.stack import Layer, LayerKind, Stack

DEV = Path("/dev")


@dataclass(frozen=True)
class CryptVolume:
    """A crypt mapping and the device its ciphertext is on."""

    mapping: str  # device-mapper's name for it ("luks-home"), as /dev/mapper shows it
    mapping_node: Path  # the mapping's block device (/dev/dm-0): the plaintext
    device: str  # the kernel's name of the device under it ("nvme0n1p3", "loop0")
    device_node: Path  # that device's block device (/dev/nvme0n1p3): the ciphertext
    data_offset: int  # bytes: where on `device` the mapping's sector 0 is
    size: int  # bytes of the mapping
    sector: int  # bytes per encryption sector (the table's sector_size, else 512)
    device_block: int  # bytes: the device's logical block, the least a direct read may align to
    layer: Layer  # the crypt layer as the stack reads it (cipher, key size, flags; never the key)
    stack: Stack  # every layer under the mapping, the mapping first
    options: tuple[str, ...] = ()  # the table's optional parameters (flags, sector_size:N, …; no key)

    def to_json(self) -> dict[str, object]:
        """What a run stores of it: names, sizes and offsets, never a file on the volume."""
        return {
            "mapping": self.mapping,
            "mapping_node": str(self.mapping_node),
            "device": self.device,
            "device_node": str(self.device_node),
            "data_offset": self.data_offset,
            "size": self.size,
            "sector": self.sector,
            "device_block": self.device_block,
            "stack": self.stack.to_json(),
        }


def existing_volume(where: Path, reader: Reader | None = None) -> CryptVolume | FuseVolume:
    """What `run --existing PATH` reads: the FUSE overlay PATH is on where the topmost layer
    that encrypts it is one (its files, against their ciphertext), else the dm-crypt volume
    under it (its mapping, against its device)."""
    reader = reader or Reader()
    try:
        st = os.stat(where)
    except OSError:
        return crypt_volume(where, reader)  # which says why, in one line
    if not stat.S_ISBLK(st.st_mode):
        stack = reader.stack(where)
        top = stack.encrypting[0] if stack.encrypting else None
        if top is not None and top.kind == LayerKind.FUSE:
            return fuse_volume(where, stack)
        return crypt_volume(where, reader, stack=stack)
    return crypt_volume(where, reader)


def crypt_volume(
    where: Path,
    reader: Reader | None = None,
    dev: Path = DEV,
    root: bool | None = None,
    stack: Stack | None = None,
) -> CryptVolume:
    """The crypt volume `where` names: a mapping's block device, or a path whose stack has
    a crypt mapping (the topmost, where several are stacked). Refused, in one line each:
    a path that is not there or may not be reached, no crypt mapping under it, a mapping
    that is not crypt, a table of more than one line, and not being root (dmsetup table
    is root's). `stack`: the stack under `where` where it was read already."""
    reader = reader or Reader()
    try:
        st = os.stat(where)
    except FileNotFoundError:
        raise UsageError(f"--existing {where}: no such file or directory") from None
    except PermissionError:
        raise UsageError(f"--existing {where}: this user may not reach it (permission denied)") from None
    if not (is_root() if root is None else root):
        raise UsageError(
            f"--existing {where}: reading a dm-crypt volume needs root (its table, from dmsetup "
            "table, says where its data starts on the device under it)"
        )
    if stat.S_ISBLK(st.st_mode):
        number = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
        return volume_of(number, str(where), reader, dev)
    return volume_of(_crypt_number(where, reader, stack), None, reader, dev)


def _crypt_number(where: Path, reader: Reader, stack: Stack | None = None) -> str:
    """The device number of the topmost crypt mapping under a path on a filesystem."""
    stack = stack or reader.stack(where)
    crypts = [x for x in stack.layers if x.kind == LayerKind.DM_CRYPT]
    if not crypts:
        said = f"{where}: {stack.line()}"
        others = [x.name for x in stack.encrypting]
        if others:
            raise UsageError(
                f"--existing {said}: it is encrypted by {', '.join(others)}, not dm-crypt; "
                "--existing measures a dm-crypt (LUKS) volume"
            )
        raise UsageError(f"--existing {said}: no dm-crypt layer under it, so no encryption to measure")
    kernel_name = crypts[0].name.split()[0]  # "dm-0 (luks-home)"
    number = _read(reader.sys / "block" / kernel_name / "dev")
    if number is None:
        raise UsageError(f"--existing {where}: {kernel_name} is not in {reader.sys}/block")
    return number


def volume_of(number: str, said: str | None, reader: Reader, dev: Path = DEV) -> CryptVolume:
    """The crypt volume of block device `number` (major:minor); `said`: the path the user
    gave for it, None where it was found under a path."""
    node = reader.sys / "dev" / "block" / number
    real = node.resolve() if node.exists() else None
    what = said or f"device {number}"
    if real is None or not (real / "dm").is_dir():
        raise UsageError(
            f"--existing {what}: not a device-mapper mapping (a dm-crypt volume is opened as one)"
        )
    name = _read(real / "dm" / "name") or real.name
    try:
        lines = [line for line in reader.table(name).splitlines() if line.strip()]
    except CryptbenchError as e:
        raise UsageError(f"--existing {what}: {e}") from None
    kinds = [line.split()[2] for line in lines if len(line.split()) > 2]
    if kinds != ["crypt"]:
        shown = ", ".join(dict.fromkeys(kinds)) or "none"
        if "crypt" not in kinds:
            raise UsageError(
                f"--existing {what}: mapping {name} is not a crypt mapping (its targets: {shown})"
            )
        raise UsageError(
            f"--existing {what}: mapping {name}'s table has {len(lines)} lines ({shown}); "
            "only a mapping that is one crypt target is read"
        )
    parts = lines[0].split()
    if len(parts) < 8 or parts[0] != "0" or not parts[7].isdigit():
        raise UsageError(
            f"--existing {what}: mapping {name}'s crypt table cannot be read: {' '.join(parts[:3])}"
        )
    try:
        options = table_options(lines[0])
    except ProvisionError as e:
        raise UsageError(f"--existing {what}: {e}") from None
    sector = next((int(o.split(":", 1)[1]) for o in options if o.startswith("sector_size:")), SECTOR)
    under = _device_number(parts[6], reader)
    if under is None:
        raise UsageError(
            f"--existing {what}: the device under {name} ({parts[6][:40]}) is not in {reader.sys}"
        )
    below = (reader.sys / "dev" / "block" / under).resolve()
    stack = reader.device(number, said or f"/dev/mapper/{name}")
    layer = next((x for x in stack.layers if x.kind == LayerKind.DM_CRYPT), None)
    if layer is None:
        raise UsageError(f"--existing {what}: mapping {name} is not read as dm-crypt")
    if layer.encrypted is False:
        raise UsageError(f"--existing {what}: mapping {name} does not encrypt ({layer.detail('cipher')})")
    return CryptVolume(
        mapping=name,
        mapping_node=_node(dev, real.name, number, what),
        device=below.name,
        device_node=_node(dev, below.name, under, what),
        data_offset=int(parts[7]) * SECTOR,
        size=int(_read(real / "size") or 0) * SECTOR,
        sector=sector,
        device_block=int(_read(below / "queue" / "logical_block_size") or _parent_block(below)),
        layer=layer,
        stack=stack,
        options=options,
    )


def _parent_block(partition: Path) -> str:
    """A partition's logical block: its disk's (a partition has no queue of its own)."""
    return _read(partition.parent / "queue" / "logical_block_size") or str(SECTOR)


def _device_number(field: str, reader: Reader) -> str | None:
    """The table's device field (major:minor, as dmsetup prints it) checked against /sys."""
    if field.count(":") != 1 or not all(p.isdigit() for p in field.split(":")):
        return None
    return field if (reader.sys / "dev" / "block" / field).exists() else None


def _node(dev: Path, kernel_name: str, number: str, what: str) -> Path:
    """/dev/NAME, only where it is the block device `number`: a node that is something else
    (a stale file, a renamed device) is never opened."""
    node = dev / kernel_name
    try:
        st = os.stat(node)
    except OSError:
        raise UsageError(f"--existing {what}: {node} is missing") from None
    if not stat.S_ISBLK(st.st_mode) or f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}" != number:
        raise UsageError(f"--existing {what}: {node} is not block device {number}")
    return node


def check_readable(volume: CryptVolume) -> None:
    """Both devices opened read-only and closed again, before a run begins: a user who may
    not read them hears so in one line, before anything is stored."""
    for node in (volume.mapping_node, volume.device_node):
        try:
            fd = os.open(node, os.O_RDONLY | os.O_CLOEXEC)
        except PermissionError:
            raise UsageError(f"--existing: {node} cannot be read by this user (permission denied)") from None
        except OSError as e:
            raise UsageError(f"--existing: {node} cannot be read ({e.strerror})") from None
        os.close(fd)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None
