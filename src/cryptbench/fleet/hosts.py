"""hosts.toml: the fleet a coordinator drives, strictly checked.

    [[host]]
    name = "node1"                      # the label results carry (letters, digits, . _ -)
    address = "127.0.0.1:8766"          # its fio server, here through an SSH tunnel
    manifest_command = ["ssh", "node1", "cryptbench", "serve", "--print-manifest"]

`manifest_command` is run without a shell (an array of arguments, or a string
split as a shell would split it, without expanding anything) and must print the
host's manifest on stdout.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path

from cryptbench.fleet.address import Address, parse
from cryptbench.model.errors import UsageError

HOST_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")
KEYS = {"name", "address", "manifest_command"}
MAX_HOSTS = 256


@dataclass(frozen=True)
class HostSpec:
    name: str  # label in results: targets are named NAME/target
    address: Address  # the host's fio server as the coordinator reaches it
    manifest_command: tuple[str, ...]  # argv printing the host's manifest


def load(path: Path) -> list[HostSpec]:
    try:
        text = path.read_text()
    except OSError as e:
        raise UsageError(f"--hosts {str(path)[:80]}: {e.strerror}") from None
    try:
        doc = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise UsageError(f"--hosts {path.name}: not valid TOML ({str(e)[:80]})") from None
    return parse_hosts(doc, path.name)


def parse_hosts(doc: dict[str, object], where: str) -> list[HostSpec]:
    extra = set(doc) - {"host"}
    if extra:
        raise UsageError(f"{where}: unknown key {sorted(extra)[0][:40]!r} (only [[host]] tables)")
    entries = doc.get("host")
    if not isinstance(entries, list) or not entries:
        raise UsageError(f"{where}: no [[host]] entries")
    if len(entries) > MAX_HOSTS:
        raise UsageError(f"{where}: {len(entries)} hosts, at most {MAX_HOSTS} in one fleet run")
    hosts: list[HostSpec] = []
    for i, entry in enumerate(entries, 1):
        if not isinstance(entry, dict):
            raise UsageError(f"{where}: host {i} is not a table")
        unknown = set(entry) - KEYS
        if unknown:
            raise UsageError(f"{where}: host {i}: unknown key {sorted(unknown)[0][:40]!r}")
        missing = KEYS - set(entry)
        if missing:
            raise UsageError(f"{where}: host {i} lacks {sorted(missing)[0]!r}")
        name, address, command = entry["name"], entry["address"], entry["manifest_command"]
        if not isinstance(name, str) or not HOST_NAME_RE.fullmatch(name):
            raise UsageError(
                f"{where}: host {i}: name {str(name)[:40]!r} must be 1 to 40 letters, digits, '.', '_' or '-'"
            )
        if not isinstance(address, str):
            raise UsageError(f"{where}: host {name}: address must be a string")
        hosts.append(
            HostSpec(name, parse(address, f"{where}: host {name}: address"), _argv(command, name, where))
        )
    names = [h.name for h in hosts]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise UsageError(f"{where}: host name {dup!r} is given twice")
    addresses = [h.address for h in hosts]
    same = next((a for a in addresses if addresses.count(a) > 1), None)
    if same is not None:
        raise UsageError(f"{where}: two hosts share the address {same}")
    return hosts


def _argv(command: object, name: str, where: str) -> tuple[str, ...]:
    if isinstance(command, str):
        try:
            argv = shlex.split(command)
        except ValueError as e:
            raise UsageError(f"{where}: host {name}: manifest_command: {e}") from None
    elif isinstance(command, list) and all(isinstance(a, str) for a in command):
        argv = list(command)
    else:
        raise UsageError(f"{where}: host {name}: manifest_command must be a string or an array of strings")
    if not argv or not argv[0]:
        raise UsageError(f"{where}: host {name}: manifest_command is empty")
    return tuple(argv)
