"""write-series (study 003, Stibium's method): files from 2 MiB up, doubling,
as far as --size allows, written in a random order, each made durable, then
read back in another random order with caches dropped; throughput per size
class, for a chart of throughput against file size.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import ClassVar

from cryptbench.engines.apps.base import AppEnv, AppResult, AppWorkload, Phase, remove_tree
from cryptbench.engines.apps.data import incompressible, rng, write_from_pool
from cryptbench.engines.apps.params import Params
from cryptbench.model.json_types import JsonObject, TomlTable

SMALLEST = 2 << 20  # bytes: Stibium's smallest file
CHUNK = 1 << 20  # bytes per write() and read()
POOL = 8 << 20  # bytes of random data the writes draw from


@dataclass(frozen=True)
class WriteSeries(AppWorkload):
    app: ClassVar[str] = "write-series"
    writes: ClassVar[bool] = True
    primary: ClassVar[str] = "throughput"
    summary: ClassVar[str] = "files from 2 MiB up, doubling, written in random order then read back"

    name: str
    smallest: int = SMALLEST  # bytes: the smallest size class

    @classmethod
    def from_table(cls, name: str, params: TomlTable, where: str) -> WriteSeries:
        p = Params(params, where)
        smallest = p.size("smallest", SMALLEST, 64 << 10, 1 << 30)
        p.done()
        return cls(name, smallest)

    def classes(self, size: int) -> list[int]:
        """Size classes: the smallest, doubling, up to a quarter of --size (at least one)."""
        out = [self.smallest]
        while out[-1] * 2 <= size // 4:
            out.append(out[-1] * 2)
        return out

    def files(self, size: int) -> list[int]:
        """Every file's size: each class gets an equal share of --size, one file at least."""
        classes = self.classes(size)
        share = size // len(classes)
        return [c for c in classes for _ in range(max(1, share // c))]

    def min_size(self) -> int:
        return self.smallest

    def target_bytes(self, size: int) -> int:
        return sum(self.files(size))

    def describe(self, size: int) -> JsonObject:
        return {**super().describe(size), "classes": self.classes(size), "files": len(self.files(size))}

    def run(self, env: AppEnv) -> AppResult:
        files = self.files(env.size)
        r = rng(env.seed, "order")
        order = list(range(len(files)))
        r.shuffle(order)
        pool = incompressible(env.seed, POOL, "pool")
        series = env.root / "series"
        series.mkdir(parents=True)
        # seconds[(direction, size class)]: the class's files timed one by one
        seconds: dict[tuple[str, int], float] = {}
        for i in order:
            start = time.perf_counter()
            write_from_pool(series / f"{i:04d}.dat", files[i], pool, CHUNK, i)
            key = ("write", files[i])
            seconds[key] = seconds.get(key, 0.0) + time.perf_counter() - start
        env.settle()
        r.shuffle(order)
        for i in order:
            start = time.perf_counter()
            _read(series / f"{i:04d}.dat")
            key = ("read", files[i])
            seconds[key] = seconds.get(key, 0.0) + time.perf_counter() - start
        phases = tuple(
            Phase(f"{direction}-{_label(c)}", seconds[(direction, c)], c * files.count(c), files.count(c))
            for direction in ("write", "read")
            for c in self.classes(env.size)
        )
        return AppResult(phases, len(files), {"files": len(files), "classes": self.classes(env.size)})

    def clean(self, env: AppEnv) -> None:
        remove_tree(env.root)


def _label(size: int) -> str:
    """A size class as a metric name part: 2m, 512k."""
    return f"{size >> 20}m" if size % (1 << 20) == 0 else f"{size >> 10}k"


def _read(path: os.PathLike[str]) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        while os.read(fd, CHUNK):
            pass
    finally:
        os.close(fd)
