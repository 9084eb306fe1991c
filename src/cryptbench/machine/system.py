"""Running external commands and reading kernel tables.

Every external command goes through `run_cmd` so that failures become one-line
errors and nothing secret is ever passed as an argument (callers hand secrets
over through files or stdin; see backends).
"""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from cryptbench.model.errors import ProvisionError


def which(name: str) -> str | None:
    # sbin is not on a non-root PATH on Debian, but mkfs/losetup live there.
    path = os.environ.get("PATH", os.defpath)
    return shutil.which(name, path=f"{path}:/usr/sbin:/sbin")


MODULES = Path("/lib/modules")


def kernel_module(name: str, root: Path = MODULES, release: str | None = None) -> str | None:
    """Whether the running kernel has `name` built in or as a loadable module:
    "built in", "module", or None. A module is loaded on demand (by mount for a
    filesystem, by the device-mapper for a target), so absence from
    /proc/filesystems says nothing on a distribution kernel."""
    d = root / (release or os.uname().release)
    stem = name.replace("-", "_")
    for index, answer in (("modules.builtin", "built in"), ("modules.dep", "module")):
        try:
            with open(d / index) as f:
                for line in f:
                    path = line.split(":", 1)[0].strip()
                    base = path.rsplit("/", 1)[-1].split(".ko", 1)[0]
                    if ".ko" in path and base.replace("-", "_") == stem:
                        return answer
        except OSError:
            continue
    return None


def kernel_config(
    option: str, boot: Path = Path("/boot"), proc: Path = Path("/proc/config.gz")
) -> str | None:
    """The running kernel's build setting for `option` (CONFIG_…): "y", "m",
    "n" when unset, or None when neither /proc/config.gz nor
    /boot/config-RELEASE (as distributions ship it) can be read."""
    try:
        text = gzip.decompress(proc.read_bytes()).decode(errors="replace")
    except (OSError, EOFError):
        try:
            text = (boot / f"config-{os.uname().release}").read_text(errors="replace")
        except OSError:
            return None
    for line in text.splitlines():
        if line.startswith(f"{option}="):
            return line.split("=", 1)[1].strip()
    return "n"


def crypto_missing(algorithm: str, config: str, module: str, proc: Path = Path("/proc/crypto")) -> str | None:
    """Why the kernel cannot run crypto `algorithm` (adiantum(xchacha12,aes)), or None when it
    can or cannot be told: registered in /proc/crypto, a module (loaded on first use), or
    built in by its configuration `config`."""
    try:
        names = {
            line.split(":", 1)[1].strip() for line in proc.read_text().splitlines() if line.startswith("name")
        }
    except OSError:
        names = set()
    if algorithm in names or kernel_module(module) is not None:
        return None
    if kernel_config(config) == "n":
        return f"the kernel has no {algorithm} ({config} is not set)"
    return None


def run_cmd(
    args: Sequence[str], *, timeout: float = 120, input_bytes: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run a command to completion; raise ProvisionError with its last stderr line."""
    exe = which(args[0])
    if exe is None:
        raise ProvisionError(f"{args[0]} is not installed")
    try:
        proc = subprocess.run(
            [exe, *args[1:]],
            input=input_bytes,
            capture_output=True,
            timeout=timeout,
            check=False,
            start_new_session=True,  # a Ctrl-C at the terminal reaches us, not it
        )
    except subprocess.TimeoutExpired:
        raise ProvisionError(f"{args[0]} did not finish within {timeout:.0f} s") from None
    if proc.returncode != 0:
        lines = proc.stderr.decode(errors="replace").strip().splitlines()
        last = lines[-1] if lines else f"exit status {proc.returncode}"
        raise ProvisionError(f"{' '.join(args[:2])} failed: {last}")
    return proc


def _unescape_mount_field(field: str) -> str:
    # /proc/mounts escapes space, tab, newline and backslash as octal.
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1 : i + 4].isdigit() and len(field[i + 1 : i + 4]) == 3:
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class MountEntry:
    source: str
    mountpoint: Path
    fstype: str
    options: str


def mounts() -> list[MountEntry]:
    """Every mount in this namespace, from /proc/self/mounts."""
    result = []
    with open("/proc/self/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 4:
                result.append(
                    MountEntry(
                        _unescape_mount_field(parts[0]),
                        Path(_unescape_mount_field(parts[1])),
                        parts[2],
                        parts[3],
                    )
                )
    return result


def mount_entry(path: Path) -> MountEntry | None:
    found = [m for m in mounts() if m.mountpoint == path]
    return found[-1] if found else None  # the last one is the visible one


def filesystem_of(path: Path) -> MountEntry | None:
    """The mount that holds `path` (the deepest mountpoint above it; the last if stacked)."""
    return mount_holding(path.resolve(), mounts())


def is_mountpoint(path: Path) -> bool:
    return mount_entry(path) is not None


def mounts_under(path: Path) -> list[Path]:
    return [m.mountpoint for m in mounts() if m.mountpoint == path or m.mountpoint.is_relative_to(path)]


def is_root() -> bool:
    return os.geteuid() == 0


@dataclass(frozen=True)
class MountInfo:
    """One line of /proc/self/mountinfo: what /proc/self/mounts says, and the device
    number and the directory of the filesystem the mount shows (proc(5))."""

    device: str  # major:minor of the filesystem; major 0 has no block device (tmpfs, FUSE, btrfs)
    root: str  # the directory of the filesystem that is mounted here ("/" for all of it)
    mountpoint: Path
    fstype: str  # with a FUSE mount's subtype: fuse.gocryptfs
    source: str
    options: str  # the mount's own options (ro, nosuid, …)
    super_options: str  # the filesystem's (upperdir=… for overlayfs, ecryptfs_cipher=… for eCryptfs)


def mountinfo(proc: Path = Path("/proc")) -> list[MountInfo]:
    """Every mount in this namespace, in the order the kernel lists them (the last of
    several on one mountpoint is the one seen)."""
    found = []
    for line in (proc / "self" / "mountinfo").read_text().splitlines():
        fields = line.split()
        if "-" not in fields[6:]:
            continue
        sep = fields.index("-", 6)  # optional fields (shared:N, master:N) come before it
        if len(fields) < sep + 3:
            continue
        found.append(
            MountInfo(
                fields[2],
                _unescape_mount_field(fields[3]),
                Path(_unescape_mount_field(fields[4])),
                fields[sep + 1],
                _unescape_mount_field(fields[sep + 2]),
                fields[5],
                fields[sep + 3] if len(fields) > sep + 3 else "",
            )
        )
    return found


class _Mounted(Protocol):
    @property
    def mountpoint(self) -> Path: ...


M = TypeVar("M", bound=_Mounted)


def mount_holding(path: Path, mounts: list[M]) -> M | None:
    """The mount that holds `path` (resolved): the deepest mountpoint above it, the last
    of several on one mountpoint."""
    best: M | None = None
    for m in mounts:
        if path.is_relative_to(m.mountpoint) and (
            best is None or len(m.mountpoint.parts) >= len(best.mountpoint.parts)
        ):
            best = m
    return best
