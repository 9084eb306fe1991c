"""What one option changes: a variant target (one LUKS option changed) against the
target it varies, workload by workload, in sentences for the diagnosis.

An option counts as helping or hurting at a workload only where the 95 %
interval of the speed ratio excludes no change; the rest is said to show no
change beyond the interval, never averaged in. Each direction carries the
usual explanation for that kind of option (docs/methodology.md, "Options").
"""

from __future__ import annotations

from cryptbench.analysis.speed_change import speed_change
from cryptbench.backends.luks_variants import VARIANTS
from cryptbench.model.option_kinds import OptionKind
from cryptbench.model.result import Comparison, ComparisonKind, Document, TargetInfo

SHOWN = 3  # workloads named with their figures per sentence; the rest counted


def kind_of(t: TargetInfo) -> OptionKind:
    """What kind of option a variant changes, as its own definition declares it
    (backends/luks.py's VARIANTS); OTHER for a target that declares none."""
    v = VARIANTS.get(t.backend)
    return v.option if v is not None and v.option is not None else OptionKind.OTHER


def _figure(c: Comparison) -> str:
    pct, interval, _ = speed_change(c)
    assert interval is not None  # only comparisons whose interval excludes no change are listed
    return f"{c.workload} {pct:+.0f}% [{interval[0]:+.0f}, {interval[1]:+.0f}]"


def _listed(cs: list[Comparison]) -> str:
    shown = ", ".join(_figure(c) for c in cs[:SHOWN])
    return shown + (f" and {len(cs) - SHOWN} more" if len(cs) > SHOWN else "")


def sentences(doc: Document, t: TargetInfo) -> list[str]:
    """What the target's option changes against the target it varies; [] for other targets."""
    cs = [c for c in doc.comparisons if c.target == t.name and c.kind == ComparisonKind.VARIANT]
    if not cs:
        return []
    parent = cs[0].baseline
    label = str(t.details.get("option") or "its option")
    option = f"{label[:1].upper()}{label[1:]} ({t.name})"
    kind = kind_of(t)
    faster = sorted((c for c in cs if speed_change(c)[2] and c.ratio > 1), key=lambda c: -c.ratio)
    slower = sorted((c for c in cs if speed_change(c)[2] and c.ratio < 1), key=lambda c: c.ratio)
    out = []
    if faster:
        out.append(f"{option} is faster than {parent} at {_listed(faster)}: {kind.why(True)}.")
    if slower:
        out.append(f"{option} is slower than {parent} at {_listed(slower)}: {kind.why(False)}.")
    unclear = len(cs) - len(faster) - len(slower)
    if not faster and not slower:
        out.append(
            f"{option} changes nothing beyond its interval against {parent} at "
            f"{'its one workload' if unclear == 1 else f'any of {unclear} workloads'} on this kernel."
        )
    elif unclear:
        others = "the other workload" if unclear == 1 else f"the other {unclear} workloads"
        out.append(f"At {others} it changes nothing beyond its interval.")
    return out
