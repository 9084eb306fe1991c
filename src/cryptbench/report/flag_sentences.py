"""The answer of a flag trial (run --existing --try-flags): which set of dm-crypt's
performance flags read the user's volume fastest, against its own flags, by how much,
with the interval; and, where one set is faster beyond doubt, the lines that would set it
(printed for the user; cryptbench runs none). Every figure is a change in speed, the
tool's one sign convention, against the volume's own flags, compared directly (paired
by round where both pair), as analysis/ranking.py holds a target to the cheapest."""

from __future__ import annotations

from cryptbench.analysis.ranking import held_to, interval, percent
from cryptbench.model.json_types import JsonObject
from cryptbench.model.result import Document
from cryptbench.planning.flag_trial import apply_lines
from cryptbench.stats.estimates import Ratio


def flag_answer(doc: Document, existing: JsonObject) -> list[str]:
    """The flag trial's sentences, then the lines to apply its winner; none without one."""
    trial = existing.get("flags")
    if not isinstance(trial, dict) or not trial.get("sets"):
        return []
    mapping = existing["targets"]["mapping"]
    own = ", ".join(trial["own"]) or "none"
    said = {s["target"]: _said(s) for s in trial["sets"]}
    out = []
    for section in doc.ranking:
        ranked = {e.target for e in section.overall}
        n = len(section.workloads)
        over = f"over {n} read workload{'s' if n != 1 else ''}"
        if mapping not in ranked or not ranked & set(said):
            out.append(
                f"Which flags read {mapping} fastest is not known: it or every flag set was not ranked."
            )
            continue
        against = {t: held_to(doc, section.workloads, t, mapping) for t in said if t in ranked}
        best = max(against, key=lambda t: against[t].ratio)
        figures = "; ".join(f"{said[t]} {_change(r)}" for t, r in against.items())
        low = against[best].ci_low
        if low is not None and low > 1:
            out.append(
                f"With {said[best]}, your volume {mapping} read fastest: {_change(against[best])} "
                f"against its own flags ({own}), {over} ({figures})."
            )
            flags = tuple(next(s["flags"] for s in trial["sets"] if s["target"] == best))
            out.append("To set it (cryptbench runs none of these):")
            lines = apply_lines(
                mapping, flags, tuple(trial["options"]), bool(trial["luks2"]), trial["crypttab"]
            )
            out += [f"  {line}" for line in lines]
        elif all(r.ci_high is not None and r.ci_high < 1 for r in against.values()):
            out.append(
                f"Your volume {mapping}'s own flags ({own}) read fastest: every other set read slower, "
                f"{over} ({figures})."
            )
        else:
            out.append(
                f"No set of flags read your volume {mapping} faster beyond doubt than its own ({own}), "
                f"{over}: {figures}; an interval that holds no change says the run cannot tell them apart "
                "(more trials narrow it: --repeats, or adaptive repetition)."
            )
    for x in (x for section in doc.ranking for x in section.not_ranked if x.target in said):
        out.append(f"With {said[x.target]}, {mapping} was not ranked: {x.reason}.")
    return out


def _said(s: JsonObject) -> str:
    return f"{s['toggled']} {'added' if s['added'] else 'removed'}"


def _change(r: Ratio) -> str:
    return f"{percent(r.ratio)} {interval(r.ci_low, r.ci_high)}"
