"""A fleet run's part of the result document: each host as its manifest described it and
how it ended, and each cost across the hosts, with the hosts that stand out
(fleet/spread.py computes it)."""

from __future__ import annotations

from dataclasses import dataclass

from cryptbench.model.json_types import JsonObject


@dataclass(frozen=True)
class FleetHost:
    """One host of a fleet run: how the coordinator reached it, what became of it, and
    what its manifest said it is."""

    name: str  # the label from hosts.toml
    address: str  # its fio server, as the coordinator reached it
    status: str  # ok, failed (stopped answering), unusable (no manifest)
    reason: str | None  # why, when not ok
    hostname: str | None  # the machine's own name; None without a manifest
    kernel: str | None  # uname -r there
    cpu_model: str | None
    xts_aes: str | None  # the kernel's xts(aes) driver there
    ioengine: str | None  # the engine fio uses there
    cryptbench: str | None  # cryptbench's version there
    targets: list[str]  # the targets it served, by their names there
    skipped: list[dict[str, str]]  # backends it could not provide: {"backend", "reason"}

    def to_json(self) -> JsonObject:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, d: JsonObject) -> FleetHost:
        return cls(**d)


@dataclass(frozen=True)
class HostChange:
    host: str  # the host's label
    change: float  # percent: the change in speed against its own baseline, negative when slower
    low: float | None  # percent: the 95 % interval's low end; None without one
    high: float | None  # percent: its high end

    def to_json(self) -> JsonObject:
        return dict(self.__dict__)


@dataclass(frozen=True)
class StandOut:
    """A host whose whole interval lies beyond the typical other host's (fleet/spread.py)."""

    host: str
    change: float  # percent, this host's change in speed, negative when slower
    others: float  # percent: the other hosts' median change
    others_low: float  # percent: the median of their intervals' low ends
    others_high: float  # percent: the median of their high ends
    direction: str  # "slower" or "faster" than the others

    def to_json(self) -> JsonObject:
        return dict(self.__dict__)


@dataclass(frozen=True)
class FleetCost:
    """One workload and encrypted target's change in speed against its baseline on each
    host, and its spread (every figure in percent, negative when slower)."""

    workload: str
    target: str  # its name on each host (fscrypt, not node1/fscrypt)
    baseline: str  # likewise
    hosts: int  # count of hosts with a comparison
    median: float  # percent, across hosts
    p10: float  # percent: 10th percentile across hosts (the slow end)
    p90: float  # percent: 90th percentile
    worst_host: str  # the host slowed most
    worst: float  # percent, its change (the lowest)
    worst_low: float | None  # percent: its interval's low end
    worst_high: float | None  # percent: its high end
    per_host: list[HostChange]
    stand_out: list[StandOut]

    def to_json(self) -> JsonObject:
        d = dict(self.__dict__)
        d["per_host"] = [h.to_json() for h in self.per_host]
        d["stand_out"] = [s.to_json() for s in self.stand_out]
        return d

    @classmethod
    def from_json(cls, d: JsonObject) -> FleetCost:
        return cls(
            **{
                **d,
                "per_host": [HostChange(**h) for h in d["per_host"]],
                "stand_out": [StandOut(**s) for s in d["stand_out"]],
            }
        )


@dataclass(frozen=True)
class FleetSection:
    """A fleet run's hosts and how each target's cost spreads across them."""

    hosts: list[FleetHost]
    costs: list[FleetCost]

    def to_json(self) -> JsonObject:
        return {
            "hosts": [h.to_json() for h in self.hosts],
            "costs": [o.to_json() for o in self.costs],
        }

    @classmethod
    def from_json(cls, d: JsonObject) -> FleetSection:
        return cls([FleetHost.from_json(h) for h in d["hosts"]], [FleetCost.from_json(o) for o in d["costs"]])
