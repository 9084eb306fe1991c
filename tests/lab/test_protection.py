"""The protection probes on the backends this host's kernel lacks, read from the lab's
shared run of them (conftest.py): LUKS containers hide everything; eCryptfs pads sizes
to 4 KiB; fscrypt with Adiantum hides names only, as fscrypt does with AES. A flipped
ciphertext byte is detected only with dm-integrity's tags (the -hmac variants); plain
XTS, Adiantum and eCryptfs return it silently."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cryptbench.backends.luks_variants import PLAIN_LUKS, VARIANTS
from cryptbench.model.option_kinds import OptionKind
from tests.lab import FinishedRun
from tests.lab.conftest import KERNEL_ONLY

pytestmark = [pytest.mark.lab, pytest.mark.integration]
IN_SHARED_RUN = {n: v for n, v in VARIANTS.items() if n in KERNEL_ONLY}  # all but what 6.1 refuses

PROPERTIES = ("contents", "names", "sizes", "tree", "tamper")


def _verdicts(run: FinishedRun) -> dict[str, tuple[str, ...]]:
    out = {}
    for t in run.doc["targets"]:
        p = t["protection"]
        assert "broken" not in p, p["broken"]
        print(t["name"], p["sight"], {prop: p[prop]["evidence"] for prop in PROPERTIES})
        out[t["name"]] = tuple(p[prop]["verdict"] for prop in PROPERTIES)
    return out


def test_what_each_kernel_only_backend_hides(
    kernel_only_run: FinishedRun, record_property: Callable[[str, object], None]
) -> None:
    seen = _verdicts(kernel_only_run)
    for name, variant in IN_SHARED_RUN.items():
        tamper = "detected" if variant.integrity else "silent"
        assert seen[name] == ("hidden",) * 4 + (tamper,), name
    assert seen["fscrypt-adiantum"] == ("hidden", "hidden", "shown", "shown", "silent")
    assert seen["ecryptfs"] == ("hidden", "hidden", "block", "shown", "silent")
    assert seen["plain"] == seen["ext4-loop"] == ("shown",) * 4 + ("silent",)  # the positive controls
    targets = {t["name"]: t for t in kernel_only_run.doc["targets"]}
    # an option given only to `cryptsetup open` leaves luks-aes256's container: read once
    for name, variant in IN_SHARED_RUN.items():
        flags_only = variant.option in (OptionKind.WORKQUEUES, OptionKind.SUBMIT, OptionKind.PRIORITY)
        assert targets[name]["protection"].get("probed_on") == (PLAIN_LUKS if flags_only else None), name
    assert targets["luks-aes256"]["protection"]["sight"] == "LUKS container"
    assert targets["ecryptfs"]["protection"]["sizes"]["detail"]["block"] == 4096
    for name in ("luks-aes256", "luks-aes256-hmac", "luks-aes256-hmac-nojournal", "ecryptfs"):
        p = targets[name]["protection"]
        record_property(f"{name} tamper", f"{p['tamper']['verdict']}: {p['tamper']['evidence']}")
        space = p["space"]
        record_property(
            f"{name} space against {targets[name]['baseline']}",
            f"small files {space['tree'].get('ratio')}x, large file {space['large'].get('ratio')}x, "
            f"1 byte changed {space['granularity']['bytes']} bytes",
        )
    # A LUKS container against ext4-loop: ext4 inside both, but on 4096-byte sectors
    # (luks-aes256's) mke2fs cannot use the 1 KiB blocks it gives a small image, so small
    # files take a little more; a large file the same.
    space = targets["luks-aes256"]["protection"]["space"]
    assert 1.0 <= space["tree"]["ratio"] <= 1.3 and 0.98 <= space["large"]["ratio"] <= 1.05, space
    assert not [w for w in kernel_only_run.doc["warnings"] if w["kind"].startswith("protection-")]
