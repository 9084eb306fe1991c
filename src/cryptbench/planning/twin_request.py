"""The request of `run --existing /dev/mapper/NAME --ram`: writes, which a user's volume
is never given, measured on its twin instead (backends/luks_twin.py): LUKS2 with the
volume's cipher, key size, sector size and performance flags, made in scratch space and
on RAM, each against ext4 on the same medium. On RAM the device's cost is gone, so what
is left is the cipher's and dm-crypt's; beside the scratch-space pair it says where the
volume's setup costs writes. A normal run of the twin: every workload of the suite, its
writes too; the volume itself is only read (its table, for the make)."""

from __future__ import annotations

import re
from dataclasses import replace

from cryptbench.backends.luks_twin import IGNORED, twin_name
from cryptbench.measure.volume import CryptVolume
from cryptbench.model.errors import UsageError
from cryptbench.planning.request import RunRequest

TWIN_SAID = "the twin of your volume"  # how the run's note of the twin begins (twin_said)
# what --existing VOLUME --ram cannot be asked with, and why, one line each
REFUSED = (
    ("backends", "--backends: --existing VOLUME --ram runs your volume's twin, not targets you name"),
    ("try_flags", "--try-flags reads your volume; --ram writes its twin: run them one at a time"),
    ("key_file", "--key-file goes with --try-flags; a twin is made with a key of its own"),
)


def twin_request(r: RunRequest, volume: CryptVolume) -> RunRequest:
    """The run of `volume`'s twin, in scratch space and on RAM: `r` with the twin as its
    one backend (twin_said says what it copies); UsageError, in one line, for what a
    twin cannot copy."""
    for name, refusal in REFUSED:
        if getattr(r, name) not in (None, False):
            raise UsageError(refusal)
    layer = volume.layer
    if layer.detail("integrity"):
        raise UsageError(
            f"--ram: {volume.mapping} has dm-integrity tags ({layer.detail('integrity')}); a twin is made "
            "without integrity (cryptbench run --backends luks-aes256-hmac --ram measures its cost)"
        )
    bits = re.match(r"([0-9]+)-bit", layer.detail("key") or "")
    if bits is None:
        raise UsageError(f"--ram: {volume.mapping}'s table gives no key size, so no twin can copy it")
    flags = tuple(o for o in volume.options if ":" not in o and o not in IGNORED)
    name = twin_name(layer.detail("cipher") or "?", int(bits.group(1)), volume.sector, flags)
    return replace(r, existing=None, backends=name, ram=True)


def twin_said(volume: CryptVolume) -> str:
    """What the twin copies of the volume, and what not, for the run's notes."""
    layer = volume.layer
    copied = ", ".join(
        v for v in (layer.detail("cipher"), layer.detail("key"), f"{volume.sector}-byte sectors") if v
    )
    flags = ", ".join(o for o in volume.options if ":" not in o and o not in IGNORED) or "none"
    ignored = [o for o in volume.options if o in IGNORED]
    return (
        f"{TWIN_SAID} {volume.mapping} (on {volume.device}): LUKS2 with its {copied}, "
        f"flags {flags}, made in scratch space and on RAM with a key of its own; your volume is "
        "only read (its table), never written"
        + (f"; left out: {', '.join(ignored)} (no workload here discards)" if ignored else "")
    )
