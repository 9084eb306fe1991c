"""Addresses of fio servers: parsed from the forms people type, written in fio's own.

People type `HOST[:PORT]`, `[IPV6][:PORT]` or `unix:/path`; fio wants
`ip:HOST,PORT`, `ip6:HOST,PORT` or `sock:PATH` (`fio --server` and
`fio --client` share the syntax). fio's server has no authentication and runs
whatever job it is sent, as the user it runs as (root, for cryptbench's
targets), so `serve` listens only where nobody else can reach it unless told
otherwise: a loopback address or a unix socket.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from enum import StrEnum

from cryptbench.model.errors import UsageError

DEFAULT_PORT = 8765  # fio's own default port
_NAME_RE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")


class AddressKind(StrEnum):
    """fio's words for an address's family."""

    IP = "ip"
    IP6 = "ip6"
    SOCK = "sock"  # a unix socket


@dataclass(frozen=True)
class Address:
    kind: AddressKind
    host: str  # an IP address or host name; for "sock", the socket's absolute path
    port: int  # TCP port; 0 for a unix socket

    def fio(self) -> str:
        """The address as fio's --server= and --client= take it."""
        if self.kind == AddressKind.SOCK:
            return f"sock:{self.host}"
        return f"{self.kind}:{self.host},{self.port}"

    def __str__(self) -> str:
        if self.kind == AddressKind.SOCK:
            return f"unix:{self.host}"
        host = f"[{self.host}]" if self.kind == AddressKind.IP6 else self.host
        return f"{host}:{self.port}"

    def ip(self) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
        if self.kind == AddressKind.SOCK:
            return None
        try:
            return ipaddress.ip_address(self.host)
        except ValueError:
            return None  # a host name

    def loopback_only(self) -> bool:
        """True when only this machine can connect: a unix socket or a loopback IP."""
        ip = self.ip()
        return self.kind == AddressKind.SOCK or (ip is not None and ip.is_loopback)

    def wildcard(self) -> bool:
        ip = self.ip()
        return ip is not None and ip.is_unspecified


def parse(text: str, what: str) -> Address:
    """`HOST[:PORT]`, `[IPV6][:PORT]` or `unix:/PATH`; a UsageError naming `what` otherwise."""
    shown = text[:60]
    if text.startswith("unix:"):
        path = text[len("unix:") :]
        if not path.startswith("/") or "\0" in path or len(path) > 107:
            raise UsageError(f"{what} {shown!r}: a unix socket needs an absolute path (at most 107 bytes)")
        return Address(AddressKind.SOCK, path, 0)
    port = DEFAULT_PORT
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise UsageError(f"{what} {shown!r}: an IPv6 address in brackets lacks its ']'")
        host, rest = text[1:end], text[end + 1 :]
        if rest:
            if not rest.startswith(":"):
                raise UsageError(f"{what} {shown!r}: expected ':PORT' after the bracketed address")
            port = _port(rest[1:], what, shown)
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise UsageError(f"{what} {shown!r}: {host[:45]!r} is not an IPv6 address") from None
        return Address(AddressKind.IP6, host, port)
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host = text
    elif ":" in host:
        raise UsageError(f"{what} {shown!r}: write an IPv6 address in brackets, e.g. [::1]:8765")
    else:
        port = _port(port_text, what, shown)
    if not host:
        raise UsageError(f"{what} {shown!r}: no host (0.0.0.0 is every interface, and needs --allow-remote)")
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        if not _NAME_RE.fullmatch(host):
            raise UsageError(
                f"{what} {shown!r}: {host[:45]!r} is neither an IP address nor a host name"
            ) from None
        return Address(AddressKind.IP, host, port)
    return Address(AddressKind.IP6 if ip.version == 6 else AddressKind.IP, host, port)


def _port(text: str, what: str, shown: str) -> int:
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= 65535:
        raise UsageError(f"{what} {shown!r}: the port must be a number from 1 to 65535")
    return int(text)


def listen_address(text: str, allow_remote: bool) -> Address:
    """Where `serve` may listen: loopback or a unix socket, anything else only with --allow-remote."""
    addr = parse(text, "--listen")
    if addr.kind != AddressKind.SOCK and addr.ip() is None:
        if addr.host != "localhost":
            raise UsageError(
                f"--listen {text[:60]!r}: give an IP address (or localhost), not a host name, "
                "so that cryptbench knows who can reach it"
            )
        addr = Address(AddressKind.IP, "127.0.0.1", addr.port)
    if addr.loopback_only() or allow_remote:
        return addr
    where = "every interface" if addr.wildcard() else f"{addr.host}, which other machines can reach"
    raise UsageError(
        f"--listen {addr}: fio's server would listen on {where}, and it runs any job it is sent, as root, "
        "without authentication; listen on loopback or a unix socket and reach it through an SSH tunnel "
        "(docs/fleet.md), or give --allow-remote on a network you trust"
    )
