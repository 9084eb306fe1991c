"""Each backend, provisioned for real, proven, probed and torn down."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import psutil
import pytest

from cryptbench.backends import DirectIO
from cryptbench.machine.system import mount_entry
from cryptbench.measure.environment import kernel_driver
from cryptbench.pipeline.verify import marker_in_backing, probe_direct_io
from tests.support.cli import cli
from tests.support.targets import provisioned

pytestmark = pytest.mark.integration

SIZE = 8 << 20


def test_plain(target_dir: Path) -> None:
    with provisioned(target_dir, "plain", SIZE) as (session, t):
        assert t.path.is_dir() and t.path.is_relative_to(session.run_dir)
        assert marker_in_backing(session, t) is True
        assert probe_direct_io(session, t)[0] is DirectIO.HONOURED


def test_ext4_loop(target_dir: Path) -> None:
    with provisioned(target_dir, "ext4-loop", SIZE) as (session, t):
        entry = mount_entry(t.path.parent)
        assert entry is not None and entry.fstype == "ext4"
        assert t.details["loop_direct_io"] == "1"
        # the positive control: plaintext is findable in an unencrypted image
        assert marker_in_backing(session, t) is True
        assert probe_direct_io(session, t)[0] is DirectIO.HONOURED


def test_fscrypt(target_dir: Path) -> None:
    with provisioned(target_dir, "fscrypt", SIZE) as (session, t):
        # An independent tool agrees the directory is encrypted (the E flag).
        flags = subprocess.run(["lsattr", "-d", str(t.path)], capture_output=True, text=True, check=True)
        assert "E" in flags.stdout.split()[0]
        assert t.details["policy"].startswith("v2, contents AES-256-XTS")
        assert marker_in_backing(session, t) is False
        assert probe_direct_io(session, t)[0] is DirectIO.BUFFERED
        assert kernel_driver("xts(aes)") is not None  # fscrypt instantiated it
        mountpoint = t.path.parent
    assert mount_entry(mountpoint) is None  # and the key went with the mount


def test_gocryptfs(target_dir: Path) -> None:
    with provisioned(target_dir, "gocryptfs", SIZE) as (session, t):
        entry = mount_entry(t.path)
        assert entry is not None and entry.fstype == "fuse.gocryptfs"
        cipher = t.backing[0]
        assert (cipher / "gocryptfs.conf").is_file()
        assert not (cipher.parent / "password").exists()  # removed once mounted
        (helper,) = t.helpers
        assert psutil.Process(helper.pid).name() == "gocryptfs"
        # the password travels through a file, never an argument
        cmdline = psutil.Process(helper.pid).cmdline()
        assert "-passfile" in cmdline and "-password" not in cmdline
        assert marker_in_backing(session, t) is False
        assert probe_direct_io(session, t)[0] is DirectIO.BUFFERED
        pid = helper.pid
    assert not psutil.pid_exists(pid), psutil.Process(pid).as_dict(["status", "ppid", "name", "cmdline"])


@pytest.mark.beside  # refused or read before anything is made: lane 2
def test_backends_reads_at_80_columns() -> None:
    """`cryptbench backends` as a user sees it in an 80-column terminal: nothing wider,
    every backend's paragraph (what it is, or why it is not here) over at most two lines
    after the names it is about."""
    env = {**os.environ, "COLUMNS": "80"}
    shown = cli("backends", env=env)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert max(map(len, lines)) <= 80
    rows = json.loads(cli("backends", "--json").stdout)
    paragraphs = [i for i, line in enumerate(lines) if line.startswith("  ") and not line.startswith("    ")]
    for start, end in zip(paragraphs, [*paragraphs[1:], len(lines)], strict=True):
        # A reason shared by several backends follows their names, which may fill lines of
        # their own (eight LUKS targets where there is no device-mapper); the reason itself
        # starts on the line holding the last name and goes on over at most one more.
        said = [lines[start], *(line for line in lines[start + 1 : end] if line.startswith("    "))]
        begins = next(i for i, line in enumerate(said) if ": " in line)
        assert len(said) - begins <= 2, said
    for r in rows:
        assert any(lines[i].startswith(f"  {r['name']}: ") for i in paragraphs), r["name"]
    for r in rows:
        if not r["available"]:
            assert r["reason"].split()[0] in shown.stdout
