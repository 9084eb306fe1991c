"""What one option changes: a variant target (one LUKS option changed) against the
target it varies, workload by workload, in sentences for the diagnosis.

An option counts as helping or hurting at a workload only where the 95 %
interval of the speed ratio excludes no change; the rest is said to show no
change beyond the interval, never averaged in. Each direction carries the
usual explanation for that kind of option (docs/methodology.md, "Options").
"""

from __future__ import annotations

from enum import StrEnum

from cryptbench.report.speed_change import speed_change
from cryptbench.result_model import Comparison, ComparisonKind, Document, TargetInfo

SHOWN = 3  # workloads named with their figures per sentence; the rest counted


class OptionKind(StrEnum):
    WORKQUEUES = "workqueues"  # no_read_workqueue / no_write_workqueue
    SUBMIT = "submit"  # submit_from_crypt_cpus
    SECTOR = "sector"  # the encryption sector size
    INTEGRITY = "integrity"  # an authentication tag per sector (dm-integrity), journaled
    INTEGRITY_DIRECT = "integrity-direct"  # the same without dm-integrity's journal
    OTHER = "other"

    def why(self, faster: bool) -> str:
        """The usual reason for an option of this kind to help (faster) or hurt."""
        return _WHY[(self, faster)]


_WHY = {
    (OptionKind.WORKQUEUES, True): (
        "on this kernel dm-crypt's workqueues cost more than they give: each request waits for a "
        "kcryptd thread instead of being encrypted where it was issued"
    ),
    (OptionKind.WORKQUEUES, False): (
        "the workqueues pay for themselves here: they move encryption off the issuing CPU and spread "
        "it over the others"
    ),
    (OptionKind.SUBMIT, True): (
        "submitting writes from the CPUs that encrypted them saves dm-crypt's sorting thread"
    ),
    (OptionKind.SUBMIT, False): (
        "dm-crypt's sorting of encrypted writes before it submits them (the default) helps this device"
    ),
    (OptionKind.SECTOR, True): (
        "this workload's requests do not fill 4096-byte sectors, which the larger sector must widen"
    ),
    (OptionKind.SECTOR, False): (
        "512-byte sectors take eight cipher calls and IVs for every 4 KiB that 4096-byte sectors "
        "encrypt in one"
    ),
    (OptionKind.INTEGRITY, True): (
        "dm-integrity's journal gathered this workload's small writes into larger ones, which "
        "more than paid for the tags"
    ),
    (OptionKind.INTEGRITY, False): (
        "every sector also gets an HMAC-SHA256 tag, computed and stored by dm-integrity beside it, "
        "and every write goes to dm-integrity's journal first, then in place"
    ),
    (OptionKind.INTEGRITY_DIRECT, True): (
        "dm-integrity's buffering of tags absorbed this workload; the tags themselves cost nothing "
        "measurable here"
    ),
    (OptionKind.INTEGRITY_DIRECT, False): (
        "every sector also gets an HMAC-SHA256 tag, computed and stored by dm-integrity beside it "
        "(without a journal: data and tag are written in place, and a crash between them leaves the "
        "sector unreadable)"
    ),
    (OptionKind.OTHER, True): "the option helps here",
    (OptionKind.OTHER, False): "the option costs here",
}


def kind_of(t: TargetInfo) -> OptionKind:
    """What kind of option a variant changes, from what its mapping showed and its label."""
    table = str(t.details.get("dm_table_options", ""))
    option = str(t.details.get("option", ""))
    if "integrity:" in table:
        journaled = "no journal" not in str(t.details.get("integrity", ""))
        return OptionKind.INTEGRITY if journaled else OptionKind.INTEGRITY_DIRECT
    if "workqueue" in table:
        return OptionKind.WORKQUEUES
    if "submit_from_crypt_cpus" in table:
        return OptionKind.SUBMIT
    if "sector" in option:
        return OptionKind.SECTOR
    return OptionKind.OTHER


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
