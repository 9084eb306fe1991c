"""Facts recorded with every run, so that runs can be told apart and compared."""

from __future__ import annotations

import os
import platform
import socket
import sys
from collections.abc import Iterable
from pathlib import Path

from cryptbench import __version__
from cryptbench.backends import versions
from cryptbench.cipher import kernel
from cryptbench.engines.fio import fio_version
from cryptbench.machine.system import is_root
from cryptbench.measure.cache import drop_method
from cryptbench.measure.device import describe_filesystem, disks_of
from cryptbench.measure.stack import stack_of
from cryptbench.model.json_types import JsonObject

CPU_FLAGS_OF_INTEREST = ("aes", "vaes", "pclmulqdq", "vpclmulqdq", "avx2", "avx512f", "sha_ni")


def _cpuinfo() -> tuple[str, list[str]]:
    model, flags = "unknown", list[str]()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and model == "unknown":
                    model = value.strip()
                elif key == "flags" and not flags:
                    flags = value.split()
    except OSError:
        pass
    return model, [f for f in CPU_FLAGS_OF_INTEREST if f in flags]


def _proc_crypto() -> list[dict[str, str]]:
    try:
        return kernel.parse(kernel.PROC_CRYPTO.read_text())
    except OSError:
        return []


def kernel_driver(name: str, entries: list[dict[str, str]] | None = None) -> str | None:
    """The driver the kernel uses for algorithm `name` (read from /proc/crypto unless given)."""
    found = kernel.selected(_proc_crypto() if entries is None else entries, name)
    return found.driver if found else None


def is_generic_aes(driver: str | None) -> bool:
    return driver is not None and kernel.is_software(kernel.classify(driver))


def kernel_crypto() -> JsonObject:
    entries = _proc_crypto()
    xts = kernel_driver("xts(aes)", entries)
    aes = kernel_driver("aes", entries)
    return {
        # xts(aes) appears in /proc/crypto only once something (fscrypt,
        # dm-crypt) has instantiated it; the bare aes driver is always there.
        "xts(aes)": xts,
        "aes": aes,
        "generic_software_aes": is_generic_aes(xts or aes),
    }


def _os_name() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    return platform.system()


def collect(target_dir: Path, backends: Iterable[str] = ()) -> JsonObject:
    """Facts about this machine a reader needs to judge whether the figures apply to them;
    with the version of each of `backends`' own programs, where the run has any."""
    model, flags = _cpuinfo()
    # every layer under the scratch space: a plain target on a LUKS root is encrypted
    stack = stack_of(target_dir)
    # whose counters each trial's device_bytes_written and _read come from: the disks at the
    # bottom of the stack, not a mapping over them; None: none (tmpfs)
    device = disks_of(stack)
    filesystem = describe_filesystem(target_dir)
    found = versions(backends)
    return {
        "hostname": socket.gethostname(),
        "os": _os_name(),
        "kernel": platform.release(),
        "cpu_model": model,
        "cpu_count": os.cpu_count(),
        "cpu_flags": flags,
        "memory_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
        "kernel_crypto": kernel_crypto(),
        "fio": fio_version(),
        "python": sys.version.split()[0],
        "cryptbench": __version__,
        "root": is_root(),
        "cache_drop": str(drop_method()),
        "target_filesystem": filesystem,
        "scratch_device": device,
        "stack": stack.to_json(),
        **({"versions": found} if found else {}),
    }
