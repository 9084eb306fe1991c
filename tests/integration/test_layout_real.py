"""trial/layout.lay_out with real fio: the data file written whole, a full filesystem
stopping the run, and any other failure losing the target with fio's words."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cryptbench.backends.base import Target
from cryptbench.machine.session import Session
from cryptbench.model.errors import DiskFull, ProvisionError
from cryptbench.trial.context import DATA_FILE, Sizing, TrialContext
from cryptbench.trial.layout import lay_out
from tests.support.sessions import scratch_session

pytestmark = [pytest.mark.integration, pytest.mark.beside]

MIB = 1 << 20


@pytest.fixture
def tiny(tmp_path: Path) -> Iterator[Path]:
    """A 24 MiB tmpfs: room for a session and a small data file, not for a large one."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


@pytest.fixture
def session(tiny: Path) -> Iterator[Session]:
    with scratch_session(tiny) as s:
        yield s


def _target(session: Session, name: str) -> Target:
    path = session.path("targets", name)
    path.mkdir(parents=True, exist_ok=True)
    return Target(name, "plain", False, None, path, (path,))


def test_the_data_file_is_written_whole_and_a_short_one_made_anew(session: Session) -> None:
    ctx = TrialContext(session, None, 1, 4 * MIB, "psync", False)
    target = _target(session, "plain")
    (target.path / DATA_FILE).write_bytes(b"short")  # left by a failed write
    left = (target.path / DATA_FILE).stat().st_ino
    lay_out(ctx, target, "plain", Sizing(ctx.size).layout_size(False), 7)
    made = (target.path / DATA_FILE).stat()
    assert made.st_size == 4 * MIB
    assert made.st_ino != left  # a new file, written from its start, not the short one extended
    assert "size=4194304" in session.path("jobs", "layout-plain.fio").read_text()


def test_a_full_filesystem_stops_the_run(session: Session) -> None:
    ctx = TrialContext(session, None, 1, 64 * MIB, "psync", False)
    with pytest.raises(DiskFull, match=r"filled up during the data file's layout on plain .*No space left"):
        lay_out(ctx, _target(session, "plain"), "plain", Sizing(ctx.size).layout_size(False), 7)


def test_another_failure_loses_the_target_with_fios_words(session: Session) -> None:
    # an engine fio cannot load: fio fails before any I/O, and says why
    ctx = TrialContext(session, None, 1, 4 * MIB, "no-such-engine", False)
    with pytest.raises(
        ProvisionError,
        match=r"data file on plain: fio exited with status 1: fio: failed to load engine",
    ):
        lay_out(ctx, _target(session, "plain"), "plain", Sizing(ctx.size).layout_size(False), 7)
