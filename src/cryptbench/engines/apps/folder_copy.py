"""folder-copy (study 001): a folder of RAW-sized files copied to another
folder on the same target, as a file manager does; MB/s and CPU.

The source folder is written onto the target before the clock starts (again
after a stateful target is made anew); the copy is made durable in the clock
and deleted after it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import ClassVar

from cryptbench.engines.apps.base import (
    AppEnv,
    AppResult,
    AppWorkload,
    PhaseClock,
    durable,
    inputs_ready,
    mark_inputs_ready,
    remove_tree,
)
from cryptbench.engines.apps.data import write_incompressible
from cryptbench.engines.apps.params import Params
from cryptbench.engines.apps.photo_import import RAW_SIZE
from cryptbench.model.json_types import JsonObject, TomlTable


@dataclass(frozen=True)
class FolderCopy(AppWorkload):
    app: ClassVar[str] = "folder-copy"
    writes: ClassVar[bool] = True
    primary: ClassVar[str] = "throughput"
    summary: ClassVar[str] = "a folder of RAW-sized files copied to another folder on the same target"

    name: str
    file_size: int = RAW_SIZE  # bytes per file

    @classmethod
    def from_table(cls, name: str, params: TomlTable, where: str) -> FolderCopy:
        p = Params(params, where)
        size = p.size("file_size", RAW_SIZE, 64 << 10, 1 << 30)
        p.done()
        return cls(name, size)

    def files(self, size: int) -> int:
        return size // self.file_size

    def min_size(self) -> int:
        return self.file_size

    def target_bytes(self, size: int) -> int:
        return 2 * self.files(size) * self.file_size

    def describe(self, size: int) -> JsonObject:
        return {**super().describe(size), "files": self.files(size), "file_size": self.file_size}

    def _names(self, size: int) -> list[str]:
        return [f"DSC_{i + 1:04d}.NEF" for i in range(self.files(size))]

    def setup(self, env: AppEnv) -> None:
        source = env.root / "source"
        if inputs_ready(source):
            return
        remove_tree(source)
        source.mkdir(parents=True)
        for name in self._names(env.size):
            write_incompressible(source / name, env.seed, self.file_size, "file", name)
        mark_inputs_ready(source)
        durable()

    def run(self, env: AppEnv) -> AppResult:
        source, copy = env.root / "source", env.root / "copy"
        clock = PhaseClock()
        copy.mkdir()
        with clock.phase("copy") as c:
            for name in self._names(env.size):
                shutil.copyfile(source / name, copy / name)
                c.bytes += self.file_size
                c.items += 1
            durable()
        n = self.files(env.size)
        return AppResult(tuple(clock.phases), n, {"files": n, "file_size": self.file_size})

    def clean(self, env: AppEnv) -> None:
        remove_tree(env.root / "copy")
