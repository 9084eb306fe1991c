"""A fleet run's hosts and each cost's spread as rows of text, for the terminal, the HTML page and
Markdown alike."""

from __future__ import annotations

from cryptbench.analysis.speed_change import percent
from cryptbench.model.fleet_section import FleetSection
from cryptbench.model.vocabulary import HostStatus

SPREAD_NOTE = (
    "Each host's figure is its target's change in speed against its own baseline (negative: slower); "
    "a host stands out when its whole "
    "95 % interval lies beyond the typical other host's interval (the median of their low ends, "
    "and of their high ends; 3 hosts or more)."
)


def change_pct(v: float | None) -> str:
    """A change in speed as every figure is written: '-31%', '+4%'."""
    return "-" if v is None else f"{percent(v)}%"


def interval(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f" [{percent(low)}, {percent(high)}]"


def host_rows(fleet: FleetSection) -> list[dict[str, str]]:
    return [
        {
            "host": h.name,
            "address": h.address,
            "ok": "yes" if h.status == HostStatus.OK else "",
            "status": h.status if h.status == HostStatus.OK else f"{h.status}: {h.reason}",
            "machine": f"{h.hostname or '?'} ({h.cpu_model or '?'})",
            "kernel": h.kernel or "?",
            "xts_aes": h.xts_aes or "?",
            "targets": ", ".join(h.targets),
        }
        for h in fleet.hosts
    ]


def cost_rows(fleet: FleetSection) -> list[dict[str, str]]:
    return [
        {
            "workload": r.workload,
            "target": f"{r.target} vs {r.baseline}",
            "hosts": str(r.hosts),
            "median": change_pct(r.median),
            "p10": change_pct(r.p10),
            "p90": change_pct(r.p90),
            "worst": r.worst_host + " " + change_pct(r.worst) + interval(r.worst_low, r.worst_high),
            "stand_out": ", ".join(
                f"{s.host} {change_pct(s.change)} ({s.direction} than the others' {change_pct(s.others)})"
                for s in r.stand_out
            )
            or "-",
        }
        for r in fleet.costs
    ]
