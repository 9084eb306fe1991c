"""`cryptbench history`: filters, and each target's median over the runs shown.

The runs are written through the store's own API with known values (no runner),
so each test knows which runs match and what their medians are.
"""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from cryptbench.commands import history
from cryptbench.commands.history import HistoryRequest
from cryptbench.model.errors import StoreError, UsageError
from cryptbench.model.result import TargetInfo
from cryptbench.report.history_table import GAP, line, render, runs_table, sparkline
from cryptbench.store.database import MetricValue, Store, TrialRecord


def _target(name: str, backend: str, io_mode: str = "direct") -> TargetInfo:
    return TargetInfo(
        name=name,
        backend=backend,
        baseline=None if name == "plain" else "plain",
        encrypted=name != "plain",
        io_mode=io_mode,
        direct_io="honoured",
        direct_io_reason="",
        marker_in_backing=None,
        encryption_verified=None,
        details={},
    )


def _add_run(
    store: Store,
    host: str,
    values: dict[tuple[str, str], list[float]],
    *,
    size: int = 8 << 20,
    backend: str = "gocryptfs",
    io_mode: str = "direct",
) -> int:
    """A finished run with `values` per (workload, target): throughput in bytes/s, and
    p99 latency of one millisecond per 1e8 bytes/s, so both metrics have known medians."""
    workloads = list(dict.fromkeys(w for w, _ in values))
    plan = {"size": size, "repeats": 3, "workloads": workloads, "primary_metrics": {}}
    run_id = store.insert_run("seq", plan, {"hostname": host}, "0.1.0")
    for name in dict.fromkeys(t for _, t in values):
        store.insert_target(run_id, _target(name, "plain" if name == "plain" else backend, io_mode))
    seq = 0
    for (w, t), vs in values.items():
        for v in vs:
            trial = {"seq": seq, "block": 0, "repeat": seq, "workload": w, "target": t,
                     "started_at": "2026-11-22T00:00:00Z", "status": "ok"}  # fmt: skip
            metrics = [MetricValue("throughput", "bytes/s", v), MetricValue("lat_p99", "s", v / 1e11)]
            store.insert_trial(run_id, TrialRecord(**trial), metrics)
            seq += 1
    store.finish_run(run_id, "complete")
    return run_id


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "r.sqlite"
    store = Store.open(path)
    _add_run(store, "a", {("read", "plain"): [1e8, 2e8, 3e8], ("read", "gocryptfs"): [1e8, 1e8, 1e8]})
    _add_run(store, "a", {("read", "plain"): [4e8, 4e8], ("read", "gocryptfs"): [2e8, 2e8]})
    _add_run(store, "b", {("write", "plain"): [5e8], ("write", "fscrypt"): [1e8]}, backend="fscrypt")
    _add_run(store, "a", {("read", "plain"): [6e8], ("read", "gocryptfs"): [3e8]}, size=16 << 20)
    store.close()
    return path


def test_all_runs_newest_first(db: Path) -> None:
    found = history.run(HistoryRequest(db=db))
    assert [r.id for r in found.runs] == [4, 3, 2, 1]
    assert [r.host for r in found.runs] == ["a", "b", "a", "a"]
    assert set(found.runs[1].targets) == {"plain", "fscrypt"} and found.runs[0].ok_trials == 2
    assert found.series == [] and found.metric is None
    assert [r.id for r in history.run(HistoryRequest(db=db, limit=2)).runs] == [4, 3]


def test_filters_by_backend_workload_and_host(db: Path) -> None:
    assert [r.id for r in history.run(HistoryRequest(db=db, backend="fscrypt")).runs] == [3]
    assert [r.id for r in history.run(HistoryRequest(db=db, workload="read")).runs] == [4, 2, 1]
    assert [r.id for r in history.run(HistoryRequest(db=db, host="b")).runs] == [3]
    assert [r.id for r in history.run(HistoryRequest(db=db, host="a", backend="fscrypt")).runs] == []
    assert [r.id for r in history.run(HistoryRequest(db=db, workload="read", limit=1)).runs] == [4]


def test_a_workload_draws_its_own_metric_per_target(db: Path) -> None:
    found = history.run(HistoryRequest(db=db, workload="read"))
    assert found.metric == "throughput"
    assert [(s.workload, s.target) for s in found.series] == [("read", "gocryptfs"), ("read", "plain")]
    plain = found.series[1]
    assert [(p.run_id, p.median, p.n) for p in plain.points] == [(1, 2e8, 3), (2, 4e8, 2), (4, 6e8, 1)]
    assert plain.caveats() == ["bytes per trial differ between these runs"]
    assert found.run_ids() == [1, 2, 4]


def test_a_chosen_metric_and_a_backend_narrow_the_series(db: Path) -> None:
    found = history.run(HistoryRequest(db=db, metric="lat_p99", backend="gocryptfs"))
    assert found.metric == "lat_p99"
    assert [(s.workload, s.target) for s in found.series] == [("read", "gocryptfs")]
    assert [p.median for p in found.series[0].points] == pytest.approx([1e-3, 2e-3, 3e-3])
    with pytest.raises(UsageError, match="no run shown has metric 'nope'"):
        history.run(HistoryRequest(db=db, metric="nope"))


