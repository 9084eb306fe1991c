"""Under CI a backend whose package make test installs must be available: its test
fails instead of skipping (tests/support/targets.py, skip_unavailable), so that a broken
install or a broken probe cannot pass as a skip. What the kernel lacks still skips."""

from __future__ import annotations

import pytest

from tests.support import targets


def test_make_test_installs_the_fuse_tools_and_the_lab() -> None:
    assert {
        "gocryptfs",
        "securefs",
        "cryfs",
        "encfs",
        "rclone",
        "fscrypt",
        "qemu-system-x86",
    } <= targets.installed_by_make()


def test_a_backend_whose_package_make_test_installs_fails_where_it_must_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(targets, "REQUIRE_INSTALLED", True)
    # a probe broken on purpose: a wrong tool name, the package right
    with pytest.raises(pytest.fail.Exception, match="although make test installs gocryptfs"):
        targets.skip_unavailable("gocryptfs", "gocryptfz is not installed (apt-get install gocryptfs)")
    # what make test does not install, and what the kernel lacks, still skip
    with pytest.raises(pytest.skip.Exception, match="veracrypt unavailable here"):
        targets.skip_unavailable("veracrypt", "veracrypt is not installed (apt-get install veracrypt)")
    with pytest.raises(pytest.skip.Exception, match="this kernel has no device-mapper"):
        targets.skip_unavailable("luks-aes256", "this kernel has no device-mapper (CONFIG_BLK_DEV_DM)")


def test_outside_ci_every_unavailable_backend_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(targets, "REQUIRE_INSTALLED", False)
    with pytest.raises(pytest.skip.Exception, match="gocryptfs unavailable here: gocryptfz"):
        targets.skip_unavailable("gocryptfs", "gocryptfz is not installed (apt-get install gocryptfs)")
