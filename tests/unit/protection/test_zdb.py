"""protection/zdb.py: a ZFS pool's image as zdb reads it, at rest and without a key.

The fixtures are what zdb 2.3.2 printed in the kernel lab (tests/fixtures/zdb/record.sh)
of a plain pool and a natively encrypted one, each written as the probes write. Where a
test needs zdb to run, a stand-in program on PATH prints those fixtures: the real zdb
against a real pool is the lab's (tests/lab/test_zfs.py).
"""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from cryptbench.model.vocabulary import Verdict
from cryptbench.protection import zdb
from cryptbench.protection.probes import decide_sizes
from cryptbench.protection.sight import Entry, look
from tests.support.paths import TESTS

FIXTURES = TESTS / "fixtures" / "zdb"
PROBE = ".cryptbench-protection-0a1b2c3d4e5f"
TOKEN = "cbname00112233445566778899"


def _entries(kind: str) -> dict[str, tuple[bool, int]]:
    return zdb.entries(zdb.parse((FIXTURES / f"{kind}-pool.txt").read_text()))


def test_a_plain_pool_shows_every_path_and_exact_size() -> None:
    seen = _entries("plain")
    data = "cryptbench-fixture-plain-1/data"
    folder = f"{data}/{PROBE}"
    assert seen["cryptbench-fixture-plain-1"] == (True, 0) and seen[data] == (True, 0)
    assert seen[f"{data}/data"] == (False, 300_000)
    assert seen[f"{folder}/{TOKEN}"] == (False, 1) and seen[f"{folder}/{TOKEN}d"] == (True, 0)
    sizes = [seen[f"{folder}/s{i}"] for i in range(5)]
    assert sizes == [(False, n) for n in (1, 4095, 4096, 4097, 100_000)]
    assert seen[f"{folder}/t"] == seen[f"{folder}/t/u"] == (True, 0)
    assert [seen[f"{folder}/t/u/f{i}"] for i in range(3)] == [(False, 4)] * 3
    # a directory whose entries are a fat ZAP (a name over 50 bytes), read all the same
    assert seen[f"{folder}/fat/a-name-longer-than-fifty-bytes-makes-the-directory-a-fat-zap"] == (False, 0)
    assert not [p for p in seen if "#" in p], "every object of a plain pool has its place"
    assert len(seen) == 18


def test_native_encryption_shows_dataset_names_and_block_sizes_but_no_name_or_nesting() -> None:
    seen = _entries("native")
    data = "cryptbench-fixture-native-1/data"
    assert seen["cryptbench-fixture-native-1"] == (True, 0) and seen[data] == (True, 0)
    assert not [p for p in seen if TOKEN in p or PROBE in p]
    objects = {p: e for p, e in seen.items() if p.startswith(f"{data}/")}
    assert all(
        p.removeprefix(f"{data}/").startswith("#") and "/" not in p.removeprefix(f"{data}/") for p in objects
    )
    # the data file to its record (3 x 128 KiB), the empty file as nothing, every other
    # file to 512 bytes: 1 and the three 4-byte files and the name's as 512, 4095 and
    # 4096 as 4096, 4097 as 4608, 100,000 as 100,352
    files = sorted(size for is_dir, size in objects.values() if not is_dir)
    assert files == [0, 512, 512, 512, 512, 512, 4096, 4096, 4608, 100_352, 393_216]
    assert sum(is_dir for is_dir, _ in objects.values()) == 5  # the folder, the name's, t, u, fat


def test_block_sizes_read_so_are_sizes_to_512_bytes() -> None:
    """The sizes probe, given what zdb shows of the sizes probe's files on each pool."""
    logical = {1: 512, 4095: 4096, 4096: 4096, 4097: 4608, 100_000: 100_352}
    native = {s for is_dir, s in _entries("native").values() if not is_dir}
    assert set(logical.values()) <= native
    found = decide_sizes({p: [b] for p, b in logical.items()})
    assert found.verdict is Verdict.BLOCK and found.detail["block"] == 512
    seen = _entries("plain")
    folder = f"cryptbench-fixture-plain-1/data/{PROBE}"
    plain = decide_sizes({p: [seen[f"{folder}/s{i}"][1]] for i, p in enumerate(logical)})
    assert plain.verdict is Verdict.SHOWN


