"""dd-write: one file of `--size` bytes written in 1 MiB blocks, zeros or
random data, as study 004 timed with dd; a new file per trial.

Two styles:

- `durable` (the default): written by cryptbench from a buffer made before
  the clock starts (random data: a seeded 8 MiB pool, each 1 MiB chunk salted
  so that no two are alike, as write-series writes), then fsynced inside the
  clock, as `dd conv=fsync` would: the time is the time to put the data on
  the target's storage.
- `as-published`: the study's own command, `dd if=/dev/zero|/dev/urandom
  of=DIR/test_zeroN count=N bs=1M`, run as it was: no fsync, so the time dd
  reports ends when the data is in the page cache, and /dev/urandom's cost is
  inside it. Run beside `durable`, it shows how much of such a figure is the
  page cache.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import ClassVar

from cryptbench.engines.apps.base import AppEnv, AppResult, AppWorkload, Phase, PhaseClock, remove_tree
from cryptbench.engines.apps.data import incompressible, write_from_pool
from cryptbench.engines.apps.params import Params
from cryptbench.engines.child import run_child
from cryptbench.model.errors import TrialError
from cryptbench.model.json_types import JsonObject, TomlTable

BLOCK = 1 << 20  # bytes per write, as the study's bs=1m
POOL = 8 << 20  # bytes of random data the writes draw from (salted per chunk)
DATA = ("zero", "random")
STYLES = ("durable", "as-published")
SOURCES = {"zero": "/dev/zero", "random": "/dev/urandom"}
DD_TIMEOUT = 3600.0  # seconds: a dd that has not finished by then is stuck, not slow
# GNU dd, in the C locale: "134217728 bytes (134 MB, 128 MiB) copied, 0.0797 s, 1.7 GB/s"
_DD_SUMMARY = re.compile(r"^(\d+) bytes .*copied, ([0-9.]+(?:e[-+]?\d+)?) s,", re.MULTILINE)


def parse_dd(stderr: str) -> tuple[int, float]:
    """(bytes, seconds) from GNU dd's closing line; TrialError if it has none."""
    m = _DD_SUMMARY.search(stderr)
    if m is None:
        last = stderr.strip().splitlines()[-1:] or ["no output"]
        raise TrialError(f"dd printed no transfer summary: {last[0][:200]}")
    return int(m.group(1)), float(m.group(2))


def dd_error(stderr: str, status: int) -> str:
    """dd's own error line ("dd: error writing …: No space left on device"), not its summary."""
    lines = stderr.strip().splitlines()
    said = next((x for x in lines if x.startswith("dd:")), lines[-1] if lines else "")
    return said[:200] or f"exit status {status}"


@dataclass(frozen=True)
class DdWrite(AppWorkload):
    app: ClassVar[str] = "dd-write"
    writes: ClassVar[bool] = True
    primary: ClassVar[str] = "throughput"
    summary: ClassVar[str] = (
        "one file of --size in 1 MiB blocks, zeros or random data, fsynced in the clock "
        "(or dd exactly as study 004 ran it); seconds and MB/s"
    )

    name: str
    data: str = "zero"  # zero or random
    style: str = "durable"  # durable, or as-published: the study's dd command, no fsync

    @classmethod
    def from_table(cls, name: str, params: TomlTable, where: str) -> DdWrite:
        p = Params(params, where)
        data = p.choice("data", "zero", DATA)
        style = p.choice("style", "durable", STYLES)
        p.done()
        return cls(name, data, style)

    def target_bytes(self, size: int) -> int:
        return size + BLOCK

    def file_name(self, trial: int) -> str:
        # The study's names: test_zero1 … test_rand10.
        return f"test_{'zero' if self.data == 'zero' else 'rand'}{trial}"

    def command(self, env: AppEnv) -> list[str]:
        """The study's dd command for this trial (as-published)."""
        return [
            "dd",
            f"if={SOURCES[self.data]}",
            f"of={env.root / self.file_name(env.trial)}",
            f"count={env.size // BLOCK}",
            "bs=1M",
        ]

    def describe(self, size: int) -> JsonObject:
        return {
            **super().describe(size),
            "data": self.data,
            "style": self.style,
            "block": BLOCK,
            "fsync": self.style == "durable",
        }

    def run(self, env: AppEnv) -> AppResult:
        env.root.mkdir(parents=True, exist_ok=True)
        if self.style == "as-published":
            return self._run_dd(env)
        return self._run_durable(env)

    def _run_durable(self, env: AppEnv) -> AppResult:
        if self.data == "zero":
            pool, salt = bytes(BLOCK), None
        else:
            pool, salt = incompressible(env.seed, POOL, "dd-pool"), env.trial
        path = env.root / self.file_name(env.trial)
        clock = PhaseClock()
        with clock.phase("write") as c:
            write_from_pool(path, env.size, pool, BLOCK, salt)
            c.bytes, c.items = env.size, 1
        return AppResult(tuple(clock.phases), 1, {"file": path.name, "bytes": env.size, "fsync": True})

    def _run_dd(self, env: AppEnv) -> AppResult:
        cmd = self.command(env)
        # the C locale: dd's closing line in the words parse_dd reads
        done = run_child(
            cmd, env.session, DD_TIMEOUT, {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}
        )
        if done.returncode != 0:
            raise TrialError(f"dd failed: {dd_error(done.stderr, done.returncode)}")
        nbytes, seconds = parse_dd(done.stderr)
        return AppResult(
            (Phase("write", seconds, nbytes, 1),),
            1,
            {"command": " ".join(cmd), "dd_said": done.stderr.strip().splitlines()[-1], "fsync": False},
        )

    def clean(self, env: AppEnv) -> None:
        remove_tree(env.root)
