"""Every metric a trial may record, by name: fio's and the system's (metrics.BASE), and
each workload engine's own figures as it declares them (AppWorkload.metrics), in the
order documents and exports list them. `info()` answers for any name, a phase's
(copy.seconds) or a part's beside the task (probe.lat_p99) included."""

from __future__ import annotations

from cryptbench.engines.apps import APPS, AppWorkload
from cryptbench.engines.apps.command import CommandWorkload
from cryptbench.model.metrics import BASE, MetricInfo

_ENGINES: tuple[type[AppWorkload], ...] = (*APPS.values(), CommandWorkload)
CATALOG: dict[str, MetricInfo] = {**BASE}
for _engine in _ENGINES:
    CATALOG.update({m.name: m for m in _engine.metrics if m.name not in CATALOG})
# A phase's figures, or a part's beside the task (responsiveness: probe.lat_p99).
PHASE_METRICS = (
    "throughput",
    "iops",
    "lat_p50",
    "lat_p99",
    "lat_p99_9",
    "seconds",
    *(m.name for e in _ENGINES for m in e.metrics),
)
BESIDE = {part: label for e in _ENGINES for part, label in e.beside.items()}


def info(name: str) -> MetricInfo:
    """A metric's unit and direction; a phase metric (copy.seconds) takes its base's."""
    if name in CATALOG:
        return CATALOG[name]
    phase, _, base = name.rpartition(".")
    if phase and base in PHASE_METRICS:
        b = CATALOG[base]
        of = BESIDE.get(phase)
        label = f"{of} {b.label}" if of else f"{b.label} of the {phase} phase"
        return MetricInfo(name, b.unit, b.higher_is_better, label)
    return MetricInfo(name, "", None, name)
