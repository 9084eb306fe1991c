"""The plan of run --existing on a FUSE directory (planning/existing_fuse.py): which files
a trial reads, by the seed and within --size; which reads hold a block in a file; the
space the ciphertext takes; what is stored (no file's name). The files are real files in a
directory that stands for both views (paired with itself by inode); the real overlay is
tests/integration/test_existing_fuse.py's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cryptbench.measure.fuse_volume import FilePair, FuseVolume, pairs, walk
from cryptbench.model.errors import UsageError
from cryptbench.model.stack import Layer, LayerKind, Stack
from cryptbench.planning.existing_fuse import MAX_FILES, Space, fuse_plan, read_by
from cryptbench.planning.request import RunRequest

KIB, MIB = 1 << 10, 1 << 20


def volume(d: Path, paired: bool = True) -> FuseVolume:
    layer = Layer(
        LayerKind.FUSE, "gocryptfs", True, 0, (("mountpoint", str(d)), ("cipher directory", str(d)))
    )
    return FuseVolume("gocryptfs", d, d, d, d, paired, layer, Stack(str(d), (layer,)))


def files(d: Path, sizes: list[int]) -> list[Path]:
    d.mkdir(exist_ok=True)
    made = []
    for i, n in enumerate(sizes):
        p = d / f"f{i:03d}"
        p.write_bytes(b"x" * n)
        made.append(p)
    return made


def request(tmp_path: Path, **kw: object) -> RunRequest:
    return RunRequest(existing="x", target=str(tmp_path), db=tmp_path / "r.db", trial_time="0", **kw)


def test_the_sample_is_whole_files_drawn_by_the_seed_within_the_size(tmp_path: Path) -> None:
    d = tmp_path / "d"
    files(d, [100 * KIB] * 30 + [0])
    v = volume(d)
    one = fuse_plan(request(tmp_path, size="1M", seed=1), v)
    again = fuse_plan(request(tmp_path, size="1M", seed=1), v)
    other = fuse_plan(request(tmp_path, size="1M", seed=2), v)
    assert len(one.files) == 10 and one.plain_bytes == 10 * 100 * KIB
    assert one.files == again.files and one.files != other.files
    assert all(p.cipher == p.plain for p in one.files)  # paired with itself by inode
    assert [c for c, _ in one.cipher_files] == [p.plain for p in one.files]
    # the space is of every file under the directory, the empty one counted as a file
    assert one.space == Space(30 * 100 * KIB, 30 * 100 * KIB, 31, False)


def test_a_trial_reads_at_most_max_files(tmp_path: Path) -> None:
    d = tmp_path / "d"
    files(d, [4 * KIB] * (MAX_FILES + 10))
    assert len(fuse_plan(request(tmp_path, size="1G"), volume(d)).files) == MAX_FILES


def test_a_read_is_left_out_where_no_file_holds_one_of_its_blocks(tmp_path: Path) -> None:
    d = tmp_path / "d"
    files(d, [64 * KIB] * 4)
    plan = fuse_plan(request(tmp_path, size="1M"), volume(d))
    assert [w.name for w in plan.suite.workloads] == ["rnd4k-q32-read", "rnd4k-q1-read"]
    assert plan.notes[1] == (
        "seq1m-q8-read not run: no file of the sample (or of its ciphertext) holds one of its "
        "1.0 MiB blocks (fio reads a file in whole blocks)"
    )
    assert plan.left_out == ("seq1m-q8-write", "rnd4k-q32-write", "rnd4k-q1-write")


def test_which_files_a_block_size_reads() -> None:
    fs = [FilePair(Path(f"/p{i}"), None, n, 0) for i, n in enumerate([MIB, MIB - 1, 2 * MIB])]
    cipher = [(Path("/c0"), MIB - 1), (Path("/c1"), MIB)]
    assert read_by(fs, cipher, False, MIB) == ([0, 2], [1])
    assert read_by(fs, cipher, True, MIB) == ([0, 2], [0, 2])
    assert read_by(fs, cipher, False, 4 * KIB) == ([0, 1, 2], [0, 1])


def test_an_unpaired_overlay_reads_every_file_or_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "d"
    files(d, [300 * KIB] * 3)
    v = volume(d, paired=False)
    plan = fuse_plan(request(tmp_path, size="1M"), v)
    assert len(plan.files) == 3 and all(p.cipher is None for p in plan.files)
    assert len(plan.cipher_files) == 3
    with pytest.raises(
        UsageError, match=r"its whole mount \(3 files, 900\.0 KiB\) .* more than --size 512\.0 KiB$"
    ):
        fuse_plan(request(tmp_path, size="512K"), v)


def test_refusals(tmp_path: Path) -> None:
    d = tmp_path / "d"
    files(d, [0, 0])
    with pytest.raises(UsageError, match=r"no file with data in it to read$"):
        fuse_plan(request(tmp_path), volume(d))
    files(d, [8 * KIB])
    with pytest.raises(UsageError, match=r"smallest file holds 8\.0 KiB, more than --size 4\.0 KiB"):
        fuse_plan(request(tmp_path, size="4K"), volume(d))
    with pytest.raises(UsageError, match=r"^--io-mode: --existing reads a FUSE mount buffered"):
        fuse_plan(request(tmp_path, io_mode="direct"), volume(d))
    with pytest.raises(UsageError, match=r"^--backends: --existing measures your volume"):
        fuse_plan(request(tmp_path, backends=["gocryptfs"]), volume(d))
    for asked in ({"try_flags": True}, {"key_file": "k"}):
        with pytest.raises(
            UsageError, match=r"--try-flags tries dm-crypt's flags; a FUSE mount \(gocryptfs\) has none$"
        ):
            fuse_plan(request(tmp_path, **asked), volume(d))


def test_what_is_stored_names_no_file(tmp_path: Path) -> None:
    d = tmp_path / "d"
    files(d, [64 * KIB] * 3)
    stored = fuse_plan(request(tmp_path, size="1M", seed=3), volume(d)).to_json()
    existing = stored["existing"]
    assert {k: v for k, v in existing.items() if k != "stack"} == {
        "kind": "fuse",
        "overlay": "gocryptfs",
        "mountpoint": str(d),
        "cipher_dir": str(d),
        "paired": True,
        "sample_files": 3,
        "sample_bytes": 3 * 64 * KIB,
        "sample_cipher_files": 3,
        "space": {
            "plain_bytes": 3 * 64 * KIB,
            "cipher_bytes": 3 * 64 * KIB,
            "files": 3,
            "cut": False,
            "ratio": 1.0,
        },
        "targets": {"mapping": "gocryptfs", "raw": "gocryptfs-ciphertext"},
        "left_out": ["seq1m-q8-write", "rnd4k-q32-write", "rnd4k-q1-write"],
    }
    assert stored["backends"] == ["existing-ciphertext", "existing-fuse"]
    assert stored["io_mode"] == "buffered" and stored["size"] == 3 * 64 * KIB
    assert "f00" not in json.dumps(stored)


def test_the_walk_is_sorted_and_stops_at_its_limit(tmp_path: Path) -> None:
    d = tmp_path / "d"
    made = files(d, [1, 2, 3])
    (d / "sub").mkdir()
    (d / "sub" / "z").write_bytes(b"abcd")
    (d / "link").symlink_to(made[0])
    tree = walk(d)
    assert [p.name for p, _ in tree.files] == ["f000", "f001", "f002", "z"] and tree.bytes == 10
    assert not tree.cut
    cut = walk(d, limit=2)
    assert cut.cut and [p.name for p, _ in cut.files] == ["f000", "f001"]
    # an empty file is walked but never paired for reading
    (d / "empty").touch()
    assert [p.plain.name for p in pairs(volume(d), walk(d), walk(d))] == ["f000", "f001", "f002", "z"]


def test_the_stored_plan_is_the_runs_reads_of_two_targets_read_buffered(tmp_path: Path) -> None:
    d = tmp_path / "d"
    files(d, [64 * KIB] * 3)
    plan = fuse_plan(request(tmp_path, size="1M", seed=3), volume(d))
    stored = plan.to_json()
    stored.pop("existing")
    reads = {"rnd4k-q32-read": 32, "rnd4k-q1-read": 1}
    assert stored == {
        "suite": "quick",
        "workloads": list(reads),
        "primary_metrics": dict.fromkeys(reads, "throughput"),
        "workload_specs": {
            w: {"rw": "randread", "bs": 4096, "iodepth": q, "view": "decrypted"} for w, q in reads.items()
        },
        "apps": {},
        "backends": ["existing-ciphertext", "existing-fuse"],
        "targets": ["gocryptfs-ciphertext", "gocryptfs"],
        "states": [],
        "fs": "",
        "write_new_file": False,
        "added_baselines": [],
        "skipped": [],
        "target_dir": str(tmp_path),
        "size": 3 * 64 * KIB,
        "repeats": None,
        "stopping": {
            "precision": 0.05,
            "min_repeats": 3,
            "max_repeats": 10,
            "max_bytes": None,
            "max_time": 300.0,
            "equivalence": 0.03,
            "overrun": "drop",
        },
        "seed": 3,
        "io_mode": "buffered",
        "data": "random",
        "summary": None,
        "as_published": [],
        "ram": False,
        "trial_time": 0.0,
        "ram_bytes": 0,
        "ioengine": "auto",
    }
    # the comparison asked: the mount against its ciphertext, per read, ranked so
    assert {(q.workload, q.target, q.baseline) for q in plan.questions} == {
        (w, "gocryptfs", "gocryptfs-ciphertext") for w in reads
    }
    assert plan.seeds.keys() == set(reads) and plan.db_path == tmp_path / "r.db"
    assert plan.notes[0].startswith(
        "seq1m-q8-write, rnd4k-q32-write, rnd4k-q1-write not run: writes to your mount"
    )
