"""The ZFS targets' own decisions, without ZFS (the lab runs them whole: tests/lab/test_zfs.py):
why they cannot run here, how big a pool is made, what each declares it hides, what reaches
a command line, and the pool names `cleanup` finds them by."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from cryptbench.backends import REGISTRY, zfs
from cryptbench.backends.base import TargetSpec
from cryptbench.machine import resources
from cryptbench.model.vocabulary import Property, Verdict


def test_a_kernel_that_cannot_load_modules_is_named_before_any_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(zfs, "MODULE", tmp_path / "no-zfs-loaded")
    installed: set[str] = set()  # nor are the programs there, at first
    monkeypatch.setattr(zfs, "which", lambda program: f"/sbin/{program}" if program in installed else None)
    assert zfs.zfs_missing(modules=tmp_path / "no-proc-modules") == (
        "no ZFS: this kernel cannot load modules (built without them), and ZFS is one (zfs-dkms)"
    )
    (tmp_path / "modules").write_text("")
    built: set[str] = set()
    monkeypatch.setattr(zfs, "kernel_module", lambda name: "module" if name in built else None)
    why = zfs.zfs_missing(modules=tmp_path / "modules")
    assert why is not None and why.startswith("no zfs module for this kernel") and "zfs-dkms" in why
    built.add("zfs")
    assert zfs.zfs_missing(modules=tmp_path / "modules") == f"zpool is not installed ({zfs.INSTALL})"
    installed.add("zpool")
    assert zfs.zfs_missing(modules=tmp_path / "modules") == f"zfs is not installed ({zfs.INSTALL})"
    installed.add("zfs")
    assert zfs.zfs_missing(modules=tmp_path / "modules") is None
    (tmp_path / "no-zfs-loaded").mkdir()  # loaded: no module file needed
    built.clear()
    assert zfs.zfs_missing(modules=tmp_path / "no-proc-modules") is None


def test_the_pool_holds_the_data_its_slop_and_under_luks_the_header() -> None:
    data = 64 << 20
    plain = zfs.pool_size(zfs.Encryption.NONE, data)
    assert plain >= data + (128 << 20)  # ZFS keeps up to 128 MiB of a pool back (its slop space)
    assert zfs.pool_size(zfs.Encryption.NATIVE, data) == plain
    assert zfs.pool_size(zfs.Encryption.LUKS, data) == plain + zfs.LUKS2_HEADER
    assert zfs.pool_size(zfs.Encryption.NONE, 8 * data) > plain + 7 * data
    assert isinstance(plain, int) and plain == data + data // 8 + zfs.POOL_SPARE


def test_each_target_is_made_from_its_layout() -> None:
    made = {b.name: b for b in (zfs.ZfsBackend(layout) for layout in zfs.LAYOUTS)}
    assert {n: (b.encrypted, b.baseline) for n, b in made.items()} == {
        "zfs": (False, "plain"),
        "zfs-native": (True, "zfs"),
        "zfs-on-luks": (True, "zfs"),
    }
    assert made["zfs"].cipher_use is None
    native, luks = made["zfs-native"].cipher_use, made["zfs-on-luks"].cipher_use
    assert native is not None and luks is not None
    assert (native.where, native.algorithm, native.unit) == ("kernel", "gcm(aes)", 4096)
    assert (luks.where, luks.algorithm, luks.unit) == ("kernel", "xts(aes)", 4096)
    assert native.parallel and luks.parallel
    assert all(b.summary == layout.summary for b, layout in zip(made.values(), zfs.LAYOUTS, strict=True))
    # what `backends` says before a run: the settings data that compresses would turn on
    assert all("recordsize=128K, compression=off" in b.summary for b in made.values())
    assert [b.name for b in zfs.zfs_backends()] == list(made)


def test_each_declares_what_openzfs_says_and_which_tamper_check_is_a_mac() -> None:
    said = {name: REGISTRY[name].declared() for name in ("zfs", "zfs-native", "zfs-on-luks")}
    assert {n: d[Property.TAMPER][0] for n, d in said.items()} == {
        "zfs": Verdict.CHECKED,
        "zfs-native": Verdict.DETECTED,
        "zfs-on-luks": Verdict.CHECKED,
    }
    native = said["zfs-native"]
    assert native[Property.CONTENTS][0] is Verdict.HIDDEN and native[Property.NAMES][0] is Verdict.HIDDEN
    # file sizes are not encrypted; directory listings are, so which directory holds which
    # file is hidden, while the dataset hierarchy the source names is not
    assert native[Property.SIZES][0] is Verdict.SHOWN and native[Property.TREE][0] is Verdict.HIDDEN
    assert "dataset hierarchy is not" in native[Property.TREE][1]
    assert all(zfs.DOCS in source for _v, source in native.values())
    assert {v for p, (v, _s) in said["zfs-on-luks"].items() if p != Property.TAMPER} == {Verdict.HIDDEN}
    assert said["zfs"][Property.CONTENTS][0] is Verdict.SHOWN
    # a reader is told which failure is a checksum and which a MAC, and where it is written
    for name in ("zfs", "zfs-on-luks"):
        assert said[name][Property.TAMPER][1].startswith("ZFS checksums every block (fletcher4")
    assert said["zfs-on-luks"][Property.CONTENTS][1].startswith("cryptsetup(8), dm-crypt")
    assert "directory listings are encrypted" in native[Property.TREE][1]


def test_the_key_reaches_zfs_as_a_file_never_a_command_line(tmp_path: Path) -> None:
    key = tmp_path / "secret" / "zfs-key"
    native = REGISTRY["zfs-native"]
    assert isinstance(native, zfs.ZfsBackend)
    options = native._dataset_options(key)
    pairs = dict(o.split("=", 1) for o in options[1::2])
    assert options[0::2] == ["-o"] * len(pairs)
    assert pairs["encryption"] == "aes-256-gcm" and pairs["keyformat"] == "raw"
    assert pairs["keylocation"] == f"file://{key}"
    assert pairs["mountpoint"] == "/data"  # under the pool's altroot, inside the scratch space
    assert {k: pairs[k] for k in ("recordsize", "compression", "atime")} == {
        "recordsize": "128K",
        "compression": "off",
        "atime": "off",
    }
    plain = REGISTRY["zfs"]
    assert isinstance(plain, zfs.ZfsBackend)
    assert not any(o.startswith(("encryption", "key")) for o in plain._dataset_options(None))


def test_pools_are_named_after_the_run_so_cleanup_finds_only_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = SimpleNamespace(run_dir=tmp_path / "run-20261202-abc")
    name = zfs.pool_name(session, TargetSpec("zfs-native"), "1")  # type: ignore[arg-type]
    assert name == "cryptbench-run-20261202-abc-zfs-native-1"
    listed = "cryptbench-run-20261202-abc-zfs-1\ncryptbench-run-20261202-abcd-zfs-1\ntank\n"
    monkeypatch.setattr(resources, "which", lambda program: "/sbin/zpool")
    monkeypatch.setattr(
        resources.subprocess,
        "run",
        lambda argv, **kw: SimpleNamespace(returncode=0, stdout=listed.encode()),
    )
    assert resources.zpool_names("cryptbench-run-20261202-abc-") == ["cryptbench-run-20261202-abc-zfs-1"]


def test_without_zpool_there_is_no_pool_to_export(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resources, "which", lambda program: None)
    assert resources.ZfsPool("cryptbench-run-x-zfs-1").release() is None
    assert resources.zpool_names("cryptbench-") == []
