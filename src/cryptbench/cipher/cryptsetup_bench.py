"""`cryptsetup benchmark`, the figure most users quote, taken beside the kernel's own so
that `cryptbench cipher` can say what each one measured.

cryptsetup times the kernel's cipher through AF_ALG: one thread, one 64 KiB request
at a time, each a round of system calls (lib/crypto_backend/cipher_check.c,
CIPHER_BLOCK_BYTES). dm-crypt encrypts each 512-byte or 4 KiB sector as a request of
its own inside the kernel, on every core through its workqueue, with no system call.
For a fast cipher the system calls are much of what AF_ALG times, so its figure can
be far from what dm-crypt gets (the AES-XTS author's warning on linux-crypto, 2024).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from cryptbench.cipher.cipher_document import Cryptsetup, CryptsetupFigure, Unmeasured
from cryptbench.machine.system import which

# (cryptsetup's cipher spec, key bits, the kernel's crypto API name): what LUKS targets use
CASES = (
    ("aes-xts-plain64", 256, "xts(aes)"),
    ("aes-xts-plain64", 512, "xts(aes)"),
    ("xchacha12,aes-adiantum-plain64", 256, "adiantum(xchacha12,aes)"),
)
REQUEST = 65536  # bytes per AF_ALG request cryptsetup makes (cipher_check.c)
MIB = 1 << 20
TIMEOUT = 60.0  # seconds for one `cryptsetup benchmark`
# "    aes-xts        512b      2334.9 MiB/s      2329.1 MiB/s"; adiantum's name is
# printed as given, and a failed figure as "N/A"
LINE = re.compile(r"^\s*(\S+)\s+(\d+)b\s+([\d.]+|N/A)\s+MiB/s\s+([\d.]+|N/A)\s+MiB/s\s*$", re.M)


@dataclass(frozen=True)
class Outcome:
    figure: CryptsetupFigure | None
    reason: str  # why there is no figure, in cryptsetup's words; "" with one


def parse(cipher: str, key_bits: int, algorithm: str, stdout: str, stderr: str, code: int) -> Outcome:
    """One `cryptsetup benchmark --cipher … --key-size …`'s result, from what it printed."""
    m = LINE.search(stdout)
    if code == 0 and m is not None and "N/A" not in (m[3], m[4]):
        enc, dec = float(m[3]) * MIB, float(m[4]) * MIB
        return Outcome(CryptsetupFigure(cipher, key_bits, algorithm, enc, dec), "")
    said = [line.strip() for line in stderr.splitlines() if line.strip()]
    why = " ".join(said[1:] or said) if said else f"exit status {code}, no figure printed"
    return Outcome(None, why)


def run(cipher: str, key_bits: int, algorithm: str) -> Outcome:
    exe = which("cryptsetup")
    if exe is None:
        return Outcome(None, "cryptsetup is not installed (apt-get install cryptsetup-bin)")
    try:
        out = subprocess.run(
            [exe, "benchmark", "--cipher", cipher, "--key-size", str(key_bits)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Outcome(None, f"cryptsetup benchmark took more than {TIMEOUT:.0f} s")
    return parse(cipher, key_bits, algorithm, out.stdout, out.stderr, out.returncode)


def measure() -> Cryptsetup:
    """cryptsetup's figure for each case it can time here, and why not for the others."""
    figures, skipped = [], []
    for cipher, bits, algorithm in CASES:
        o = run(cipher, bits, algorithm)
        if o.figure is not None:
            figures.append(o.figure)
        else:
            skipped.append(Unmeasured(f"{cipher} {bits}b", REQUEST, o.reason))
    if figures:
        return Cryptsetup(True, "", figures, skipped)
    return Cryptsetup(False, skipped[0].reason if skipped else "no case asked")
