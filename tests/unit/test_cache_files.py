from pathlib import Path

from cryptbench.backends.base import Target, cache_files


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
