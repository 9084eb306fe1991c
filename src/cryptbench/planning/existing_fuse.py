"""The plan of `run --existing` on a user's own FUSE-encrypted directory: the same files
read through the mount (the plaintext) and as their ciphertext in the cipher directory,
cold (caches dropped before each trial), buffered (a FUSE overlay has no O_DIRECT of a
block device's kind), fio --readonly. A sample of whole files, drawn by the seed, up to
the region's bytes; the space the ciphertext takes is of every file under the directory.
Only the suite's fio reads are run; writes are left out and said why."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from cryptbench.engines.fio_workload import WorkloadSpec
from cryptbench.engines.metric_catalog import info
from cryptbench.machine.session import check_target_dir
from cryptbench.measure.fuse_volume import FilePair, FuseVolume, Tree, pairs, walk
from cryptbench.model.errors import UsageError
from cryptbench.model.json_types import JsonObject
from cryptbench.model.units import format_bytes
from cryptbench.model.vocabulary import Existing
from cryptbench.planning.existing import DEFAULT_REGION, checked, stored_plan, suite_reads
from cryptbench.planning.plan import DEFAULT_SUITE
from cryptbench.planning.quantities import run_quantities
from cryptbench.planning.questions import RankingGroups, workload_questions, workload_seeds
from cryptbench.planning.request import RunRequest, checked_seed
from cryptbench.planning.stopping_rule import stopping_rule
from cryptbench.planning.suite import Suite, family, load_suite, primary_metric
from cryptbench.stats.stopping import Question, StoppingRule
from cryptbench.store.database import default_db_path

# files a trial reads at most: fio takes its files in one filename= of at most 4096
# characters, and each is named as /dev/fd/N (an open descriptor, so that no job file,
# and nothing fio prints, names a file of the user's)
MAX_FILES = 256
FUSE_WRITES_LEFT_OUT = (
    "not run: writes to your mount cannot be compared with its ciphertext without changing your "
    "files. What can be measured: the same overlay provisioned in scratch space, written and "
    "read there (cryptbench run --backends gocryptfs, or securefs, cryfs, encfs), on the "
    "filesystem your cipher directory is on (--target DIR)"
)
FUSE_IO_MODE = (
    "--io-mode: --existing reads a FUSE mount buffered, every cache dropped before each trial "
    "(an overlay does not take O_DIRECT as a block device does)"
)


@dataclass(frozen=True)
class Space:
    """What the ciphertext of every file under the directory takes beside its plaintext."""

    plain_bytes: int  # bytes: the files' sizes through the mount
    cipher_bytes: int  # bytes: the sizes of every file in the cipher directory read against it
    files: int  # regular files under the directory, through the mount
    cut: bool  # True: the walk stopped at its limit, so these are of the first files only

    @property
    def ratio(self) -> float | None:
        """Ciphertext bytes over plaintext bytes; None for no plaintext."""
        return self.cipher_bytes / self.plain_bytes if self.plain_bytes else None

    def to_json(self) -> JsonObject:
        return {
            "plain_bytes": self.plain_bytes,
            "cipher_bytes": self.cipher_bytes,
            "files": self.files,
            "cut": self.cut,
            "ratio": self.ratio,
        }


@dataclass(frozen=True)
class FusePlan:
    volume: FuseVolume
    suite: Suite  # the reads run: the suite's fio reads
    target_dir: Path  # the scratch space: job files and the journal, never the mount
    files: tuple[FilePair, ...]  # the sample each trial reads, whole, through each view
    # the ciphertext read against them, in the order read, with its bytes
    cipher_files: tuple[tuple[Path, int], ...]
    space: Space
    rule: StoppingRule
    seed: int  # the sample, the trial order and fio's random offsets
    trial_time: float  # seconds each trial lasts at most; 0: one pass over the sample
    db_path: Path
    ioengine: str | None = None
    left_out: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    seeds: dict[str, int] = field(default_factory=dict)
    questions: tuple[Question, ...] = ()
    ranking: RankingGroups | None = None

    @property
    def mapping_target(self) -> str:
        return self.volume.overlay

    @property
    def raw_target(self) -> str:
        return f"{self.volume.overlay}-ciphertext"

    @property
    def targets(self) -> tuple[str, str]:
        return (self.raw_target, self.mapping_target)

    def read_by(self, w: WorkloadSpec) -> tuple[list[int], list[int]]:
        """Which of the sample's files (indices into `files`) and of the ciphertext (into
        `cipher_files`) a workload reads: those that hold one of its blocks at least (fio
        reads a file in whole blocks; a file smaller than one gives it none)."""
        return read_by(self.files, self.cipher_files, self.volume.paired, w.bs)

    @property
    def plain_bytes(self) -> int:
        """Bytes of the sample through the mount: what a pass reads of the plaintext."""
        return sum(p.plain_bytes for p in self.files)

    def existing_json(self) -> JsonObject:
        """What the stored plan says of the mount: its overlay and directories, the
        sample's size and the space, never a file's name."""
        return {
            **self.volume.to_json(),
            "sample_files": len(self.files),
            "sample_bytes": self.plain_bytes,
            "sample_cipher_files": len(self.cipher_files),
            "space": self.space.to_json(),
            "targets": {"mapping": self.mapping_target, "raw": self.raw_target},
            "left_out": list(self.left_out),
        }

    def to_json(self) -> JsonObject:
        return stored_plan(
            self.suite,
            [Existing.CIPHERTEXT, Existing.FUSE],
            self.targets,
            self.target_dir,
            self.plain_bytes,
            self.rule,
            self.seed,
            "buffered",
            self.trial_time,
            self.ioengine,
            self.existing_json(),
        )


def fuse_plan(r: RunRequest, volume: FuseVolume) -> FusePlan:
    """Every choice of a read-only run of the FUSE directory `volume` checked, its files
    walked and sampled; each refusal in one line."""
    checked(r, ("auto", "buffered"), FUSE_IO_MODE)  # the flags it cannot honour first
    q = run_quantities(r)
    if r.try_flags or r.key_file is not None:
        raise UsageError(
            f"--existing {volume.root}: --try-flags tries dm-crypt's flags; "
            f"a FUSE mount ({volume.overlay}) has none"
        )
    suite = load_suite(r.suite or DEFAULT_SUITE)
    reads, left_out = suite_reads(suite)
    seed = checked_seed(r.seed)
    plain, cipher = walk(volume.root), walk(volume.cipher_root)
    found = pairs(volume, plain, cipher)
    if not found:
        raise UsageError(f"--existing {volume.root}: no file with data in it to read")
    region = _region(q.size, suite)
    files, cipher_files = _sample(volume, found, cipher, region, seed)
    small = [w for w in reads if not all(read_by(files, cipher_files, volume.paired, w.bs))]
    reads = tuple(w for w in reads if w not in small)
    if not reads:
        raise UsageError(
            f"--existing {volume.root}: no file of the sample holds one block of any read "
            f"({', '.join(sorted({format_bytes(w.bs) for w in small}))}): give a larger --size"
        )
    rule = stopping_rule(suite, r, q, target_dir=None)
    plan_suite = Suite(suite.name, suite.description, reads, repeats=suite.repeats)
    overlay = volume.overlay
    raw, mapping = f"{overlay}-ciphertext", overlay
    baselines: dict[str, str | None] = {raw: None, mapping: raw}
    notes = [] if not left_out else [f"{', '.join(left_out)} {FUSE_WRITES_LEFT_OUT}"]
    notes += [
        f"{w.name} not run: no file of the sample (or of its ciphertext) holds one of its "
        f"{format_bytes(w.bs)} blocks (fio reads a file in whole blocks)"
        for w in small
    ]
    if plain.cut or cipher.cut:
        notes.append(
            f"{volume.root} holds more files than a walk visits before the first trial: the sample "
            "and the space are of the first of them, in name order"
        )
    return FusePlan(
        volume=volume,
        suite=plan_suite,
        target_dir=check_target_dir(Path(r.target)),
        files=tuple(files),
        cipher_files=tuple(cipher_files),
        space=Space(plain.bytes, cipher.bytes, len(plain.files), plain.cut or cipher.cut),
        rule=rule,
        seed=seed,
        trial_time=q.trial_time,
        db_path=r.db or default_db_path(),
        ioengine=r.ioengine,
        left_out=tuple(left_out),
        notes=tuple(notes),
        seeds=workload_seeds(seed, reads),
        questions=workload_questions(reads, baselines, [mapping]),
        ranking=RankingGroups(
            {mapping: raw},
            {w.name: family(w) for w in reads},
            {w.name: info(primary_metric(w)).higher_is_better for w in reads},
        ),
    )


def read_by(
    files: tuple[FilePair, ...] | list[FilePair],
    cipher_files: tuple[tuple[Path, int], ...] | list[tuple[Path, int]],
    paired: bool,
    block: int,
) -> tuple[list[int], list[int]]:
    """The indices of the files, and of the ciphertext, that hold `block` bytes at least;
    where paired, a file and its ciphertext are read or left out together."""
    plain = [i for i, p in enumerate(files) if p.plain_bytes >= block]
    if paired:
        return plain, plain
    return plain, [i for i, (_, n) in enumerate(cipher_files) if n >= block]


def _region(size: int | None, suite: Suite) -> int:
    """Bytes of plaintext the sample holds at most: --size (`size`, bytes), else the
    suite's, else DEFAULT_REGION."""
    if size is not None:
        if size <= 0:
            raise UsageError(f"--size {format_bytes(size)}: --existing reads at least one byte")
        return size
    return suite.size if suite.size is not None else DEFAULT_REGION


