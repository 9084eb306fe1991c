"""docs/architecture.md's recipe "A LUKS variant", followed once: AES-128-XTS with 512-byte
sectors, held to luks-aes128, added as the recipe says (one row of backends/luks.py's
VARIANTS), here in the test, not in the product.

This kernel has no device-mapper, so the row is checked as far as a run gets here: the
backend the row makes, its availability and the plan's skip with the reason the user
sees, and the option's kind and explanation the diagnosis reads. The kernel lab runs
every row of VARIANTS for real (tests/lab/test_luks.py iterates it), so a row added to
the product is provisioned there with nothing more to write."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from cryptbench.analysis import option_effects
from cryptbench.backends import REGISTRY
from cryptbench.backends.luks import LuksBackend
from cryptbench.backends.luks_variants import SECTOR_SIZE, VARIANTS, Variant
from cryptbench.model.errors import UnavailableError
from cryptbench.model.option_kinds import OptionKind
from cryptbench.model.result import TargetInfo
from tests.support.documents import plan_with

NAME = "luks-aes128-sector512"
# the recipe's row: key bits, sector, flags, label, the target it varies, its option's kind
ROW = Variant(256, 512, (), "512-byte sectors", "luks-aes128", option=OptionKind.SECTOR)


@pytest.fixture
def added(monkeypatch: pytest.MonkeyPatch) -> LuksBackend:
    monkeypatch.setitem(VARIANTS, NAME, ROW)
    backend = LuksBackend(NAME)  # luks_backends() makes one per row; the registry lists them
    monkeypatch.setitem(REGISTRY, NAME, backend)
    return backend


def test_a_variant_row_makes_a_whole_backend(added: LuksBackend) -> None:
    assert added.summary == "dm-crypt LUKS2 (AES-128-XTS, 512-byte sectors) on a loop device, ext4 on top"
    assert added.cipher_label == "aes-xts-plain64, 256-bit key, 512-byte sectors"
    assert added.variant.table_options == ()  # 512-byte sectors are dm-crypt's default: no option shown
    assert VARIANTS["luks-aes128"].sector == SECTOR_SIZE  # it varies one choice of its parent
    assert added.baseline == "ext4-loop" and added.programs == ("cryptsetup", "dmsetup")
    assert added.declared()["tamper"][0] == "silent"  # no --integrity: no tags


def test_the_plan_runs_it_or_says_why_not(added: LuksBackend, tmp_path: Path) -> None:
    avail = added.probe()
    if avail.ok:  # a kernel with dm-crypt (the lab's)
        assert NAME in [t.name for t in plan_with(tmp_path, backends=f"plain,{NAME}").targets]
        return
    # this VM's: no device-mapper; asked for by name, the run refuses with the reason
    # `cryptbench backends` gives
    with pytest.raises(UnavailableError) as refused:
        plan_with(tmp_path, backends=f"plain,{NAME}")
    assert str(refused.value) == f"backend {NAME} is not available here: {avail.reason}"


def test_its_option_is_explained_from_its_own_row(added: LuksBackend) -> None:
    target = cast(TargetInfo, SimpleNamespace(backend=NAME))
    assert option_effects.kind_of(target) is OptionKind.SECTOR
    assert "512-byte sectors take eight cipher calls" in OptionKind.SECTOR.why(faster=False)
