"""The protection probes on the backends this host's kernel lacks, read from the lab's
shared run of them (conftest.py): LUKS containers hide everything; eCryptfs pads sizes
to 4 KiB; fscrypt with Adiantum hides names only, as fscrypt does with AES."""

from __future__ import annotations

import pytest

from cryptbench.backends.luks import VARIANTS
from tests.lab import FinishedRun

pytestmark = [pytest.mark.lab, pytest.mark.integration]

PROPERTIES = ("contents", "names", "sizes", "tree")


def _verdicts(run: FinishedRun) -> dict[str, tuple[str, ...]]:
    out = {}
    for t in run.doc["targets"]:
        p = t["protection"]
        assert "broken" not in p, p["broken"]
        print(t["name"], p["sight"], {prop: p[prop]["evidence"] for prop in PROPERTIES})
        out[t["name"]] = tuple(p[prop]["verdict"] for prop in PROPERTIES)
    return out


def test_what_each_kernel_only_backend_hides(kernel_only_run: FinishedRun) -> None:
    seen = _verdicts(kernel_only_run)
    for name in VARIANTS:
        assert seen[name] == ("hidden",) * 4, name
    assert seen["fscrypt-adiantum"] == ("hidden", "hidden", "shown", "shown")
    assert seen["ecryptfs"] == ("hidden", "hidden", "block", "shown")
    assert seen["plain"] == seen["ext4-loop"] == ("shown",) * 4  # the positive controls
    targets = {t["name"]: t for t in kernel_only_run.doc["targets"]}
    assert targets["luks-aes256"]["protection"]["sight"] == "LUKS container"
    assert targets["ecryptfs"]["protection"]["sizes"]["detail"]["block"] == 4096
    assert not [w for w in kernel_only_run.doc["warnings"] if w["kind"].startswith("protection-")]
