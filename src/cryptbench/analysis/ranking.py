"""Which way of encrypting costs least here: the encrypted targets ranked by their cost
against plain on the same medium (and host), with ties where intervals overlap.

A target's cost at one workload is its speed over plain's (the ratio of medians,
inverted for times), with the same bootstrap interval as the comparison the
document already holds. Over several workloads (a family, or all of them) it is
the geometric mean of those ratios, with a percentile-bootstrap interval that
resamples every workload's trials of both sides. The cheapest target is the
one with the highest ratio. A target whose own comparison with the cheapest
(its speed over the cheapest's, on the same workloads) lies wholly within the
run's equivalence margin is equal to it: the difference is too small to matter,
and measured so. Any other target whose interval reaches the cheapest's is tied
with it, because the run cannot tell them apart. A target that was not proven
encrypted, or whose trials failed, is listed as not ranked, with why.
"""

from __future__ import annotations

import statistics
from dataclasses import replace

from cryptbench.engines.metric_catalog import info
from cryptbench.model.ranking_section import (
    FamilyRanking,
    NotRanked,
    RankEntry,
    RankingSection,
    WorkloadRanking,
)
from cryptbench.model.result import Document, Result, TargetInfo
from cryptbench.model.stored_run import RunPlan
from cryptbench.model.vocabulary import Existing, Medium, Property, Verdict
from cryptbench.model.warning_kinds import WarningKind
from cryptbench.planning.suite import FAMILIES, direction_of_rw, family_of_rw
from cryptbench.stats import estimates


def _rw(plan: RunPlan, workload: str) -> str | None:
    """fio's rw for an fio pattern, None for an app workload."""
    spec = plan.workload_specs.get(workload)
    return None if spec is None else str(spec.get("rw", ""))


def direction(plan: RunPlan, workload: str) -> str:
    """reads, writes or mixed for an fio pattern, "" for an app workload."""
    return direction_of_rw(_rw(plan, workload))


def family(plan: RunPlan, workload: str) -> str:
    """sequential or random for an fio pattern, application for an app workload."""
    return family_of_rw(_rw(plan, workload))


def _result(doc: Document, workload: str, target: str) -> Result:
    metric = doc.plan.primary(workload)
    return next(r for r in doc.results if (r.workload, r.target, r.metric) == (workload, target, metric))


def _oriented(doc: Document, workload: str, target: str, plain: str) -> tuple[list[float], list[float]]:
    """(target's, plain's) samples of the workload's primary metric, as speeds' numerator
    and denominator: a time (lower is better) swaps the sides, as estimates.speed_ratio does."""
    a, b = _result(doc, workload, target), _result(doc, workload, plain)
    return (b.samples, a.samples) if info(a.metric).higher_is_better is False else (a.samples, b.samples)


def _paired(doc: Document, workload: str, target: str, plain: str) -> list[tuple[float, float]] | None:
    """The workload's (target, plain) speeds round by round where they pair (estimates.round_pairs)."""
    a, b = _result(doc, workload, target), _result(doc, workload, plain)
    pairs = estimates.round_pairs(a.samples, a.rounds, b.samples, b.rounds)
    if pairs is None or info(a.metric).higher_is_better is not False:
        return pairs
    return [(y, x) for x, y in pairs]


def _ratio(doc: Document, scope: str, workloads: list[str], target: str, other: str) -> estimates.Ratio:
    """The target's speed over the other's at one workload, as the document's comparison of
    the two would have it (its seed, paired as it pairs); over several, the geometric mean,
    paired where every workload pairs, else unpaired (never whichever is narrower)."""
    if len(workloads) == 1:
        (w,) = workloads
        seed = estimates.figure_seed(doc.plan.seed, w, target, other)
        a, b = _result(doc, w, target), _result(doc, w, other)
        return estimates.speed_ratio(
            a.samples, b.samples, info(a.metric).higher_is_better, seed, a.rounds, b.rounds
        )
    paired = [_paired(doc, w, target, other) for w in workloads]
    if all(p is not None for p in paired):
        return estimates.paired_geometric_mean([p for p in paired if p is not None])
    seed = estimates.figure_seed(doc.plan.seed, "ranking", scope, target, other)
    return estimates.geometric_mean_ratio([_oriented(doc, w, target, other) for w in workloads], seed)


def held_to(doc: Document, workloads: list[str], target: str, other: str) -> estimates.Ratio:
    """The target's speed over any other target's over `workloads`, compared directly as
    the ranking holds a target to the cheapest (a flag set to the volume's own flags)."""
    return _ratio(doc, "overall", workloads, target, other)


def _one(doc: Document, workload: str, target: str, plain: str) -> RankEntry:
    r = _ratio(doc, workload, [workload], target, plain)
    return RankEntry(target, r.ratio, r.ci_low, r.ci_high, 1)


