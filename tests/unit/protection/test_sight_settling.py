"""The protection probes look at a backing only once what was written has reached it:
synced, an ext4 image's journal checkpointed, and a daemon's write-behind (CryFS's block
cache) waited out. A probe that looked too early would read a backing without the
probe's files and call names, sizes or the tree hidden when they are not.

Each test spies on the waits the probes make (sync, checkpoint, write-behind, sleep)
instead of making them, and checks which are made and in what order."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from cryptbench.backends.base import Target
from cryptbench.machine.session import Session
from cryptbench.protection import probes
from cryptbench.protection.blocks import Blocks
from cryptbench.protection.sight import LUKS_MAGIC, Sight


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the probes did to settle the backing, in order: 'sync', 'write-behind <target>',
    'checkpoint <mount>'."""
    done: list[str] = []
    monkeypatch.setattr(probes, "durable", lambda: done.append("sync"))
    monkeypatch.setattr(probes, "wait_write_behind", lambda t: done.append(f"write-behind {t.name}"))
    monkeypatch.setattr(probes, "checkpoint", lambda mount: done.append(f"checkpoint {mount}"))
    return done


def _target(path: Path, backing: Path, write_behind: float = 0.0) -> Target:
    return Target("t", "t", True, None, path, (backing,), write_behind=write_behind)


@pytest.mark.parametrize(
    ("write_behind", "complete", "expected"),
    [
        (1.0, True, ["sync", "write-behind t", "sync"]),  # the daemon's blocks, then made durable
        (1.0, False, ["sync"]),  # a look that may wait for a change needs only the sync
        (0.0, True, ["sync"]),  # no daemon keeps blocks: nothing to wait out
    ],
    ids=["daemon-complete", "daemon-a-look", "no-daemon"],
)
def test_only_a_complete_settle_waits_out_a_daemons_write_behind(
    tmp_path: Path, waits: list[str], write_behind: float, complete: bool, expected: list[str]
) -> None:
    probes._settled(_target(tmp_path, tmp_path, write_behind), complete=complete)
    assert waits == expected


@pytest.mark.parametrize("complete", [True, False], ids=["complete", "a-look"])
def test_a_layers_own_commit_follows_the_sync_on_every_settle(
    tmp_path: Path, waits: list[str], complete: bool
) -> None:
    """zdb reads a ZFS pool's last transaction group on disk: sync(2) commits its intent log
    only, so every look first ends the write as the target ends one (`zpool sync`)."""
    target = dataclasses.replace(_target(tmp_path, tmp_path), end_write=lambda: waits.append("end_write"))
    probes._settled(target, complete=complete)
    assert waits == ["sync", "end_write"]


def test_a_settle_is_a_look_unless_asked_to_be_complete(tmp_path: Path, waits: list[str]) -> None:
    """Every look that waits for a change settles without the write-behind's wait: CryFS's
    second and more, on each of the twenty looks FLUSH_WAIT allows."""
    probes._settled(_target(tmp_path, tmp_path, 1.0))
    assert waits == ["sync"]


def test_an_image_a_reader_sees_into_has_its_mount_checkpointed(tmp_path: Path, waits: list[str]) -> None:
    """debugfs reads an ext4 image without replaying its journal: the filesystem the image
    is mounted from is frozen and thawed first, after the sync."""
    image = tmp_path / "ext4.img"
    image.write_bytes(bytes(8192))
    mounted = tmp_path / "mnt"
    mounted.mkdir()
    probes._settled(_target(mounted, image))
    assert waits == ["sync", f"checkpoint {probes._mountpoint(mounted)}"]


@pytest.mark.parametrize("kind", ["directory", "luks"])
def test_a_directory_or_a_container_is_not_checkpointed(tmp_path: Path, waits: list[str], kind: str) -> None:
    backing = tmp_path / "cipher"
    if kind == "directory":
        backing.mkdir()
    else:
        backing.write_bytes(LUKS_MAGIC + bytes(8192))
    probes._settled(_target(tmp_path, backing))
    assert waits == ["sync"]


def test_the_mountpoint_is_the_nearest_mounted_ancestor() -> None:
    assert probes._mountpoint(Path("/proc/self/fd")) == Path("/proc")
    assert probes._mountpoint(Path("/proc")) == Path("/proc")
    assert probes._mountpoint(Path("/")) == Path("/")


class Clock:
    """The probes' time: sleeping moves it on, so FLUSH_WAIT runs out without waiting."""

    def __init__(self) -> None:
        self.now = 1000.0  # seconds
        self.slept: list[float] = []  # seconds of each sleep

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(probes, "time", SimpleNamespace(monotonic=lambda: c.now, sleep=c.sleep))
    return c


