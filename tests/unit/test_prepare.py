"""Before each trial: stateful targets are made anew before writes, new-file suites
delete the old file, and reads get a missing data file laid out again."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cryptbench.backends.base import Target
from cryptbench.machine.session import Session
from cryptbench.planning.suite import WorkloadSpec
from cryptbench.trial.context import DATA_FILE, TrialContext, TrialSpec
from cryptbench.trial.runner import prepare

WRITE = WorkloadSpec("write", "write", 1 << 20, 1)
READ = WorkloadSpec("read", "read", 1 << 20, 1)
SIZE = 4 << 20


class FakeTargets:
    """Targets whose provisioning is a directory: enough to see what prepare does."""

    def __init__(self, session: Session, state: str | None) -> None:
        self.session = session
        self.state = state
        self.resets = 0
        self.layouts = 0
        self.current = self._make()

    def _make(self) -> Target:
        path = self.session.path("targets", f"t{self.resets}")
        path.mkdir(parents=True)
        return Target("t", "fake", False, None, path, (path,), state=self.state)

    def __getitem__(self, name: str) -> Target:
        return self.current

    def reset(self, name: str) -> Target:
        self.resets += 1
        self.current = self._make()
        return self.current

    def lay_out(self, target: Target) -> None:
        self.layouts += 1
        (target.path / DATA_FILE).write_bytes(b"\0" * SIZE)


@contextmanager
def _session(tmp_path: Path) -> Iterator[Session]:
    s = Session.create(tmp_path, registry=tmp_path / "reg")
    try:
        yield s
    finally:
        s.close()


def _ctx(session: Session, new_file: bool) -> TrialContext:
    return TrialContext(session, None, 1, SIZE, "psync", False, new_file)  # type: ignore[arg-type]


def _spec(w: WorkloadSpec) -> TrialSpec:
    return TrialSpec(0, 0, 0, w, "t")


def test_a_stateful_target_is_made_anew_before_each_write_only(tmp_path: Path) -> None:
    with _session(tmp_path) as session:
        targets = FakeTargets(session, "fresh")
        ctx = _ctx(session, new_file=False)
        first = prepare(ctx, _spec(WRITE), targets)
        assert targets.resets == 1 and not (first.path / DATA_FILE).exists()
        (first.path / DATA_FILE).write_bytes(b"\0" * SIZE)  # what the write trial leaves
        assert prepare(ctx, _spec(READ), targets) is first and targets.resets == 1
        assert targets.layouts == 0  # the write's file is what the read reads
        prepare(ctx, _spec(WRITE), targets)
        assert targets.resets == 2


def test_new_file_suites_delete_the_old_file_before_a_write(tmp_path: Path) -> None:
    with _session(tmp_path) as session:
        targets = FakeTargets(session, None)
        data = targets.current.path / DATA_FILE
        data.write_bytes(b"\0" * SIZE)
        prepare(_ctx(session, new_file=False), _spec(WRITE), targets)
        assert data.exists()  # overwritten in place, as KDiskMark does
        prepare(_ctx(session, new_file=True), _spec(WRITE), targets)
        assert not data.exists() and targets.resets == 0


def test_a_read_after_a_failed_write_gets_its_file_laid_out_again(tmp_path: Path) -> None:
    with _session(tmp_path) as session:
        targets = FakeTargets(session, None)
        data = targets.current.path / DATA_FILE
        data.write_bytes(b"\0" * (SIZE // 2))  # a write that stopped half way
        prepare(_ctx(session, new_file=True), _spec(READ), targets)
        assert targets.layouts == 1 and data.stat().st_size == SIZE
        prepare(_ctx(session, new_file=True), _spec(READ), targets)
        assert targets.layouts == 1
