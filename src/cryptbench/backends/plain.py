"""plain: a directory in the scratch space, on the target filesystem itself."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from cryptbench.backends.base import NOTHING_HIDDEN, Availability, Backend, Target, TargetSpec, target_dir
from cryptbench.machine.session import Session
from cryptbench.model.vocabulary import Property, Verdict

SLACK = 16 << 20  # bytes: marker and probe files


class PlainBackend(Backend):
    name = "plain"
    encrypted = False
    baseline: str | None = None
    summary = "a directory on the target filesystem, no encryption"

    def declared(self) -> dict[Property, tuple[Verdict, str]]:
        return NOTHING_HIDDEN

    def probe(self) -> Availability:
        return Availability(True)

    def space_needed(self, spec: TargetSpec, data_bytes: int) -> int:
        return data_bytes + SLACK

    @contextmanager
    def provision(self, session: Session, spec: TargetSpec, data_bytes: int) -> Iterator[Target]:
        path = target_dir(session, spec)
        yield Target(
            name=spec.name,
            backend=self.name,
            encrypted=False,
            baseline=None,
            path=path,
            backing=(path,),
        )