@pytest.fixture
def settles(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each _settled call's `complete`."""
    done: list[bool] = []
    monkeypatch.setattr(probes, "_settled", lambda target, complete=False: done.append(complete))
    return done


def _looks(values: list[list[str]]) -> tuple[Callable[[], list[str]], list[list[str]]]:
    """A look returning `values` in turn (the last one again once they run out), and what it returned."""
    returned: list[list[str]] = []

    def look() -> list[str]:
        returned.append(list(values[min(len(returned), len(values) - 1)]))
        return returned[-1]

    return look, returned


def test_a_first_look_waits_for_every_write_and_looks_once(
    tmp_path: Path, clock: Clock, settles: list[bool]
) -> None:
    look, returned = _looks([["a"]])
    assert probes.until_changed(_target(tmp_path, tmp_path, 1.0), look, None) == ["a"]
    assert settles == [True] and len(returned) == 1 and clock.slept == []


def test_an_unchanged_backing_is_looked_at_again_every_quarter_second_until_it_changes(
    tmp_path: Path, clock: Clock, settles: list[bool]
) -> None:
    look, returned = _looks([["a"], ["a"], ["a", "b"]])
    assert probes.until_changed(_target(tmp_path, tmp_path), look, ["a"]) == ["a", "b"]
    assert clock.slept == [0.25, 0.25]
    assert settles == [False, False, False]  # settled before each look, a sync each time
    assert len(returned) == 3


def test_a_backing_that_never_changes_is_given_flush_wait_and_the_last_look_returned(
    tmp_path: Path, clock: Clock, settles: list[bool]
) -> None:
    look, returned = _looks([["a"]])
    seen = probes.until_changed(_target(tmp_path, tmp_path), look, ["a"])
    assert sum(clock.slept) == probes.FLUSH_WAIT and set(clock.slept) == {0.25}
    assert seen is returned[-1]  # the last look, not the first nor the caller's
    assert len(returned) == len(clock.slept) + 1 == len(settles)


def test_a_look_not_given_time_is_made_once(tmp_path: Path, clock: Clock, settles: list[bool]) -> None:
    look, returned = _looks([["a"]])
    assert probes.until_changed(_target(tmp_path, tmp_path), look, ["a"], wait=False) == ["a"]
    assert clock.slept == [] and settles == [False] and len(returned) == 1


def test_each_look_of_a_probe_waits_for_a_change_from_the_look_before(
    dir_target: tuple[Session, Target], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first look waits for every write (no look before it); each later one is given
    time to differ from the one before, so that a write the daemon has not yet flushed is
    not taken for a write that left no trace."""
    session, target = dir_target
    befores: list[Sight | None] = []
    seen: list[Sight] = []
    real = probes.settled_sight

    def spy(t: Target, before: Sight | None) -> Sight:
        befores.append(before)
        seen.append(real(t, before))
        return seen[-1]

    monkeypatch.setattr(probes, "settled_sight", spy)
    probes.probe(session, target)
    assert len(seen) > 3 and befores[0] is None
    assert all(b is s for b, s in zip(befores[1:], seen, strict=False))


def test_a_probe_digests_the_backing_again_once_it_changed_from_the_digest_before(
    dir_target: tuple[Session, Target], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tamper probe and the space measure digest the backing after each write: a digest
    is waited on until it differs from the one before (a daemon's write-behind), not taken
    as it is, which would find a flip or a write missing from the backing."""
    session, target = dir_target
    befores: list[object] = []
    real = probes.until_changed

    def spy(t: Target, look: Callable[[], object], before: object, wait: bool = True) -> object:
        befores.append(before)
        return real(t, look, before, wait)

    monkeypatch.setattr(probes, "until_changed", spy)
    probes.probe(session, target)
    assert any(isinstance(b, Blocks) for b in befores)


def test_the_space_measure_counts_after_the_daemons_write_behind(
    dir_target: tuple[Session, Target], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The space measure counts the backing's bytes: before a daemon's write-behind is out,
    it would count too few."""
    session, target = dir_target
    target = dataclasses.replace(target, write_behind=1.0)
    waited: list[str] = []
    monkeypatch.setattr(probes, "wait_write_behind", lambda t: waited.append(t.name))

    def measure(t: Target, folder: Path, settled: object, complete: Callable[[], None], fixed: int) -> dict:
        waited.clear()  # the looks before it waited too; only the measure's own wait counts
        complete()
        return {"complete waited": list(waited)}

    monkeypatch.setattr(probes, "measure", measure)
    found = probes.probe(session, target)
    assert found.space == {"complete waited": ["plain"]}
