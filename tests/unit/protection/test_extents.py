"""Reading a backing's data and not its holes (protection/extents.py), and the two readers
built on it: the marker search (sight.contains) and the block sums (blocks.digest)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cryptbench.protection import blocks, extents, sight
from cryptbench.protection.extents import BLOCK

TOKEN = b"0123456789abcdef0123456789abcdef"  # as the probes make them: hex, no zero byte


def _sparse(path: Path, size: int, writes: dict[int, bytes]) -> None:
    with open(path, "wb") as f:
        f.truncate(size)
        for at, data in writes.items():
            f.seek(at)
            f.write(data)


def _read(path: Path, buf_bytes: int) -> list[tuple[int, bytes]]:
    buf = memoryview(bytearray(buf_bytes))
    with open(path, "rb", buffering=0) as f:
        return [(at, bytes(buf[:got])) for at, got in extents.chunks(f, buf)]


def test_chunks_skip_the_holes_and_give_every_byte_written_at_its_offset(tmp_path: Path) -> None:
    image = tmp_path / "image"
    _sparse(image, 1024 * BLOCK, {100 * BLOCK: b"a" * 3 * BLOCK, 600 * BLOCK + 5: b"b" * 10})
    read = _read(image, 2 * BLOCK)
    offsets = [at for at, _ in read]
    # data only: 3 blocks in two chunks of the 2-block buffer, then the one block around 600's bytes
    assert offsets == [100 * BLOCK, 102 * BLOCK, 600 * BLOCK]
    whole = dict(read)
    assert whole[100 * BLOCK] + whole[102 * BLOCK] == b"a" * 3 * BLOCK
    assert whole[600 * BLOCK] == bytes(5) + b"b" * 10 + bytes(BLOCK - 15)


def test_chunks_of_a_file_without_holes_cover_it_to_its_short_end(tmp_path: Path) -> None:
    data = os.urandom(5 * BLOCK + 123)
    path = tmp_path / "f"
    path.write_bytes(data)
    read = _read(path, 2 * BLOCK)
    assert [at for at, _ in read] == [0, 2 * BLOCK, 4 * BLOCK]
    assert b"".join(chunk for _, chunk in read) == data


def test_chunks_of_an_empty_or_all_hole_file_are_none(tmp_path: Path) -> None:
    empty, hole = tmp_path / "empty", tmp_path / "hole"
    empty.write_bytes(b"")
    _sparse(hole, 64 * BLOCK, {})
    assert _read(empty, BLOCK) == [] and _read(hole, BLOCK) == []


@pytest.mark.parametrize("at", [0, BLOCK - 5, 2 * BLOCK - 31, 2 * BLOCK - 1 - len(TOKEN), 7 * BLOCK + 3])
def test_the_marker_is_found_wherever_it_lies_across_the_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at: int
) -> None:
    monkeypatch.setattr(sight, "CHUNK", BLOCK)  # a read boundary every block
    path = tmp_path / "image"
    _sparse(path, 16 * BLOCK, {0: b"x" * 8 * BLOCK, at: TOKEN})
    assert sight.contains(path, TOKEN)
    assert not sight.contains(path, TOKEN[::-1])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    at=st.integers(0, 40 * BLOCK),
    chunk_blocks=st.integers(1, 3),
    hole_at=st.integers(0, 40),
)
def test_contains_agrees_with_reading_the_whole_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at: int, chunk_blocks: int, hole_at: int
) -> None:
    monkeypatch.setattr(sight, "CHUNK", chunk_blocks * BLOCK)
    path = tmp_path / "image"
    path.unlink(missing_ok=True)
    # data around the token and a run of data elsewhere, holes between
    _sparse(path, 48 * BLOCK, {hole_at * BLOCK: b"y" * 2 * BLOCK, at: TOKEN})
    whole = path.read_bytes()
    assert sight.contains(path, TOKEN) == (TOKEN in whole) is True
    assert not sight.contains(path, b"not-" + TOKEN)


def test_a_marker_of_zeros_is_refused_since_holes_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(bytes(BLOCK))
    with pytest.raises(AssertionError):
        sight.contains(path, bytes(32))


def test_the_digest_of_a_sparse_file_is_its_blocks_sums_with_holes_marked(tmp_path: Path) -> None:
    image = tmp_path / "image"
    tail = os.urandom(BLOCK + 100)  # the file ends in a short block
    _sparse(image, 0, {0: b"a" * BLOCK, 9 * BLOCK: b"b" * 2 * BLOCK, 30 * BLOCK: tail})
    sums = blocks.digest((image,)).crcs[image]
    whole = image.read_bytes()
    assert len(sums) == 32
    # every block that holds data has the sum of its bytes; the rest are holes (all zeros)
    expected = blocks.block_sums(whole)
    for i, s in enumerate(sums):
        if s != blocks.HOLE:
            assert s == expected[i], i
        else:
            assert whole[i * BLOCK : (i + 1) * BLOCK] == bytes(BLOCK), i
    assert [i for i, s in enumerate(sums) if s != blocks.HOLE] == [0, 9, 10, 30, 31]


def test_block_sums_of_a_view_and_of_its_bytes_agree() -> None:
    data = os.urandom(3 * BLOCK + 17)
    assert list(blocks.block_sums(memoryview(bytearray(data)))) == list(blocks.block_sums(data))
