"""What this kernel's device-mapper can do: whether dm-crypt and dm-integrity are
there (built in, loaded or a module), each target's version (`dmsetup targets`), and
which flags dm-crypt and cryptsetup take here, each refusal with its reason.
"""

from __future__ import annotations

import functools
import os

from cryptbench.backends.luks_variants import INTEGRITY
from cryptbench.machine.system import crypto_missing, kernel_module, run_cmd
from cryptbench.model.errors import ProvisionError


def device_mapper_missing() -> str | None:
    """Why dm-crypt cannot work here, or None."""
    # /proc/misc lists the drivers the kernel has; /dev/mapper/control alone proves none:
    # libdevmapper makes that node itself when it is missing (any `dmsetup` run leaves one
    # behind on a kernel without the driver). The node stands in only where /proc/misc
    # cannot be read.
    try:
        with open("/proc/misc") as f:
            driver = "device-mapper" in f.read().split()
        seen = "not in /proc/misc"
    except OSError:
        driver, seen = os.path.exists("/dev/mapper/control"), "no /dev/mapper/control"
    if not driver:
        if kernel_module("dm-mod") == "module":
            return f"the device-mapper is not loaded ({seen}): run `modprobe dm_mod`"
        return f"the kernel has no device-mapper ({seen}), which dm-crypt needs"
    if kernel_module("dm-crypt") is None and not _dm_target("crypt"):
        return "the kernel has no dm-crypt (neither loaded nor a dm-crypt module under /lib/modules)"
    return None


def integrity_missing(integrity: str) -> str | None:
    """Why LUKS2 with `--integrity integrity` cannot work here (dm-crypt aside), or None."""
    if kernel_module("dm-integrity") is None and not _dm_target("integrity"):
        return "the kernel has no dm-integrity (neither loaded nor a module), which LUKS2 --integrity needs"
    algorithm, _name, config, module, _tag = INTEGRITY[integrity]
    return crypto_missing(algorithm, config, module) or crypto_missing(
        "authenc", "CONFIG_CRYPTO_AUTHENC", "authenc"
    )


def _dm_target(name: str) -> bool:
    """Whether the device-mapper already has target `name` (built in or loaded)."""
    return name in dm_targets()


def dm_target_version(name: str) -> tuple[int, ...] | None:
    """The version of device-mapper target `name` (`dmsetup targets`: "crypt v1.24.0"),
    or None when it is not loaded yet, there is no device-mapper or the version is unreadable."""
    return dm_targets().get(name)


@functools.cache
def dm_targets() -> dict[str, tuple[int, ...] | None]:
    """`dmsetup targets`, read once per process: every LUKS target's probe asks, and a
    target loaded later (opening loads dm-crypt) only makes the answer more permissive,
    which opening checks against the mapping's table anyway."""
    try:
        out = run_cmd(["dmsetup", "targets"], timeout=10).stdout.decode()
    except ProvisionError:
        return {}
    return parse_targets(out)


def parse_targets(text: str) -> dict[str, tuple[int, ...] | None]:
    """Each target's version in `dmsetup targets` output ("crypt            v1.24.0");
    None where the version cannot be read."""
    found: dict[str, tuple[int, ...] | None] = {}
    for line in text.splitlines():
        fields = line.split()
        if not fields:
            continue
        digits = fields[1].lstrip("v").split(".") if len(fields) > 1 else []
        version = tuple(int(d) for d in digits if d.isdigit())
        found[fields[0]] = version if version and len(version) == len(digits) else None
    return found


NO_QUEUE_SINCE = (1, 22)  # dm-crypt's version with no_read_workqueue and no_write_workqueue (Linux 5.9)

HIGH_PRIORITY_SINCE = (1, 26)  # dm-crypt's version with high_priority ...

HIGH_PRIORITY_KERNEL = (6, 10)  # ... which came with Linux 6.10


def high_priority_missing(crypt: tuple[int, ...] | None, release: str) -> str | None:
    """Why dm-crypt cannot take high_priority here, or None: by dm-crypt's own version
    where it is loaded (`crypt`), else by the kernel's `release` (6.1.0-57-amd64)."""
    if crypt is not None:
        if crypt >= HIGH_PRIORITY_SINCE:
            return None
        shown = ".".join(map(str, crypt))
        return f"needs Linux 6.10: dm-crypt {shown} has no high_priority flag (dm-crypt 1.26 added it)"
    digits = release.split("-", 1)[0].split(".")[:2]
    kernel = tuple(int(d) for d in digits if d.isdigit())
    if len(kernel) == 2 and kernel < HIGH_PRIORITY_KERNEL:
        return f"needs Linux 6.10: this kernel is {release[:40]}, whose dm-crypt has no high_priority flag"
    return None


@functools.cache
def cryptsetup_takes(flag: str) -> bool:
    """Whether this cryptsetup takes `--perf-FLAG` (its --help lists every option it
    has): cryptsetup 2.7 added --perf-high_priority, and Debian 12 ships 2.6.1."""
    try:
        out = run_cmd(["cryptsetup", "--help"], timeout=30).stdout.decode(errors="replace")
    except ProvisionError:
        return False
    return f"--perf-{flag}" in out
