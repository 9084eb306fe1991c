import pytest

from cryptbench.errors import UsageError
from cryptbench.units import format_bytes, format_rate, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("64M", 64 << 20),
        ("64MiB", 64 << 20),
        ("1G", 1 << 30),
        ("4k", 4096),
        ("512", 512),
        ("100MB", 100_000_000),
        ("1.5G", 3 << 29),
    ],
)
def test_parse_size(text: str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["12XB", "", "M", "-1M", "1.3", "64 megabytes", "1e3"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(UsageError):
        parse_size(text)


def test_format() -> None:
    assert format_bytes(64 << 20) == "64.0 MiB"
    assert format_rate(350e6) == "350.0 MB/s"
    assert format_rate(2.5e9) == "2.50 GB/s"
