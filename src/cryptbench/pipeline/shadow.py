"""The shadow mappings of `run --existing --try-flags`: beside the user's own crypt
mapping, a second, read-only one over the same device, sectors and key per set of
performance flags tried (planning/flag_trial.py), made with `dmsetup create --readonly`
and removed however the run ends (machine/resources.DmShadow; `cleanup` after SIGKILL).

The key never reaches a command line, a file or the store. Where the volume's table
holds the key itself, `dmsetup table --showkeys` gives it through a pipe; where it holds
a kernel keyring reference that still resolves, the shadow tables hold the same
reference and no key is handled at all; else (cryptsetup removes a LUKS2 volume's key
from the keyring once the volume is open) the user's passphrase or key file unlocks the
volume key, `cryptsetup luksDump --dump-volume-key` reading it on stdin and printing the
key on a pipe. Each shadow table then goes to `dmsetup create` on its stdin."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from cryptbench.backends.dm_table import table_options
from cryptbench.machine.interrupts import signals_blocked
from cryptbench.machine.keys import read_private_file
from cryptbench.machine.resources import SHADOW_INFIX, DmShadow, request_key
from cryptbench.machine.session import Session
from cryptbench.machine.system import run_cmd
from cryptbench.measure.volume import CryptVolume
from cryptbench.model.errors import ProvisionError, UsageError
from cryptbench.planning.flag_trial import FlagSet, shadow_options

KEYRING_REFERENCE = re.compile(r":(\d+):(logon|user):(.+)")
HEX_KEY = re.compile(r"(?:[0-9a-fA-F]{2})+")
MAX_KEY_FILE = 8 << 20  # bytes: cryptsetup's own limit for a key file
MAPPER = Path("/dev/mapper")
# udev's rules leave a device-mapper device whose UUID starts so unscanned, as they do
# cryptsetup's own temporary mappings: no blkid probe, no /dev/disk/by-uuid link that
# would name the shadow instead of the user's volume
TEMP_UUID = "CRYPT-TEMP-"


@dataclass(frozen=True)
class ShadowKey:
    """What the shadow tables hold in their key field, and how it was had."""

    field: str = field(repr=False)  # the hex key, or the keyring's reference (":64:logon:…")
    how: str  # in words, for the notes: never the key


def shadow_key(volume: CryptVolume, key_file: str | None) -> ShadowKey:
    """The key the shadow mappings of `volume` are made with; a UsageError in one line
    where none can be had (a keyring reference that no longer resolves and no --key-file,
    or a key file that does not unlock the volume)."""
    line = _table(volume.mapping, keys=True)
    parts = line.split()
    key = parts[4] if len(parts) > 4 else ""
    reference = KEYRING_REFERENCE.fullmatch(key)
    if reference is None and HEX_KEY.fullmatch(key) and set(key) != {"0"}:
        return ShadowKey(key, "the key its table holds, read through a pipe (dmsetup table --showkeys)")
    if reference is not None and _resolves(reference.group(2), reference.group(3)):
        return ShadowKey(key, "the kernel keyring's reference its table holds (no key read)")
    if reference is None:
        raise UsageError(f"--try-flags: {volume.mapping}'s table holds no key cryptbench can reuse")
    bits = int(reference.group(1)) * 8
    if key_file is None:
        raise UsageError(
            f"--try-flags: {volume.mapping}'s key is a kernel keyring reference that no longer resolves "
            "(cryptsetup removes the key once a LUKS2 volume is open; a TPM-sealed key is never there): "
            "give its passphrase or key file with --key-file FILE (- for stdin) to unlock it"
        )
    return ShadowKey(
        _unlocked(volume, read_key_file(key_file), bits), "the volume key your --key-file unlocked"
    )


def _table(mapping: str, keys: bool = False) -> str:
    args = ["dmsetup", "table", *(["--showkeys"] if keys else []), mapping]
    try:
        return run_cmd(args, timeout=30).stdout.decode()
    except ProvisionError as e:
        raise UsageError(f"--try-flags: {e}") from None


def _resolves(key_type: str, description: str) -> bool:
    """Whether the kernel finds the key a table references in this process's keyrings,
    as it would for the shadow's table (dmsetup, our child, shares them)."""
    try:
        request_key(key_type.encode(), description.encode())
    except OSError:
        return False
    return True


