from pathlib import Path

import pytest

from cryptbench.backends.base import Target, cache_files
from cryptbench.measure import cache


def test_a_file_inside_the_backing_is_counted_once(tmp_path: Path) -> None:
    data = tmp_path / "cryptbench.dat"
    data.write_bytes(b"x")
    other = tmp_path / "sub" / "other"
    other.parent.mkdir()
    other.write_bytes(b"y")
    # plain: the backing is the target directory itself
    t = Target("plain", "plain", False, None, tmp_path, (tmp_path,))
    assert cache_files(t, data) == [data, other]


def test_extra_files_come_first_then_the_backing(tmp_path: Path) -> None:
    image = tmp_path / "ext4.img"
    image.write_bytes(b"z")
    t = Target("ext4-loop", "ext4-loop", False, "plain", tmp_path / "mnt", (image,))
    data = tmp_path / "mnt" / "cryptbench.dat"
    assert cache_files(t, data) == [data, image]


def test_a_layers_own_cache_is_emptied_before_the_page_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ZFS's ARC goes first (its export writes back what it holds), then the page cache;
    the trial's record says both."""
    done: list[str] = []

    def drop(files: list[Path]) -> cache.DropMethod:
        done.append(f"page cache of {[f.name for f in files]}")
        return cache.DropMethod.FADVISE

    monkeypatch.setattr(cache, "drop_caches", drop)

    def empty() -> str:
        done.append("own")
        return "zpool export and import (the ARC)"

    t = Target("zfs", "zfs", False, "plain", tmp_path, (tmp_path / "zfs.img",), empty_cache=empty)
    assert cache.make_cold(t, [tmp_path / "zfs.img"]) == "zpool export and import (the ARC), then fadvise"
    assert done == ["own", "page cache of ['zfs.img']"]
    plain = Target("plain", "plain", False, None, tmp_path, (tmp_path,))
    assert cache.make_cold(plain, []) == "fadvise"
