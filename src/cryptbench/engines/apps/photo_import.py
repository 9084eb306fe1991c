"""photo-import (studies 000 and 001): a card of RAW-sized photos imported into
the target, a catalog row per photo, a preview per photo.

The card is a folder outside the targets (made once per run, the same bytes
for every target). Phases, caches dropped between them:

- copy: every photo from the card into the target, made durable;
  with `variant = "stage-then-move"` instead two phases, as study 000 found
  Lightroom doing: stage (card → a folder outside the target) and move (into
  the target). Moving within one filesystem is a rename; into an encrypted
  layer it is a copy, which is what made the study's import twice as slow;
- catalog: one SQLite transaction per photo, in a catalog on the target;
- previews: each photo read back from the target and reduced to a small
  preview (CPU work that encryption should not change), written beside it.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

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
from cryptbench.model.json_types import JsonObject, TomlTable
from cryptbench.model.metrics import MetricInfo

MIB = 1 << 20
RAW_SIZE = 24 * MIB  # bytes: a 21-24 MP camera's RAW file
PREVIEW_WIDTH = 1024  # pixels of 16 bits per row when a photo is read as an image
PREVIEW_SCALE = 8  # the preview is 1/8 of the width and height
VARIANTS = ("direct", "stage-then-move")


@dataclass(frozen=True)
class PhotoImport(AppWorkload):
    app: ClassVar[str] = "photo-import"
    writes: ClassVar[bool] = True
    primary: ClassVar[str] = "pictures_per_minute"
    rate_metric: ClassVar[str | None] = "pictures_per_minute"
    metrics: ClassVar[tuple[MetricInfo, ...]] = (
        MetricInfo("pictures_per_minute", "pictures/min", True, "pictures per minute"),
    )
    summary: ClassVar[str] = (
        "photos from a card copied in (or staged outside and moved in), catalogued in SQLite, previewed"
    )

    name: str
    photo_size: int = RAW_SIZE  # bytes per photo
    variant: str = "direct"  # direct or stage-then-move

    @classmethod
    def from_table(cls, name: str, params: TomlTable, where: str) -> PhotoImport:
        p = Params(params, where)
        photo = p.size("photo_size", RAW_SIZE, 256 << 10, 1 << 30)
        variant = p.choice("variant", "direct", VARIANTS)
        p.done()
        return cls(name, photo, variant)

    def photos(self, size: int) -> int:
        return size // self.photo_size

    def min_size(self) -> int:
        return self.photo_size

    def target_bytes(self, size: int) -> int:
        n = self.photos(size)
        return n * self.photo_size + n * self._preview_bytes() + MIB  # + the catalog

    def input_bytes(self, size: int) -> int:
        card = self.photos(size) * self.photo_size
        return 2 * card if self.variant == "stage-then-move" else card

    def describe(self, size: int) -> JsonObject:
        return {
            **super().describe(size),
            "photos": self.photos(size),
            "photo_size": self.photo_size,
            "variant": self.variant,
        }

    def _names(self, size: int) -> list[str]:
        return [f"IMG_{i + 1:04d}.CR2" for i in range(self.photos(size))]

    def _preview_bytes(self) -> int:
        rows = self.photo_size // 2 // PREVIEW_WIDTH
        return (rows // PREVIEW_SCALE) * (PREVIEW_WIDTH // PREVIEW_SCALE)

    def make_inputs(self, env: AppEnv) -> None:
        card = env.inputs / "DCIM"
        if inputs_ready(env.inputs):
            return
        card.mkdir(parents=True, exist_ok=True)
        for name in self._names(env.size):
            write_incompressible(card / name, env.seed, self.photo_size, "photo", name)
        mark_inputs_ready(env.inputs)

    def run(self, env: AppEnv) -> AppResult:
        card = env.inputs / "DCIM"
        names = self._names(env.size)
        pictures = env.root / "Pictures"
        pictures.mkdir(parents=True)
        clock = PhaseClock()
        moved_by_copy = None
        if self.variant == "stage-then-move":
            staged = env.staging / "import"
            staged.mkdir(parents=True)
            _each_photo(clock, "stage", names, shutil.copyfile, card, staged, self.photo_size)
            env.settle()
            # A rename within one filesystem moves no data; across filesystems
            # (into an encrypted layer) shutil.move copies and deletes.
            moved_by_copy = os.stat(staged).st_dev != os.stat(pictures).st_dev
            moved = self.photo_size if moved_by_copy else 0
            _each_photo(clock, "move", names, shutil.move, staged, pictures, moved)
        else:
            _each_photo(clock, "copy", names, shutil.copyfile, card, pictures, self.photo_size)
        env.settle()
        with clock.phase("catalog") as c:
            catalog = sqlite3.connect(env.root / "catalog.sqlite", isolation_level=None)
            try:
                catalog.execute("PRAGMA synchronous=FULL")
                catalog.execute(
                    "CREATE TABLE IF NOT EXISTS photos (id INTEGER PRIMARY KEY, path TEXT, size INTEGER,"
                    " modified REAL)"
                )
                for name in names:
                    st = os.stat(pictures / name)
                    catalog.execute("BEGIN")
                    catalog.execute(
                        "INSERT INTO photos (path, size, modified) VALUES (?,?,?)",
                        (f"Pictures/{name}", st.st_size, st.st_mtime),
                    )
                    catalog.execute("COMMIT")
                    c.items += 1
            finally:
                catalog.close()
        env.settle()
        previews = env.root / "previews"
        previews.mkdir()
        with clock.phase("previews") as c:
            for name in names:
                data = (pictures / name).read_bytes()
                preview = _preview(data)
                with open(previews / f"{name}.preview", "wb") as f:
                    f.write(preview)
                c.bytes += len(data) + len(preview)
                c.items += 1
            durable()
        details: JsonObject = {"photos": len(names), "photo_size": self.photo_size}
        if moved_by_copy is not None:
            details["move_was_copy"] = moved_by_copy
        return AppResult(tuple(clock.phases), len(names), details)

    def clean(self, env: AppEnv) -> None:
        remove_tree(env.root)
        remove_tree(env.staging / "import")


def _preview(data: bytes) -> bytes:
    """A photo's bytes read as a 16-bit image, block-averaged to 1/8 size, as 8 bits."""
    pixels = np.frombuffer(data, dtype=np.uint16)
    rows = len(pixels) // PREVIEW_WIDTH // PREVIEW_SCALE * PREVIEW_SCALE
    image = pixels[: rows * PREVIEW_WIDTH].reshape(rows, PREVIEW_WIDTH)
    s = PREVIEW_SCALE
    small = image.reshape(rows // s, s, PREVIEW_WIDTH // s, s).mean(axis=(1, 3))
    return (small / 256).astype(np.uint8).tobytes()


def _each_photo(
    clock: PhaseClock,
    phase: str,
    names: list[str],
    transfer: Callable[[Path, Path], object],
    source: Path,
    dest: Path,
    bytes_each: int,
) -> None:
    """One timed phase: each photo from source to dest (a copy or a move), made durable."""
    with clock.phase(phase) as c:
        for name in names:
            transfer(source / name, dest / name)
            c.bytes += bytes_each
            c.items += 1
        durable()
