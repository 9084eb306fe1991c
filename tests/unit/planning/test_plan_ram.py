"""--ram: which twins a plan makes, what they are compared with, and how their io mode is chosen."""

from __future__ import annotations

from pathlib import Path

import pytest

from cryptbench.analysis.document import _baselines
from cryptbench.backends import DirectIO, Target
from cryptbench.model.errors import UsageError
from cryptbench.model.result import TargetInfo
from cryptbench.trial.provisioned import decide_io_modes
from tests.support.documents import plan_with
from tests.support.targets import ram_requires_root


def _plan(tmp_path: Path, backends: str, **over: object):  # type: ignore[no-untyped-def]
    return plan_with(tmp_path, **{"backends": backends, "ram": True, **over})


@ram_requires_root
def test_every_target_gets_a_ram_twin_compared_within_its_medium(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "ext4-loop")
    names = [t.name for t in plan.targets]
    assert names == ["plain", "ext4-loop", "ram:plain", "ram:ext4-loop"]
    by_name = {t.name: t for t in plan.targets}
    assert plan.baselines[by_name["ram:ext4-loop"].name] == "ram:plain"
    assert plan.baselines[by_name["ext4-loop"].name] == "plain"
    assert by_name["ram:ext4-loop"].slug == "ram-ext4-loop"
    # the tmpfs holds the twins' images, not the device targets'
    assert plan.ram_bytes > 8 << 20
    assert plan.to_json()["ram"] is True


@ram_requires_root
def test_a_throttle_has_no_ram_twin(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "plain-twin", suite="quick")
    assert [t.name for t in plan.targets] == ["plain", "plain-twin", "ram:plain", "ram:plain-twin"]


@ram_requires_root
def test_more_ram_than_there_is_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"--ram needs .* of memory"):
        _plan(tmp_path, "plain", size="64G", repeats=1, max_bytes="1G")


def test_without_ram_no_twin(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "plain", ram=False)
    assert [t.name for t in plan.targets] == ["plain"]
    assert plan.ram_bytes == 0


def _target(name: str, direct: DirectIO, medium: str = "device") -> Target:
    t = Target(name, name.removeprefix("ram:"), False, None, Path("/x"), (), direct_io=direct)
    t.medium = medium
    return t


def test_ram_twins_follow_the_device_targets_io_mode() -> None:
    honoured = {
        "plain": _target("plain", DirectIO.HONOURED),
        # tmpfs pages are resident by nature: the probe says buffered
        "ram:plain": _target("ram:plain", DirectIO.BUFFERED, "ram"),
    }
    modes, note = decide_io_modes("auto", honoured)
    assert modes == {"plain": True, "ram:plain": True}
    assert note is not None and "each honours O_DIRECT" in note
    buffered = {**honoured, "fscrypt": _target("fscrypt", DirectIO.BUFFERED)}
    modes, _ = decide_io_modes("auto", buffered)
    assert modes == {"plain": False, "ram:plain": False, "fscrypt": False}
    refused = {**honoured, "ram:x": _target("ram:x", DirectIO.REFUSED, "ram")}
    modes, _ = decide_io_modes("direct", refused)
    assert modes["ram:x"] is False and modes["ram:plain"] is True


def test_comparisons_stay_within_a_medium_and_twins_show_the_device() -> None:
    tmap = {
        n: TargetInfo(
            n,
            n.removeprefix("ram:"),
            b,
            False,
            "buffered",
            None,
            None,
            None,
            None,
            {},
            medium="ram" if n.startswith("ram:") else "device",
        )
        for n, b in (
            ("plain", None),
            ("ext4-loop", "plain"),
            ("fscrypt", "ext4-loop"),
            ("ram:plain", None),
            ("ram:ext4-loop", "ram:plain"),
            ("ram:fscrypt", "ram:ext4-loop"),
        )
    }
    assert _baselines(tmap["ram:fscrypt"], tmap) == [("ram:ext4-loop", "baseline"), ("ram:plain", "plain")]
    assert _baselines(tmap["ram:plain"], tmap) == []
    assert _baselines(tmap["fscrypt"], tmap) == [
        ("ext4-loop", "baseline"),
        ("plain", "plain"),
        ("ram:fscrypt", "ram"),
    ]
    assert _baselines(tmap["plain"], tmap) == [("ram:plain", "ram")]
