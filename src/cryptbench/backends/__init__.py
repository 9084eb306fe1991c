"""The explicit registry of backends: name -> implementation. No discovery magic."""

from __future__ import annotations

from collections.abc import Iterable

from cryptbench.backends.base import Availability, Backend, DirectIO, Helper, Target, TargetSpec
from cryptbench.backends.cryfs import CryfsBackend
from cryptbench.backends.ecryptfs import EcryptfsBackend
from cryptbench.backends.encfs import EncfsBackend
from cryptbench.backends.ext4loop import Ext4LoopBackend
from cryptbench.backends.fscrypt import ADIANTUM_POLICY, HCTR2_POLICY, FscryptBackend
from cryptbench.backends.gocryptfs import GocryptfsBackend
from cryptbench.backends.images import image_backends
from cryptbench.backends.known import known_answer_backends
from cryptbench.backends.luks import luks_backends
from cryptbench.backends.luks_twin import twin_backend
from cryptbench.backends.plain import PlainBackend
from cryptbench.backends.rclone import RcloneCryptBackend
from cryptbench.backends.securefs import SecurefsBackend
from cryptbench.backends.zfs import zfs_backends


class Registry(dict[str, Backend]):
    """The backends by name. It lists the built-in ones; it also resolves a LUKS twin's
    name (backends/luks_twin.py), which says the twin's whole make, so that a run's twin
    is found again by any later process that reads it from the store. Twins are never
    listed: `backends` and --backends' choices show the built-in ones."""

    def __missing__(self, name: str) -> Backend:
        twin = twin_backend(name)
        if twin is None:
            raise KeyError(name)
        return twin

    def __contains__(self, name: object) -> bool:
        return dict.__contains__(self, name) or (isinstance(name, str) and twin_backend(name) is not None)

    def get(self, name: str, default: Backend | None = None) -> Backend | None:  # type: ignore[override]
        try:
            return self[name]
        except KeyError:
            return default


REGISTRY: Registry = Registry(
    (b.name, b)
    for b in (
        PlainBackend(),
        Ext4LoopBackend(),
        FscryptBackend(),
        FscryptBackend("fscrypt-adiantum", ADIANTUM_POLICY),
        FscryptBackend("fscrypt-inline", inline=True, variant_of="fscrypt", option="in the block layer"),
        FscryptBackend("fscrypt-hctr2", HCTR2_POLICY, variant_of="fscrypt", option="names by AES-256-HCTR2"),
        GocryptfsBackend(),
        SecurefsBackend(),
        CryfsBackend(),
        EncfsBackend(),
        EcryptfsBackend(),
        RcloneCryptBackend(),
        *luks_backends(),
        *zfs_backends(),
        *image_backends(),
        *known_answer_backends(),
    )
)
# What a run measures when neither --backends nor the suite names any: one
# target per way of encrypting a directory or filesystem. The image matrix has
# its own suite (`--suite images`); LUKS joins wherever the kernel can run it.
DEFAULT = (
    *("plain", "ext4-loop", "fscrypt", "fscrypt-inline", "fscrypt-hctr2"),
    *("gocryptfs", "securefs", "cryfs", "encfs", "rclone-crypt", "luks-aes256"),
)

__all__ = ["DEFAULT", "REGISTRY", "Availability", "Backend", "DirectIO", "Helper", "Target", "TargetSpec"]


def helper_programs() -> frozenset[str]:
    """The programs the backends start with paths in a run directory as arguments
    (Backend.programs): what recovery after a SIGKILL looks for, with recovery.CORE_HELPERS."""
    return frozenset(p for b in REGISTRY.values() for p in b.programs)


def versions(names: Iterable[str]) -> dict[str, str]:
    """The version of each named backend's own program (Backend.version), where it runs one."""
    found = {}
    for name in dict.fromkeys(names):
        v = REGISTRY[name].version() if name in REGISTRY else None
        if v is not None:
            found[name] = v
    return found