def test_an_image_is_a_pool_where_an_uberblock_magic_sits_in_the_first_ring(tmp_path: Path) -> None:
    image = tmp_path / "zfs.img"
    image.write_bytes(bytes(512 << 10))
    assert not zdb.is_pool(image)
    for order, offset in (("little", 4096), ("big", 4096), ("little", 0), ("little", (128 << 10) - 1024)):
        blob = bytearray(512 << 10)
        at = zdb.RING[0] + offset
        blob[at : at + 8] = zdb.UBERBLOCK_MAGIC.to_bytes(8, order)  # type: ignore[arg-type]
        image.write_bytes(blob)
        assert zdb.is_pool(image), (order, offset)
    misplaced = bytearray(512 << 10)
    for at in (zdb.RING[0] - 1024, zdb.RING[1], zdb.RING[0] + 8):  # before, after, off a slot
        misplaced[at : at + 8] = zdb.UBERBLOCK_MAGIC.to_bytes(8, "little")
    image.write_bytes(misplaced)
    assert not zdb.is_pool(image)
    short = tmp_path / "short.img"
    short.write_bytes(bytes(4096))
    assert not zdb.is_pool(short)


def _pool_image(tmp_path: Path) -> Path:
    blob = bytearray(512 << 10)
    blob[zdb.RING[0] : zdb.RING[0] + 8] = zdb.UBERBLOCK_MAGIC.to_bytes(8, "little")
    image = tmp_path / "zfs.img"
    image.write_bytes(blob)
    return image


def _fake_zdb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, label: str, dump: str, status: int = 0
) -> Path:
    """A `zdb` on PATH that records its arguments and prints a fixture: `label` for -l,
    `dump` for the rest (to stderr, with `status`, where that is not 0)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    program = bin_dir / "zdb"
    program.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {calls}\n'
        f'if [ "$1" = -l ]; then cat {FIXTURES / label}; exit 0; fi\n'
        + (f"cat {FIXTURES / dump} >&2; exit {status}\n" if status else f"cat {FIXTURES / dump}\n")
    )
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return calls


def test_a_pool_image_is_looked_at_through_zdb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    image = _pool_image(tmp_path)
    calls = _fake_zdb(tmp_path, monkeypatch, "native-label.txt", "native-pool.txt")
    sight = look((image,))
    assert sight.how == "ZFS pool" and sight.entries is not None
    assert sight.entries == {p: Entry(*e) for p, e in _entries("native").items()}
    # the pool's name from its label; every dataset read from the image, numbers unscaled
    assert calls.read_text().splitlines() == [
        f"-l {image}",
        f"-e -p {image} -P -dddd cryptbench-fixture-native-1",
    ]


def test_a_pool_zdb_cannot_read_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    image = _pool_image(tmp_path)
    _fake_zdb(tmp_path, monkeypatch, "notapool-label.txt", "notapool-label.txt")
    assert zdb.read(image) == "zdb found no pool's name in its labels"
    (tmp_path / "bin" / "zdb").unlink()
    (tmp_path / "bin").rmdir()
    (tmp_path / "calls").unlink(missing_ok=True)
    _fake_zdb(tmp_path, monkeypatch, "plain-label.txt", "notapool-label.txt", status=2)
    sight = look((image,))
    assert (sight.how, sight.entries) == ("ZFS pool", None)
    assert sight.reason == "zdb could not read it: failed to unpack label 3"
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert zdb.read(image) == "zdb (zfsutils-linux) is not installed"


def test_objects_outside_a_filesystem_dataset_are_not_files() -> None:
    """The MOS's objects (and a volume's) are the pool's own, never a dataset's files."""
    dump = (FIXTURES / "plain-pool.txt").read_text()
    mos_only = dump.split("\nDataset cryptbench-fixture-plain-1/data ")[0]
    assert "Dataset mos [META]" in mos_only and zdb.parse(mos_only) == []
    volume = mos_only.replace("Dataset mos [META]", "Dataset cryptbench-fixture-plain-1/vol [ZVOL]")
    assert zdb.parse(volume) == []


def _edited(kind: str, edit: Callable[[list[str]], None]) -> str:
    """A fixture's dump with its lines edited, for what the recorded pools do not hold."""
    lines = (FIXTURES / f"{kind}-pool.txt").read_text().splitlines()
    edit(lines)
    return "\n".join(lines) + "\n"


