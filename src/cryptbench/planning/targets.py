"""The targets a run has: the backends asked for (or the default ones that can run here),
the baselines they are compared with, added where missing, the image backends' states
and filesystem, the RAM twins, and the trials a target cannot run."""

from __future__ import annotations

from cryptbench.backends import DEFAULT, REGISTRY
from cryptbench.backends.base import FILESYSTEMS, STATES, TargetSpec
from cryptbench.backends.filesystem import probe_fs
from cryptbench.backends.luks_twin import twin_backend
from cryptbench.model.errors import UnavailableError, UsageError, did_you_mean
from cryptbench.model.vocabulary import Medium
from cryptbench.planning.request import RunRequest
from cryptbench.planning.suite import (
    Suite,
    Workload,
    WorkloadSpec,
)


def with_baselines(names: list[str]) -> tuple[list[str], list[str]]:
    ordered: list[str] = []
    added: list[str] = []

    def visit(name: str, requested: bool) -> None:
        baseline = REGISTRY[name].baseline
        if baseline is not None:
            visit(baseline, False)
        if name not in ordered:
            ordered.append(name)
            if not requested and name not in names:
                added.append(name)

    for n in names:
        visit(n, True)
    return ordered, added


def parse_backend_list(text: str) -> list[str]:
    """--backends: comma-separated names from the registry, each once (a LUKS twin's too,
    which the registry resolves but does not list)."""
    items = text.split(",")
    twins = tuple(i.strip() for i in items if twin_backend(i.strip()))
    return list(_parse_choices(items, (*REGISTRY, *twins), "--backends", "backend"))


def parse_states(text: str | tuple[str, ...], what: str = "--state") -> tuple[str, ...]:
    return _parse_choices(text.split(",") if isinstance(text, str) else text, STATES, what, "state")


def _parse_choices(
    items: list[str] | tuple[str, ...], known: tuple[str, ...], what: str, noun: str
) -> tuple[str, ...]:
    """Names from `known`, each once, at least one; `what` and `noun` word the errors."""
    chosen = [i.strip() for i in items if i.strip()]
    if not chosen:
        raise UsageError(f"{what} names no {noun}")
    for name in chosen:
        if name not in known:
            listed = ", ".join(known) if len(known) <= 10 else f"cryptbench {noun}s lists all {len(known)}"
            hint = did_you_mean(name, known)
            raise UsageError(f"{what}: unknown {noun} {name[:40]!r}{hint or f' ({listed})'}")
    if len(set(chosen)) != len(chosen):
        raise UsageError(f"{what} names a {noun} twice")
    return tuple(chosen)


def expand(ordered: list[str], states: tuple[str, ...], fs: str, ram: bool = False) -> tuple[TargetSpec, ...]:
    """Backends x states on the device, then (--ram) the same on RAM where it means something."""
    specs: list[TargetSpec] = []
    for medium in (Medium.DEVICE, Medium.RAM) if ram else (Medium.DEVICE,):
        for name in ordered:
            if medium == Medium.RAM and not REGISTRY[name].ram:
                continue
            for state in states if REGISTRY[name].stateful else (None,):
                specs.append(TargetSpec(name, state, fs, medium))
    return tuple(specs)


def baseline_of(spec: TargetSpec) -> str | None:
    """The name of the target `spec` is compared with: its baseline, in the same state."""
    base = REGISTRY[spec.backend].baseline
    if base is None:
        return None
    return TargetSpec(base, spec.state if REGISTRY[base].stateful else None, spec.fs, spec.medium).name


def skipped_trials(targets: tuple[TargetSpec, ...], suite: Suite) -> dict[str, dict[str, str]]:
    """workload -> {target: why} for the trials a run leaves out (Plan.skip)."""
    out: dict[str, dict[str, str]] = {}
    for t in targets:
        for w in not_run(t.backend, suite):
            out.setdefault(w, {})[t.name] = REGISTRY[t.backend].writes_from_start
    return out


