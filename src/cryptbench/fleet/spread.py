"""How an encrypted target's cost spreads across a fleet's hosts.

Each host's cost is its own comparison (the target against its baseline
on that host, with its bootstrap interval), so a host is never compared with
another host's baseline. Across hosts: the median, the 10th and 90th
percentiles (linear interpolation between hosts, NumPy's default), the worst
host, and the hosts that stand out: with three hosts or more, a host whose
whole 95 % interval lies below (slower) or above (faster) the typical other host's interval
(the median of the other hosts' low ends, and of their high ends). A host
with one noisy trial set does not stand out, nor one a little off the others'
median while their intervals overlap (three identical namespace hosts flagged
two of six rows under a rule against the others' median alone); one whose
interval clears what the rest of the fleet sees does.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from cryptbench.model.fleet_section import FleetCost, FleetHost, FleetSection, HostChange, StandOut
from cryptbench.model.result import Comparison, ComparisonKind, Document, TargetInfo
from cryptbench.store.rows import FleetHostRow

STAND_OUT_MIN_HOSTS = 3  # with two, "the others" is one host: nothing to stand out from


def local_name(target: str) -> str:
    """A fleet target's name on its host: node1/fscrypt -> fscrypt."""
    return target.split("/", 1)[1] if "/" in target else target


def _change(host: str, c: Comparison) -> HostChange:
    """One host's comparison as a change in speed, its interval the ratio's."""
    low = None if c.ci_low is None else (c.ci_low - 1) * 100
    high = None if c.ci_high is None else (c.ci_high - 1) * 100
    return HostChange(host, c.change_percent, low, high)


def costs(targets: list[TargetInfo], comparisons: list[Comparison]) -> list[FleetCost]:
    """Per workload and encrypted target, each host's change in speed and their spread."""
    host_of = {t.name: t.host for t in targets}
    encrypted = {t.name for t in targets if t.encrypted}
    groups: dict[tuple[str, str, str], list[Comparison]] = defaultdict(list)
    for c in comparisons:
        if c.kind == ComparisonKind.BASELINE and c.target in encrypted and host_of.get(c.target) is not None:
            groups[(c.workload, local_name(c.target), local_name(c.baseline))].append(c)
    rows = []
    for (workload, target, baseline), cs in groups.items():
        per_host = [_change(str(host_of[c.target]), c) for c in cs]
        values = np.array([h.change for h in per_host])
        p10, median, p90 = (float(v) for v in np.percentile(values, [10, 50, 90]))
        worst = min(per_host, key=lambda h: h.change)
        rows.append(
            FleetCost(
                workload=workload,
                target=target,
                baseline=baseline,
                hosts=len(per_host),
                median=median,
                p10=p10,
                p90=p90,
                worst_host=worst.host,
                worst=worst.change,
                worst_low=worst.low,
                worst_high=worst.high,
                per_host=per_host,
                stand_out=_stand_out(per_host),
            )
        )
    return rows


def _stand_out(per_host: list[HostChange]) -> list[StandOut]:
    if len(per_host) < STAND_OUT_MIN_HOSTS:
        return []
    found = []
    for h in per_host:
        others = [o for o in per_host if o is not h]
        centre = float(np.median([o.change for o in others]))
        # The typical other host's interval: the median of their low ends and of
        # their high ends (an estimate stands in for a host without an interval).
        low = float(np.median([o.change if o.low is None else o.low for o in others]))
        high = float(np.median([o.change if o.high is None else o.high for o in others]))
        if h.high is not None and h.high < low:
            found.append(StandOut(h.host, h.change, centre, low, high, "slower"))
        elif h.low is not None and h.low > high:
            found.append(StandOut(h.host, h.change, centre, low, high, "faster"))
    return found


def fleet_section(doc: Document, host_rows: list[FleetHostRow]) -> FleetSection:
    """The document's `fleet`: each host (address, status, what it is) and each cost's spread."""
    hosts = []
    for r in host_rows:
        manifest = r.manifest
        env = manifest.get("environment", {})
        hosts.append(
            FleetHost(
                name=r.name,
                address=r.address,
                status=r.status,
                reason=r.reason,
                hostname=env.get("hostname"),
                kernel=env.get("kernel"),
                cpu_model=env.get("cpu_model"),
                xts_aes=env.get("kernel_crypto", {}).get("xts(aes)"),
                ioengine=manifest.get("ioengine"),
                cryptbench=manifest.get("cryptbench"),
                targets=[t.get("name") for t in manifest.get("targets", [])],
                skipped=manifest.get("skipped", []),
            )
        )
    return FleetSection(hosts, costs(doc.targets, doc.comparisons))
