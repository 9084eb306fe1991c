"""ext4-loop: unencrypted ext4 in an image on a loop device, the baseline for fscrypt."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from cryptbench.backends.base import NOTHING_HIDDEN, Availability, Backend, Target, TargetSpec
from cryptbench.backends.ext4image import ext4_on_loop, image_size, probe_ext4_loop
from cryptbench.machine.session import Session
from cryptbench.model.vocabulary import Property, Verdict


class Ext4LoopBackend(Backend):
    name = "ext4-loop"
    encrypted = False
    baseline: str | None = "plain"  # what the image + loop layer costs over the bare filesystem
    summary = "ext4 in an image file on a loop device, no encryption (fscrypt's baseline)"

    def declared(self) -> dict[Property, tuple[Verdict, str]]:
        return NOTHING_HIDDEN

    def probe(self) -> Availability:
        return probe_ext4_loop()

    def space_needed(self, spec: TargetSpec, data_bytes: int) -> int:
        return image_size(data_bytes)

    @contextmanager
    def provision(self, session: Session, spec: TargetSpec, data_bytes: int) -> Iterator[Target]:
        with ext4_on_loop(session, spec, data_bytes) as fs:
            path = fs.mountpoint / "data"
            path.mkdir()
            yield Target(
                name=spec.name,
                backend=self.name,
                encrypted=False,
                baseline=self.baseline,
                path=path,
                backing=(fs.image,),
                details={"filesystem": "ext4", **fs.details},
            )
