"""What each target hides, as the protection probes proved it on this machine: the one
line of the default answer, and the table of `show --details`."""

from __future__ import annotations

from rich import box
from rich.table import Table

from cryptbench.protection.findings import Finding, Property, Protection, Verdict
from cryptbench.report.ranking import change
from cryptbench.result_model import Document, TargetInfo
from cryptbench.units import format_bytes

SHOWN_AS = {
    Property.CONTENTS: "contents",
    Property.NAMES: "names",
    Property.SIZES: "sizes",
    Property.TREE: "tree",
}


def _protections(doc: Document) -> list[tuple[TargetInfo, Protection]]:
    return [(t, Protection.from_json(t.protection)) for t in doc.targets if t.protection is not None]


def cell(f: Finding | None) -> str:
    """✓ hidden, ✗ shown (to the byte), ~N: shown to an N-byte block, ? undecided."""
    if f is None:
        return "-"
    if f.verdict is Verdict.HIDDEN:
        return "✓ hidden"
    if f.verdict is Verdict.BLOCK:
        return f"~ to {format_bytes(int(f.detail.get('block', 0)))}"
    if f.verdict is Verdict.SHOWN:
        return "✗ shown"
    return "? unknown"


def hides_line(doc: Document) -> str | None:
    """One line: for each property beyond the contents, the encrypted targets that hide it."""
    found = [(t, p) for t, p in _protections(doc) if t.encrypted]
    if not found:
        return None
    if any(p.broken for _t, p in found):
        return "What each target hides: not proven, the probe failed its positive control (show --details)."
    parts = []
    for prop in (Property.NAMES, Property.SIZES, Property.TREE):
        hiding = [t.name for t, p in found if (f := p.findings.get(prop)) is not None and f.hides]
        parts.append(f"{prop}: {', '.join(hiding) if hiding else 'none'}")
    return "Hidden in the backing, proven here (beyond the contents): " + "; ".join(parts) + "."


def cheapest_lines(doc: Document) -> list[str]:
    """Per property some ranked target lacks: the cheapest ranked target that hides it, e.g.
    "Cheapest that hides sizes: cryfs, -93% [-95, -90]" (the first ranking section's)."""
    found = _protections(doc)
    if not doc.ranking or not found or any(p.broken for _t, p in found):
        return []  # a run before the probes, or one whose probe failed its control
    hides = {t.name: p for t, p in found}
    entries = doc.ranking[0].overall
    lines = []
    for prop in (Property.NAMES, Property.SIZES, Property.TREE):

        def hiding(name: str, prop: Property = prop) -> bool:
            f = hides[name].findings.get(prop) if name in hides else None
            return bool(f is not None and f.hides)

        if all(hiding(e.target) for e in entries):
            continue
        best = next((e for e in entries if hiding(e.target)), None)
        if best is None:
            lines.append(f"None of the ranked targets hides {prop}.")
        else:
            lines.append(f"Cheapest that hides {prop}: {best.target}, {change(best)}.")
    return lines


def rows(doc: Document) -> list[tuple[str, str, list[str]]]:
    """(target, how its backing was read, a cell per property) for each probed target."""
    return [
        (t.name, p.sight, [cell(p.findings.get(prop)) for prop in Property]) for t, p in _protections(doc)
    ]


def broken(doc: Document) -> str | None:
    return next((p.broken for _t, p in _protections(doc) if p.broken), None)


def table(doc: Document) -> Table | None:
    """A row per target, a column per property, each cell the proven verdict."""
    rows = _protections(doc)
    if not rows:
        return None
    t = Table(
        title="What each target's backing hides from someone who reads it at rest, probed here",
        title_justify="left",
        caption="✓ hidden, ✗ shown exactly, ~ shown to a block, ? no reader here; "
        "the evidence is in the JSON document (show --json)",
        caption_justify="left",
        box=box.SIMPLE_HEAD,
    )
    t.add_column("target", no_wrap=True)
    t.add_column("read as", no_wrap=True)
    for prop in Property:
        t.add_column(SHOWN_AS[prop], no_wrap=True)
    for target, p in rows:
        t.add_row(target.name, p.sight, *(cell(p.findings.get(prop)) for prop in Property))
    broken = next((p.broken for _t, p in rows if p.broken), None)
    if broken:
        t.caption = f"NOT EVIDENCE: {broken}"
    return t