def test_io_mode_changes_are_a_caveat(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    store = Store.open(path)
    _add_run(store, "a", {("read", "gocryptfs"): [1e8]}, io_mode="direct")
    _add_run(store, "a", {("read", "gocryptfs"): [1e8]}, io_mode="buffered")
    store.close()
    (series,) = history.run(HistoryRequest(db=path, workload="read")).series
    assert series.caveats() == ["I/O mode differs between these runs"]


def test_sparkline_scales_each_line_to_its_own_range() -> None:
    assert sparkline([1, 2, 3, 4, 5, 6, 7, 8]) == "▁▂▃▄▅▆▇█"
    assert sparkline([10, None, 30]) == f"▁{GAP}█"
    assert sparkline([5, 5, 5]) == "▄▄▄"  # flat: the middle, not the floor
    assert sparkline([None, None]) == GAP * 2


def test_the_lines_of_a_table_share_columns(db: Path) -> None:
    found = history.run(HistoryRequest(db=db, workload="read"))
    columns = found.run_ids()
    assert [line(s, columns) for s in found.series] == ["▁▅█", "▁▅█"]
    found = history.run(HistoryRequest(db=db, metric="throughput"))  # run 3 has only the write workload
    lines = {(s.workload, s.target): line(s, found.run_ids()) for s in found.series}
    assert lines[("write", "fscrypt")] == f"{GAP}{GAP}▄{GAP}"
    assert len({len(v) for v in lines.values()}) == 1


def test_terminal_table(db: Path) -> None:
    buf = StringIO()
    render(history.run(HistoryRequest(db=db, workload="read")), Console(file=buf, width=200))
    text = buf.getvalue()
    assert "throughput: median per run, oldest left (runs 1 … 4)" in text
    assert "▁▅█" in text and "bytes per trial differ" in text
    buf = StringIO()
    render(history.run(HistoryRequest(db=db)), Console(file=buf, width=200))
    assert "history --workload W" in buf.getvalue()


def test_no_database_yet_is_no_runs_but_a_named_one_must_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the default database before any run: nothing stored yet, which is no error
    monkeypatch.setattr(history, "default_db_path", lambda: tmp_path / "none.sqlite")
    assert history.run(HistoryRequest()).runs == []
    # a database the user named and that is not there: the error show gives
    with pytest.raises(StoreError, match="no results database at"):
        history.run(HistoryRequest(db=tmp_path / "none.sqlite"))
    with pytest.raises(UsageError, match="--limit"):
        history.run(HistoryRequest(db=tmp_path / "none.sqlite", limit=0))


def test_a_fleet_run_matches_each_of_its_hosts(db: Path) -> None:
    store = Store.open(db)
    run_id = _add_run(store, "coordinator", {("read", "n1/plain"): [1e8], ("read", "n2/plain"): [2e8]})
    manifests = {
        "n1": {"environment": {"hostname": "rack1-a"}},
        "n2": {"environment": {"hostname": "rack1-b"}},
    }
    for name, m in manifests.items():
        store.insert_fleet_host(run_id, name, "127.0.0.1:8765", m)
    store.set_fleet_host(run_id, "n2", "failed", "client: host=127.0.0.2 disconnected")
    rows = {r.name: r for r in store.fleet_host_rows(run_id)}
    store.close()
    assert (rows["n1"].status, rows["n1"].reason) == ("ok", None)
    assert (rows["n2"].status, rows["n2"].reason) == ("failed", "client: host=127.0.0.2 disconnected")
    assert rows["n1"].manifest == manifests["n1"]
    for host in ("n1", "n2", "rack1-b", "coordinator"):
        assert [r.id for r in history.run(HistoryRequest(db=db, host=host)).runs] == [run_id], host
    assert [r.id for r in history.run(HistoryRequest(db=db, host="b")).runs] == [3]
    assert history.run(HistoryRequest(db=db, host="rack2")).runs == []


def test_terminal_tables_at_80_columns_keep_every_figure_whole(db: Path) -> None:
    for found in (history.run(HistoryRequest(db=db)), history.run(HistoryRequest(db=db, workload="read"))):
        buf = StringIO()
        render(found, Console(file=buf, width=80))
        lines = buf.getvalue().splitlines()
        cut = [line for line in lines if "…" in line and "median per run" not in line]  # the title's "1 … 4"
        assert max(map(len, lines)) <= 80 and not cut
        for r in found.runs:  # each run's row whole, with its start and its trials
            assert any(r.started_at[:16].replace("T", " ") in line and r.status in line for line in lines)
    assert "[1] read, gocryptfs: bytes per trial differ between these runs" in buf.getvalue()


def test_each_run_says_how_many_trials_it_ran_not_the_plans_most(tmp_path: Path) -> None:
    # every plan here says repeats 3; what ran was 3 and 4, 2 and 2, 1 and 1
    path = tmp_path / "r.sqlite"
    store = Store.open(path)
    _add_run(store, "a", {("read", "plain"): [1e8, 2e8, 3e8, 4e8], ("read", "gocryptfs"): [1e8] * 3})
    _add_run(store, "a", {("read", "plain"): [4e8, 4e8], ("read", "gocryptfs"): [2e8, 2e8]})
    _add_run(store, "a", {("read", "plain"): [6e8], ("read", "gocryptfs"): [3e8]})
    store.close()
    found = history.run(HistoryRequest(db=path))
    assert [(r.fewest_trials, r.most_trials) for r in found.runs] == [(1, 1), (2, 2), (3, 4)]
    out = StringIO()
    runs_table(found, Console(file=out, width=160, color_system=None))
    text = out.getvalue()
    assert "trials each" in text and "3 to 4" in text and "repeats" not in text
    out = StringIO()
    runs_table(found, Console(file=out, width=60, color_system=None))
    assert "run 1: 8 MiB, 3 to 4 trials each; " in out.getvalue()
