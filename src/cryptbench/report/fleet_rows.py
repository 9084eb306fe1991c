"""A fleet run's hosts and overhead spread as rows of text, for the terminal and the HTML page alike."""

from __future__ import annotations

from cryptbench.result_model import FleetSection

SPREAD_NOTE = (
    "Each host's overhead is its target against its own baseline; a host stands out when its whole "
    "95 % interval lies beyond the typical other host's interval (the median of their low ends, "
    "and of their high ends; 3 hosts or more)."
)


def overhead_pct(v: float | None) -> str:
    # Overheads as `check` words them: the share of the baseline's speed lost.
    return "-" if v is None else f"{v:.0f} %"


def interval(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f" [{low:.0f}, {high:.0f}]"


def host_rows(fleet: FleetSection) -> list[dict[str, str]]:
    return [
        {
            "host": h.name,
            "address": h.address,
            "ok": "yes" if h.status == "ok" else "",
            "status": h.status if h.status == "ok" else f"{h.status}: {h.reason}",
            "machine": f"{h.hostname or '?'} ({h.cpu_model or '?'})",
            "kernel": h.kernel or "?",
            "xts_aes": h.xts_aes or "?",
            "targets": ", ".join(h.targets),
        }
        for h in fleet.hosts
    ]


def overhead_rows(fleet: FleetSection) -> list[dict[str, str]]:
    return [
        {
            "workload": r.workload,
            "target": f"{r.target} vs {r.baseline}",
            "hosts": str(r.hosts),
            "median": overhead_pct(r.median),
            "p10": overhead_pct(r.p10),
            "p90": overhead_pct(r.p90),
            "worst": r.worst_host + " " + overhead_pct(r.worst) + interval(r.worst_low, r.worst_high),
            "stand_out": ", ".join(
                f"{s.host} {overhead_pct(s.overhead)} "
                f"({s.direction} than the others' {overhead_pct(s.others)})"
                for s in r.stand_out
            )
            or "-",
        }
        for r in fleet.overheads
    ]
