"""Each backend, provisioned for real, proven, probed and torn down."""

from __future__ import annotations

import subprocess
from pathlib import Path

import psutil
import pytest

from cryptbench.backends import REGISTRY, DirectIO
from cryptbench.measure.environment import kernel_driver
from cryptbench.session import Session
from cryptbench.system import mount_entry
from cryptbench.verify import marker_in_backing, probe_direct_io

SIZE = 8 << 20


def _available(name: str) -> None:
    avail = REGISTRY[name].probe()
    if not avail.ok:
        pytest.skip(f"{name} unavailable here: {avail.reason}")


def test_plain(target_dir: Path) -> None:
    session = Session.create(target_dir)
    try:
        with REGISTRY["plain"].provision(session, SIZE) as t:
            assert t.path.is_dir() and t.path.is_relative_to(session.run_dir)
            assert marker_in_backing(t) is True
            assert probe_direct_io(t)[0] is DirectIO.HONOURED
    finally:
        session.close()


def test_ext4_loop(target_dir: Path) -> None:
    _available("ext4-loop")
    session = Session.create(target_dir)
    try:
        with REGISTRY["ext4-loop"].provision(session, SIZE) as t:
            entry = mount_entry(t.path.parent)
            assert entry is not None and entry.fstype == "ext4"
            assert t.details["loop_direct_io"] == "1"
            # the positive control: plaintext is findable in an unencrypted image
            assert marker_in_backing(t) is True
            assert probe_direct_io(t)[0] is DirectIO.HONOURED
    finally:
        session.close()


def test_fscrypt(target_dir: Path) -> None:
    _available("fscrypt")
    session = Session.create(target_dir)
    try:
        with REGISTRY["fscrypt"].provision(session, SIZE) as t:
            # An independent tool agrees the directory is encrypted (the E flag).
            flags = subprocess.run(["lsattr", "-d", str(t.path)], capture_output=True, text=True, check=True)
            assert "E" in flags.stdout.split()[0]
            assert t.details["policy"].startswith("v2, contents AES-256-XTS")
            assert marker_in_backing(t) is False
            assert probe_direct_io(t)[0] is DirectIO.BUFFERED
            assert kernel_driver("xts(aes)") is not None  # fscrypt instantiated it
            mountpoint = t.path.parent
        # the key is gone with the mount
        assert mount_entry(mountpoint) is None
    finally:
        session.close()


def test_gocryptfs(target_dir: Path) -> None:
    _available("gocryptfs")
    session = Session.create(target_dir)
    try:
        with REGISTRY["gocryptfs"].provision(session, SIZE) as t:
            entry = mount_entry(t.path)
            assert entry is not None and entry.fstype == "fuse.gocryptfs"
            cipher = t.backing[0]
            assert (cipher / "gocryptfs.conf").is_file()
            assert not (cipher.parent / "password").exists()  # removed once mounted
            (helper,) = t.helpers
            assert psutil.Process(helper.pid).name() == "gocryptfs"
            assert marker_in_backing(t) is False
            assert probe_direct_io(t)[0] is DirectIO.BUFFERED
            pid = helper.pid
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    finally:
        session.close()


def test_secrets_never_on_a_command_line(target_dir: Path) -> None:
    _available("gocryptfs")
    session = Session.create(target_dir)
    try:
        with REGISTRY["gocryptfs"].provision(session, SIZE) as t:
            cmdline = psutil.Process(t.helpers[0].pid).cmdline()
            assert "-passfile" in cmdline
            assert not any(arg.startswith("-extpass") or arg == "-password" for arg in cmdline)
    finally:
        session.close()
