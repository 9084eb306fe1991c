"""How wide a terminal table will be, to choose a form that fits the console
(80 columns at least) without wrapping or cutting a number."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

GAP = 3  # Rich's SIMPLE boxes: one space of padding either side and one between columns
EDGE = 4  # SIMPLE_HEAD's outer edges: an edge space and a padding space on each side


def table_width(columns: Iterable[Sequence[str]], edge: int = EDGE) -> int:
    """Columns of cell texts (headers included) laid side by side in a SIMPLE_HEAD table."""
    widths = [max((max(map(len, c.splitlines() or [""])) for c in col), default=0) for col in columns]
    return sum(widths) + GAP * max(0, len(widths) - 1) + edge


def fold(text: str, width: int) -> str:
    """A name or header over lines no wider than `width` where it can be, broken after a
    '-' or a space (a piece longer than `width` stands whole on its own line)."""
    lines: list[str] = []
    for piece in text.replace("-", "-\0").replace(" ", " \0").split("\0"):
        if lines and len(lines[-1]) + len(piece.rstrip()) <= width:  # a space kept between
            lines[-1] += piece
        else:
            lines.append(piece)
    return "\n".join(line.rstrip() for line in lines)
