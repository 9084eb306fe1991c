"""Parsing and formatting of sizes, rates and durations.

Sizes follow fio's convention for the bare suffixes (K, M, G, T are powers of
1024) so that `--size 64M` means what it means to a fio user; `KiB`..`TiB` are
the same values spelled out, and `KB`..`TB` are decimal (powers of 1000).
"""

from __future__ import annotations

import re
from decimal import Decimal, localcontext

from cryptbench.model.errors import UsageError

_BINARY = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_DECIMAL = {"KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
# ASCII digits only (\d would take any script's), and few enough that no
# arithmetic below can overflow.
_SIZE_RE = re.compile(r"[ \t]*([0-9]{1,20}(?:\.[0-9]{1,20})?)[ \t]*([A-Za-z]{0,3})[ \t]*")


def parse_size(text: str, *, what: str = "size") -> int:
    """Return the number of bytes `text` names, or raise UsageError."""
    shown = repr(text[:40]) + ("…" if len(text) > 40 else "")
    m = _SIZE_RE.fullmatch(text)
    if not m:
        raise UsageError(f"{what} {shown} is not a size (examples: 64M, 1G, 512KiB, 100MB)")
    number, suffix = Decimal(m.group(1)), m.group(2)
    up = suffix.upper()
    if up in ("B", ""):
        factor = 1
    elif up in _BINARY:
        factor = _BINARY[up]
    elif up.endswith("IB") and up[:-2] in _BINARY and up[:-2]:
        factor = _BINARY[up[:-2]]
    elif up in _DECIMAL:
        factor = _DECIMAL[up]
    else:
        raise UsageError(
            f"{what} {shown} has an unknown unit {suffix!r} "
            "(use K, M, G, T or KiB..TiB for powers of 1024, KB..TB for powers of 1000)"
        )
    with localcontext() as ctx:
        ctx.prec = 64  # exact for 40 digits times 2**40
        value = number * factor
    if value != value.to_integral_value():
        raise UsageError(f"{what} {shown} is not a whole number of bytes")
    return int(value)


_PERCENT_RE = re.compile(r"[ \t]*([0-9]{1,6}(?:\.[0-9]{1,6})?)[ \t]*%?[ \t]*")
_DURATION_RE = re.compile(r"[ \t]*([0-9]{1,9}(?:\.[0-9]{1,6})?)[ \t]*([smh]?)[ \t]*")
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600}


def parse_percent(text: str, *, what: str, low: float, high: float) -> float:
    """'5%' or '5' as the fraction 0.05, within [low, high] percent."""
    m = _PERCENT_RE.fullmatch(text)
    if not m:
        raise UsageError(f"{what} {text[:40]!r} is not a percentage (examples: 5%, 2.5)")
    value = float(m.group(1))
    if not low <= value <= high:
        raise UsageError(f"{what} must be from {low:g}% to {high:g}%, not {value:g}%")
    return value / 100


def parse_duration(text: str, *, what: str) -> float:
    """'90', '90s', '10m' or '1.5h' as seconds, more than zero."""
    m = _DURATION_RE.fullmatch(text)
    if not m:
        raise UsageError(f"{what} {text[:40]!r} is not a duration (examples: 90s, 10m, 1.5h)")
    seconds = float(m.group(1)) * _SECONDS[m.group(2)]
    if seconds <= 0:
        raise UsageError(f"{what} must be longer than zero")
    return seconds


def format_duration(s: float) -> str:
    """'1 min 31 s', '5 min', '12.3 s'."""
    if s < 60:
        return f"{s:.1f} s"
    minutes, seconds = divmod(round(s), 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s" if seconds else f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


def format_count_range(values: list[int]) -> str:
    """'3' or '3 to 7': the span of some counts."""
    lo, hi = min(values), max(values)
    return f"{lo}" if lo == hi else f"{lo} to {hi}"


def format_bytes(n: float) -> str:
    """Binary units, the way fio prints sizes: 64.0 MiB."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def format_rate(bytes_per_s: float) -> str:
    """Decimal MB/s, the unit disk benchmarks and the studies use."""
    if bytes_per_s >= 1e9:
        return f"{bytes_per_s / 1e9:.2f} GB/s"
    return f"{bytes_per_s / 1e6:.1f} MB/s"


def format_seconds(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def format_value(value: float, unit: str) -> str:
    """A metric's value in its unit, as the reports print it."""
    if unit == "bytes/s":
        return format_rate(value)
    if unit == "s":
        return format_seconds(value)
    if unit == "1/s":
        return f"{value:,.0f}/s"
    if unit == "fraction":
        return f"{value:.0%}"
    if unit == "bytes":
        return format_bytes(int(value))
    if unit == "s/GB":
        return f"{value:.2f} s/GB"
    if "/" in unit:  # pictures/min, files/s, transactions/s
        return f"{value:,.1f} {unit}"
    return f"{value:.3g} {unit}".strip()


def format_mb_per_s(bytes_per_s: float | None, missing: str = "-") -> str:
    """Table figures in MB/s (10^6 bytes/s) with one decimal: '1,045.3'; `missing` for none."""
    return missing if bytes_per_s is None else f"{bytes_per_s / 1e6:,.1f}"


def format_fraction(x: float) -> str:
    """A fraction as a whole percentage: 0.173 → '17%'."""
    return f"{x * 100:.0f}%"