def _sample(
    volume: FuseVolume, found: list[FilePair], cipher: Tree, region: int, seed: int
) -> tuple[list[FilePair], list[tuple[Path, int]]]:
    """Whole files drawn at random (by `seed`) while they fit in `region` bytes, at most
    MAX_FILES of them, and the ciphertext read against them: each one's own where paired,
    else the whole cipher directory (which must then fit too)."""
    if not volume.paired:
        total = sum(p.plain_bytes for p in found)
        ciphers = [(p, n) for p, n in cipher.files if n > 0]
        if total > region or len(found) > MAX_FILES or len(ciphers) > MAX_FILES:
            limit = f"--size {format_bytes(region)}" if total > region else f"{MAX_FILES} files a trial reads"
            raise UsageError(
                f"--existing {volume.mountpoint}: {volume.overlay} does not show which ciphertext is "
                f"which file, so its whole mount ({len(found)} files, {format_bytes(total)}) is read "
                f"against its whole cipher directory ({len(ciphers)} files); that is more than "
                f"{limit}"
            )
        return found, ciphers
    order = list(found)
    random.Random(seed).shuffle(order)
    chosen: list[FilePair] = []
    left = region
    for p in order:
        if len(chosen) == MAX_FILES:
            break
        if p.plain_bytes <= left:
            chosen.append(p)
            left -= p.plain_bytes
    if not chosen:
        smallest = min(p.plain_bytes for p in found)
        raise UsageError(
            f"--existing {volume.root}: its smallest file holds {format_bytes(smallest)}, more than "
            f"--size {format_bytes(region)}: give a larger --size"
        )
    return chosen, [(p.cipher, p.cipher_bytes) for p in chosen if p.cipher is not None]
