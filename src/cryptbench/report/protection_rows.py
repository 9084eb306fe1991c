"""What each target hides, as the protection probes proved it on this machine, in words:
the default answer's lines, and the cells of `show --details`' table and the HTML page's.
Neutral: it renders nothing and imports no renderer."""

from __future__ import annotations

from cryptbench.analysis.ranking import change
from cryptbench.model.result import Document, TargetInfo
from cryptbench.model.units import format_bytes
from cryptbench.model.vocabulary import Property, Verdict
from cryptbench.protection.findings import PropertyFinding, Protection

SHOWN_AS = {
    Property.CONTENTS: "contents",
    Property.NAMES: "names",
    Property.SIZES: "sizes",
    Property.TREE: "tree",
    Property.TAMPER: "tampering",
}
# How the answer's lines name each property a target protects.
PROTECTS = {
    Property.NAMES: "hides names",
    Property.SIZES: "hides sizes",
    Property.TREE: "hides the tree",
    Property.TAMPER: "detects tampering",
}


def probed(doc: Document) -> list[tuple[TargetInfo, Protection]]:
    return [(t, Protection.from_json(t.protection)) for t in doc.targets if t.protection is not None]


def cell(f: PropertyFinding | None) -> str:
    """✓ hidden (or detected), ✗ shown (to the byte; or silent), ~N: shown to an N-byte
    block, ~ checksum: a flipped byte caught by a checksum, not authenticated, ? undecided."""
    if f is None:
        return "-"
    if f.verdict is Verdict.HIDDEN:
        return "✓ hidden"
    if f.verdict is Verdict.DETECTED:
        return "✓ detected"
    if f.verdict is Verdict.SILENT:
        return "✗ silent"
    if f.verdict is Verdict.CHECKED:
        return "~ checksum"
    if f.verdict is Verdict.BLOCK:
        return f"~ to {format_bytes(int(f.detail.get('block', 0)))}"
    if f.verdict is Verdict.SHOWN:
        return "✗ shown"
    return "? unknown"


def hides_line(doc: Document) -> str | None:
    """One line: for each property beyond the contents, the encrypted targets that protect it."""
    found = [(t, p) for t, p in probed(doc) if t.encrypted]
    if not found:
        return None
    if any(p.broken for _t, p in found):
        return "What each target hides: not proven, the probe failed its positive control (show --details)."
    parts = []
    for prop in PROTECTS:
        hiding = [t.name for t, p in found if (f := p.findings.get(prop)) is not None and f.protects]
        parts.append(f"{prop}: {', '.join(hiding) if hiding else 'none'}")
    return "Protected, proven here (beyond the contents): " + "; ".join(parts) + "."


def cheapest_lines(doc: Document) -> list[str]:
    """Per property some ranked target lacks: the cheapest ranked target that protects it,
    e.g. "Cheapest that hides sizes: cryfs, -93% [-95, -90]" (the first ranking section's)."""
    found = probed(doc)
    if not doc.ranking or not found or any(p.broken for _t, p in found):
        return []  # a run before the probes, or one whose probe failed its control
    hides = {t.name: p for t, p in found}
    entries = doc.ranking[0].overall
    lines = []
    unhidden: list[str] = []  # what no ranked target hides, said in one line (the answer is short)
    undetected = False
    for prop, does in PROTECTS.items():

        def hiding(name: str, prop: Property = prop) -> bool:
            f = hides[name].findings.get(prop) if name in hides else None
            return bool(f is not None and f.protects)

        if all(hiding(e.target) for e in entries):
            continue
        best = next((e for e in entries if hiding(e.target)), None)
        if best is not None:
            lines.append(f"Cheapest that {does}: {best.target}, {change(best)}.")
        elif prop is Property.TAMPER:
            undetected = True
        else:
            unhidden.append(does.removeprefix("hides "))
    nothing = ([f"hides {' or '.join(unhidden)}"] if unhidden else []) + (
        ["detects tampering"] if undetected else []
    )
    if nothing:
        lines.append(f"None of the ranked targets {' or '.join(nothing)}.")
    return lines


# The space columns after the properties: each data set against the target's baseline,
# and what one byte's change rewrites in the backing.
SPACE_COLUMNS = ("space, small files", "space, large file", "fixed, vs baseline", "1 byte changed")


def space_cells(p: Protection) -> list[str]:
    """ "1.04x" per data set (its space against its baseline's; "-" for a target without a
    baseline, or not measured), the backing's fixed cost against its baseline's (a header,
    an empty filesystem), and the bytes of backing one changed byte rewrote."""
    cells = []
    for kind in ("tree", "large"):
        m = p.space.get(kind) or {}
        cells.append(f"{m['ratio']:.2f}x" if "ratio" in m else "-")
    fixed, theirs = p.space.get("fixed"), p.space.get("baseline_fixed")
    if fixed is None:
        cells.append("-")
    else:
        cells.append(
            format_bytes(int(fixed)) + ("" if theirs is None else f" vs {format_bytes(int(theirs))}")
        )
    g = p.space.get("granularity")
    cells.append(format_bytes(int(g["bytes"])) if g and "bytes" in g else "-")
    return cells


def columns() -> list[str]:
    return [SHOWN_AS[prop] for prop in Property] + list(SPACE_COLUMNS)


def rows(doc: Document) -> list[tuple[str, str, list[str]]]:
    """(target, how its backing was read, a cell per column) for each probed target."""
    return [
        (t.name, p.sight, [cell(p.findings.get(prop)) for prop in Property] + space_cells(p))
        for t, p in probed(doc)
    ]


CAPTION = (
    "✓ hidden or detected, ✗ shown exactly or returned silently, ~ shown to a block, ? not decided; "
    "space: what a data set takes in the backing against the same on the baseline; fixed: what the "
    "backing takes before any data (a header, an empty filesystem); 1 byte changed: "
    "the backing's 4 KiB blocks that changed with it. The evidence is in the JSON document (show --json)"
)


def broken(doc: Document) -> str | None:
    return next((p.broken for _t, p in probed(doc) if p.broken), None)