def _over(doc: Document, scope: str, workloads: list[str], target: str, plain: str) -> RankEntry:
    r = _ratio(doc, scope, workloads, target, plain)
    return RankEntry(target, r.ratio, r.ci_low, r.ci_high, len(workloads))


NOISY = 0.10  # a coefficient of variation (a fraction) past which a tie is put down to noise


def _spread(doc: Document, workloads: list[str], target: str) -> tuple[float, int]:
    """(the target's median coefficient of variation over `workloads`, a fraction; its
    fewest trials at any of them)."""
    samples = [_result(doc, w, target).samples for w in workloads]
    cvs = sorted(statistics.stdev(x) / statistics.fmean(x) if len(x) > 1 else 0.0 for x in samples)
    return cvs[len(cvs) // 2], min(len(x) for x in samples)


def percent(ratio: float) -> str:
    """'-62%': a ratio as a change in speed, the tool's one sign convention."""
    return f"{(ratio - 1) * 100:+.0f}%"


def interval(low: float | None, high: float | None) -> str:
    """'[-66, -58]': a ratio's interval as changes in speed, always both ends."""
    if low is None or high is None:
        return "(no interval)"
    return f"[{(low - 1) * 100:+.0f}, {(high - 1) * 100:+.0f}]"


def _reason(
    doc: Document, workloads: list[str], target: str, best: str, direct: estimates.Ratio, verdict: str
) -> str:
    """Why the target stands where it does against the cheapest, in words (the figures
    themselves are the entry's vs_cheapest and its interval)."""
    if verdict == estimates.EQUAL:
        return f"within {_margin(doc)} of {best}"
    if verdict == estimates.COSTLIER:
        return f"slower than {best} over its whole interval"
    sides = {t: _spread(doc, workloads, t) for t in (target, best)}
    if direct.ci_low is None or direct.ci_high is None:
        few = min(sides, key=lambda t: sides[t][1])
        k = sides[few][1]
        if k > 1:  # stats/estimates.no_spread: what the trials read, not how many they were
            return f"every round read the same figures, {k} or more trials each: no spread, so no interval"
        return f"{few} ran {k} trial{'s' if k != 1 else ''}: no interval"
    if direct.ci_low > 1:
        return f"faster than {best} held to it directly, slower against plain"
    noisy = max(sides, key=lambda t: sides[t][0])
    if sides[noisy][0] >= NOISY:
        return f"{noisy} varies ±{sides[noisy][0] * 100:.0f}% trial to trial"
    return "too close to tell apart at this run's precision"


def _ranked(doc: Document, scope: str, workloads: list[str], entries: list[RankEntry]) -> list[RankEntry]:
    """Best figure first; the first is the cheapest, and every other is held to it
    directly (their own ratio and interval, paired by round where both pair) and marked
    equal, tied or costlier by that comparison alone (estimates.standing), with why."""
    order = sorted(entries, key=lambda e: -e.ratio)
    if not order:
        return []
    best = order[0]
    out = [replace(best, verdict="cheapest")]
    for e in order[1:]:
        direct = _ratio(doc, scope, workloads, e.target, best.target)
        verdict = estimates.standing(direct, doc.equivalence)
        out.append(
            replace(
                e,
                verdict=verdict,
                vs_cheapest=direct.ratio,
                vs_ci_low=direct.ci_low,
                vs_ci_high=direct.ci_high,
                reason=_reason(doc, workloads, e.target, best.target, direct, verdict),
            )
        )
    return out


def dropped(doc: Document) -> list[str]:
    """The workloads the run dropped after its first round to fit its time budget."""
    if doc.stopping is None:
        return []
    return list(dict.fromkeys(a.workload for a in doc.stopping.answers if a.stopped_by == "dropped"))


def _groups(doc: Document) -> list[tuple[TargetInfo, list[TargetInfo]]]:
    """(plain, the encrypted targets beside it): one group per host and medium."""
    out = []
    for p in doc.targets:
        # plain, or on a user's own data what is under its encryption (run --existing): the
        # device under its mapping, or its FUSE mount's ciphertext
        if p.backend not in ("plain", Existing.RAW, Existing.CIPHERTEXT):
            continue
        peers = [t for t in doc.targets if t.encrypted and t.host == p.host and t.medium == p.medium]
        out.append((p, peers))
    return out


def _why_not(doc: Document, t: TargetInfo, workloads: list[str]) -> str | None:
    if not t.encryption_verified:
        return "encryption not verified" if t.encryption_verified is False else "encryption not checked"
    unmet = unmet_need(doc.plan.needs, t)
    if unmet:
        return unmet
    failed = [w.workload for w in doc.warnings if w.kind == WarningKind.FAILED_TRIALS and w.target == t.name]
    have = {r.workload for r in doc.results if r.target == t.name}
    left_out = doc.plan.not_run
    planned = [w for w in workloads if (w, t.name) in left_out]
    if planned and not failed:  # the plan left them out: ranked on all or not at all
        return f"not run at {_names(planned)}: {left_out[(planned[0], t.name)]}"
    missing = [w for w in workloads if w not in have]
    if failed or missing:
        first = (failed or missing)[0]
        more = len(set(failed) | set(missing)) - 1
        return f"trials failed at {first}" + (f" and {more} more" if more else "")
    return None


def unmet_need(needs: list[str] | tuple[str, ...], t: TargetInfo) -> str | None:
    """The first need (--needs, check --require) the target was not proven to meet, in words."""
    for prop in needs:
        want = Verdict.DETECTED if prop == Property.TAMPER else Verdict.HIDDEN
        found = (t.protection or {}).get(prop)
        if t.protection is None or t.protection.get("broken"):
            return f"needs {prop} {want}: not proven here"
        if found is None or found.get("verdict") != want:
            verdict = "not probed" if found is None else found["verdict"]
            return f"needs {prop} {want}: {verdict} here"
    return None


def build(doc: Document) -> list[RankingSection]:
    """The document's `ranking`: one section per host and medium that has plain."""
    sections = []
    for plain, peers in _groups(doc):
        pname = plain.name
        metric_of = {w: doc.plan.primary(w) for w in doc.plan.workloads}
        have = {(r.workload, r.target) for r in doc.results if r.metric == metric_of.get(r.workload)}
        # a workload dropped to fit the time budget ran one round: it ranks nothing
        workloads = [w for w in doc.plan.workloads if (w, pname) in have and w not in dropped(doc)]
        excluded, ranked = [], []
        for t in peers:
            why = _why_not(doc, t, workloads)
            if why is None and not workloads:
                why = "plain has no result to compare with"
            if why is not None:
                excluded.append(NotRanked(t.name, why))
            else:
                ranked.append(t.name)

        families = []
        for fam in FAMILIES:
            members = [w for w in workloads if family(doc.plan, w) == fam]
            if members:
                entries = _ranked(doc, fam, members, [_over(doc, fam, members, t, pname) for t in ranked])
                families.append(FamilyRanking(fam, members, entries))
        sections.append(
            RankingSection(
                host=plain.host,
                medium=plain.medium,
                plain=pname,
                workloads=workloads,
                overall=_ranked(
                    doc, "overall", workloads, [_over(doc, "overall", workloads, t, pname) for t in ranked]
                )
                if workloads
                else [],
                families=families,
                per_workload=[
                    WorkloadRanking(w, _ranked(doc, w, [w], [_one(doc, w, t, pname) for t in ranked]))
                    for w in workloads
                ],
                not_ranked=excluded,
            )
        )
    return sections


def change(e: RankEntry) -> str:
    """'-62% [-66, -58]': the change in speed against plain, with its interval."""
    return f"{percent(e.ratio)} {interval(e.ci_low, e.ci_high)}"


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _where(section: RankingSection, several: bool) -> str:
    if not several:
        return ""
    place = [f"on {section.host}"] if section.host else []
    if section.medium == Medium.RAM:
        place.append("on RAM")
    text = " ".join(place) or "on the device"
    return text[0].upper() + text[1:] + ": "


def _margin(doc: Document) -> str:
    return f"±{(doc.equivalence or 0) * 100:g}%"


def _others(entries: list[RankEntry], margin: str) -> str:
    """'; b costs the same within ±3%; c (-6% [-19, +10]) cannot be told apart from it: c
    varies ±31% trial to trial': the cheapest's peers, each tie with its direct comparison,
    ties of one reason together."""
    text = ""
    equal = [e.target for e in entries if e.verdict == estimates.EQUAL]
    if equal:
        text += f"; {_names(equal)} {'costs' if len(equal) == 1 else 'cost'} the same within {margin}"
    why: dict[str, list[RankEntry]] = {}
    for e in entries:
        if e.verdict == estimates.TIED:
            why.setdefault(e.reason, []).append(e)
    for reason, tied in why.items():
        names = _names(
            [f"{e.target} ({interval_of(e)})" if e.vs_cheapest is not None else e.target for e in tied]
        )
        # a document stored before ties had reasons says none
        text += f"; {names} cannot be told apart from it" + (f": {reason}" if reason else "")
    return text


def _inversions(entries: list[RankEntry]) -> str:
    """' encfs and fscrypt rank costlier despite better figures than securefs: ...': the
    costlier targets whose figures beat a target still beside the cheapest, and why (held
    to the cheapest directly, never by their figures against plain)."""
    beside = (estimates.TIED, estimates.EQUAL)
    above = [
        c
        for i, c in enumerate(entries)
        if c.verdict == estimates.COSTLIER and any(e.verdict in beside for e in entries[i + 1 :])
    ]
    if not above:
        return ""
    first = entries.index(above[0])
    below = [e.target for e in entries[first + 1 :] if e.verdict in beside]
    figures = _names([interval_of(c) for c in above])
    one = len(above) == 1
    return (
        f" {_names([c.target for c in above])} rank{'s' if one else ''} costlier despite"
        f" {'a better figure' if one else 'better figures'} than {_names(below)}: held to"
        f" {entries[0].target} directly, {'it is' if one else 'they are'} {figures}, while"
        f" {_names(below)} cannot be set apart from it."
    )


def interval_of(e: RankEntry) -> str:
    """'-43% [-47, -34]': the entry held to the cheapest, as a change in speed."""
    if e.vs_cheapest is None:
        return ""
    return f"{percent(e.vs_cheapest)} {interval(e.vs_ci_low, e.vs_ci_high)}"


def _partial(doc: Document, f: FamilyRanking) -> str:
    """' (writes only: the reads were dropped to fit the time budget)' when the family is
    ranked on part of what the plan asked of it; '' when on all of it."""
    planned = [w for w in doc.plan.workloads if family(doc.plan, w) == f.family]
    have = {direction(doc.plan, w) for w in f.workloads}
    lost = [w for w in planned if w not in f.workloads and direction(doc.plan, w) not in have]
    if not lost:
        return ""
    gone = _names(sorted({direction(doc.plan, w) for w in lost}))
    why = "dropped to fit the time budget" if set(lost) <= set(dropped(doc)) else "not measured"
    return f" ({_names(sorted(have))} only: the {gone} were {why})"


def _family_part(doc: Document, f: FamilyRanking) -> str:
    """'random gocryptfs -71% [-75, -68] (2 more tied)': the kind's cheapest, or none
    when the run cannot tell any of them from it."""
    e = f.entries[0]
    rest = f.entries[1:]
    head = f"{f.family}{_partial(doc, f)}"
    if (
        rest
        and all(x.verdict in (estimates.TIED, estimates.EQUAL) for x in rest)
        and any(x.verdict == estimates.TIED for x in rest)
    ):
        return f"{head} none: its {len(f.entries)} cannot be told apart"
    counts = [
        f"{k} more {verdict}"
        for verdict in (estimates.EQUAL, estimates.TIED)
        if (k := sum(x.verdict == verdict for x in f.entries))
    ]
    return f"{head} {e.target} {change(e)}" + (f" ({', '.join(counts)})" if counts else "")


def sentences(doc: Document) -> list[str]:
    """The ranking in words: one or two sentences per host and medium."""
    sections = doc.ranking
    several = len(sections) > 1
    margin = _margin(doc)
    out = []
    for s in sections:
        where = _where(s, several)
        entries = s.overall
        n = len(s.workloads)
        over = f"against {s.plain} over {n} workload{'s' if n != 1 else ''}"
        if gone := dropped(doc):
            over += f" ({len(gone)} dropped to fit the time budget)"
        if not entries:
            line = f"{where}no encrypted target to rank."
        elif len(entries) == 1:
            line = f"{where}only {entries[0].target} was measured encrypted: {change(entries[0])} {over}."
        elif all(e.verdict == estimates.EQUAL for e in entries[1:]):
            line = (
                f"{where}the {len(entries)} encrypted targets cost the same within {margin}: "
                + ", ".join(f"{e.target} {change(e)}" for e in entries)
                + f", {over}."
            )
        elif all(e.verdict != estimates.COSTLIER for e in entries):
            line = (
                f"{where}the {len(entries)} encrypted targets cannot be told apart: "
                + ", ".join(f"{e.target} {change(e)}" for e in entries)
                + f", {over}."
            )
        else:
            # the costliest of those measured costlier: one tied with the cheapest costs no "most"
            best, worst = entries[0], [e for e in entries if e.verdict == estimates.COSTLIER][-1]
            line = f"{where}cheapest here: {best.target}, {change(best)} {over}{_others(entries, margin)}"
            line += f". {worst.target} costs most: {change(worst)}." + _inversions(entries)
        faster = [e.target for e in entries if e.ci_low is not None and e.ci_low > 1]
        if faster:
            line += f" {_names(faster)} ran faster than {s.plain} here; the diagnosis says why."
        if s.not_ranked:
            line += " Not ranked: " + "; ".join(f"{x.target} ({x.reason})" for x in s.not_ranked) + "."
        out.append(line[0].upper() + line[1:])
        if len(s.families) > 1 and len(entries) > 1:
            parts = [_family_part(doc, f) for f in s.families]
            out.append("Cheapest by kind of work: " + "; ".join(parts) + ".")
    return out
