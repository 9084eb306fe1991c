"""An executor that stores synthetic trials: the rounds' logic runs for real
over a real store, without fio or targets."""

from __future__ import annotations

import random
from typing import Any, cast

from cryptbench.store.database import MetricValue, Store, TrialRecord
from cryptbench.trial.context import NullProgress, TrialContext, TrialSpec
from cryptbench.trial.schedule import OneAtATime


class FakeExecutor(OneAtATime):
    """Stores a synthetic trial per spec: each target's throughput drawn around
    its own mean with its own spread; 1 MiB written per write trial."""

    def __init__(self, store: Store, run_id: int, spread: dict[str, tuple[float, float]]) -> None:
        ctx = TrialContext(cast(Any, None), store, run_id, 1 << 20, "psync", False)
        self.ctx, self.spread, self.rng = ctx, spread, random.Random(7)
        self.lost: dict[str, str] = {}
        self.progress = NullProgress()
        self.specs: list[TrialSpec] = []

    def run(self, spec: TrialSpec) -> bool:
        self.specs.append(spec)
        mean, sd = self.spread[spec.target]
        row = {
            "seq": spec.seq,
            "block": spec.block,
            "repeat": spec.repeat,
            "workload": spec.workload.name,
            "target": spec.target,
            "started_at": "x",
            "status": "ok",
        }
        written = float(1 << 20) if spec.workload.is_write else 0.0
        self.ctx.store.insert_trial(
            self.ctx.run_id,
            TrialRecord(**row),
            [
                MetricValue("throughput", "bytes/s", self.rng.gauss(mean, sd)),
                MetricValue("io_bytes", "bytes", written or float(1 << 20)),
            ],
        )
        return True

    def finish(self) -> tuple[int, int]:
        return len(self.specs), 0
