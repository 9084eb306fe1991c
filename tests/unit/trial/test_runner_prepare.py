"""Before each trial: stateful targets are made anew before writes, new-file writes
delete the last one's file (beside the data file, which the reads keep), and reads get
a missing data file laid out again."""

from __future__ import annotations

from pathlib import Path

from cryptbench.backends.base import Target
from cryptbench.machine.session import Session
from cryptbench.planning.suite import WorkloadSpec
from cryptbench.trial.context import DATA_FILE, WRITE_FILE, Sizing, TrialContext, TrialSize, TrialSpec
from cryptbench.trial.runner import job_options, prepare
from tests.support.sessions import scratch_session

WRITE = WorkloadSpec("write", "write", 1 << 20, 1)
READ = WorkloadSpec("read", "read", 1 << 20, 1)
SIZE = 4 << 20
AS_ASKED = Sizing(SIZE)  # the data file as asked: what prepare lays out again


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

    def lay_out(self, target: Target, ctx: TrialContext, sizing: Sizing) -> None:
        self.layouts += 1
        (target.path / DATA_FILE).write_bytes(b"\0" * sizing.file_bytes)


def _ctx(session: Session, new_file: bool) -> TrialContext:
    return TrialContext(session, None, 1, SIZE, "psync", False, new_file)  # type: ignore[arg-type]


def _sized(ctx: TrialContext, w: WorkloadSpec, target: Target) -> TrialSize:
    return ctx.trial_size(AS_ASKED, w, target, False)


def _spec(w: WorkloadSpec) -> TrialSpec:
    return TrialSpec(0, 0, 0, w, "t")


def test_a_stateful_target_is_made_anew_before_each_write_only(tmp_path: Path) -> None:
    with scratch_session(tmp_path) as session:
        targets = FakeTargets(session, "fresh")
        ctx = _ctx(session, new_file=False)
        first = prepare(ctx, AS_ASKED, _spec(WRITE), targets)
        assert targets.resets == 1 and not (first.path / DATA_FILE).exists()
        (first.path / DATA_FILE).write_bytes(b"\0" * SIZE)  # what the write trial leaves
        assert prepare(ctx, AS_ASKED, _spec(READ), targets) is first and targets.resets == 1
        assert targets.layouts == 0  # the write's file is what the read reads
        prepare(ctx, AS_ASKED, _spec(WRITE), targets)
        assert targets.resets == 2


def test_new_file_writes_go_beside_the_data_file_which_the_reads_keep(tmp_path: Path) -> None:
    with scratch_session(tmp_path) as session:
        targets = FakeTargets(session, None)
        data = targets.current.path / DATA_FILE
        data.write_bytes(b"\0" * SIZE)
        laid = data.stat().st_ino
        prepare(_ctx(session, new_file=False), AS_ASKED, _spec(WRITE), targets)
        assert data.exists()  # overwritten in place, as KDiskMark does
        written = targets.current.path / WRITE_FILE
        written.write_bytes(b"\0" * SIZE)  # what the last new-file write left
        prepare(_ctx(session, new_file=True), AS_ASKED, _spec(WRITE), targets)
        assert not written.exists() and targets.resets == 0  # this write makes it anew
        # the reads' file stays as laid out: no layout again after each write
        assert data.stat().st_ino == laid
        prepare(_ctx(session, new_file=True), AS_ASKED, _spec(READ), targets)
        assert targets.layouts == 0


def test_a_new_file_write_names_its_own_file_but_the_data_file_on_a_target_made_anew(
    tmp_path: Path,
) -> None:
    with scratch_session(tmp_path) as session:
        ctx = _ctx(session, new_file=True)
        where = session.path("targets", "t")
        plain = Target("t", "fake", False, None, where, (where,))
        image = Target("t", "fake", True, None, where, (where,), state="fresh")
        assert job_options(ctx, plain, 1, _sized(ctx, WRITE, plain)).filename.name == WRITE_FILE
        assert job_options(ctx, plain, 1, _sized(ctx, READ, plain)).filename.name == DATA_FILE
        # made anew before each write: the write's file is the one the next read reads
        assert job_options(ctx, image, 1, _sized(ctx, WRITE, image)).filename.name == DATA_FILE
        overwrite = _ctx(session, new_file=False)
        assert job_options(overwrite, plain, 1, _sized(overwrite, WRITE, plain)).filename.name == DATA_FILE


def test_a_read_after_a_failed_write_gets_its_file_laid_out_again(tmp_path: Path) -> None:
    with scratch_session(tmp_path) as session:
        targets = FakeTargets(session, None)
        data = targets.current.path / DATA_FILE
        data.write_bytes(b"\0" * (SIZE // 2))  # a write that stopped half way
        prepare(_ctx(session, new_file=True), AS_ASKED, _spec(READ), targets)
        assert targets.layouts == 1 and data.stat().st_size == SIZE
        prepare(_ctx(session, new_file=True), AS_ASKED, _spec(READ), targets)
        assert targets.layouts == 1