def test_every_name_of_a_file_is_a_path_and_a_dangling_entry_is_skipped() -> None:
    """A hard link is a second name an observer reads; an entry whose object the dump does
    not hold (removed meanwhile) names nothing, and the entries after it still count."""

    def edit(lines: list[str]) -> None:
        first = next(i for i, line in enumerate(lines) if zdb.DIR_ENTRY.match(line) and "= 128 " not in line)
        name, obj = zdb.DIR_ENTRY.match(lines[first]).groups()  # type: ignore[union-attr]
        lines[first:first] = [
            "\t\tghost = 999999 (type: Regular File)",
            f"\t\tlink-to-{name} = {obj} (type: x)",
        ]

    seen = zdb.entries(zdb.parse(_edited("plain", edit)))
    links = [p for p in seen if p.rpartition("/")[2].startswith("link-to-")]
    assert len(links) == 1
    original = links[0].replace("link-to-", "")
    assert seen[links[0]] == seen[original]
    assert not [p for p in seen if "ghost" in p]
    assert len(seen) == 19  # the 18 of the recorded pool, and the link


def test_a_dataset_whose_root_cannot_be_read_lists_each_object_by_number() -> None:
    seen = zdb.entries(zdb.parse(_edited("plain", lambda lines: lines.remove("\t\tROOT = 34 "))))
    data = "cryptbench-fixture-plain-1/data"
    objects = [p for p in seen if p.startswith(f"{data}/")]
    assert objects and all(p.removeprefix(f"{data}/").startswith("#") for p in objects)
    assert (False, 300_000) in [seen[p] for p in objects]  # a plain znode's size, placed or not


def test_a_sparsely_filled_object_keeps_its_size() -> None:
    def edit(lines: list[str]) -> None:
        for i, line in enumerate(lines):
            if (m := zdb.OBJECT.match(line)) and m.group(4) == zdb.FILE and m.group(2) == "393216":
                lines[i] = line.replace("100.00", "  0.50")

    seen = zdb.entries(zdb.parse(_edited("native", edit)))
    assert (False, 393_216) in seen.values()  # a block of three holds data: its span shows


def test_names_that_are_not_utf8_are_read_escaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    image = _pool_image(tmp_path)
    dump = tmp_path / "raw-pool.txt"
    dump.write_bytes((FIXTURES / "plain-pool.txt").read_bytes().replace(b"cbname", b"cb\xffname"))
    calls = _fake_zdb(tmp_path, monkeypatch, "plain-label.txt", "plain-pool.txt")
    program = tmp_path / "bin" / "zdb"
    program.write_text(program.read_text().replace(str(FIXTURES / "plain-pool.txt"), str(dump)))
    found = zdb.read(image)
    assert isinstance(found, dict) and calls.exists()
    assert [p for p in found if p.endswith("/cb\\xffname00112233445566778899")]


def test_a_zdb_that_hangs_or_fails_silently_is_told_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    image = _pool_image(tmp_path)
    _fake_zdb(tmp_path, monkeypatch, "plain-label.txt", "plain-pool.txt")
    program = tmp_path / "bin" / "zdb"
    program.write_text("#!/bin/sh\nexit 3\n")
    assert zdb.read(image) == "zdb could not read it: exit 3"
    program.write_text("#!/bin/sh\nprintf 'cannot open \\377\\n' >&2\nexit 1\n")
    assert zdb.read(image) == "zdb could not read it: cannot open \ufffd"  # its words, whatever the bytes
    program.write_text("#!/bin/sh\nsleep 5\n")
    monkeypatch.setattr(zdb, "ZDB_TIMEOUT", 0.2)
    assert zdb.read(image) == "zdb took over 0 s"
