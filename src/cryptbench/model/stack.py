"""The storage stack under a path: every layer from what the path's files pass through
first (a FUSE overlay, an fscrypt policy) down to the disks that hold them, and which
of those layers encrypt. A run stores the stack under its scratch space with its
environment, because a target called plain is plain only where nothing under the
scratch space encrypts already; `cryptbench stack` prints it for any path.

The stack is a tree written top first: a layer's `depth` says how far below the top
it is, so that a mapping over two disks (md, LVM) lists both under it, each at the
next depth. Read by measure/stack.py; the words a reader sees are here, beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from cryptbench.model.json_types import JsonObject


class LayerKind(StrEnum):
    FUSE = "fuse"  # a filesystem in user space: gocryptfs, CryFS, securefs, EncFS, rclone
    STACKED = "stacked"  # a kernel filesystem over a directory: eCryptfs, overlayfs
    FSCRYPT = "fscrypt"  # an fscrypt policy on the path's directory
    FILESYSTEM = "filesystem"  # the mounted filesystem (ext4, tmpfs, virtiofs, …)
    ZFS = "zfs"  # a ZFS dataset: its encryption property
    DM_CRYPT = "dm-crypt"  # a device-mapper crypt mapping (LUKS, plain dm-crypt)
    DEVICE_MAPPER = "device-mapper"  # any other mapping: LVM's linear, dm-integrity, …
    MD = "md"  # software RAID
    LOOP = "loop"  # a loop device over a file (whose own stack follows it)
    PARTITION = "partition"
    DISK = "disk"  # a whole block device: what the device counters read


@dataclass(frozen=True)
class Layer:
    """One layer of a stack, as the kernel (or the overlay's daemon) shows it."""

    kind: LayerKind
    name: str  # what a reader calls it: "gocryptfs", "ext4", "dm-0 (root_crypt)", "vda"
    # True: it encrypts what passes through it; False: it does not; None: cannot be told here
    encrypted: bool | None
    depth: int = 0  # layers above it on its branch (0: the top)
    # label and value, in the order a reader wants them (cipher, key size, flags, …)
    details: tuple[tuple[str, str], ...] = ()

    def detail(self, label: str) -> str | None:
        return next((v for k, v in self.details if k == label), None)

    def short(self) -> str:
        """The layer in a few words: "dm-crypt (aes-xts-plain64, 512-bit key)", "ext4"."""
        if self.kind == LayerKind.DM_CRYPT:
            said = [v for v in (self.detail("cipher"), self.detail("key")) if v]
            return f"dm-crypt ({', '.join(said)})" if said else "dm-crypt"
        if self.kind == LayerKind.FSCRYPT:
            contents = self.detail("contents")
            return f"fscrypt ({contents})" if contents else "fscrypt"
        if self.kind == LayerKind.ZFS:
            enc = self.detail("encryption")
            return f"ZFS dataset {self.name} (encryption {enc})" if enc else f"ZFS dataset {self.name}"
        if self.kind == LayerKind.DEVICE_MAPPER:  # dm-N says less than loopN and mdN do
            return f"{self.kind} {self.name}"
        return self.name

    def to_json(self) -> JsonObject:
        return {
            "kind": str(self.kind),
            "name": self.name,
            "encrypted": self.encrypted,
            "depth": self.depth,
            "details": {k: v for k, v in self.details},
        }

    @classmethod
    def from_json(cls, data: JsonObject) -> Layer:
        details = data.get("details") or {}
        encrypted = data.get("encrypted")
        return cls(
            LayerKind(str(data["kind"])),
            str(data["name"]),
            None if encrypted is None else bool(encrypted),
            int(data.get("depth") or 0),
            tuple((str(k), str(v)) for k, v in details.items()),
        )


@dataclass(frozen=True)
class Stack:
    """The layers under one path, top first, and what could not be read of them."""

    path: str  # the path asked about, resolved
    layers: tuple[Layer, ...]
    # what was not read, and why ("dmsetup is not installed: dm-1's table is unknown")
    notes: tuple[str, ...] = ()

    @property
    def encrypting(self) -> tuple[Layer, ...]:
        """The layers that encrypt, top first."""
        return tuple(layer for layer in self.layers if layer.encrypted)

    @property
    def disks(self) -> tuple[str, ...]:
        """The whole block devices at the bottom (vda, nvme0n1), each once: whose
        counters say what the storage itself read and wrote."""
        seen: list[str] = []
        for layer in self.layers:
            if layer.kind == LayerKind.DISK and layer.name not in seen:
                seen.append(layer.name)
        return tuple(seen)

    def line(self) -> str:
        """The stack in one line, top to bottom: its first branch, and how many others."""
        if not self.layers:
            return "no layer could be read"
        # a layer no deeper than the one before it starts another branch (md, LVM)
        starts = [i for i in range(1, len(self.layers)) if self.layers[i].depth <= self.layers[i - 1].depth]
        first = self.layers[: starts[0]] if starts else self.layers
        text = " on ".join(layer.short() for layer in first)
        if starts:
            text += f" (and {len(starts)} more branch{'es' if len(starts) > 1 else ''})"
        return text

    def encrypted_sentence(self, what: str = "scratch space") -> str | None:
        """Said first wherever a run's plain is not plain: which layer under the scratch
        space already encrypts it, and what its figures then mean."""
        layers = self.encrypting
        if not layers:
            return None
        named = " and ".join(layer.short() for layer in layers)
        return (
            f"your {what} is on {named}: plain here is encrypted; "
            "each figure is the cost of adding a layer to it"
        )

    def undecided(self) -> tuple[Layer, ...]:
        """Layers whose encryption cannot be told here (rclone's remote, say)."""
        return tuple(layer for layer in self.layers if layer.encrypted is None)

    def to_json(self) -> JsonObject:
        return {
            "path": self.path,
            "layers": [layer.to_json() for layer in self.layers],
            "notes": list(self.notes),
        }

    @classmethod
    def from_json(cls, data: JsonObject) -> Stack:
        return cls(
            str(data.get("path") or ""),
            tuple(Layer.from_json(x) for x in data.get("layers") or ()),
            tuple(str(n) for n in data.get("notes") or ()),
        )
