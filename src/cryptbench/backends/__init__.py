"""The explicit registry of backends: name -> implementation. No discovery magic."""

from __future__ import annotations

from cryptbench.backends.base import Availability, Backend, DirectIO, Helper, Target
from cryptbench.backends.ext4loop import Ext4LoopBackend
from cryptbench.backends.fscrypt import FscryptBackend
from cryptbench.backends.gocryptfs import GocryptfsBackend
from cryptbench.backends.plain import PlainBackend

REGISTRY: dict[str, Backend] = {
    b.name: b for b in (PlainBackend(), Ext4LoopBackend(), FscryptBackend(), GocryptfsBackend())
}

__all__ = ["REGISTRY", "Availability", "Backend", "DirectIO", "Helper", "Target"]
