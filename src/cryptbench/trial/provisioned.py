"""The run's targets once they are up, by name, as the trials use them (trial/context.Targets):
each torn down on its own, so that a stateful target can be made anew before a write
trial (runner.prepare), each one's data file laid out before any clock starts, and the
I/O mode each one's trials run at, decided like for like. pipeline/provision.py brings
them up and proves them."""

from __future__ import annotations

from contextlib import ExitStack

from cryptbench.backends import REGISTRY, DirectIO, Target, TargetSpec
from cryptbench.machine.session import Session
from cryptbench.model.vocabulary import Medium
from cryptbench.planning.plan import Plan
from cryptbench.trial import layout
from cryptbench.trial.context import Progress, Sizing, TrialContext


class Provisioned:
    """The run's targets by name, each torn down on its own, so that a stateful
    target can be made anew before a write trial (runner.prepare)."""

    def __init__(self, plan: Plan, session: Session, progress: Progress) -> None:
        self.plan = plan
        self.session = session
        self.progress = progress
        self.targets: dict[str, Target] = {}
        self._stacks: dict[str, ExitStack] = {}
        self._specs: dict[str, TargetSpec] = {}
        self.direct: dict[str, bool] = {}

    def __getitem__(self, name: str) -> Target:
        return self.targets[name]

    def up(self, spec: TargetSpec) -> Target:
        stack = ExitStack()
        try:
            t = stack.enter_context(
                REGISTRY[spec.backend].provision(self.session, spec, self.plan.holds[spec.name])
            )
        except BaseException:
            stack.close()
            raise
        t.name, t.baseline, t.medium = spec.name, self.plan.baselines[spec.name], spec.medium
        self._stacks[spec.name], self._specs[spec.name], self.targets[spec.name] = stack, spec, t
        return t

    def reset(self, name: str) -> Target:
        old = self.targets[name]
        self._stacks.pop(name).close()
        new = self.up(self._specs[name])
        # Proven once, on the first of these identical stacks.
        new.marker_in_backing, new.encryption_verified = old.marker_in_backing, old.encryption_verified
        new.direct_io, new.direct_io_reason = old.direct_io, old.direct_io_reason
        return new

    def lay_out(self, target: Target, ctx: TrialContext, sizing: Sizing) -> None:
        """Write the data file the read trials read, `sizing.file_bytes` of it, before any clock starts."""
        self.progress.phase(f"writing the {sizing.file_bytes >> 20} MiB data file on {target.name}")
        sized = sizing.layout_size(self.direct[target.name])
        layout.lay_out(ctx, target, self._specs[target.name].slug, sized, self.plan.seed)

    def close(self) -> None:
        while self._stacks:
            _name, stack = self._stacks.popitem()  # the newest first
            stack.close()


def decide_io_modes(requested: str, targets: dict[str, Target]) -> tuple[dict[str, bool], str | None]:
    """Direct I/O per target, and a note explaining the choice.

    The device targets decide; a RAM twin follows them unless it refuses
    O_DIRECT. On tmpfs every page is resident by nature, so the probe's "stayed
    in the page cache" says nothing there, and must not turn the device targets
    buffered.
    """
    ram = {n: t for n, t in targets.items() if t.medium == Medium.RAM}
    device = {n: t for n, t in targets.items() if n not in ram}
    modes, note = _decide_device(requested, device)
    follow = bool(device) and all(modes.values()) if requested == "auto" else requested == "direct"
    for n, t in ram.items():
        modes[n] = follow and t.direct_io is not DirectIO.REFUSED
    return modes, note


def _decide_device(requested: str, targets: dict[str, Target]) -> tuple[dict[str, bool], str | None]:
    not_direct = [t for t in targets.values() if t.direct_io is not DirectIO.HONOURED]
    if requested == "buffered":
        return {n: False for n in targets}, "buffered I/O for every target, as asked (--io-mode buffered)"
    if requested == "direct":
        note = None
        if not_direct:
            note = "direct I/O where honoured; buffered on " + ", ".join(t.name for t in not_direct)
        return {n: t.direct_io is DirectIO.HONOURED for n, t in targets.items()}, note
    if not not_direct:
        return {n: True for n in targets}, "direct I/O for every target: each honours O_DIRECT"
    names = ", ".join(t.name for t in not_direct)
    verb = "does" if len(not_direct) == 1 else "do"
    return {n: False for n in targets}, (
        f"buffered I/O for every target, like for like, because {names} {verb} not honour O_DIRECT "
        "(writes end with fsync; caches are dropped before every trial)"
    )
