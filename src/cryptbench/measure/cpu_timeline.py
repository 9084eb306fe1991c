"""CPU over time during a trial: system-wide and per helper process, sampled
by a background thread, for the report's chart of where the CPU went (study
001 read the same off Activity Monitor's graph).

The trial's totals (cpu.usage) stay the figures statistics are made of; the
timeline only shows their shape, so a missed or late sample costs nothing but
resolution.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from cryptbench.backends.base import Helper
from cryptbench.measure import cpu
from cryptbench.model.json_types import JsonObject

INTERVAL = 0.25  # seconds between samples: several in a 2 s trial, few enough to store
MAX_SAMPLES = 4800  # per trial (20 minutes at 0.25 s); later samples are merged pairwise


@dataclass
class CpuTimeline:
    """Busy cores over a trial. Sample i covers (ends[i-1], ends[i]]; ends[-1] = 0."""

    started_at: float  # seconds since the epoch when the first snapshot was taken
    ends: list[float] = field(default_factory=list)  # seconds since started_at, each sample's end
    system: list[float] = field(default_factory=list)  # cores busy system-wide (CPU-seconds per second)
    helpers: dict[str, list[float]] = field(default_factory=dict)  # cores busy per helper name

    def to_json(self) -> JsonObject:
        return {
            "started_at": self.started_at,
            "ends": [round(e, 4) for e in self.ends],
            "system": [round(v, 4) for v in self.system],
            "helpers": {k: [round(v, 4) for v in vs] for k, vs in self.helpers.items()},
        }

    @classmethod
    def from_json(cls, d: JsonObject) -> CpuTimeline:
        return cls(float(d["started_at"]), list(d["ends"]), list(d["system"]), dict(d["helpers"]))

    def add(self, previous: cpu.CpuSnapshot, now: cpu.CpuSnapshot, origin: float) -> None:
        seconds = now.wall - previous.wall
        if seconds <= 0:
            return
        self.ends.append(now.wall - origin)
        self.system.append((now.busy - previous.busy) / seconds)
        for name, used in _helper_use(previous, now).items():
            self.helpers.setdefault(name, [0.0] * (len(self.ends) - 1)).append(used / seconds)
        for values in self.helpers.values():
            if len(values) < len(self.ends):
                values.append(0.0)
        if len(self.ends) > MAX_SAMPLES:
            self._halve()

    def extend_last(self, previous: cpu.CpuSnapshot, now: cpu.CpuSnapshot, origin: float) -> None:
        """Fold the interval (previous, now] into the last sample, weighted by the two spans."""
        start = self.ends[-2] if len(self.ends) > 1 else 0.0
        old = self.ends[-1] - start
        new = now.wall - previous.wall
        if new <= 0:
            return
        total = old + new

        def fold(value: float, used: float) -> float:
            return (value * old + used) / total

        self.system[-1] = fold(self.system[-1], now.busy - previous.busy)
        for name, used in _helper_use(previous, now).items():
            values = self.helpers.setdefault(name, [0.0] * len(self.ends))
            values[-1] = fold(values[-1], used)
        self.ends[-1] = now.wall - origin

    def _halve(self) -> None:
        """Merge neighbouring samples (weighted by their lengths) so a long trial stays small."""
        starts = [0.0, *self.ends[:-1]]
        spans = [e - s for s, e in zip(starts, self.ends, strict=True)]

        def merge(values: list[float]) -> list[float]:
            out = []
            for i in range(0, len(values) - 1, 2):
                w = spans[i] + spans[i + 1]
                out.append((values[i] * spans[i] + values[i + 1] * spans[i + 1]) / w if w > 0 else 0.0)
            if len(values) % 2:
                out.append(values[-1])
            return out

        ends = self.ends[1::2] + ([self.ends[-1]] if len(self.ends) % 2 else [])
        self.system = merge(self.system)
        self.helpers = {k: merge(v) for k, v in self.helpers.items()}
        self.ends = ends


def _helper_use(previous: cpu.CpuSnapshot, now: cpu.CpuSnapshot) -> dict[str, float]:
    """CPU-seconds per helper between two snapshots. A helper that vanished (or restarted)
    between them reads as 0, not negative."""
    return {
        name: max(0.0, now.helpers.get(name, 0.0) - previous.helpers.get(name, 0.0))
        for name in now.helpers.keys() | previous.helpers.keys()
    }


class Sampler:
    """Samples CPU in a daemon thread between `start()` and `stop()`; `stop` adds a last sample
    so the timeline covers the work to its end."""

    def __init__(self, helpers: tuple[Helper, ...] = (), interval: float = INTERVAL) -> None:
        self._helpers = helpers
        self._interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._origin = 0.0
        self._last: cpu.CpuSnapshot | None = None
        self.timeline = CpuTimeline(0.0)

    def start(self) -> Sampler:
        self._last = cpu.snapshot(self._helpers)
        self._origin = self._last.wall
        self.timeline = CpuTimeline(time.time())
        self._thread = threading.Thread(target=self._loop, name="cpu-sampler", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self._sample()

    def _sample(self, *, last: bool = False) -> None:
        assert self._last is not None
        now = cpu.snapshot(self._helpers)
        if last and self.timeline.ends and now.wall - self._last.wall < self._interval / 2:
            # /proc/stat counts in 10 ms ticks: a few ms alone would read as several cores or none.
            # The short tail is folded into the sample before it, weighted by time.
            self.timeline.extend_last(self._last, now, self._origin)
        else:
            self.timeline.add(self._last, now, self._origin)
        self._last = now

    def stop(self) -> CpuTimeline:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            self._sample(last=True)
        return self.timeline

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