def writes_at_an_offset(w: Workload) -> bool:
    """Whether `w` writes anywhere but from a file's start to its end: fio's writes other
    than `write`, and the built-in tasks that write (a database, a mail store). Your own
    commands are run as they are: a write the target refuses fails their trial, with its
    own message."""
    if isinstance(w, WorkloadSpec):
        return w.is_write and w.rw != "write"
    return w.writes and not w.runs_commands


def not_run(name: str, suite: Suite) -> list[str]:
    """The suite's workloads backend `name` cannot run: it writes a file only from its start
    (Backend.writes_from_start), and they write at other offsets."""
    if not REGISTRY[name].writes_from_start:
        return []
    return [w.name for w in suite.workloads if writes_at_an_offset(w)]


def cannot_run(name: str, suite: Suite) -> str | None:
    """Why backend `name` can run none of the suite's workloads, or None."""
    offsets = not_run(name, suite)
    if not offsets or len(offsets) < len(suite.workloads):
        return None
    why = REGISTRY[name].writes_from_start
    return f"{why}; every workload of the {suite.name} suite writes at other offsets"


def choose_backends(r: RunRequest, suite: Suite) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """(every backend in run order, the baselines added to them, (backend, reason) skipped)."""
    skipped: list[tuple[str, str]] = []
    if r.backends is None:
        # The suite's own list, else the default one: what can run here, the
        # rest skipped with the reason.
        candidates = (
            _parse_choices(suite.backends, tuple(REGISTRY), "the suite's backends", "backend")
            if suite.backends
            else DEFAULT
        )
        # Each backend probed once, baselines too.
        names = [n for c in candidates for n in (c, REGISTRY[c].baseline) if n]
        probes = {n: REGISTRY[n].probe() for n in dict.fromkeys(names)}
        wanted = []
        for name in candidates:
            why = probes[name].reason if not probes[name].ok else cannot_run(name, suite)
            if why is None:
                wanted.append(name)
            else:
                skipped.append((name, why))
        # An encrypted target whose baseline cannot run has nothing to be compared with.
        for name in list(wanted):
            base = REGISTRY[name].baseline
            if base is not None and not probes[base].ok:
                wanted.remove(name)
                skipped.append((name, f"its baseline {base} is unavailable"))
        if not wanted:
            raise UnavailableError(
                "no backend of this run is available here: "
                + "; ".join(f"{b}: {why}" for b, why in skipped[:3])
            )
        requested = wanted
    else:
        requested = parse_backend_list(r.backends)
    ordered, added = with_baselines(requested)
    if r.backends is not None:
        # The backends asked for first, so the error names what the user typed.
        for name in [*requested, *added]:
            avail = REGISTRY[name].probe()
            if not avail.ok:
                users = ", ".join(n for n in ordered if REGISTRY[n].baseline == name)
                why = f" (needed as the baseline of {users})" if name in added else ""
                raise UnavailableError(f"backend {name} is not available here{why}: {avail.reason}")
            refused = cannot_run(name, suite)
            if refused is not None:
                raise UsageError(f"backend {name} cannot run this suite: {refused}")
    return ordered, added, skipped


def states_and_fs(r: RunRequest, suite: Suite, ordered: list[str]) -> tuple[tuple[str, ...], str]:
    """The image backends' states and the filesystem inside them."""
    stateful = [n for n in ordered if REGISTRY[n].stateful]
    if r.state is not None and not stateful:
        raise UsageError("--state applies to image backends (image-*), and this run has none")
    if r.fs is not None and not stateful:
        raise UsageError("--fs applies to image backends (image-*), and this run has none")
    states: tuple[str, ...] = ()
    if stateful:
        states = (
            parse_states(r.state)
            if r.state is not None
            else (parse_states(suite.states, "the suite's states") if suite.states else ("fresh",))
        )
    fs = r.fs if r.fs is not None else (suite.fs or "ext4")
    if fs not in FILESYSTEMS:
        raise UsageError(f"--fs must be one of {', '.join(FILESYSTEMS)}, not {fs[:40]!r}")
    if stateful:
        avail = probe_fs(fs)
        if not avail.ok:
            raise UnavailableError(f"--fs {fs} cannot be used here: {avail.reason}")
    return states, fs
