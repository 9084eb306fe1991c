"""What each kernel users run offers: `cryptbench backends` in the guest of Debian 12's
6.1 and of Debian 13's 6.12, as a user on either would read it."""

from __future__ import annotations

import json
import os

import pytest

from cryptbench.backends.luks_variants import HIGH_PRIORITY, VARIANTS
from tests.support.cli import cli

pytestmark = [pytest.mark.lab("6.1", "6.12"), pytest.mark.integration]

# What the kernel itself encrypts with, through its modules loaded on demand: every
# distribution kernel the lab boots has them all, but dm-crypt's high_priority (Linux 6.10).
KERNEL_CRYPTO = ["fscrypt", "fscrypt-adiantum", "ecryptfs", *VARIANTS]
SINCE_6_10 = [n for n, v in VARIANTS.items() if HIGH_PRIORITY in v.flags]
# What neither Debian kernel builds (their /boot/config-*): refused on both, naming the option.
NEITHER = {
    "fscrypt-inline": "this kernel was built without CONFIG_FS_ENCRYPTION_INLINE_CRYPT and "
    "CONFIG_BLK_INLINE_ENCRYPTION_FALLBACK",
    "fscrypt-hctr2": "the kernel has no hctr2(aes) (CONFIG_CRYPTO_HCTR2 is not set)",
}


def test_backends_lists_what_this_kernel_offers_and_why_not(record_property: pytest.RecordProperty) -> None:
    proc = cli("backends", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {str(r["name"]): r for r in json.loads(proc.stdout)}
    refused = {name: r["reason"] for name, r in rows.items() if not r["available"]}
    assert all(refused.values()), refused  # each refusal says why
    older = os.environ["CRYPTBENCH_LAB_KERNEL"] == "6.1"
    for name in SINCE_6_10 if older else []:  # refused with the reason the user reads
        assert refused.pop(name, "").startswith("needs Linux 6.10: "), (name, rows[name])
    for name, why in NEITHER.items():
        assert refused.get(name, "").startswith(why), (name, rows[name])
    missing = {name: refused[name] for name in KERNEL_CRYPTO if name in refused}
    assert not missing, f"on {os.uname().release}: {missing}"
    # The listing as the note and the log quote it, kernel by kernel.
    record_property("kernel", os.uname().release)
    record_property("available", ", ".join(n for n, r in rows.items() if r["available"]))
    listed = {n: str(r["reason"]) for n, r in rows.items() if not r["available"]}
    record_property("refused", "; ".join(f"{n} ({why})" for n, why in listed.items()) or "none")
    table = cli("backends")
    assert table.returncode == 0, table.stderr
    print(table.stdout)