def read_key_file(path: str) -> bytes:
    """The bytes of the user's key file (or passphrase file), as cryptsetup --key-file
    reads them; "-": standard input. A file others may read is refused: a key there has
    leaked already."""
    if path == "-":
        data = sys.stdin.buffer.read(MAX_KEY_FILE + 1)
    else:
        data = read_private_file(path, "--key-file", MAX_KEY_FILE + 1)
    if not data:
        raise UsageError(f"--key-file {path[:80]!r} is empty")
    if len(data) > MAX_KEY_FILE:
        raise UsageError(f"--key-file {path[:80]!r} is larger than cryptsetup reads (8 MiB)")
    return data


def _unlocked(volume: CryptVolume, secret: bytes, bits: int) -> str:
    """The volume key of `volume`'s LUKS header, unlocked by `secret` on cryptsetup's stdin
    and printed on its stdout (a pipe). A passphrase file that ends in a newline is tried
    without it too: cryptsetup --key-file counts every byte, a typed passphrase has none."""
    tries = [secret, secret[:-1]] if secret.endswith(b"\n") and len(secret) > 1 else [secret]
    args = ["cryptsetup", "luksDump", "--dump-volume-key", "--batch-mode", "--key-file=-"]
    last = ""
    for given in tries:
        try:
            out = run_cmd([*args, str(volume.device_node)], timeout=120, input_bytes=given).stdout
        except ProvisionError as e:
            last = str(e).split(": ", 1)[-1]
            continue
        key = dumped_key(out.decode(errors="replace"))
        if key is None or len(key) * 4 != bits:
            raise UsageError(f"--key-file: cryptsetup printed no {bits}-bit volume key for {volume.device}")
        return key
    raise UsageError(f"--key-file: it does not unlock {volume.device_node} ({last[:120]})")


def dumped_key(text: str) -> str | None:
    """The volume key in `cryptsetup luksDump --dump-volume-key`'s output, as hex: the
    bytes after "MK dump:" (cryptsetup 2.6) or "Volume key:", and on the lines under it."""
    found: list[str] = []
    inside = False
    for line in text.splitlines():
        label, sep, rest = line.partition(":")
        if not inside and sep and label.strip() in ("MK dump", "Volume key"):
            inside, line = True, rest
        elif inside and not line[:1].isspace():
            break
        if inside:
            pairs = line.split()
            if not all(re.fullmatch(r"[0-9a-fA-F]{2}", p) for p in pairs):
                break
            found += pairs
    return "".join(found).lower() or None


def shadow_table(line: str, key: str, options: tuple[str, ...]) -> str:
    """A crypt table line for a shadow: the volume's own (start, length, cipher, IV offset,
    device, offset) with `key` in its key field and `options` as its optional parameters."""
    parts = line.split()
    return (
        " ".join([*parts[:4], key, *parts[5:8], *([str(len(options)), *options] if options else [])]) + "\n"
    )


def shadow_name(session: Session, n: int) -> str:
    """A shadow mapping's name: the run directory's in it, so that `cleanup` finds it."""
    return f"cryptbench-{session.run_dir.name}{SHADOW_INFIX}{n}"


@contextmanager
def shadows(
    session: Session, volume: CryptVolume, sets: tuple[FlagSet, ...], key: ShadowKey
) -> Iterator[dict[str, Path]]:
    """A read-only mapping of `volume`'s device per flag set (target name -> its node),
    each journalled before it is made and removed on the way out, its table checked for
    the flags asked."""
    line = _table(volume.mapping)
    options = table_options(line)
    made: list[DmShadow] = []
    try:
        nodes = {}
        for n, s in enumerate(sets):
            name = shadow_name(session, n)
            made.append(DmShadow(name))
            session.acquire(made[-1])
            table = shadow_table(line, key.field, shadow_options(options, s.flags))
            with signals_blocked():  # the mapping must not appear after its release
                run_cmd(
                    ["dmsetup", "create", name, "--readonly", "--uuid", f"{TEMP_UUID}{name}"],
                    timeout=60,
                    input_bytes=table.encode(),
                )
            got = table_options(run_cmd(["dmsetup", "table", name], timeout=30).stdout.decode())
            lacking = [f for f in s.flags if f not in got]
            if lacking:
                raise ProvisionError(f"dm-crypt did not take {', '.join(lacking)} for {s.name}")
            nodes[s.name] = MAPPER / name
        yield nodes
    finally:
        for resource in reversed(made):
            session.release(resource)
