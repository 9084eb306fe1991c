"""The tuning you can paste: after a run of LUKS variants (`--suite luks-tuning`), the
cheapest option that beats the default, as the lines an operator applies to their own
volume; or the sentence that none beat it, and nothing to paste.

Only options `cryptsetup open` takes can be applied to a volume in use: dm-crypt's
performance flags, read from each variant's mapping table as dm-crypt held it
(`dm_table_options`). A sector size or integrity tags need a new `luksFormat` and are
never offered as a paste.

"Beats" is read from the run's own comparisons of each variant with the target it varies
(kind variant): faster at one workload at least, the 95 % interval excluding no change,
and clearly slower at none. Of those, the cheapest is the one with the largest median
change over the run's workloads.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from cryptbench.analysis.speed_change import change_words, percent, significant, speed_change
from cryptbench.backends.dm_kernel import HIGH_PRIORITY_KERNEL
from cryptbench.backends.luks_variants import (
    HIGH_PRIORITY,
    NO_READ_QUEUE,
    NO_WRITE_QUEUE,
    SUBMIT_FROM_CRYPT_CPUS,
)
from cryptbench.model.result import Comparison, ComparisonKind, Document

# dm-crypt's table flag -> (cryptsetup's option, systemd's crypttab option or None)
FLAGS: dict[str, tuple[str, str | None]] = {
    NO_READ_QUEUE: ("--perf-no_read_workqueue", "no-read-workqueue"),
    NO_WRITE_QUEUE: ("--perf-no_write_workqueue", "no-write-workqueue"),
    SUBMIT_FROM_CRYPT_CPUS: ("--perf-submit_from_crypt_cpus", "submit-from-crypt-cpus"),
    "same_cpu_crypt": ("--perf-same_cpu_crypt", "same-cpu-crypt"),
    # cryptsetup 2.7 added --perf-high_priority; systemd's crypttab(5) names no option for it
    HIGH_PRIORITY: ("--perf-high_priority", None),
}


@dataclass(frozen=True)
class Variant:
    """One variant's standing against the target it varies in one option."""

    target: str  # the variant's name
    parent: str  # the target it differs from in that option (luks-aes256)
    flags: tuple[str, ...]  # dm-crypt's performance flags it adds; () for a format-time option
    changes: tuple[tuple[str, float, tuple[float, float] | None], ...]  # (workload, %, interval)

    def clearly(self, faster: bool) -> int:
        """At how many workloads it is faster (or slower), its interval excluding no change."""
        return sum((pct > 0) == faster and significant(i) for _w, pct, i in self.changes)

    @property
    def beats(self) -> bool:
        return self.clearly(faster=True) > 0 and self.clearly(faster=False) == 0

    @property
    def median(self) -> float:  # percent: the median change over its workloads
        return statistics.median(pct for _w, pct, _i in self.changes)


@dataclass(frozen=True)
class Advice:
    """What a tuning run says to do: `best` None when no pasteable option beat the default."""

    parent: str
    best: Variant | None
    beaten_by_format: tuple[str, ...]  # variants that beat it but need a new luksFormat


def variants(doc: Document) -> list[Variant]:
    by_target: dict[str, list[Comparison]] = {}
    for c in doc.comparisons:
        if c.kind == ComparisonKind.VARIANT:
            by_target.setdefault(c.target, []).append(c)
    targets = {t.name: t for t in doc.targets}
    found = []
    for name, comps in by_target.items():
        parent = comps[0].baseline
        mine = _flags(targets[name].details.get("dm_table_options", ""))
        theirs = _flags(targets[parent].details.get("dm_table_options", "")) if parent in targets else set()
        changes = tuple((c.workload, *speed_change(c)[:2]) for c in comps)
        found.append(Variant(name, parent, tuple(sorted(mine - theirs)), changes))
    return found


def _flags(options: str) -> set[str]:
    return {o for o in str(options).split() if o in FLAGS}


def advise(doc: Document) -> Advice | None:
    """None for a run without a LUKS variant that changes an open-time option of a target it
    also ran: a run of format-time choices only (integrity tags) has nothing to paste, and
    no sentence saying so is owed."""
    found = [v for v in variants(doc) if v.target in _luks(doc)]
    if not any(v.flags for v in found):
        return None
    winners = sorted((v for v in found if v.beats), key=lambda v: -v.median)
    pasteable = [v for v in winners if v.flags]
    return Advice(
        found[0].parent,
        pasteable[0] if pasteable else None,
        tuple(v.target for v in winners if not v.flags),
    )


def _luks(doc: Document) -> set[str]:
    return {t.name for t in doc.targets if "dm_table_options" in t.details}


def lines(advice: Advice) -> list[str]:
    """The answer's closing lines: what to paste, how sure the run is, or that none beat it."""
    parent = advice.parent
    best = advice.best
    if best is None:
        said = [
            f"No option a volume can take when opened beat {parent} in this run: keep the default; "
            "nothing to paste."
        ]
        if advice.beaten_by_format:
            said.append(
                f"({', '.join(advice.beaten_by_format)} did, but a sector size or integrity tags need a new "
                "luksFormat of the volume.)"
            )
        return said
    perf = " ".join(FLAGS[f][0] for f in best.flags)
    crypttab = [FLAGS[f][1] for f in best.flags]
    changes = "; ".join(f"{w} {change_words(pct, interval)}" for w, pct, interval in best.changes)
    out = [
        f"Cheapest option here: {best.target} ({', '.join(best.flags)}), faster than {parent} at "
        f"{best.clearly(faster=True)} "
        f"of {len(best.changes)} workloads with 95% intervals that exclude no change, and clearly slower "
        f"at none; median change {percent(best.median)}%. Each: {changes}.",
        "To apply it to your LUKS2 volume NAME, once, kept in its header for every later open:",
        f"  cryptsetup refresh {perf} --persistent NAME",
    ]
    if HIGH_PRIORITY in best.flags:
        linux = ".".join(map(str, HIGH_PRIORITY_KERNEL))
        out.append(f"  ({FLAGS[HIGH_PRIORITY][0]} needs cryptsetup 2.7 and Linux {linux} or later.)")
    if all(crypttab):
        out += [
            "or add to the options (the fourth field) of its /etc/crypttab line:",
            f"  {','.join(str(o) for o in crypttab)}",
        ]
    else:
        missing = [f for f, o in zip(best.flags, crypttab, strict=True) if o is None]
        out.append(f"/etc/crypttab has no option for {', '.join(missing)}: the header keeps it, --persistent")
    return out
