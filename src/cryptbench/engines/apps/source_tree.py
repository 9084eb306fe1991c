"""source-tree: the workload gocryptfs and its peers publish. A generated tree
of source-code-like files (log-normal sizes, a few levels of directories) is
made once as a tarball outside the targets; each trial then

- extract: GNU tar unpacks it into the target, made durable;
- checksum: SHA-256 of every file (each read back from the target);
- list: a recursive listing with lstat of every entry, as `ls -lR` does;
- delete: the tree removed recursively, made durable.

Caches are dropped between phases, so checksum and list hit the target.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tarfile
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
from cryptbench.engines.apps.data import lognormal_sizes, rng, text
from cryptbench.engines.apps.params import Params
from cryptbench.engines.child import run_child
from cryptbench.machine.system import which
from cryptbench.model.errors import TrialError
from cryptbench.model.json_types import JsonObject, TomlTable
from cryptbench.model.metrics import MetricInfo

MEDIAN_FILE = 6 << 10  # bytes: the median source file (log-normal, sigma 1.0: mean ~10 KiB)
SIGMA = 1.0
SMALLEST, LARGEST = 64, 1 << 20  # bytes
FILES_PER_DIR = 24  # on average
BLOCK = 4096  # bytes a small file occupies at least on the target, for the space check
EXTENSIONS = (".c", ".h", ".py", ".go", ".rs", ".md", ".txt", ".json")
TARBALL = "tree.tar"
CHILD_TIMEOUT = 3600.0  # seconds: a tar that has not finished by then is stuck, not slow


@dataclass(frozen=True)
class SourceTree(AppWorkload):
    app: ClassVar[str] = "source-tree"
    writes: ClassVar[bool] = True
    primary: ClassVar[str] = "seconds"
    rate_metric: ClassVar[str | None] = "files_per_second"
    metrics: ClassVar[tuple[MetricInfo, ...]] = (
        MetricInfo("files_per_second", "files/s", True, "files per second"),
    )
    summary: ClassVar[str] = "a source tree from a tarball: extract, checksum, list with stat, delete"

    name: str
    median_file: int = MEDIAN_FILE  # bytes

    @classmethod
    def from_table(cls, name: str, params: TomlTable, where: str) -> SourceTree:
        p = Params(params, where)
        median = p.size("median_file", MEDIAN_FILE, 256, 1 << 20)
        p.done()
        return cls(name, median)

    def sizes(self, size: int, seed: int) -> list[int]:
        return lognormal_sizes(seed, size, self.median_file, SIGMA, SMALLEST, LARGEST)

    def target_bytes(self, size: int) -> int:
        # Every file takes whole blocks; the mean of the spread is ~1.6x the median.
        files = size // self.median_file + 1
        return size + files * BLOCK + (files // FILES_PER_DIR + 1) * BLOCK

    def input_bytes(self, size: int) -> int:
        return size + (size // self.median_file + 1) * 1024  # tar headers and padding

    def describe(self, size: int) -> JsonObject:
        return {**super().describe(size), "median_file": self.median_file}

    def make_inputs(self, env: AppEnv) -> None:
        if inputs_ready(env.inputs):
            return
        env.inputs.mkdir(parents=True, exist_ok=True)
        sizes = self.sizes(env.size, env.seed)
        r = rng(env.seed, "tree")
        with tarfile.open(env.inputs / TARBALL, "w", format=tarfile.GNU_FORMAT) as tar:
            directory, in_dir, made = "src", 0, 0
            _add_dir(tar, "src")
            for i, n in enumerate(sizes):
                if in_dir >= r.randint(FILES_PER_DIR // 2, FILES_PER_DIR * 3 // 2):
                    # A new directory: a sibling, a child, or back near the top.
                    made += 1
                    depth = directory.count("/")
                    parent = directory if depth < 4 and r.random() < 0.5 else directory.rsplit("/", 1)[0]
                    directory, in_dir = f"{parent}/mod{made:04d}", 0
                    _add_dir(tar, directory)
                ext = EXTENSIONS[r.randrange(len(EXTENSIONS))]
                info = tarfile.TarInfo(f"{directory}/f{i:06d}{ext}")
                info.size, info.mode, info.mtime = n, 0o644, 1_700_000_000
                tar.addfile(info, io.BytesIO(text(env.seed, n, "file", i)))
                in_dir += 1
        mark_inputs_ready(env.inputs)

    def run(self, env: AppEnv) -> AppResult:
        tar = which("tar")
        if tar is None:
            raise TrialError("GNU tar is not installed (apt-get install tar)")
        tree = env.root / "tree"
        tree.mkdir(parents=True)
        clock = PhaseClock()
        sizes = self.sizes(env.size, env.seed)
        total, files = sum(sizes), len(sizes)
        with clock.phase("extract") as c:
            out = run_child(
                [tar, "-x", "--no-same-owner", "-f", str(env.inputs / TARBALL), "-C", str(tree)],
                env.session,
                CHILD_TIMEOUT,
            )
            if out.returncode != 0:
                lines = out.stderr.strip().splitlines()
                raise OSError(out.returncode, lines[-1] if lines else "tar failed")
            durable()
            c.bytes, c.items = total, files
        env.settle()
        with clock.phase("checksum") as c:
            digest = hashlib.sha256()
            for dirpath, dirnames, filenames in os.walk(tree):
                dirnames.sort()
                for name in sorted(filenames):
                    with open(os.path.join(dirpath, name), "rb") as f:
                        data = f.read()
                    digest.update(hashlib.sha256(data).digest())
                    c.bytes += len(data)
                    c.items += 1
        env.settle()
        with clock.phase("list") as c:
            for dirpath, dirnames, filenames in os.walk(tree):
                for name in dirnames + filenames:
                    os.lstat(os.path.join(dirpath, name))
                    c.items += 1
        env.settle()
        with clock.phase("delete") as c:
            shutil.rmtree(tree)
            durable()
            c.items = files
        details = {"files": files, "bytes": total, "sha256_of_sha256s": digest.hexdigest()}
        return AppResult(tuple(clock.phases), files, details)

    def clean(self, env: AppEnv) -> None:
        remove_tree(env.root)


def _add_dir(tar: tarfile.TarFile, name: str) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 1_700_000_000
    tar.addfile(info)
