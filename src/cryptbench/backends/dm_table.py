"""cryptsetup's command lines and dm-crypt's tables: the luksFormat and open commands
(keys through files, never argv), reading a mapping's table (its options, cipher and
dm-integrity mode; never its key), checking it against what was asked, and reloading
it with flags cryptsetup cannot set (the key through pipes only).
"""

from __future__ import annotations

from pathlib import Path

from cryptbench.backends.luks_variants import AES_XTS, INTEGRITY, SECTOR_SIZE, Variant
from cryptbench.machine.system import run_cmd
from cryptbench.model.errors import ProvisionError


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


def integrity_detail(integrity: str, mode: str) -> str:
    """The target's `integrity` detail: the tag and dm-integrity's mode, in words."""
    journal = "journaled (J)" if mode == "J" else "no journal (D: data and tags written in place)"
    return f"{INTEGRITY[integrity][1]} tags via dm-integrity, {journal}"
