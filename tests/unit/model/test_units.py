import pytest

from cryptbench.model.errors import UsageError
from cryptbench.model.units import format_bytes, format_rate, parse_size


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


def test_percent_and_duration() -> None:
    from cryptbench.model.units import format_duration, parse_duration, parse_percent

    assert parse_percent("5%", what="p", low=0.1, high=50) == 0.05
    assert parse_percent(" 2.5 ", what="p", low=0.1, high=50) == 0.025
    for bad in ("", "5%%", "-5", "five", "1e3"):
        with pytest.raises(UsageError):
            parse_percent(bad, what="p", low=0.1, high=50)
    assert parse_duration("90", what="d") == 90
    assert parse_duration("10m", what="d") == 600
    assert parse_duration("1.5h", what="d") == 5400
    for bad in ("", "0", "10 min", "-1s", "m"):
        with pytest.raises(UsageError):
            parse_duration(bad, what="d")
    assert format_duration(12.34) == "12.3 s"
    assert format_duration(91) == "1 min 31 s"
    assert format_duration(7322) == "2 h 2 min"
