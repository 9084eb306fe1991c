"""docs/architecture.md's recipes "A fio workload" and "An application workload", each
followed once: the fio workload as a `[[workloads]]` table in the user's own suite file,
the application workload as an `AppWorkload` subclass registered as the recipe says,
here in the test, not in the product. Each is then run for real on plain, the way a
newcomer would try it, and its figures read back from the result document."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from cryptbench.commands import run as run_cmd
from cryptbench.engines import metric_catalog
from cryptbench.engines.apps import APPS, AppEnv, AppResult, AppWorkload
from cryptbench.engines.apps.base import PhaseClock, remove_tree
from cryptbench.engines.apps.params import Params
from cryptbench.model.json_types import JsonObject, TomlTable
from cryptbench.model.metrics import MetricInfo
from cryptbench.planning.request import RunRequest

pytestmark = pytest.mark.integration


def _run(suite: Path, target_dir: Path, tmp_path: Path) -> JsonObject:
    outcome = run_cmd.run(
        RunRequest(
            suite=str(suite),
            backends="plain",
            size="4M",
            repeats=1,
            seed=1,
            target=str(target_dir),
            db=tmp_path / "r.sqlite",
            trial_time="0",
            skip_protection=True,
        )
    )
    doc = outcome.document.to_json()
    assert outcome.exit_code == 0, doc["notes"]
    return doc


# -- "A fio workload": the recipe's table, in the user's own suite file --------------------

FIO_SUITE = """
name = "recipe-fio"
[[workloads]]
name = "rnd64k-q4-read"
rw = "randread"
bs = "64K"
iodepth = 4
"""


def test_a_fio_workload_written_by_the_recipe_runs(target_dir: Path, tmp_path: Path) -> None:
    suite = tmp_path / "recipe-fio.toml"
    suite.write_text(FIO_SUITE)
    doc = _run(suite, target_dir, tmp_path)
    assert doc["plan"]["workloads"] == ["rnd64k-q4-read"]
    spec = doc["plan"]["workload_specs"]["rnd64k-q4-read"]
    assert (spec["rw"], spec["bs"], spec["iodepth"]) == ("randread", 65536, 4)
    # its metrics are fio's: nothing else was written for them
    metrics = {r["metric"] for r in doc["results"] if r["workload"] == "rnd64k-q4-read"}
    assert {"throughput", "iops", "lat_p99"} <= metrics
    throughput = [r for r in doc["results"] if r["metric"] == "throughput"]
    assert throughput and throughput[0]["median"] > 0


# -- "An application workload": the recipe's module and its registry line ----------------


@dataclass(frozen=True)
class RenameBurst(AppWorkload):
    """Writes small files, each made durable, then renames each: what an editor's
    safe save does."""

    app: ClassVar[str] = "rename-burst"
    writes: ClassVar[bool] = True
    primary: ClassVar[str] = "saves_per_second"
    rate_metric: ClassVar[str | None] = "saves_per_second"
    metrics: ClassVar[tuple[MetricInfo, ...]] = (
        MetricInfo("saves_per_second", "saves/s", True, "safe saves per second"),
    )
    summary: ClassVar[str] = "small files written durably, then renamed over; saves/s"

    name: str
    files: int = 32  # count

    @classmethod
    def from_table(cls, name: str, params: TomlTable, where: str) -> RenameBurst:
        p = Params(params, where)
        files = p.integer("files", 32, 1, 10_000)
        p.done()
        return cls(name, files)

    def target_bytes(self, size: int) -> int:
        return self.files * 8192 + (1 << 20)

    def run(self, env: AppEnv) -> AppResult:
        env.root.mkdir(parents=True, exist_ok=True)
        clock = PhaseClock()
        with clock.phase("save") as c:
            for i in range(self.files):
                tmp = env.root / f"doc{i}.tmp"
                with open(tmp, "wb") as f:
                    f.write(os.urandom(4096))
                    f.flush()
                    os.fsync(f.fileno())
                os.rename(tmp, env.root / f"doc{i}.txt")
                c.bytes += 4096
                c.items += 1
        return AppResult(tuple(clock.phases), self.files, {"files": self.files})

    def clean(self, env: AppEnv) -> None:
        remove_tree(env.root)


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    # The recipe's line in engines/apps/__init__.py's _ALL puts the class in APPS, and
    # engines/metric_catalog.py, which gathers APPS' metrics when it is imported, then
    # knows them: here both are done to the imported registries, as that import would.
    monkeypatch.setitem(APPS, RenameBurst.app, RenameBurst)
    for m in RenameBurst.metrics:
        monkeypatch.setitem(metric_catalog.CATALOG, m.name, m)
    names = tuple(m.name for m in RenameBurst.metrics)
    monkeypatch.setattr(metric_catalog, "PHASE_METRICS", (*metric_catalog.PHASE_METRICS, *names))


APP_SUITE = """
name = "recipe-app"
[[workloads]]
name = "safe-saves"
app = "rename-burst"
files = 16
"""


def test_an_app_workload_written_by_the_recipe_runs(
    registered: None, target_dir: Path, tmp_path: Path
) -> None:
    assert metric_catalog.info("saves_per_second").unit == "saves/s"
    suite = tmp_path / "recipe-app.toml"
    suite.write_text(APP_SUITE)
    doc = _run(suite, target_dir, tmp_path)
    rate = [r for r in doc["results"] if r["workload"] == "safe-saves" and r["metric"] == "saves_per_second"]
    assert len(rate) == 1 and rate[0]["median"] > 0 and rate[0]["unit"] == "saves/s"
    phases = {r["metric"] for r in doc["results"] if r["workload"] == "safe-saves"}
    assert "save.seconds" in phases
    assert doc["plan"]["apps"]["safe-saves"]["app"] == "rename-burst"
