"""A LUKS twin: LUKS2 made in scratch space with a user's volume's cipher, key size,
sector size and performance flags (`run --existing /dev/mapper/NAME --ram`), so that
writes, which the volume itself is never given, are measured on the same dm-crypt
setup: in scratch space and on RAM, where the device's cost is gone and the cipher's
and the layer's remain.

The name says the whole make, `luks-twin-aes256-s4096-noreadq`: a stored run's twin
resolves to the same backend in any later process (backends.Registry), and no key or
device of the user's is in it."""

from __future__ import annotations

import re
from functools import cache

from cryptbench.backends.luks import LuksBackend
from cryptbench.backends.luks_variants import (
    ADIANTUM,
    AES_XTS,
    HIGH_PRIORITY,
    NO_READ_QUEUE,
    NO_WRITE_QUEUE,
    SUBMIT_FROM_CRYPT_CPUS,
    Variant,
)
from cryptbench.model.errors import UsageError

PREFIX = "luks-twin-"
SAME_CPU = "same_cpu_crypt"
# (cryptsetup's cipher, key bits) -> the name's code for it
CIPHER_CODES = {(AES_XTS, 256): "aes128", (AES_XTS, 512): "aes256", (ADIANTUM, 256): "adiantum"}
# the table's performance flags -> the name's code for each, in the table's order
FLAG_CODES = {
    SAME_CPU: "samecpu",
    SUBMIT_FROM_CRYPT_CPUS: "submitcpus",
    NO_READ_QUEUE: "noreadq",
    NO_WRITE_QUEUE: "nowriteq",
    HIGH_PRIORITY: "highpri",
}
# a table's options a twin leaves out: they change no read or write fio makes
IGNORED = ("allow_discards",)
SECTORS = (512, 1024, 2048, 4096)  # bytes: the sector sizes dm-crypt takes
_NAME = re.compile(rf"{PREFIX}([a-z0-9]+)-s([0-9]+)((?:-[a-z]+)*)")


def twin_name(cipher: str, key_bits: int, sector: int, flags: tuple[str, ...]) -> str:
    """The twin's backend name; UsageError, in one line, for what no twin can copy."""
    code = CIPHER_CODES.get((cipher, key_bits))
    if code is None:
        made = ", ".join(f"{c} with a {b}-bit key" for c, b in CIPHER_CODES)
        raise UsageError(
            f"--ram: a twin is made for {made}; this volume is {cipher} with a {key_bits}-bit key"
        )
    if sector not in SECTORS:
        raise UsageError(
            f"--ram: dm-crypt takes sectors of {', '.join(map(str, SECTORS))} bytes, not {sector}"
        )
    unknown = [f for f in flags if f not in FLAG_CODES]
    if unknown:
        raise UsageError(f"--ram: a twin cannot copy the table's {', '.join(unknown)}")
    ordered = [FLAG_CODES[f] for f in FLAG_CODES if f in flags]
    return "-".join((f"{PREFIX}{code}", f"s{sector}", *ordered))


@cache
def twin_variant(name: str) -> Variant | None:
    """The twin a name makes, or None where the name is no twin's."""
    m = _NAME.fullmatch(name)
    if m is None:
        return None
    ciphers = {code: make for make, code in CIPHER_CODES.items()}
    flags = {code: flag for flag, code in FLAG_CODES.items()}
    codes = [c for c in m.group(3).split("-") if c]
    sector = int(m.group(2))
    if m.group(1) not in ciphers or sector not in SECTORS or not set(codes) <= set(flags):
        return None
    if len(set(codes)) != len(codes):
        return None
    cipher, key_bits = ciphers[m.group(1)]
    table_order = tuple(f for f in FLAG_CODES if FLAG_CODES[f] in codes)
    if name != twin_name(cipher, key_bits, sector, table_order):
        return None  # one make, one name: flags in another order are not a second twin
    return Variant(key_bits, sector, table_order, "your volume's twin", cipher=cipher)


@cache
def twin_backend(name: str) -> LuksBackend | None:
    """The twin's backend (one per name and process), or None for no twin's name."""
    variant = twin_variant(name)
    return None if variant is None else LuksBackend(name, variant)
