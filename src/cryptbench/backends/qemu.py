"""Command lines for qemu-img and qemu-storage-daemon: pure functions, unit-tested.

Secrets reach qemu as `--object secret,id=…,file=PATH` (a 0600 file on a RAM
filesystem), never as `data=` on a command line, which any user can read in
/proc/PID/cmdline.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path


class ImageKind(StrEnum):
    """The image kinds study 003 compared (macOS names in KINDS' words)."""

    RAW = "raw"
    SPARSE = "sparse"
    QCOW2 = "qcow2"


KINDS = {
    ImageKind.RAW: "raw image, preallocated (fixed size, like UDRW)",
    ImageKind.SPARSE: "raw image, sparse (grows as written, like UDSP)",
    ImageKind.QCOW2: "qcow2 image (grows as written)",
}
# Encryption: the name used in backend names -> (qemu cipher-alg, label).
CIPHERS = {
    "aes128": ("aes-128", "AES-128-XTS"),
    "aes256": ("aes-256", "AES-256-XTS"),
}
SECRET_ID = "sec0"
# LUKS keyslot derivation time (ms). The keys are random and thrown away after
# the run; a long PBKDF2 would only slow every reset of a target.
ITER_TIME_MS = 100


@dataclass(frozen=True)
class ImageSpec:
    kind: ImageKind
    cipher: str | None  # aes128, aes256 or None
    size: int  # bytes: the virtual disk

    @property
    def driver(self) -> str:
        """qemu's format driver for the image file."""
        if self.kind == ImageKind.QCOW2:
            return "qcow2"
        return "luks" if self.cipher else "raw"

    @property
    def suffix(self) -> str:
        return {"qcow2": "qcow2", "luks": "luks", "raw": "img"}[self.driver]


def _luks_options(cipher: str, prefix: str) -> list[str]:
    alg, _label = CIPHERS[cipher]
    return [
        f"{prefix}key-secret={SECRET_ID}",
        f"{prefix}cipher-alg={alg}",
        f"{prefix}cipher-mode=xts",
        f"{prefix}ivgen-alg=plain64",
        f"{prefix}hash-alg=sha256",
        f"{prefix}iter-time={ITER_TIME_MS}",
    ]


def _q(path: Path) -> str:
    """A path as a qemu option value: a comma is written twice."""
    return str(path).replace(",", ",,")


def secret_object(secret: Path) -> list[str]:
    return ["--object", f"secret,id={SECRET_ID},file={_q(secret)}"]


def create_command(spec: ImageSpec, image: Path, secret: Path | None) -> list[str]:
    """qemu-img create for `spec`; `secret` is the password file of an encrypted image."""
    if spec.cipher and secret is None:
        raise ValueError("an encrypted image needs a secret file")
    options: list[str] = []
    if spec.kind == ImageKind.QCOW2:
        if spec.cipher:
            options += ["encrypt.format=luks", *_luks_options(spec.cipher, "encrypt.")]
    elif spec.cipher:
        options += _luks_options(spec.cipher, "")
    if spec.kind == ImageKind.RAW:
        options.append("preallocation=falloc")
    args = ["qemu-img", "create", "-q"]
    if spec.cipher and secret is not None:
        args += secret_object(secret)
    args += ["-f", spec.driver]
    if options:
        args += ["-o", ",".join(options)]
    return [*args, str(image), str(spec.size)]


def daemon_command(
    spec: ImageSpec, image: Path, export: Path, secret: Path | None, direct: bool
) -> list[str]:
    """qemu-storage-daemon exporting the image's guest view as the file `export` (FUSE).

    `direct`: qemu opens the image with O_DIRECT, so the host page cache holds
    no second copy of the data. `allow-other=off`: only this user can open the
    export.
    """
    if spec.cipher and secret is None:
        raise ValueError("an encrypted image needs a secret file")
    args = ["qemu-storage-daemon"]
    if spec.cipher and secret is not None:
        args += secret_object(secret)
    cache = "on" if direct else "off"
    args += ["--blockdev", f"driver=file,node-name=file0,filename={_q(image)},cache.direct={cache}"]
    fmt = f"driver={spec.driver},node-name=fmt0,file=file0"
    if spec.cipher and spec.kind == ImageKind.QCOW2:
        fmt += f",encrypt.format=luks,encrypt.key-secret={SECRET_ID}"
    elif spec.cipher:
        fmt += f",key-secret={SECRET_ID}"
    args += ["--blockdev", fmt]
    args += [
        "--export",
        f"type=fuse,id=exp0,node-name=fmt0,mountpoint={_q(export)},writable=on,allow-other=off",
    ]
    return args


# qemu-img's LUKS keyslot setup times PBKDF2 with the thread's CPU clock and
# gives up when a timing round reads 0 ms, which happens now and then on VMs
# with coarse CPU accounting. The error is spurious; trying again succeeds.
FLAKY_CPU_CLOCK = "Unable to get accurate CPU usage"
CREATE_TRIES = 20  # each failure is independent; 20 in a row does not happen in practice
