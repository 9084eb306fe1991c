"""fscrypt-inline on this machine's kernel: ext4 takes `-o inlinecrypt` and mounts without
it where the kernel was built without inline encryption ("inline encryption not supported"
in its log). Measured as it stands, that target would be plain fscrypt under another name:
the backend must refuse it. Where a kernel honours the option, the target says which path
encrypts. Neither Debian kernel of the lab builds blk-crypto-fallback (docs/backends.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cryptbench.backends import REGISTRY, TargetSpec
from cryptbench.machine.session import Session
from cryptbench.machine.system import mount_entry
from cryptbench.model.errors import ProvisionError
from tests.support.targets import need_backend, requires_root

pytestmark = [pytest.mark.integration, requires_root]


def test_an_ignored_inlinecrypt_is_refused_and_an_honoured_one_recorded(target_dir: Path) -> None:
    need_backend("fscrypt")  # ext4 with encryption on a loop device: what the variant builds on
    backend = REGISTRY["fscrypt-inline"]
    honoured = backend.probe().ok
    session = Session.create(target_dir)
    try:
        if honoured:
            with backend.provision(session, TargetSpec("fscrypt-inline"), 4 << 20) as target:
                entry = mount_entry(target.path.parent)
                assert entry is not None and "inlinecrypt" in entry.options.split(",")
                assert target.details["inline_encryption"].startswith(
                    "mounted with inlinecrypt; encrypted by "
                )
        else:  # provisioned past its probe: the kernel's own behaviour is what is tested
            ignored = "the kernel mounted ext4 without inlinecrypt"
            with (
                pytest.raises(ProvisionError, match=ignored),
                backend.provision(session, TargetSpec("fscrypt-inline"), 4 << 20),
            ):
                pass
    finally:
        session.close()
